"""The optional extras: the modules each one installs, and which are missing.

One table for the checks that need an extra (``server.require_extra``) and
for ``mindpalace doctor``, which lists what is installed. Only the standard
library is imported: finding a module is not importing it.
"""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRAS", "install_command", "missing"]

#: extra name -> the top-level modules it installs (import names)
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("h11", "mcp", "pydantic", "python_multipart", "starlette", "uvicorn"),
    "postgres": ("psycopg", "psycopg_pool", "pgvector"),
    "telemetry": ("opentelemetry.trace",),
    "langchain": ("langchain_core",),
    "pydantic-ai": ("pydantic_ai",),
    "openai-agents": ("agents",),
    "llama-index": ("llama_index.core",),
}


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be found (none: it is installed).

    Raises:
        KeyError: an extra not in ``EXTRAS``.
    """
    return [name for name in EXTRAS[extra] if not _found(name)]


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a dotted name whose parent is missing
        return False


def install_command(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'mindpalace[{extra}]'"
