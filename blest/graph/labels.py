"""Vertex ids as the user knows them: a graph's ``labels`` and the map to its vertices 0..n-1.

A graph read with ``relabel=True`` (CLI ``--relabel``), from a NetworkX graph whose nodes are not
the integers ``0 .. n-1``, or from a DataFrame whose ids are not integers keeps ``labels[i]``,
the user's id of vertex i. Every call that takes vertices from a user takes these ids, and every
result that names a vertex (a parent) names it by its id; a result with one entry per vertex
(levels, scores) is in vertex order, which is the order of ``labels`` (:func:`user_ids`). A
graph without labels is its own map: id i is vertex i.

Lookups refuse what is not a vertex: :class:`~blest.errors.VertexError` for an id the graph
does not have, :class:`~blest.errors.ArgumentError` for something that cannot be an id (a
float where ids are integers, a 2-D array, a string where a list is expected).
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

from blest.errors import ArgumentError, VertexError
from blest.graph.core import Graph

__all__ = [
    "factorize",
    "id_sequence",
    "ids_to_vertices",
    "parents_as_ids",
    "storable_labels",
    "user_ids",
    "vertex_of",
    "vertices_of",
    "seeds_of",
]


def user_ids(graph: Graph) -> np.ndarray:
    """The user's id of every vertex, in vertex order: ``labels``, or ``0 .. n-1``."""
    if graph.labels is not None:
        return np.asarray(graph.labels)
    return np.arange(graph.n, dtype=np.int64)


# ---------------------------------------------------------------------- one id
def vertex_of(graph: Graph, vertex: Any) -> int:
    """The vertex (0 .. n-1) of the user's id ``vertex``."""
    if graph.labels is None:
        return _plain_vertex(vertex, graph.n)
    return int(_index(graph).one(vertex))


def _plain_vertex(vertex: Any, n: int) -> int:
    if isinstance(vertex, (bool, np.bool_)):
        raise ArgumentError(f"a vertex id must be an integer, got the boolean {vertex!r}")
    try:
        v = operator.index(vertex)
    except TypeError:
        raise ArgumentError(
            f"a vertex id must be an integer, got {vertex!r} ({type(vertex).__name__})"
        ) from None
    if not 0 <= v < n:
        raise VertexError(_out_of_range(v, n))
    return v


def _out_of_range(v: Any, n: int) -> str:
    if n <= 0:
        return f"vertex {v} is out of range: the graph has no vertices"
    return f"vertex {v} is out of range for a graph of {n} vertices (ids 0..{n - 1})"


# ---------------------------------------------------------------------- several ids
def seeds_of(graph: Graph, source: Any) -> np.ndarray:
    """The vertices of a BFS's seeds: one id, or a non-empty 1-D sequence of ids (int64,
    repeats kept)."""
    if _is_one(graph, source):
        return np.array([vertex_of(graph, source)], dtype=np.int64)
    out = vertices_of(graph, source, what="seeds")
    if out.size == 0:
        raise ArgumentError("at least one seed vertex is needed, got an empty sequence")
    return out


def vertices_of(graph: Graph, ids: Any, *, what: str = "sources") -> np.ndarray:
    """The vertices of a 1-D sequence of user ids (int64, order and repeats kept; may be
    empty). One id alone, a string or a 2-D array is an :class:`ArgumentError`."""
    items = id_sequence(ids, what=what)
    if graph.labels is not None:
        return _index(graph).many(items, what)
    return _plain_vertices(items, graph.n, what)


def id_sequence(ids: Any, *, what: str = "sources") -> list | np.ndarray:
    """``ids`` as a list or a 1-D NumPy array (iterators consumed), checked for what needs
    no graph: one id alone, a string, a mapping or a 2-D array is an :class:`ArgumentError`."""
    if isinstance(ids, (str, bytes)) or _is_scalar(ids):
        raise ArgumentError(
            f"{what} must be a 1-D sequence of vertex ids, got {ids!r} "
            f"({type(ids).__name__}); for one vertex v pass [v]"
        )
    if hasattr(ids, "__cuda_array_interface__") and hasattr(ids, "get"):
        ids = ids.get()  # a CuPy array
    if isinstance(ids, dict) or not isinstance(ids, (np.ndarray, Iterable)):
        raise ArgumentError(
            f"{what} must be a 1-D sequence of vertex ids, got a {type(ids).__name__}"
        )
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1:
            raise ArgumentError(
                f"{what} must be a 1-D sequence of vertex ids, got shape {ids.shape}"
            )
        return ids
    return list(ids)


def _is_scalar(x: Any) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim == 0
    return isinstance(x, (int, float, complex, np.generic))


def _plain_vertices(items: Any, n: int, what: str) -> np.ndarray:
    try:
        arr = np.asarray(items)
    except ValueError:  # ragged nesting
        raise ArgumentError(f"{what} must be a 1-D sequence of vertex ids") from None
    if arr.ndim != 1:
        raise ArgumentError(f"{what} must be a 1-D sequence of vertex ids, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind == "O":
        return np.array([_plain_vertex(v, n) for v in arr.tolist()], dtype=np.int64)
    if arr.dtype.kind not in "iu":
        raise ArgumentError(f"{what} must be integer vertex ids, got dtype {arr.dtype}")
    bad = np.flatnonzero((arr < 0) | (arr >= n))
    if bad.size:
        i = int(bad[0])
        raise VertexError(f"{what}[{i}]: {_out_of_range(int(arr[i]), n)}")
    return arr.astype(np.int64, copy=False)


def _is_one(graph: Graph, source: Any) -> bool:
    """Whether ``source`` names one vertex rather than a sequence of seeds."""
    if graph.labels is not None and _index(graph).has(source):
        return True
    if isinstance(source, (str, bytes)):
        return True  # a label the graph lacks (vertex_of says so), never a sequence
    if isinstance(source, np.ndarray):
        return source.ndim == 0
    return not isinstance(source, Iterable) or isinstance(source, dict)


# ---------------------------------------------------------------------- results
def parents_as_ids(graph: Graph, parents: np.ndarray) -> np.ndarray:
    """BFS parents (vertices, -1 for none) as the user's ids.

    Without labels: ``parents`` itself. With integer labels that are all >= 0 (files read with
    ``relabel``): int64 ids, -1 for none. Other labels (strings, any NetworkX node): an object
    array of the labels, None for none.
    """
    if graph.labels is None:
        return parents
    labels = np.asarray(graph.labels)
    has = parents >= 0
    if _nonnegative_ints(labels):
        out = np.full(parents.shape, -1, dtype=np.int64)
    else:
        out = np.full(parents.shape, None, dtype=object)
        labels = labels.astype(object)
    out[has] = labels[parents[has]]
    return out


def ids_to_vertices(graph: Graph, ids: Any) -> np.ndarray:
    """The inverse of :func:`parents_as_ids`: a 1-D array of the user's ids, negative numbers
    (integer ids) or None (other ids) meaning "none", as vertices with -1 for none."""
    if graph.labels is None:
        return np.asarray(ids)
    items = list(ids.tolist() if isinstance(ids, np.ndarray) else ids)
    integer = _nonnegative_ints(np.asarray(graph.labels))
    none = [v is None or (integer and _is_negative_int(v)) for v in items]
    out = np.full(len(items), -1, dtype=np.int64)
    known = [v for v, skip in zip(items, none, strict=True) if not skip]
    if known:
        out[~np.array(none, dtype=bool)] = _index(graph).many(known, "parents")
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_negative_int(v: Any) -> bool:
    return _is_int(v) and v < 0


def _nonnegative_ints(labels: np.ndarray) -> bool:
    return labels.dtype.kind in "iu" and (labels.size == 0 or int(labels.min()) >= 0)


# ---------------------------------------------------------------------- building labels
def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, labels)`` of hashable ids: ``labels[codes] == values``; labels sorted when the
    ids can be ordered (all strings, all numbers), else in order of first appearance."""
    values = np.asarray(values, dtype=object)
    try:
        labels, codes = np.unique(values, return_inverse=True)
    except TypeError:  # ids of several kinds: the order they first appear in
        index: dict[Any, int] = {}
        codes = np.fromiter(
            (index.setdefault(v, len(index)) for v in values.tolist()),
            dtype=np.int64,
            count=values.size,
        )
        labels = np.fromiter(index, dtype=object, count=len(index))
    return codes.astype(np.int64).reshape(-1), labels


def storable_labels(labels: Any) -> np.ndarray:
    """Labels as an array NumPy stores without pickle: int64, or str; :class:`ArgumentError`
    for other labels (tuples, mixed kinds)."""
    labels = np.asarray(labels)
    if labels.dtype.kind in "iu":
        if labels.dtype.kind == "u" and labels.size and int(labels.max()) > 2**63 - 1:
            raise ArgumentError("vertex labels above 2**63 - 1 cannot be stored")
        return labels.astype(np.int64)
    if labels.dtype.kind == "U":
        return labels
    items = labels.tolist() if labels.dtype.kind == "O" else None
    if items is not None and all(isinstance(v, str) for v in items):
        return labels.astype(str)
    if items is not None and all(_is_int(v) and -(2**63) <= v < 2**63 for v in items):
        return labels.astype(np.int64)
    raise ArgumentError(
        f"vertex labels of dtype {labels.dtype} cannot be stored (only integers or strings)"
    )


# ---------------------------------------------------------------------- the lookup
class _Index:
    """Label → vertex for one graph: binary search over sorted integer or string labels, a
    dict for any other labels."""

    def __init__(self, labels: np.ndarray) -> None:
        self.labels = labels
        self.table: dict[Any, int] | None = None
        if labels.dtype.kind == "u" and labels.size and int(labels.max()) > 2**63 - 1:
            labels = labels.astype(object)  # beyond int64: looked up one by one
        self.kind = "i" if labels.dtype.kind in "iu" else labels.dtype.kind
        if self.kind in "iU":
            keys = labels.astype(np.int64) if self.kind == "i" else labels
            increasing = keys.size < 2 or bool(np.all(keys[1:] > keys[:-1]))
            self.order = None if increasing else np.argsort(keys, kind="stable")
            self.sorted = keys if increasing else keys[self.order]
        else:
            self.table = {v: i for i, v in enumerate(labels.tolist())}

    def has(self, label: Any) -> bool:
        try:
            self.one(label)
        except (ArgumentError, VertexError):
            return False
        return True

    def one(self, label: Any) -> int:
        if self.table is not None:
            try:
                return self.table[label]
            except KeyError:
                raise VertexError(_missing(label)) from None
            except TypeError:
                raise ArgumentError(f"{label!r} cannot be a vertex id (unhashable)") from None
        key = self._key(label)
        found = self._search(np.array([key], dtype=np.int64 if self.kind == "i" else str))
        if found[0] < 0:
            raise VertexError(_missing(label))
        return int(found[0])

    def many(self, items: Any, what: str) -> np.ndarray:
        if self.table is not None:
            if isinstance(items, np.ndarray):
                items = items.tolist()
            return np.array([self.one(v) for v in items], dtype=np.int64).reshape(-1)
        arr = items if isinstance(items, np.ndarray) else None
        if arr is not None and arr.dtype.kind == "u" and arr.size and arr.max() > 2**63 - 1:
            arr = None  # ids beyond int64: checked one by one
        if arr is None or arr.dtype.kind not in ("iu" if self.kind == "i" else "U"):
            dtype = np.int64 if self.kind == "i" else str
            arr = np.array([self._key(v) for v in items], dtype=dtype).reshape(-1)
        elif self.kind == "i":
            arr = arr.astype(np.int64, copy=False)
        if arr.ndim != 1:
            raise ArgumentError(
                f"{what} must be a 1-D sequence of vertex ids, got shape {arr.shape}"
            )
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        found = self._search(arr)
        bad = np.flatnonzero(found < 0)
        if bad.size:
            i = int(bad[0])
            raise VertexError(f"{what}[{i}]: {_missing(arr[i].item())}")
        return found

    def _key(self, label: Any) -> Any:
        if self.kind == "i":
            if isinstance(label, (bool, np.bool_)):
                raise ArgumentError(f"vertex ids of this graph are integers, got {label!r}")
            try:
                key = operator.index(label)
            except TypeError:
                raise ArgumentError(
                    f"vertex ids of this graph are integers, got {label!r} ({type(label).__name__})"
                ) from None
            if not -(2**63) <= key < 2**63:
                raise VertexError(_missing(label))
            return key
        if not isinstance(label, str):
            raise ArgumentError(
                f"vertex ids of this graph are strings, got {label!r} ({type(label).__name__})"
            )
        return label

    def _search(self, keys: np.ndarray) -> np.ndarray:
        """Vertex of each key, -1 where there is none."""
        s = self.sorted
        if s.size == 0:
            return np.full(keys.shape, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(s, keys), s.size - 1)
        hit = s[at] == keys
        where = at if self.order is None else self.order[at]
        return np.where(hit, where, -1).astype(np.int64)


def _missing(label: Any) -> str:
    return f"vertex {label!r} does not occur in the graph"


_INDEXES: weakref.WeakKeyDictionary[Graph, _Index] = weakref.WeakKeyDictionary()


def _index(graph: Graph) -> _Index:
    """The lookup of ``graph``'s labels, built once per graph."""
    found = _INDEXES.get(graph)
    if found is None or found.labels is not graph.labels:
        found = _INDEXES[graph] = _Index(np.asarray(graph.labels))
    return found
