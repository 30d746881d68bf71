"""Sweep results with named axes, saved as ``.npz`` (no pickles) plus a JSON metadata file.

Writes are atomic: a temporary file in the same directory, ``fsync``, then ``os.replace``; a reader never
sees a half-written file and a killed writer leaves the previous version intact.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


def atomic_write_bytes(path, write) -> None:
    """Call ``write(fileobj)`` on a temporary file next to ``path`` and move it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path, obj) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    text = json.dumps(obj, indent=2, sort_keys=True, default=_json_default).encode()
    atomic_write_bytes(path, lambda f: f.write(text))


def atomic_savez(path, **arrays) -> None:
    """``np.savez`` to ``path`` atomically (``path`` should end in ``.npz``)."""
    atomic_write_bytes(path, lambda f: np.savez(f, **arrays))


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


@dataclass
class SweepResult:
    """Arrays over named axes.

    ``dims``: axis names, e.g. ``("algorithm", "C", "seed", "round")``; ``coords[name]``: the values
    along each axis (``round`` holds 1-based round numbers); ``data``: arrays whose shape follows
    ``dims`` — ``cumulative_regret`` and ``corruption_spent`` (Σ|c_s| so far) always, and ``regret``,
    ``action``, ``corruption`` per round when every round was recorded; ``meta``: settings.
    """

    dims: tuple
    coords: dict
    data: dict
    meta: dict = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        data = self.__dict__.get("data", {})
        if name in data:
            return data[name]
        raise AttributeError(name)

    @property
    def final_regret(self) -> np.ndarray:
        """Cumulative regret at the last recorded round; shape ``dims`` without ``round``."""
        return self.data["cumulative_regret"][..., -1]

    def axis(self, name: str) -> int:
        if name not in self.dims:
            raise ValueError(f"{name!r} is not an axis of this result; axes: {self.dims}")
        return self.dims.index(name)

    def sel(self, **where) -> SweepResult:
        """Index axes by coordinate value, e.g. ``res.sel(algorithm="cr_hvt_ucb", C=100.0)``; the
        selected axes are dropped."""
        data = dict(self.data)
        dims = list(self.dims)
        coords = dict(self.coords)
        for name, value in where.items():
            if name not in dims:
                raise ValueError(f"{name!r} is not an axis of this result; axes: {tuple(dims)}")
            values = np.asarray(coords[name])
            hits = (
                np.flatnonzero(values == value)
                if values.dtype.kind in "US"
                else np.flatnonzero(np.isclose(values.astype(float), float(value), rtol=1e-9, atol=0))
            )
            if hits.size == 0:
                raise ValueError(f"{name}={value!r} is not among the coordinates {values.tolist()}")
            ax = dims.index(name)
            data = {k: np.take(v, hits[0], axis=ax) for k, v in data.items()}
            dims.pop(ax)
            coords.pop(name)
        return SweepResult(tuple(dims), coords, data, dict(self.meta))

    def to_xarray(self):
        """The result as an ``xarray.Dataset``: one variable per field over ``dims``, the coordinates, and
        ``meta`` (JSON) in ``attrs["jaxbandit_meta"]``; dtypes kept. :meth:`from_xarray` inverts it
        exactly. Needs ``pip install "jaxbandit[xarray]"``; ``ds.to_netcdf`` / ``ds.to_zarr`` then write
        it with the metadata as attributes."""
        xr = _xarray()
        coords = {d: np.asarray(self.coords[d]) for d in self.dims if d in self.coords}
        data_vars = {k: (self.dims, np.asarray(v)) for k, v in self.data.items()}
        attrs = {"jaxbandit_meta": json.dumps(self.meta, sort_keys=True, default=_json_default)}
        return xr.Dataset(data_vars, coords=coords, attrs=attrs)

    @classmethod
    def from_xarray(cls, ds) -> SweepResult:
        """A :class:`SweepResult` from a Dataset made by :meth:`to_xarray` (or any Dataset whose variables
        share one set of dimensions)."""
        names = list(ds.data_vars)
        if not names:
            raise ValueError("the Dataset has no data variables")
        dims = tuple(ds[names[0]].dims)
        for name in names:
            if tuple(ds[name].dims) != dims:
                raise ValueError(
                    f"variable {name!r} has dims {tuple(ds[name].dims)}, expected {dims}: every "
                    "field of a SweepResult spans the same axes"
                )
        coords = {d: np.asarray(ds[d].values) for d in dims if d in ds.coords}
        data = {name: np.asarray(ds[name].values) for name in names}
        meta = json.loads(ds.attrs.get("jaxbandit_meta", "{}"))
        return cls(dims, coords, data, meta)

    def to_dataframe(self):
        """The result as a ``pandas.DataFrame`` in long form: one row per index of ``dims`` (a
        MultiIndex), one column per field (via :meth:`to_xarray`)."""
        return self.to_xarray().to_dataframe()

    def save(self, path) -> Path:
        """Write ``path`` (``.npz``: data and coordinates) and ``path`` with ``.json`` (dims, meta)."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        arrays = {f"data/{k}": np.asarray(v) for k, v in self.data.items()}
        arrays.update({f"coords/{k}": np.asarray(v) for k, v in self.coords.items()})
        atomic_savez(path, **arrays)
        atomic_write_json(path.with_suffix(".json"), {"dims": list(self.dims), "meta": self.meta})
        return path

    @classmethod
    def load(cls, path) -> SweepResult:
        """Read a result written by :meth:`save` (``allow_pickle=False``)."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        with np.load(path, allow_pickle=False) as z:
            data = {k[5:]: z[k] for k in z.files if k.startswith("data/")}
            coords = {k[7:]: z[k] for k in z.files if k.startswith("coords/")}
        meta_path = path.with_suffix(".json")
        info = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        dims = tuple(info.get("dims", coords))
        return cls(dims, {d: coords[d] for d in dims if d in coords}, data, info.get("meta", {}))


def _xarray():
    try:
        import xarray
    except ImportError:
        raise ImportError('SweepResult.to_xarray needs xarray: pip install "jaxbandit[xarray]"') from None
    return xarray
