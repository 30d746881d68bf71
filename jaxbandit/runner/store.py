"""Streaming a sweep's kept rounds into a zarr store: ``jb.sweep(..., out="r.zarr")``.

The store is a zarr (format 2) group laid out as :meth:`SweepResult.save` writes one — one array per field
over the result's dims, the coordinates, ``meta`` as attributes — so ``SweepResult.load`` and xarray read
it. It is created (in a temporary directory, swapped into place) before the first chunk runs, with the
attribute ``jaxbandit_complete = False``; each compiled chunk's kept rounds are then written into their
region of the arrays as soon as the chunk finishes, so that the host holds one chunk's results at a time;
the attribute becomes True after the last chunk. Arrays are chunked one algorithm and one grid point at a
time, by the rounds one compiled chunk keeps and by as many seeds as fill about 2^20 values.

With ``checkpoint=``, a chunk's region is written before its checkpoint, and the checkpoints name the
store they belong to (its ``jaxbandit_store_id``): a sweep stopped anywhere and run again resumes into the
same store and ends with the arrays an uninterrupted run writes.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np

from ..report import results as R

SWEEP_ATTR = "jaxbandit_sweep"  # fingerprint of the sweep's settings
STORE_ID_ATTR = "jaxbandit_store_id"  # a fresh id per store created; checkpoints name it
CHUNK_VALUES = 1 << 20


def check_out(out) -> Path:
    """``out`` as a path; ``ValueError`` unless it names a ``.zarr`` store, ``ImportError`` naming the
    extra if xarray or zarr is missing."""
    path = Path(out)
    if path.suffix.lower() != ".zarr":
        raise ValueError(
            f"out={str(out)!r} is invalid: a sweep streams its results into a zarr store, so out must "
            "end in '.zarr' (valid: '.zarr'); to write .npz or .nc, call .save(path) on the result"
        )
    R.require("zarr", "xarray", what="jb.sweep(out=...)")
    return path


def _zarr():
    return R.require("zarr", what="jb.sweep(out=...)")


def read_attrs(path: Path) -> dict | None:
    """The attributes of the zarr group at ``path``; None if there is none."""
    zarr = _zarr()
    try:
        return dict(zarr.open_group(str(path), mode="r").attrs)
    except Exception:  # not a zarr group (a file, another kind of directory): each version raises its own
        return None


def check_existing(path: Path, finger: str) -> dict | None:
    """The attributes of the store this same sweep (fingerprint ``finger``) left at ``path``, None if
    there is nothing there; ``ValueError`` if there is anything else."""
    if not (path.exists() or path.is_symlink()):
        return None
    attrs = read_attrs(path)
    valid = (
        "valid: a path that does not exist, or a store this same sweep wrote (resumed with its "
        "checkpoint=, rewritten without)"
    )
    if attrs is None or attrs.get(SWEEP_ATTR) is None or attrs.get(STORE_ID_ATTR) is None:
        raise ValueError(
            f"out={str(path)!r} is invalid: it exists and is not a store streamed by jb.sweep; give "
            f"another path or delete it ({valid})"
        )
    if attrs[SWEEP_ATTR] != finger:
        raise ValueError(
            f"out={str(path)!r} is invalid: it holds a different sweep (other settings, grid, seeds, "
            f"recording or factories); give another path or delete it ({valid})"
        )
    return attrs


class StoreWriter:
    """Writes one sweep's kept rounds into the store at ``path``; see the module docstring."""

    def __init__(self, path: Path, dims: tuple, sizes: tuple, round_chunk: int, store_id: str):
        self.path, self.dims, self.sizes, self.store_id = path, dims, sizes, store_id
        lead = len(dims) - 2  # algorithm and grid axes: one per chunk
        seeds = sizes[-2]
        rounds = max(1, min(round_chunk, sizes[-1]))
        self.chunks = (1,) * lead + (max(1, min(seeds, CHUNK_VALUES // rounds)), rounds)
        zarr = _zarr()
        fresh = {"use_consolidated": False} if R.zarr_major(zarr) >= 3 else {}  # metadata as it is now
        self._group = zarr.open_group(str(path), mode="r+", **fresh)
        self._arrays: dict = {}

    @classmethod
    def open(
        cls, path: Path, *, dims, coords, meta, finger: str, resume: bool, round_chunk: int
    ) -> StoreWriter:
        """Create the store (or, with ``resume``, reopen the one this same sweep left); ``ValueError``
        if ``path`` holds anything else. Call it before anything runs."""
        sizes = tuple(np.size(coords[d]) for d in dims)
        attrs = check_existing(path, finger)
        if attrs is not None and resume:
            writer = cls(path, dims, sizes, round_chunk, attrs[STORE_ID_ATTR])
            writer._set_attrs({R.COMPLETE_ATTR: False})
            return writer
        store_id = uuid.uuid4().hex
        skeleton = R.SweepResult(dims, coords, {}, meta).to_xarray()  # coordinates and attributes
        skeleton.attrs.update({R.COMPLETE_ATTR: False, SWEEP_ATTR: finger, STORE_ID_ATTR: store_id})
        with R.atomic_directory(path) as tmp:
            skeleton.to_zarr(
                str(tmp),
                mode="w",
                encoding=R.no_fill_encoding(skeleton),
                write_empty_chunks=True,
                **R.zarr_format_kwargs(_zarr()),
            )
        return cls(path, dims, sizes, round_chunk, store_id)

    def write(self, field: str, region: tuple, values: np.ndarray) -> None:
        """Write ``values`` into ``region`` of the array ``field`` (created on first use with this
        dtype and the result's full shape)."""
        if field not in self._arrays:
            arr = self._group[field] if field in self._group else self._create(field, values.dtype)
            if hasattr(arr, "with_config"):  # zarr-python >= 3: by default it drops chunks of zeros
                arr = arr.with_config({"write_empty_chunks": True})
            self._arrays[field] = arr
        self._arrays[field][region] = values

    def _create(self, field: str, dtype):
        kw = dict(shape=self.sizes, chunks=self.chunks, dtype=dtype, fill_value=None)
        if hasattr(self._group, "create_array"):  # zarr-python >= 3
            arr = self._group.create_array(field, **kw, attributes={"_ARRAY_DIMENSIONS": list(self.dims)})
        else:  # zarr-python 2 writes every chunk, zeros included
            arr = self._group.create_dataset(field, **kw)
            arr.attrs["_ARRAY_DIMENSIONS"] = list(self.dims)
        dtypes = json.loads(self._group.attrs.get(R.DTYPES_ATTR, "{}"))
        dtypes[field] = np.dtype(dtype).str
        self._set_attrs({R.DTYPES_ATTR: json.dumps(dtypes, sort_keys=True)})
        return arr

    def finish(self) -> None:
        """Mark the store complete and write its manifest (:mod:`jaxbandit.report.manifest`)."""
        self._set_attrs({R.COMPLETE_ATTR: True})
        R.write_manifest(self.path)

    def _set_attrs(self, attrs: dict) -> None:
        self._group.attrs.update(attrs)
        _zarr().consolidate_metadata(str(self.path))
