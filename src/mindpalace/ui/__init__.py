"""The web inspector: see, search and fix what agents remember.

Server-rendered pages over the Python API, served by ``mindpalace serve`` at
``/`` (beside ``/mcp`` and ``/v1``) and by ``mindpalace ui`` for a local
palace. Needs the ``server`` extra. ``app`` has the security model.
"""

from __future__ import annotations

from mindpalace.ui.app import CSP, build_ui
from mindpalace.ui.sessions import OneTimeTokens, Sessions

__all__ = ["CSP", "OneTimeTokens", "Sessions", "build_ui"]
