"""The prepared artifact: a :class:`~blest.graph.prepared.Prepared` graph on disk, so that an
engine can be built while the source graph is gone.

A ``.npz`` (zip of ``.npy`` members, written atomically, byte-for-byte reproducible) holding

* ``format`` ("blest-prepared"), ``version``, ``graph_hash`` (:meth:`Graph.content_hash`),
  ``n``, ``directed``, ``ordering``;
* the cleaned graph in the user's ids: ``graph_out_deg``/``graph_out_idx`` (and
  ``graph_in_deg``/``graph_in_idx`` when directed);
* the permutation: ``new_of_old_delta``, ``old_of_new_delta`` (int32 differences);
* the reordered graph's in-adjacency (``in_deg``, ``in_idx``), read by the bottom-up step;
* the BVSS at the chosen sigma: ``sigma``, ``nnz``, ``real_slices``, ``row_ids``, ``masks``,
  ``real_counts`` (VSSs per slice set), ``virtual_to_real``;
* ``labels`` (int64 or str), only for a graph with labels (read with ``--relabel``): the
  user's id of every vertex, so that a config takes and reports the input's own ids. An
  artifact without it is a graph without labels;
* ``hops`` and ``hop_*``, only for a variant that runs several levels a phase (``hops`` = K >
  1): the BVSS of B = A + ... + A^K with its K - 1 rows of near masks (``hop_nnz``,
  ``hop_real_slices``, ``hop_row_ids``, ``hop_masks``, ``hop_near_masks``, ``hop_real_counts``,
  ``hop_virtual_to_real``), so that loading builds nothing.

Per-vertex arrays are stored as degrees and differences and deflated, so that isolated vertices
and sparse ids cost next to nothing; the arrays that grow with the arcs are stored uncompressed,
so that loading stays as fast as reading them (deflating everything made kron-21's artifact 45%
smaller but its loading 6x slower). Version 1 (row pointers and permutations stored as they
are, nothing deflated) is still read.

Loading reads the file once into memory (:mod:`.artifact_file`; the caller may hash those
bytes), and the stored members are views into it (:class:`~blest.graph.io.zipnpy.NpzBuffer`).
It checks the structure in O(n + arcs) without sorting (:mod:`.artifact_checks`): a
consistently edited artifact whose checksum was updated is refused instead of running wrong.
Only the members an artifact has are read, scalars first, and each array only after its
declared size is checked against them (no member may hold more elements than ``n`` and
``nnz`` allow) and against the memory limit; members of other names are never inflated.
Version 3 adds the optional B members; versions 1 and 2 are read.
"""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

from blest.errors import ConfigError
from blest.graph.bvss import BVSS
from blest.graph.core import CleaningReport, Graph
from blest.graph.io.zipnpy import NpzBuffer
from blest.graph.labels import storable_labels
from blest.graph.ordering import Permutation
from blest.graph.prepared import Prepared
from blest.tuning.artifact_checks import check_hop_bvss, check_structure
from blest.tuning.artifact_file import ArtifactBytes, ArtifactFile
from blest.tuning.storage import atomic_write

__all__ = [
    "ARTIFACT_FORMAT",
    "ARTIFACT_VERSION",
    "Prepared",
    "save_artifact",
    "write_artifact",
    "load_artifact",
    "prepared_from_bytes",
]

ARTIFACT_FORMAT = "blest-prepared"
ARTIFACT_VERSION = 3
#: Versions this blest reads.
READ_VERSIONS = (1, 2, 3)
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # a fixed member time: equal preparations, equal bytes
_POINTERS = {"graph_out_deg": "graph_out_ptr", "graph_in_deg": "graph_in_ptr", "in_deg": "in_ptr"}
_PERMUTATIONS = ("new_of_old", "old_of_new")
_SCALARS = ("format", "version", "graph_hash", "n", "directed", "ordering")
_BVSS_SCALARS = ("sigma", "nnz", "real_slices")
#: Scalars of B's BVSS (several levels a phase), present only with it.
_HOP_SCALARS = ("hops", "hop_nnz", "hop_real_slices")
#: Errors a damaged archive may raise while it is read.
_DAMAGED = (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, RuntimeError,
            zlib.error, struct.error, NotImplementedError, TypeError, OverflowError)  # fmt: skip


# ---------------------------------------------------------------------- writing
def _members(prep: Prepared, hops: int = 1) -> list[tuple[str, np.ndarray, bool]]:
    """(name, array, deflate) of every member, in file order (``hops`` > 1: B's BVSS too)."""
    g, b, p = prep.graph, prep.bvss.to_numpy(), prep.permutation

    def deg(ptr: Any) -> np.ndarray:
        return np.diff(np.asarray(ptr, dtype=np.int64)).astype(np.int32)

    def delta(a: Any) -> np.ndarray:
        return np.diff(np.asarray(a, dtype=np.int32), prepend=np.int32(0))

    out = [
        ("format", np.array(ARTIFACT_FORMAT), False),
        ("version", np.array(ARTIFACT_VERSION, dtype=np.int64), False),
        ("graph_hash", np.array(g.content_hash()), False),
        ("n", np.array(g.n, dtype=np.int64), False),
        ("directed", np.array(bool(g.directed)), False),
        ("ordering", np.array(prep.ordering), False),
        ("graph_out_deg", deg(g.out_ptr), True),
        ("graph_out_idx", np.asarray(g.out_idx, dtype=np.int32), False),
    ]
    if g.directed:
        out.append(("graph_in_deg", deg(g.in_ptr), True))
        out.append(("graph_in_idx", np.asarray(g.in_idx, dtype=np.int32), False))
    out += [
        ("new_of_old_delta", delta(p.new_of_old), True),
        ("old_of_new_delta", delta(p.old_of_new), True),
        ("in_deg", deg(prep.in_ptr), True),
        ("in_idx", np.asarray(prep.in_idx, dtype=np.int32), False),
        ("sigma", np.array(b.sigma, dtype=np.int64), False),
        ("nnz", np.array(b.nnz, dtype=np.int64), False),
        ("real_slices", np.array(b.real_slices, dtype=np.int64), False),
        ("row_ids", np.asarray(b.row_ids, dtype=np.int32), False),
        ("masks", np.asarray(b.masks, dtype=np.uint32), False),
        ("real_counts", deg(b.real_ptrs), True),
        ("virtual_to_real", np.asarray(b.virtual_to_real, dtype=np.int32), True),
    ]
    if g.labels is not None:
        out.append(("labels", storable_labels(g.labels), True))
    if hops > 1:
        h = prep.hops_bvss(hops).to_numpy()
        out += [
            ("hops", np.array(hops, dtype=np.int64), False),
            ("hop_nnz", np.array(h.nnz, dtype=np.int64), False),
            ("hop_real_slices", np.array(h.real_slices, dtype=np.int64), False),
            ("hop_row_ids", np.asarray(h.row_ids, dtype=np.int32), False),
            ("hop_masks", np.asarray(h.masks, dtype=np.uint32), False),
            ("hop_near_masks", np.atleast_2d(np.asarray(h.near_masks, np.uint32)), False),
            ("hop_real_counts", deg(h.real_ptrs), True),
            ("hop_virtual_to_real", np.asarray(h.virtual_to_real, dtype=np.int32), True),
        ]
    return out


def write_artifact(f: IO[bytes], prep: Prepared, hops: int = 1) -> None:
    """Write ``prep`` as an artifact into the binary file ``f`` (seekable); ``hops`` > 1 also
    stores the BVSS of B = A + ... + A^hops that the variant reads."""
    zf = zipfile.ZipFile(f, "w", allowZip64=True)
    try:
        for name, array, deflate in _members(prep, hops):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    except BaseException:
        # Interrupted (a signal) or failed: the caller discards the file. Closing the archive
        # now would raise about the open member and hide the reason, so abandon it.
        zf.fp = None
        raise
    zf.close()


def save_artifact(path: str | os.PathLike[str], prep: Prepared, hops: int = 1) -> Path:
    """Write ``prep`` to ``path`` atomically (exactly that name); ``hops`` as for
    :func:`write_artifact`."""
    return atomic_write(path, lambda f: write_artifact(f, prep, hops))


# ---------------------------------------------------------------------- reading
def _scalar(arrays: dict[str, np.ndarray], key: str) -> Any:
    a = arrays[key]
    if a.shape != ():
        raise ValueError(f"{key} is not a scalar")
    return a.item()


def _read_members(raw: ArtifactBytes, where: str, verified: bool) -> dict[str, np.ndarray]:
    """The members of the artifact ``raw`` (stored ones are views into its bytes)."""
    try:
        with NpzBuffer(raw.data, raw.room, verified=verified) as members:
            arrays = {k: members.read(k, max_items=1) for k in _SCALARS + _BVSS_SCALARS}
            for k in _HOP_SCALARS:
                if k in members.names:
                    arrays[k] = members.read(k, max_items=1)
            bounds = _bounds(arrays)
            for k in sorted(members.names & bounds.keys()):
                shape, _ = members.header(k)
                count = int(np.prod(shape, dtype=object)) if shape else 1
                if count > bounds[k]:
                    raise ConfigError(
                        f"prepared artifact {where} is inconsistent: {k} has {count} elements, "
                        f"more than its n, nnz and sigma allow ({bounds[k]})"
                    )
                arrays[k] = members.read(k, max_items=bounds[k])
            return arrays
    except ConfigError:
        raise
    except _DAMAGED:
        raise ConfigError(
            f"prepared artifact {where} is damaged (not a readable blest artifact)"
        ) from None


def _bounds(scalars: dict[str, np.ndarray]) -> dict[str, int]:
    """The most elements each array member may hold, from the artifact's n, nnz and sigma."""
    n, nnz, sigma = (int(_scalar(scalars, k)) for k in ("n", "nnz", "sigma"))
    if n < 0 or nnz < 0 or sigma < 1:
        raise ValueError(f"n = {n}, nnz = {nnz}, sigma = {sigma}")
    sets = -(-n // sigma) + 1
    vss = nnz + sets  # a VSS holds at least one arc
    tau = 32 * max(1, 32 // sigma)
    per_vertex = ("graph_out_deg", "graph_in_deg", "in_deg") + tuple(
        f"{k}_delta" for k in _PERMUTATIONS
    )
    out = dict.fromkeys(per_vertex + _PERMUTATIONS + ("labels",), n)
    out.update(dict.fromkeys(_POINTERS.values(), n + 1))
    out.update(dict.fromkeys(("graph_out_idx", "graph_in_idx", "in_idx"), nnz))
    out.update(real_counts=sets, real_ptrs=sets, virtual_to_real=vss)
    out.update(row_ids=vss * tau, masks=vss * 32)
    if "hop_nnz" in scalars:  # B's BVSS: a simple graph's arcs at most, so n (n - 1)
        hops, hop_nnz = int(_scalar(scalars, "hops")), int(_scalar(scalars, "hop_nnz"))
        if not 2 <= hops <= 3 or not 0 <= hop_nnz <= n * max(n - 1, 0):
            raise ValueError(f"hops = {hops}, hop_nnz = {hop_nnz}")
        hop_vss = hop_nnz + sets
        out.update(hop_real_counts=sets, hop_virtual_to_real=hop_vss)
        out.update(hop_row_ids=hop_vss * tau, hop_masks=hop_vss * 32)
        out.update(hop_near_masks=(hops - 1) * hop_vss * 32)
    return out


def _want(arrays: dict[str, np.ndarray], key: str, dtype: Any) -> np.ndarray:
    a = arrays[key]
    if a.dtype != np.dtype(dtype) or a.ndim != 1:
        raise ConfigError(f"{key} is {a.dtype} of {a.ndim} dimensions, expected 1-d {dtype}")
    return a


def _pointers(deg: np.ndarray) -> np.ndarray:
    ptr = np.zeros(deg.size + 1, dtype=np.int64)
    np.cumsum(deg, out=ptr[1:])
    return ptr


def _decode(arrays: dict[str, np.ndarray], version: int, directed: bool) -> dict[str, np.ndarray]:
    """The arrays in memory form: row pointers (int64) and both permutations (int32)."""
    idx = ["graph_out_idx", "in_idx", "row_ids", "virtual_to_real"]
    idx += ["graph_in_idx"] if directed else []
    out = {k: _want(arrays, k, np.int32) for k in idx}
    out["masks"] = _want(arrays, "masks", np.uint32)
    pointers = [k for k in _POINTERS if directed or k != "graph_in_deg"]
    if version == 1:
        for k in pointers:
            out[_POINTERS[k]] = _want(arrays, _POINTERS[k], np.int64)
        for k in _PERMUTATIONS:
            out[k] = _want(arrays, k, np.int32)
        out["real_ptrs"] = _want(arrays, "real_ptrs", np.int32).astype(np.int64)
        return out
    for k in pointers:
        deg = _want(arrays, k, np.int32)
        if deg.size and deg.min() < 0:
            raise ConfigError(f"{k} has a negative degree")
        out[_POINTERS[k]] = _pointers(deg)
    for k in _PERMUTATIONS:
        out[k] = np.cumsum(_want(arrays, f"{k}_delta", np.int32), dtype=np.int32)
    counts = _want(arrays, "real_counts", np.int32)
    if counts.size and counts.min() < 0:
        raise ConfigError("real_counts has a negative count")
    out["real_ptrs"] = _pointers(counts)
    return out


def _labels(arrays: dict[str, np.ndarray], n: int) -> np.ndarray | None:
    """The optional ``labels`` member: n distinct int64 or str ids."""
    labels = arrays.get("labels")
    if labels is None:
        return None
    if labels.shape != (n,) or not (labels.dtype == np.int64 or labels.dtype.kind == "U"):
        raise ConfigError(f"labels must be {n} int64 or str ids, got {labels.dtype} {labels.shape}")
    if np.unique(labels).size != n:
        raise ConfigError("labels name some vertex twice")
    return labels


def _prepared(
    arrays: dict[str, np.ndarray], a: dict[str, np.ndarray], n: int, directed: bool, source: Any
) -> Prepared:
    """Build the objects from checked arrays ``a`` (scalars still in ``arrays``)."""
    graph = Graph.from_csr(
        a["graph_out_ptr"],
        a["graph_out_idx"],
        n,
        directed=directed,
        in_ptr=a["graph_in_ptr"] if directed else None,
        in_idx=a["graph_in_idx"] if directed else None,
        labels=_labels(arrays, n),
        report=CleaningReport(source=source, format="blest-prepared"),
    )
    ordering = str(_scalar(arrays, "ordering"))
    perm = Permutation(a["new_of_old"], a["old_of_new"], ordering)
    bvss = BVSS(
        sigma=int(_scalar(arrays, "sigma")),
        n=n,
        nnz=int(_scalar(arrays, "nnz")),
        row_ids=a["row_ids"],
        masks=a["masks"],
        real_ptrs=a["real_ptrs"].astype(np.int32),
        virtual_to_real=a["virtual_to_real"],
        real_slices=int(_scalar(arrays, "real_slices")),
    )
    return Prepared(graph, ordering, perm, a["in_ptr"], a["in_idx"], bvss)


def _hop_bvss(arrays: dict[str, np.ndarray], n: int, sigma: int, hops: int) -> BVSS:
    """B's BVSS from the ``hop_*`` members, checked as a BVSS of ``hop_nnz`` arcs whose near
    masks each hold a subset of the next's bits."""
    counts = _want(arrays, "hop_real_counts", np.int32)
    if counts.size and counts.min() < 0:
        raise ConfigError("hop_real_counts has a negative count")
    b = {
        "row_ids": _want(arrays, "hop_row_ids", np.int32),
        "masks": _want(arrays, "hop_masks", np.uint32),
        "real_ptrs": _pointers(counts),
        "virtual_to_real": _want(arrays, "hop_virtual_to_real", np.int32),
    }
    nnz = int(_scalar(arrays, "hop_nnz"))
    near = arrays["hop_near_masks"]
    if near.dtype != np.uint32 or near.shape != (hops - 1, b["masks"].size):
        raise ConfigError(f"hop_near_masks is {near.dtype} {near.shape}, not {hops - 1} rows")
    check_hop_bvss(b, near, n=n, sigma=sigma, nnz=nnz)
    return BVSS(
        sigma=sigma,
        n=n,
        nnz=nnz,
        row_ids=b["row_ids"],
        masks=b["masks"],
        real_ptrs=b["real_ptrs"].astype(np.int32),
        virtual_to_real=b["virtual_to_real"],
        real_slices=int(_scalar(arrays, "hop_real_slices")),
        near_masks=near,
    )


def load_artifact(
    path: str | os.PathLike[str], *, source: str | None = None, graph_hash: str | None = None
) -> Prepared:
    """Read an artifact written by :func:`save_artifact` (version 1, 2 or 3) and check its
    structure; :class:`ConfigError` if it is malformed, inconsistent or (given
    ``graph_hash``) records another graph.

    Integrity of the file (its SHA-256 against the config) is checked by the caller, which
    then reads it with :class:`~blest.tuning.artifact_file.ArtifactFile` and
    :func:`prepared_from_bytes`.
    """
    with ArtifactFile(path) as f:
        raw = f.read()
    return prepared_from_bytes(raw, str(path), source=source, graph_hash=graph_hash)


def prepared_from_bytes(
    raw: ArtifactBytes,
    where: str,
    *,
    verified: bool = False,
    source: str | None = None,
    graph_hash: str | None = None,
) -> Prepared:
    """The artifact whose bytes are ``raw`` (read from ``where``), checked as
    :func:`load_artifact` says; its large arrays are views into ``raw.data``. ``verified``: the
    caller checked those bytes against a checksum, so the members' own CRC-32s are not."""
    arrays = _read_members(raw, where, verified)
    try:
        fmt, version = _scalar(arrays, "format"), _scalar(arrays, "version")
        if fmt != ARTIFACT_FORMAT or version not in READ_VERSIONS:
            raise ConfigError(
                f"{where} is not a blest prepared artifact of version "
                f"{', '.join(map(str, READ_VERSIONS))} (format {fmt!r}, version {version!r})"
            )
        recorded = str(_scalar(arrays, "graph_hash"))
        if graph_hash is not None and recorded != graph_hash:
            raise ConfigError(f"prepared artifact {where} was made from another graph")
        n, directed = int(_scalar(arrays, "n")), bool(_scalar(arrays, "directed"))
        sigma, nnz = int(_scalar(arrays, "sigma")), int(_scalar(arrays, "nnz"))
        a = _decode(arrays, int(version), directed)
        check_structure(a, n=n, directed=directed, sigma=sigma, nnz=nnz)
        prep = _prepared(arrays, a, n, directed, source)
        if "hops" in arrays:
            hops = int(_scalar(arrays, "hops"))
            prep.hop_cache[hops] = _hop_bvss(arrays, n, sigma, hops)
        return prep
    except ConfigError as exc:
        if str(exc).startswith((where, f"prepared artifact {where}")):
            raise
        raise ConfigError(f"prepared artifact {where} is inconsistent: {exc}") from None
    except KeyError as exc:
        raise ConfigError(f"prepared artifact {where} lacks {exc}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ConfigError(f"prepared artifact {where} is malformed ({exc})") from None
