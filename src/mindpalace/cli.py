"""The ``mindpalace`` command line, run in this process: a thin shell over
``Palace``.

JSON on stdout by default (the subprocess contract: command name first, JSON
out), ``--plain`` for people. Errors go to stderr: exit 2 for invalid input
(naming the valid options), 1 for every other failure. The parser is in
``arguments``, the commands in ``commands``; the installed ``mindpalace``
executable (``launch``) hands a call to a warm daemon first and comes here
only when none answers.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mindpalace.arguments import build_parser
from mindpalace.commands import run

__all__ = ["build_parser", "main", "run"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line in this process; returns the exit status."""
    code, out, err = run(build_parser().parse_args(argv))
    sys.stdout.write(out)
    sys.stderr.write(err)
    return code


if __name__ == "__main__":
    sys.exit(main())
