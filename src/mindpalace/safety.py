"""Stored text is data, never instructions: neutralise it before it reaches a prompt.

(Placeholder signature; the neutraliser is built in issue 7.)
"""

from __future__ import annotations

__all__ = ["neutralise"]


def neutralise(text: str) -> str:
    """``text`` made safe to quote inside an informational context block."""
    return text
