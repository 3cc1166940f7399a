"""The prepared artifact: a :class:`~blest.graph.prepared.Prepared` graph on disk, so that an
engine can be built while the source graph is gone.

One uncompressed ``.npz`` (written atomically) holding

* ``format`` ("blest-prepared"), ``version``, ``graph_hash`` (:meth:`Graph.content_hash`),
  ``n``, ``directed``, ``ordering``;
* the cleaned graph in the user's ids: ``graph_out_ptr``/``graph_out_idx`` (and
  ``graph_in_ptr``/``graph_in_idx`` when directed);
* the permutation: ``new_of_old``, ``old_of_new`` (int32);
* the reordered graph's ``in_csr`` (``in_ptr``, ``in_idx``), read by the bottom-up step;
* the BVSS at the chosen sigma: ``sigma``, ``nnz``, ``real_slices``, ``row_ids``, ``masks``,
  ``real_ptrs``, ``virtual_to_real``.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from blest.errors import ConfigError
from blest.graph.bvss import BVSS
from blest.graph.core import CleaningReport, Graph
from blest.graph.ordering import Permutation
from blest.graph.prepared import Prepared
from blest.tuning.files import atomic_write

__all__ = ["ARTIFACT_FORMAT", "ARTIFACT_VERSION", "Prepared", "save_artifact", "load_artifact"]

ARTIFACT_FORMAT = "blest-prepared"
ARTIFACT_VERSION = 1


def save_artifact(path: str | os.PathLike[str], prep: Prepared) -> Path:
    """Write ``prep`` to ``path`` atomically (exactly that name)."""
    g, b, p = prep.graph, prep.bvss.to_numpy(), prep.permutation
    arrays: dict[str, np.ndarray] = {
        "format": np.array(ARTIFACT_FORMAT),
        "version": np.array(ARTIFACT_VERSION, dtype=np.int64),
        "graph_hash": np.array(g.content_hash()),
        "n": np.array(g.n, dtype=np.int64),
        "directed": np.array(bool(g.directed)),
        "ordering": np.array(prep.ordering),
        "graph_out_ptr": np.asarray(g.out_ptr, dtype=np.int64),
        "graph_out_idx": np.asarray(g.out_idx, dtype=np.int32),
        "new_of_old": np.asarray(p.new_of_old, dtype=np.int32),
        "old_of_new": np.asarray(p.old_of_new, dtype=np.int32),
        "in_ptr": np.asarray(prep.in_ptr, dtype=np.int64),
        "in_idx": np.asarray(prep.in_idx, dtype=np.int32),
        "sigma": np.array(b.sigma, dtype=np.int64),
        "nnz": np.array(b.nnz, dtype=np.int64),
        "real_slices": np.array(b.real_slices, dtype=np.int64),
        "row_ids": np.asarray(b.row_ids, dtype=np.int32),
        "masks": np.asarray(b.masks, dtype=np.uint32),
        "real_ptrs": np.asarray(b.real_ptrs, dtype=np.int32),
        "virtual_to_real": np.asarray(b.virtual_to_real, dtype=np.int32),
    }
    if g.directed:
        arrays["graph_in_ptr"] = np.asarray(g.in_ptr, dtype=np.int64)
        arrays["graph_in_idx"] = np.asarray(g.in_idx, dtype=np.int32)
    return atomic_write(path, lambda f: np.savez(f, **arrays))


def _scalar(arrays: dict[str, np.ndarray], key: str) -> Any:
    a = arrays[key]
    if a.shape != ():
        raise ValueError(f"{key} is not a scalar")
    return a.item()


def load_artifact(
    path: str | os.PathLike[str], *, source: str | None = None, graph_hash: str | None = None
) -> Prepared:
    """Read an artifact written by :func:`save_artifact`; :class:`ConfigError` if it is
    malformed or (given ``graph_hash``) records another graph.

    Integrity of the file (its SHA-256 against the config) is checked by the caller.
    """
    where = str(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except FileNotFoundError:
        raise ConfigError(f"prepared artifact {where} is missing") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise ConfigError(f"prepared artifact {where} is unreadable ({exc})") from None
    try:
        fmt, version = _scalar(arrays, "format"), _scalar(arrays, "version")
        if fmt != ARTIFACT_FORMAT or version != ARTIFACT_VERSION:
            raise ConfigError(
                f"{where} is not a blest prepared artifact of version {ARTIFACT_VERSION} "
                f"(format {fmt!r}, version {version!r})"
            )
        recorded = str(_scalar(arrays, "graph_hash"))
        if graph_hash is not None and recorded != graph_hash:
            raise ConfigError(f"prepared artifact {where} was made from another graph")
        n, directed = int(_scalar(arrays, "n")), bool(_scalar(arrays, "directed"))
        in_ptr = in_idx = None
        if directed:
            in_ptr, in_idx = arrays["graph_in_ptr"], arrays["graph_in_idx"]
        graph = Graph.from_csr(
            arrays["graph_out_ptr"],
            arrays["graph_out_idx"],
            n,
            directed=directed,
            in_ptr=in_ptr,
            in_idx=in_idx,
            report=CleaningReport(source=source, format="blest-prepared"),
        )
        ordering = str(_scalar(arrays, "ordering"))
        perm = Permutation(arrays["new_of_old"], arrays["old_of_new"], ordering)
        bvss = BVSS(
            sigma=int(_scalar(arrays, "sigma")),
            n=n,
            nnz=int(_scalar(arrays, "nnz")),
            row_ids=arrays["row_ids"],
            masks=arrays["masks"],
            real_ptrs=arrays["real_ptrs"],
            virtual_to_real=arrays["virtual_to_real"],
            real_slices=int(_scalar(arrays, "real_slices")),
        )
        shapes_ok = (
            graph.out_ptr.shape == (n + 1,)
            and perm.new_of_old.shape == (n,)
            and perm.old_of_new.shape == (n,)
            and arrays["in_ptr"].shape == (n + 1,)
            and bvss.real_ptrs.shape == (bvss.n_slice_sets + 1,)
            and bvss.nnz == graph.nnz
        )
        if not shapes_ok:
            raise ConfigError(f"prepared artifact {where} has inconsistent array sizes")
        return Prepared(graph, ordering, perm, arrays["in_ptr"], arrays["in_idx"], bvss)
    except ConfigError:
        raise
    except KeyError as exc:
        raise ConfigError(f"prepared artifact {where} lacks {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"prepared artifact {where} is malformed ({exc})") from None
