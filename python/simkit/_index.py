"""simkit.Index: nearest-neighbour indexes (index.hpp) with FAISS's search shape."""

from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Optional, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

from . import _arrays as A
from . import _simkit


class Index:
    """A nearest-neighbour index built from a description, as FAISS's index_factory.

    description: one of
      'flat'      exact: every stored vector compared;
      'ivf_flat'  e.g. 'ivf_flat,nlist=1024,nprobe=32' (nlist k-means cells, nprobe of them
                  scanned per query; also train_sample=, iterations=, seed=; nprobe=seed probes
                  ceil(0.8 nlist));
      'ivf_pq'    e.g. 'ivf_pq,nlist=4096,m=32,refine=4': the same cells, each vector stored as
                  m one-byte codes; the best refine x k of the code scan are re-ranked exactly
                  against the original vectors (refine=0 keeps codes only; refine_on=host keeps
                  them off the GPU); also nprobe=, train_sample=, iterations=, seed=;
      'lsh'       e.g. 'lsh,tables=6,bits=2' (the seed document's configuration, the default):
                  random-hyperplane signs (dot, cosine, pearson) or quantized projections
                  (distances), candidates from the probed buckets re-scored exactly; also
                  probes=, width=, seed=;
      'tree'      exact, for l2 and sqeuclidean in d <= 8 alone (any other metric or d raises
                  ValueError): the bounding-volume tree of knn(method='tree') over the stored
                  vectors, searched together with the vectors added since it was built; the
                  same results as 'flat'.
      'hnsw'      e.g. 'hnsw,m=16,ef_construction=200,ef=64': a layered proximity graph (m links
                  per node, 2m on the bottom layer) searched best-first keeping the ef best
                  candidates; the usual CPU choice for embeddings at high recall; also seed=,
                  storage=sq8 (the walk on one-byte codes, the best refine x k re-ranked on
                  the float32 rows: 2x faster at the same recall on WordNet, 1.22x the memory), refine=.
                  ``index.search(Q, k, ef=128)`` trades speed for recall per call.
    metric: as in `simkit.knn`.

    >>> import numpy as np, simkit
    >>> X = np.random.default_rng(0).standard_normal((20000, 64), dtype=np.float32)
    >>> index = simkit.Index("ivf_flat,nlist=64", 64, metric="cosine")
    >>> index.train(X)
    >>> index.add(X)                       # ids 0 .. 19999
    >>> D, I = index.search(X[:5], 10, nprobe=8)
    >>> len(index), I.shape
    (20000, (5, 10))
    >>> index.save("x.simkit"); same = simkit.Index.load("x.simkit")   # doctest: +SKIP

    Searches from several Python threads at once are safe (the GIL is released while they
    run); add, remove and train wait for running searches and they for them. An Index pickles
    (through its file format) and closes: after close(), or in a `with` block's end, every
    call raises ValueError.
    """

    def __init__(self, description: str, d: int, metric: str = "sqeuclidean") -> None:
        self._h: Optional[_simkit.IndexHandle] = _simkit.IndexHandle(
            A.text(description, "description"), A.integer(d, "d"), A.text(metric, "metric")
        )

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"]) -> "Index":
        """Reads a file written by `save` (or `simkit index build`); a missing, truncated or
        corrupted file raises OSError and nothing is half-loaded."""
        index = cls.__new__(cls)
        index._h = _simkit.IndexHandle.load(os.fspath(path))
        return index

    # ------------------------------------------------------------------ what it is
    @property
    def _handle(self) -> _simkit.IndexHandle:
        if self._h is None or self._h.closed:
            raise ValueError("the index is closed")
        return self._h

    @property
    def type(self) -> str:
        """'flat', 'ivf_flat', 'ivf_pq', 'lsh' or 'tree'."""
        return self._handle.type

    @property
    def description(self) -> str:
        """A description that builds an empty index of the same kind and parameters."""
        return self._handle.description

    @property
    def d(self) -> int:
        """The dimension of the vectors."""
        return self._handle.dim

    @property
    def metric(self) -> str:
        return self._handle.metric

    @property
    def ntotal(self) -> int:
        """Vectors stored (FAISS's name; also len(index))."""
        return self._handle.size

    @property
    def is_trained(self) -> bool:
        return self._handle.is_trained

    @property
    def memory_bytes(self) -> int:
        """Bytes held in host memory: vectors or codes, ids, centroids, code books, hash tables."""
        return self._handle.memory_bytes

    @property
    def next_id(self) -> int:
        """The id `add` gives the next row when no ids are passed."""
        return self._handle.next_id

    def __len__(self) -> int:
        return self._handle.size

    def __repr__(self) -> str:
        if self._h is None or self._h.closed:
            return "simkit.Index(<closed>)"
        return f"simkit.Index('{self.description}', d={self.d}, metric='{self.metric}', ntotal={self.ntotal})"

    # ------------------------------------------------------------------ building
    def train(self, X: Any, **kw: Any) -> None:
        """Learns the cells (ivf_flat, ivf_pq: n >= nlist), the code books (ivf_pq) or the
        projections (lsh) from representative rows; nothing for flat.
        A non-empty index refuses (ValueError). GPU arrays are copied to the host once."""
        self._handle.train(A.to_host(X, "X"), _ctx(kw))

    def add(self, X: Any, ids: Any = None, **kw: Any) -> None:
        """Stores the rows of X (n x d) under `ids` (n int64, none stored yet nor repeated), or
        under next_id, next_id + 1, ... Rows with NaN/Inf or clashing ids are refused before
        anything is stored. GPU arrays are copied to the host once."""
        h = self._handle
        Xh = A.to_host(X, "X")
        idv = None if ids is None else A.integer_in(A.host_copy(ids, "ids"), "ids")
        h.add(Xh, idv, _ctx(kw))

    def reserve(self, rows: int) -> None:
        """Makes room for `rows` rows in all before adding a large base in batches: the storage
        then grows once instead of by half again at a time (both arrays held while it moves).
        Flat sizes its rows and ids; other kinds may ignore it. ValueError for rows < 0.

        >>> index = simkit.Index("flat", 128, "l2")
        >>> index.reserve(100_000_000)
        >>> for chunk in chunks: index.add(chunk)
        """
        self._handle.reserve(int(rows))

    def remove(self, ids: Any) -> int:
        """Removes the vectors with these ids (ids not stored are ignored); returns how many."""
        return self._handle.remove(A.integer_in(A.host_copy(ids, "ids"), "ids"))

    # ------------------------------------------------------------------ searching
    @overload
    def search(self, Q: npt.NDArray[Any], k: int, *, nprobe: Union[int, str, None] = ..., refine: Optional[int] = ...,
               probes: Optional[int] = ..., ef: Optional[int] = ..., allowed: Any = ...,
               stats: Optional[Dict[str, int]] = ...,
               **kw: Any) -> Tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
    @overload
    def search(self, Q: Any, k: int, *, nprobe: Union[int, str, None] = ..., refine: Optional[int] = ...,
               probes: Optional[int] = ..., ef: Optional[int] = ..., allowed: Any = ...,
               stats: Optional[Dict[str, int]] = ...,
               **kw: Any) -> Tuple[Any, Any]: ...
    def search(self, Q: Any, k: int, *, nprobe: Union[int, str, None] = None, refine: Optional[int] = None,
               probes: Optional[int] = None, ef: Optional[int] = None, allowed: Any = None,
               stats: Optional[Dict[str, int]] = None,
               **kw: Any) -> Tuple[Any, Any]:
        """``D, I = index.search(Q, k)``: per query row, the k best stored vectors, best first.

        D (m x k float32) holds the metric's values, I (m x k int64) the ids given to `add`;
        rows with fewer than k results are padded with id -1 and +inf (distances) or -inf
        (similarities). nprobe (ivf_flat, ivf_pq): lists scanned, 1..nlist, or 'seed'; refine
        (ivf_pq): re-rank refine x k candidates exactly; probes (lsh): buckets probed per table;
        ef (hnsw): candidates kept by the graph search (at least k; more: higher recall, slower);
        None: the index's default. A knob the index type does not read raises ValueError
        ("refine applies to ivf_pq; this index is ivf_flat") rather than being ignored. A dict passed as `stats` receives 'short_rows' (queries that
        got fewer than k candidates: padded, never topped up by a full scan), 'candidates'
        (candidates compared, summed over the queries) and 'gathered' (1 when an `allowed`
        search copied the allowed rows out and searched only them, 0 when it tested the list
        inside its scan or had no list). Q may be a GPU array (torch, CuPy): the results come
        back there.

        allowed: restricts the search to the stored vectors with these ids. Any 1-D integer
        array-like on the host (list, NumPy int32/int64, a CPU tensor), sorted ascending
        without repeats: the same contract as SearchParams::allowed in C++, so a list out of
        order raises ValueError naming the first bad position rather than being sorted behind
        your back (FAISS's IDSelectorBatch takes any order; here ``np.unique(ids)`` is the
        caller's one-line fix). GPU arrays are refused (ValueError): the list is read in host
        memory, even when Q is on the GPU. The top k is taken among the allowed vectors, not
        filtered out of an unrestricted top k, so a selective list still fills k slots. The
        index picks, by how selective the list is, between gathering the allowed rows (searched
        exactly whatever nprobe; stats['gathered']) and testing the list inside its usual scan,
        where ivf_flat and ivf_pq probe nprobe lists as an unrestricted search does (nprobe =
        nlist: every list). ivf_pq built with refine=0 ranks by its code estimates. Ids not
        stored are ignored; with fewer than k allowed vectors (an empty list: none) rows are
        padded as above.

        >>> X = np.random.default_rng(1).standard_normal((1000, 16), dtype=np.float32)
        >>> index = simkit.Index("flat", 16); index.add(X)
        >>> D, I = index.search(X[:3], 4, allowed=[2, 5, 7, 11, 13])
        >>> bool(np.isin(I, [2, 5, 7, 11, 13]).all())
        True
        >>> index.search(X[:3], 4, allowed=[5, 2])      # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: allowed must be sorted ascending without repeats ...; position 1 holds 2 after 5
        """
        h = self._handle
        k = A.positive_int(k, "k")
        Qa = A.array_in(Q, "Q")
        lists = _nprobe(nprobe)
        ids = None if allowed is None else _allowed_ids(allowed)
        m = Qa.shape[0]
        results = A.Results(Qa)
        D, I = results.empty((m, k), "float32"), results.empty((m, k), "int64")
        short_rows, candidates, gathered = h.search(
            Qa, k, lists, _non_negative(refine, "refine"), _non_negative(probes, "probes"),
            _non_negative(ef, "ef"), ids, D, I, _ctx(kw),
            results.stream,
        )
        if stats is not None:
            stats["short_rows"] = short_rows
            stats["candidates"] = candidates
            stats["gathered"] = gathered
        return results.finish(D), results.finish(I)

    # ------------------------------------------------------------------ files and lifetime
    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the whole index atomically (temporary file, flush, rename): a failure leaves
        the previous file as it was. OSError on failure."""
        self._handle.save(os.fspath(path))

    def close(self) -> None:
        """Frees the index now; later calls raise ValueError. Searches already running finish."""
        if self._h is not None:
            self._h.close()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getstate__(self) -> bytes:
        # Pickled through the file format, so a pickle is checked like a file when loaded.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "index.simkit")
            self.save(path)
            with open(path, "rb") as f:
                return f.read()

    def __setstate__(self, state: bytes) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "index.simkit")
            with open(path, "wb") as f:
                f.write(state)
            self._h = _simkit.IndexHandle.load(path)


def _nprobe(nprobe: Union[int, str, None]) -> int:
    if nprobe is None:
        return 0
    if isinstance(nprobe, str):
        if nprobe != "seed":
            raise ValueError(f"nprobe must be a positive integer, 'seed' or None, got '{nprobe}'")
        return int(_simkit.SEED_PROBES)
    return A.positive_int(nprobe, "nprobe")


def _allowed_ids(allowed: Any) -> npt.NDArray[np.int64]:
    """An allow-list as the C++ side reads it: a C-contiguous int64 host array, checked to be
    1-D and sorted ascending without repeats (index.hpp's contract, not sorted for the caller)."""
    if A.on_gpu(allowed):
        raise ValueError(
            "allowed is a GPU array but the allow-list is read in host memory; pass a host copy "
            "(tensor.cpu(), cupy.asnumpy(a), or a NumPy array)"
        )
    try:
        a = np.asarray(A.host_copy(allowed, "allowed"))
    except Exception as e:  # noqa: BLE001 - whatever asarray chokes on, the message says why
        raise ValueError(f"allowed cannot be read as an array of ids: {e}") from None
    if a.size == 0 and a.dtype.kind == "f":
        a = a.astype(np.int64)  # np.asarray([]) is float64: an empty list allows nothing
    if a.dtype.kind not in "iu":
        raise ValueError(f"allowed must hold integer ids, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"allowed must be 1-D, got {a.ndim}-D with shape {a.shape}")
    if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise ValueError(f"allowed holds an id beyond int64: {int(a.max())}")
    a = np.ascontiguousarray(a, dtype=np.int64)
    if a.size > 1:
        bad = np.flatnonzero(a[1:] <= a[:-1])
        if bad.size:
            i = int(bad[0]) + 1
            raise ValueError(
                "allowed must be sorted ascending without repeats (pass np.unique(allowed) for any "
                f"order); position {i} holds {int(a[i])} after {int(a[i - 1])}"
            )
    return a


def _non_negative(value: Optional[int], name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer or None, got {value!r}")
    return int(value)


def _ctx(kw: Dict[str, Any]) -> _simkit.Context:
    return A.context_from_keywords(kw)
