"""Where the palace lives, and whom a call acts for, when a command names
neither.

Shared by ``config`` and the standard-library-only launcher (``launch``),
so a call handed to a daemon and a call run cold open the same file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = ["ENV_AGENT", "ENV_DB", "default_palace"]

ENV_DB = "MINDPALACE_DB"
ENV_AGENT = "MINDPALACE_AGENT_ID"


def _data_home(env: Mapping[str, str]) -> str:
    home = env.get("HOME") or os.path.expanduser("~")
    if sys.platform == "win32":
        return env.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support")
    return env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")


def default_palace(env: Mapping[str, str]) -> str:
    """``$MINDPALACE_DB`` (a path, unexpanded, or a URL such as
    ``postgresql://...``), else the per-user file."""
    return env.get(ENV_DB) or os.path.join(_data_home(env), "mindpalace", "memories.db")
