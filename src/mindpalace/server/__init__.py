"""MCP and HTTP front ends: ``mindpalace mcp`` and ``mindpalace serve``.

They need the optional ``server`` extra (the MCP SDK, Starlette, uvicorn);
``require_extra`` says so plainly when it is missing. The modules:
``tools`` (the operations, once: registry, tool sets, errors) over
``tools_memory``, ``tools_recall`` and ``tools_skills`` (the tool
functions), ``schema`` (argument types, the published schemas and the one
argument check), ``shaping`` (results as JSON, and their schemas),
``channels`` (calls through a peer channel), ``mcp`` (the MCP server),
``http`` (REST + MCP over HTTP in one app). Who is calling (``identity``)
and the guards at the door (``hosts``, ``body``, ``limits``, ``guard``) live
in ``mindpalace.web``, below this package and the inspector (``ui``) alike.
"""

from __future__ import annotations

from mindpalace.errors import ConfigError
from mindpalace.extras import install_command, missing

__all__ = ["DEFAULT_THREADS", "require_extra"]

# Worker threads for tool calls. Measured with bench/load.py (50 clients x
# 40 mixed remember/recall calls, bundled MiniLM, 2 shared cores): 1 thread
# 39-46 calls/s; 2, 4 and 8 threads 60-63/s with p95 1.1-1.4 s (4 best);
# 40 threads 22-57/s with p95 2.8-8.8 s, as concurrent ONNX runs and Python
# threads fight over two cores.
DEFAULT_THREADS = 4


def require_extra() -> None:
    """Check that the ``server`` extra is installed.

    Raises:
        ConfigError: naming the missing packages and the install command.
    """
    absent = missing("server")
    if absent:
        raise ConfigError(
            f"the MCP and HTTP servers need the 'server' extra (missing: {', '.join(absent)});"
            f" install it with: {install_command('server')}, or from a clone of the"
            " repository: pip install '.[server]'"
        )
