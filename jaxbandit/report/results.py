"""Sweep results with named axes, saved as ``.npz`` (no pickles) plus JSON metadata, netCDF4 (``.nc``) or
a zarr store (``.zarr``); the last two through xarray (``pip install "jaxbandit[xarray]"``).

Writes are atomic: a file goes to a temporary file in the same directory, ``fsync``, then ``os.replace``;
a zarr store is built in a temporary directory and swapped into place. A reader never sees a
half-written result and a killed writer leaves the previous version intact.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: The formats :meth:`SweepResult.save` and :meth:`SweepResult.load` choose by suffix (anything else
#: is ``.npz``).
FORMATS = (".npz", ".nc", ".zarr")

#: Dataset attributes jaxbandit writes itself (``meta`` keys of these names are not copied as readable
#: attributes).
META_ATTR = "jaxbandit_meta"  # the whole ``meta`` as JSON
DTYPES_ATTR = "jaxbandit_dtypes"  # {name: numpy dtype} of every coordinate and field
COMPLETE_ATTR = "jaxbandit_complete"  # False while jb.sweep(out=...) is still writing the store
RESERVED_ATTRS = (META_ATTR, DTYPES_ATTR, COMPLETE_ATTR, "jaxbandit_sweep", "jaxbandit_store_id")


def atomic_write_bytes(path, write) -> None:
    """Call ``write(fileobj)`` on a temporary file next to ``path`` and move it into place."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        write(f)


@contextlib.contextmanager
def atomic_path(path) -> Iterator[Path]:
    """Yield a temporary file name next to ``path``; once the block has written it, ``fsync`` it and
    move it onto ``path``. If the block raises, the temporary file is removed and ``path`` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_directory(path) -> Iterator[Path]:
    """Yield an empty temporary directory next to ``path``; once the block has filled it, ``fsync`` its
    files and put it in place of ``path`` (which may exist: it is swapped out, then removed). On Linux
    the swap is one ``renameat2(RENAME_EXCHANGE)``; elsewhere the old one is renamed aside first and put
    back if the new one cannot be moved in. If the block raises, ``path`` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp's is 0o700; a store gets a directory's usual mode
        yield tmp
        _fsync_tree(tmp)
        if not (path.exists() or path.is_symlink()):
            os.rename(tmp, path)
        elif _exchange(tmp, path):  # tmp now holds the old version
            _remove(tmp)
        else:
            old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".old"))
            os.rmdir(old)
            os.rename(path, old)
            try:
                os.rename(tmp, path)
            except BaseException:
                os.rename(old, path)
                raise
            _remove(old)
        _fsync_dir(path.parent)
    except BaseException:
        _remove(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync_tree(root: Path) -> None:
    for dirpath, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb+") as f:
                os.fsync(f.fileno())
        _fsync_dir(Path(dirpath))


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2``); False where that is not available."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError, TypeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


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


def result_format(path) -> str:
    """The format :meth:`SweepResult.save`/:meth:`~SweepResult.load` use for ``path``: ``".nc"``,
    ``".zarr"``, or ``".npz"`` for any other suffix (none included)."""
    suffix = Path(path).suffix.lower()
    return suffix if suffix in (".nc", ".zarr") else ".npz"


def write_netcdf(ds, path) -> Path:
    """Write the Dataset ``ds`` to ``path`` as netCDF4 (h5netcdf), atomically and without fill values
    (NaN, ±inf and −0.0 round-trip bit for bit); returns the path."""
    with atomic_path(path) as tmp:
        ds.to_netcdf(tmp, engine="h5netcdf", encoding=no_fill_encoding(ds))
    return Path(path)


def require(*modules: str, what: str):
    """Import ``modules`` (the last is returned) or raise an ``ImportError`` naming the extra."""
    module = None
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise ImportError(
                f'{what} needs {name} (with {", ".join(modules)}): pip install "jaxbandit[xarray]"'
            ) from None
    return module


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
        attrs[META_ATTR] = json.dumps(self.meta, sort_keys=True, default=_json_default)
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
        - anything else: ``.npz`` (data and coordinates) plus ``.json`` (dims, meta) beside it; a missing
          or other suffix becomes ``.npz``.

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
            atomic_savez(path, **arrays)
            atomic_write_json(path.with_suffix(".json"), {"dims": list(self.dims), "meta": self.meta})
            return path
        if fmt == ".nc":
            require("h5py", "h5netcdf", "xarray", what="SweepResult.save to .nc")
            return write_netcdf(self.to_xarray(), path)
        zarr = require("xarray", "zarr", what="SweepResult.save to .zarr")
        ds = self.to_xarray()
        ds.attrs[COMPLETE_ATTR] = True
        with atomic_directory(path) as tmp:
            ds.to_zarr(tmp, mode="w", encoding=no_fill_encoding(ds), **zarr_format_kwargs(zarr))
        return path

    @classmethod
    def load(cls, path, *, lazy: bool = False) -> SweepResult:
        """Read a result written by :meth:`save` (or streamed by ``jb.sweep(..., out=...)``), in the
        format its suffix names (``.npz`` read with ``allow_pickle=False``; a ``.json`` or missing suffix
        reads the ``.npz`` beside it).

        ``lazy=True`` (``.zarr`` only): the arrays are :class:`LazyArray` read from the store on access,
        so that a result larger than memory can be opened. Raises ``ValueError`` for a store that
        ``jb.sweep`` has not finished writing.
        """
        path = Path(path)
        fmt = result_format(path)
        if lazy and fmt != ".zarr":
            raise ValueError(
                f"lazy=True is invalid for {str(path)!r}: only zarr stores (.zarr) are read lazily; "
                "use lazy=False for .npz and .nc"
            )
        if fmt == ".npz":
            path = path.with_suffix(".npz")
            with np.load(path, allow_pickle=False) as z:
                data = {k[5:]: z[k] for k in z.files if k.startswith("data/")}
                coords = {k[7:]: z[k] for k in z.files if k.startswith("coords/")}
            meta_path = path.with_suffix(".json")
            info = json.loads(meta_path.read_text()) if meta_path.exists() else {}
            dims = tuple(info.get("dims", coords))
            return cls(dims, {d: coords[d] for d in dims if d in coords}, data, info.get("meta", {}))
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
        if fmt == ".nc":
            xr = require("h5py", "h5netcdf", "xarray", what="SweepResult.load of .nc")
            with xr.open_dataset(path, engine="h5netcdf", cache=False) as ds:
                _check_complete(ds, path)
                return cls.from_xarray(ds.load())
        xr = require("zarr", "xarray", what="SweepResult.load of .zarr")
        ds = xr.open_dataset(path, engine="zarr", chunks=None, cache=False, consolidated=None)
        _check_complete(ds, path)
        if lazy:
            return cls._from_dataset(ds, lambda name: LazyArray(ds[name].variable, path, name))
        return cls.from_xarray(ds.load())


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


def _check_complete(ds, path: Path) -> None:
    if COMPLETE_ATTR in ds.attrs and not bool(ds.attrs[COMPLETE_ATTR]):
        raise ValueError(
            f"{str(path)!r} is an incomplete result: the jb.sweep(out=...) writing it has not finished "
            "(or was stopped); run the same sweep again with the same checkpoint= to complete it"
        )


def no_fill_encoding(ds) -> dict:
    """No ``_FillValue`` on any variable: values are stored and read back as they are, NaNs included."""
    return {name: {"_FillValue": None} for name in ds.variables}


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


def zarr_major(zarr) -> int:
    """The major version of the ``zarr`` module (2 and 3 differ in a few calls)."""
    return int(zarr.__version__.split(".")[0])


def zarr_format_kwargs(zarr) -> dict:
    """Write zarr format 2 (readable by zarr-python 2 and 3; format 3 has no stable fixed-width string
    dtype yet): zarr-python >= 3 is told so, older ones write nothing else."""
    return {"zarr_format": 2} if zarr_major(zarr) >= 3 else {}
