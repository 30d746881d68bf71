"""The result type: :class:`SweepResult`, arrays over named axes, saved as ``.npz`` (no pickles; the dims
and meta inside), netCDF4 (``.nc``) or a zarr store (``.zarr``); the last two through xarray
(``pip install "jaxbandit[xarray]"``).

How the files are written and verified — atomically, locked, checksummed — is
:mod:`jaxbandit.persist`'s; the names it gave this module first (``atomic_write_json``, ``writing``,
``write_netcdf``, ``require``, ...) are re-exported here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..persist import manifest
from ..persist.atomic import (  # noqa: F401 (re-exported: jaxbandit.report.results named them first)
    atomic_directory,
    atomic_path,
    atomic_savez,
    atomic_write_bytes,
    atomic_write_json,
    error_reason,
    fsync_paths,
    json_default,
    remove_leftovers,
    syncfs,
    writing,
)
from ..persist.formats import (  # noqa: F401 (re-exported, as above)
    COMPLETE_ATTR,
    DIGEST_ATTR,
    DTYPES_ATTR,
    META_ATTR,
    RESERVED_ATTRS,
    check_digest,
    content_digest,
    memory_store,
    no_fill_encoding,
    quiet_h5netcdf_del,
    reading,
    refuse_foreign,
    require,
    result_format,
    write_manifest,
    write_netcdf,
    zarr_format_kwargs,
    zarr_major,
)

#: The member of a saved ``.npz`` holding its dims and meta as JSON (``{"dims": [...], "meta": {...}}``).
_INFO = "jaxbandit/info"
#: The member of an ``.npz`` saved by earlier versions holding the id its ``.json`` holds too (``"save"``).
_SAVE_ID = "jaxbandit/save"


class MissingSidecar(ValueError):
    """An ``.npz`` saved by an earlier version whose ``.json`` (its dims and meta) is not beside it."""


#: The formats :meth:`SweepResult.save` and :meth:`SweepResult.load` choose by suffix (anything else
#: is ``.npz``).
FORMATS = (".npz", ".nc", ".zarr")


def _xarray(what: str = "SweepResult.to_xarray"):
    return require("xarray", what=what)


class LazyArray:
    """A field of a zarr store, read on access: ``a[key]`` (integers, slices, ``...``) reads only the
    chunks it touches, ``np.asarray(a)`` reads the whole array. Nothing is cached.

    ``shape``/``dtype``/``ndim``/``size`` are known without reading. It reads whatever the store at
    ``path`` holds when accessed.
    """

    def __init__(self, variable, path: Path, name: str):
        self._variable = variable
        self.path = Path(path)
        self.name = name

    shape = property(lambda self: tuple(self._variable.shape))
    dtype = property(lambda self: np.dtype(self._variable.dtype))
    ndim = property(lambda self: len(self._variable.shape))
    size = property(lambda self: int(np.prod(self._variable.shape, dtype=np.int64)))

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key) -> np.ndarray:
        return np.asarray(self._variable[key].values)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        values = np.asarray(self._variable.values)
        return values if dtype is None else values.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"LazyArray({str(self.path)!r}, {self.name!r}, shape={self.shape}, dtype={self.dtype})"


@dataclass
class SweepResult:
    """Arrays over named axes.

    ``dims``: axis names, e.g. ``("algorithm", "C", "seed", "round")``; ``coords[name]``: the values
    along each axis (``round`` holds 1-based round numbers); ``data``: arrays whose shape follows
    ``dims`` — ``cumulative_regret`` and ``corruption_spent`` (Σ|c_s| so far) always, and ``regret``,
    ``action``, ``corruption`` per round when every round was recorded; ``meta``: settings. The arrays
    are NumPy arrays, or :class:`LazyArray` for a result read lazily from a zarr store
    (``jb.sweep(..., out="r.zarr")``, ``SweepResult.load("r.zarr", lazy=True)``).
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
        selected axes are dropped (a lazy result reads only the selection)."""
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
            index = (slice(None),) * ax + (int(hits[0]),)
            data = {
                k: np.take(v, hits[0], axis=ax) if isinstance(v, np.ndarray) else v[index]
                for k, v in data.items()
            }
            dims.pop(ax)
            coords.pop(name)
        return SweepResult(tuple(dims), coords, data, dict(self.meta))

    def __repr__(self) -> str:
        """A summary in the manner of xarray's: the dims with their sizes, each coordinate abridged to
        its first and last values, each field's dtype and shape, the meta keys. Reads no field of a
        lazy result, and stays a few lines of at most ``_REPR_WIDTH`` characters at any size."""
        fields = list(self.data.items())
        shape = tuple(fields[0][1].shape) if fields else ()
        sizes = {d: (len(self.coords[d]) if d in self.coords else shape[i]) for i, d in enumerate(self.dims)}
        pad = max((len(str(name)) for name in [*self.dims, *self.data]), default=0)
        lines = ["<jb.SweepResult> (" + ", ".join(f"{d}: {n}" for d, n in sizes.items()) + ")"]
        lines.append("Coordinates:")
        for d in self.dims:
            if d in self.coords:
                values = np.asarray(self.coords[d])
                lines.append(f"  {d:<{pad}}  {_dtype_name(values.dtype):<7} {_abridged(values)}")
        lines.append("Data:")
        for name, value in fields:
            lazy = "  (lazy)" if isinstance(value, LazyArray) else ""
            lines.append(f"  {name:<{pad}}  {_dtype_name(value.dtype):<7} {tuple(value.shape)}{lazy}")
        lines.append(f"Meta ({len(self.meta)}): " + ", ".join(map(str, self.meta)))
        return "\n".join(_clipped(line) for line in lines)

    def to_xarray(self):
        """The result as an ``xarray.Dataset``: one variable per field over ``dims``, the coordinates;
        ``meta`` as JSON in ``attrs["jaxbandit_meta"]`` and its scalar entries (str, int, float) as
        readable attributes; every dtype in ``attrs["jaxbandit_dtypes"]``. :meth:`from_xarray` inverts
        it exactly. Needs ``pip install "jaxbandit[xarray]"``."""
        xr = _xarray()
        coords = {d: np.asarray(self.coords[d]) for d in self.dims if d in self.coords}
        data_vars = {k: (self.dims, np.asarray(v)) for k, v in self.data.items()}
        dtypes = {k: v.dtype.str for k, v in coords.items()}
        dtypes.update({k: v[1].dtype.str for k, v in data_vars.items()})
        attrs = _readable_attrs(self.meta)
        attrs[META_ATTR] = json.dumps(self.meta, sort_keys=True, default=json_default)
        attrs[DTYPES_ATTR] = json.dumps(dtypes, sort_keys=True)
        return xr.Dataset(data_vars, coords=coords, attrs=attrs)

    @classmethod
    def from_xarray(cls, ds) -> SweepResult:
        """A :class:`SweepResult` from a Dataset made by :meth:`to_xarray` (or any Dataset whose variables
        share one set of dimensions); the arrays are read into memory."""
        return cls._from_dataset(ds, lambda name: np.asarray(ds[name].values))

    @classmethod
    def _from_dataset(cls, ds, read) -> SweepResult:
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
        dtypes = json.loads(ds.attrs.get(DTYPES_ATTR, "{}"))

        def restore(name, arr):
            want = dtypes.get(name)
            if want is None or isinstance(arr, LazyArray) or arr.dtype == np.dtype(want):
                return arr
            return arr.astype(want)  # e.g. strings read back as objects or at another width

        coords = {d: restore(d, np.asarray(ds[d].values)) for d in dims if d in ds.coords}
        data = {name: restore(name, read(name)) for name in names}
        meta = json.loads(ds.attrs.get(META_ATTR, "{}"))
        return cls(dims, coords, data, meta)

    def to_dataframe(self):
        """The result as a ``pandas.DataFrame`` in long form: one row per index of ``dims`` (a
        MultiIndex), one column per field (via :meth:`to_xarray`)."""
        return self.to_xarray().to_dataframe()

    def save(self, path) -> Path:
        """Write the result to ``path``, in the format its suffix names, atomically; returns the path.

        - ``.nc``: netCDF4 through xarray's h5netcdf engine (one file);
        - ``.zarr``: a zarr store (a directory; zarr format 2, readable by zarr-python 2 and 3);
        - anything else: ``.npz`` (data, coordinates, and the dims and meta as JSON), one file published
          by one rename; a missing or other suffix becomes ``.npz``. A ``.json`` beside it (the metadata
          of earlier versions' saves) is removed.

        ``.nc`` and ``.zarr`` hold :meth:`to_xarray`'s Dataset (meta as attributes) and need
        ``pip install "jaxbandit[xarray]"``. Every dtype, coordinate and the JSON metadata come back
        exactly through :meth:`load`.
        """
        path = Path(path)
        fmt = result_format(path)
        if fmt == ".npz":
            path = path.with_suffix(".npz")
            arrays = {f"data/{k}": np.asarray(v) for k, v in self.data.items()}
            arrays.update({f"coords/{k}": np.asarray(v) for k, v in self.coords.items()})
            # dims and meta inside the archive: one rename publishes the whole result, and zip's CRC-32
            # of each member covers the metadata as it covers the arrays
            info = {"dims": list(self.dims), "meta": self.meta}
            arrays[_INFO] = np.asarray(json.dumps(info, sort_keys=True, default=json_default))
            with writing(path):
                atomic_savez(path, **arrays)
                # an older save's .json beside it describes another result: the archive is read alone
                path.with_suffix(".json").unlink(missing_ok=True)
            return path
        if fmt == ".nc":
            require("h5py", "h5netcdf", "xarray", what="SweepResult.save to .nc")
            return write_netcdf(self.to_xarray(), path)
        zarr = require("xarray", "zarr", what="SweepResult.save to .zarr")
        ds = self.to_xarray()
        ds.attrs[COMPLETE_ATTR] = True
        with atomic_directory(path) as tmp:
            refuse_foreign(path)  # under its lock: nothing replaces it meanwhile
            ds.to_zarr(
                tmp,
                mode="w",
                encoding=no_fill_encoding(ds),
                write_empty_chunks=True,
                **zarr_format_kwargs(zarr),
            )
            write_manifest(tmp)
        return path

    @classmethod
    def load(cls, path, *, lazy: bool = False, verify: bool = True) -> SweepResult:
        """Read a result written by :meth:`save` (or streamed by ``jb.sweep(..., out=...)``), in the
        format its suffix names (``.npz`` read with ``allow_pickle=False``; a ``.json`` or missing suffix
        reads the ``.npz`` beside it).

        ``lazy=True`` (``.zarr`` only): the arrays are :class:`LazyArray` read from the store on access,
        so that a result larger than memory can be opened. ``verify`` (``.zarr``): check every file of
        the store against its manifest first (:mod:`jaxbandit.persist.manifest`: it reads the whole
        store once; ``verify=False`` skips that). ``.npz`` members and ``.nc`` variables carry their own
        checksums (zip's CRC-32, HDF5's Fletcher-32), checked as they are read.

        Raises ``ValueError`` naming the file for anything that is not a complete jaxbandit result: a
        foreign or damaged file, a store with a missing or damaged chunk, a store that ``jb.sweep`` has
        not finished writing.
        """
        path = Path(path)
        fmt = result_format(path)
        if lazy and fmt != ".zarr":
            raise ValueError(
                f"lazy=True is invalid for {str(path)!r}: only zarr stores (.zarr) are read lazily; "
                "use lazy=False for .npz and .nc"
            )
        if fmt == ".npz":
            return cls._load_npz(path.with_suffix(".npz"))
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
        if fmt == ".nc":
            xr = require("h5py", "h5netcdf", "xarray", what="SweepResult.load of .nc")
            with quiet_h5netcdf_del(), reading(path):
                with xr.open_dataset(path, engine="h5netcdf", cache=False) as ds:
                    ds = ds.load()
            _check_ours(ds, path)
            check_digest(ds, path)
            with reading(path):
                return cls.from_xarray(ds)
        xr = require("zarr", "xarray", what="SweepResult.load of .zarr")
        if verify and not lazy:
            # read once: the files checked against the manifest are the ones decoded, so a save of the
            # same path by another process meanwhile is refused or not seen, never mixed in
            files = manifest.read_files(path)
            found = manifest.parse(files.get(manifest.NAME), path)
            if found is not None:
                manifest.verify_files(path, files, found)
            source = memory_store(files)
        else:
            found = manifest.read(path) if verify else None
            if found is not None:
                manifest.verify(path, found)
            source = path
        with reading(path):
            ds = xr.open_dataset(source, engine="zarr", chunks=None, cache=False, consolidated=None)
        _check_ours(ds, path)
        if verify and found is None:
            raise ValueError(
                f"{str(path)!r} has no manifest ({manifest.NAME}), so it cannot be verified: it was written "
                "by an older jaxbandit or by another program; SweepResult.load(..., verify=False) reads "
                "it unchecked"
            )
        with reading(path):
            if lazy:
                return cls._from_dataset(ds, lambda name: LazyArray(ds[name].variable, path, name))
            return cls.from_xarray(ds.load())

    @classmethod
    def _load_npz(cls, path: Path) -> SweepResult:
        """A result saved as ``.npz`` (its dims and meta inside, or, as earlier versions saved it, in
        the ``.json`` beside it); ``ValueError`` for anything else."""
        with reading(path):
            z = np.load(path, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise ValueError("a .npy array, not a .npz archive")
            with z:
                arrays = {k: z[k] for k in z.files}
        fix = "give a result written by SweepResult.save"
        info_text = arrays.pop(_INFO, None)
        save_id = arrays.pop(_SAVE_ID, None)
        stray = [k for k in arrays if not k.startswith(("data/", "coords/"))]
        data = {k[5:]: v for k, v in arrays.items() if k.startswith("data/")}
        if stray or not data:
            held = f"the arrays {sorted(stray)}" if stray else "no data/ arrays"
            raise ValueError(f"{str(path)!r} is not a jaxbandit result: it holds {held}; {fix}")
        if info_text is not None:
            described = f"its {_INFO} member"
            with reading(path):
                info = json.loads(str(info_text))
        else:
            info, described = cls._legacy_info(path, save_id, fix)
        dims = info.get("dims") if isinstance(info, dict) else None
        meta = info.get("meta", {}) if isinstance(info, dict) else None
        if not (isinstance(dims, list) and all(isinstance(d, str) for d in dims) and isinstance(meta, dict)):
            raise ValueError(
                f"{str(path)!r} is not a jaxbandit result: {described} has no list of dims and dict of "
                f"meta; {fix}"
            )
        coords = {k[7:]: v for k, v in arrays.items() if k.startswith("coords/")}
        shapes = {np.shape(v) for v in data.values()}
        shape = next(iter(shapes))
        bad = (
            len(shapes) > 1
            or len(shape) != len(dims)
            or any(d not in dims or np.shape(v) != (shape[dims.index(d)],) for d, v in coords.items())
        )
        if bad:
            raise ValueError(
                f"{str(path)!r} is not a jaxbandit result: its arrays' shapes {sorted(shapes)} and "
                f"coordinates do not fit the dims {dims} of {described}; {fix}"
            )
        return cls(tuple(dims), {d: coords[d] for d in dims if d in coords}, data, meta)

    @staticmethod
    def _legacy_info(path: Path, save_id, fix: str) -> tuple[dict, str]:
        """The dims and meta of an ``.npz`` saved by earlier versions, from the ``.json`` beside it (which
        carries the archive's save id)."""
        meta_path = path.with_suffix(".json")
        if not meta_path.is_file():
            raise MissingSidecar(
                f"{str(path)!r} was saved by an earlier jaxbandit, which kept its dims and meta in the file "
                f"{meta_path.name} beside it, and {meta_path.name} is missing: copy it with the .npz (a "
                "pair loaded and saved again, SweepResult.load(path).save(path), is one self-describing .npz)"
            )
        with reading(meta_path):
            info = json.loads(meta_path.read_text())
        if not (isinstance(info, dict) and isinstance(info.get("dims"), list)):
            raise ValueError(
                f"{str(meta_path)!r} is not a jaxbandit result's metadata: it has no list of dims; {fix}"
            )
        if (save_id is not None or "save" in info) and str(save_id) != str(info.get("save")):
            raise ValueError(
                f"{str(path)!r} and {meta_path.name} are not from one save (a save was stopped between "
                "writing them, or one was replaced); save the result again"
            )
        return info, meta_path.name


#: The widest line of ``repr(SweepResult)``; a longer one ends in "...".
_REPR_WIDTH = 100


def _clipped(text: str, width: int = _REPR_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _dtype_name(dtype) -> str:
    """``float32``, ``int64``, ``<U10``: a number's dtype by name, a string's by its width."""
    dtype = np.dtype(dtype)
    return dtype.name if dtype.kind in "biufc" else dtype.str


def _abridged(values: np.ndarray, edge: int = 3) -> str:
    """A coordinate's values, the first and last ``edge`` of them when there are more, each shortened."""

    def short(v) -> str:
        v = v.item() if isinstance(v, np.generic) else v
        if isinstance(v, float):
            text = f"{v:.6g}"
            text += ".0" if text.lstrip("-").isdigit() else ""  # a float, not an int
        else:
            text = repr(v) if isinstance(v, str) else str(v)
        return _clipped(text, 24)

    flat = values.ravel()
    if flat.size <= 2 * edge + 1:
        return " ".join(map(short, flat))
    return " ".join([*map(short, flat[:edge]), "...", *map(short, flat[-edge:])])


def _check_ours(ds, path: Path) -> None:
    """``ValueError`` unless the Dataset read from ``path`` is a complete jaxbandit result."""
    if META_ATTR not in ds.attrs and DTYPES_ATTR not in ds.attrs:
        raise ValueError(
            f"{str(path)!r} is not a jaxbandit result (it has no {META_ATTR!r} attribute); open it with "
            "xarray and make one with SweepResult.from_xarray"
        )
    if COMPLETE_ATTR in ds.attrs and not bool(ds.attrs[COMPLETE_ATTR]):
        raise ValueError(
            f"{str(path)!r} is an incomplete result: the jb.sweep(out=...) writing it has not finished "
            "(or was stopped); run the same sweep again with the same checkpoint= to complete it"
        )


def _readable_attrs(meta: dict) -> dict:
    """The scalar entries (str, int, float; not bool) of ``meta`` as attributes a netCDF/zarr reader
    shows directly; the whole ``meta`` is in the JSON attribute."""
    out = {}
    for key, value in meta.items():
        if isinstance(value, np.generic):
            value = value.item()
        if (
            isinstance(key, str)
            and key not in RESERVED_ATTRS
            and isinstance(value, (str, int, float))
            and not isinstance(value, bool)
        ):
            out[key] = value
    return out
