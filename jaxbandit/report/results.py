"""Sweep results with named axes, saved as ``.npz`` (no pickles) plus JSON metadata, netCDF4 (``.nc``) or
a zarr store (``.zarr``); the last two through xarray (``pip install "jaxbandit[xarray]"``).

Writes are atomic: a file goes to a temporary file in the same directory, ``fsync``, then ``os.replace``;
a zarr store is built in a temporary directory and swapped into place. A reader never sees a
half-written result and a killed writer leaves the previous version intact.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib
import io
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..runner import lock
from . import manifest

#: The member of a saved ``.npz`` holding its dims and meta as JSON (``{"dims": [...], "meta": {...}}``).
_INFO = "jaxbandit/info"
#: The member of an ``.npz`` saved by earlier versions holding the id its ``.json`` holds too (``"save"``).
_SAVE_ID = "jaxbandit/save"

#: The formats :meth:`SweepResult.save` and :meth:`SweepResult.load` choose by suffix (anything else
#: is ``.npz``).
FORMATS = (".npz", ".nc", ".zarr")

#: Dataset attributes jaxbandit writes itself (``meta`` keys of these names are not copied as readable
#: attributes).
META_ATTR = "jaxbandit_meta"  # the whole ``meta`` as JSON
DTYPES_ATTR = "jaxbandit_dtypes"  # {name: numpy dtype} of every coordinate and field
COMPLETE_ATTR = "jaxbandit_complete"  # False while jb.sweep(out=...) is still writing the store
DIGEST_ATTR = "jaxbandit_sha256"  # a .nc file's: SHA-256 of everything else it holds (content_digest)
RESERVED_ATTRS = (META_ATTR, DTYPES_ATTR, COMPLETE_ATTR, DIGEST_ATTR, "jaxbandit_sweep", "jaxbandit_store_id")


def atomic_write_bytes(path, write) -> None:
    """Call ``write(fileobj)`` on a temporary file next to ``path`` and move it into place."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        write(f)


def refuse_foreign(path) -> None:
    """``ValueError`` naming ``path`` and the fix unless a save may replace what is there: nothing, an
    empty directory, or a zarr store jaxbandit wrote (its attributes name it); a folder of other files
    or a file is never deleted by a save."""
    path = Path(path)
    if not (path.exists() or path.is_symlink()):
        return
    fix = "save to another path, or move or delete it first"
    if not path.is_dir():
        what = "is a file, not a zarr store"
        raise ValueError(f"{str(path)!r} exists and {what}; a save would delete it: {fix}")
    names = os.listdir(path)
    if not names:
        return
    for name in (".zattrs", "zarr.json"):
        try:
            attrs = json.loads((path / name).read_text())
        except (OSError, ValueError):
            continue
        attrs = attrs.get("attributes", attrs) if isinstance(attrs, dict) else {}
        if isinstance(attrs, dict) and (META_ATTR in attrs or DTYPES_ATTR in attrs):
            return
    raise ValueError(
        f"{str(path)!r} exists and is not a jaxbandit result (a folder of {len(names)} other files, or a "
        f"store whose attributes cannot be read); a save would delete it: {fix}"
    )


def _followed(path: Path) -> Path:
    """``path``, or the path a symbolic link at ``path`` points to: a save through a link writes its
    target, leaving the link a link."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextlib.contextmanager
def atomic_path(path) -> Iterator[Path]:
    """Yield a temporary file name next to ``path``; once the block has written it, ``fsync`` it and
    move it onto ``path``. If the block raises, the temporary file is removed and ``path`` is untouched.
    The file gets the mode any new file gets (0o666 less the umask); ``path``'s lock is held meanwhile
    (:func:`writing`). A symbolic link at ``path`` is followed."""
    path = _followed(Path(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    with writing(path):
        tmp = _fresh(
            path, ".tmp", lambda name: os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        )
        try:
            yield tmp
            fsync_paths([tmp])
            os.replace(tmp, path)
            _fsync_dir(path.parent)  # the rename, too, survives a power loss
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


@contextlib.contextmanager
def atomic_directory(path) -> Iterator[Path]:
    """Yield an empty temporary directory next to ``path``; once the block has filled it, ``fsync`` its
    files and put it in place of ``path`` (which may exist: it is swapped out, then removed). On Linux
    the swap is one ``renameat2(RENAME_EXCHANGE)``; elsewhere the old one is renamed aside first and put
    back if the new one cannot be moved in. If the block raises, ``path`` is untouched. The directory
    gets the mode any new directory gets (0o777 less the umask); ``path``'s lock is held meanwhile. A
    symbolic link at ``path`` is followed."""
    path = _followed(Path(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    with writing(path):
        tmp = _fresh(path, ".tmp", lambda name: os.mkdir(name, 0o777))
        try:
            yield tmp
            _fsync_tree(tmp)
            if not (path.exists() or path.is_symlink()):
                os.rename(tmp, path)
            elif _exchange(tmp, path):  # tmp now holds the old version
                _remove(tmp)
            else:
                old = _fresh(path, ".old", lambda name: None)
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


@contextlib.contextmanager
def writing(path, *, what: str = "") -> Iterator[None]:
    """Hold ``path``'s lock (:mod:`jaxbandit.runner.lock`; ``ValueError`` naming the holder if another
    writer has it) for the block, having removed what a writer of ``path`` killed midway left beside it
    (:func:`remove_leftovers`)."""
    with lock.holding(path, what=what, on_acquire=remove_leftovers):
        yield


#: The temporary names the atomic writes use beside their target ``NAME``: ``.NAME.<8 characters>.tmp``
#: (the new version being written) and ``.NAME.<8 characters>.old`` (the previous one, set aside).
_LEFTOVER = r"\.{name}\.[A-Za-z0-9_]{{8}}\.(tmp|old)"


def _fresh(path: Path, suffix: str, create) -> Path:
    """A new name ``.NAME.<8 random characters><suffix>`` beside ``path``, taken by ``create(name)``
    (raising ``FileExistsError`` if it exists). Not ``tempfile``'s, which creates files 0o600 and
    directories 0o700 whatever the umask: the kernel applies it here as to any new file."""
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}{suffix}"
        try:
            create(tmp)
        except FileExistsError:
            continue
        return tmp


def remove_leftovers(path) -> None:
    """Remove the temporary files and directories a killed atomic write of ``path`` left beside it; if
    ``path`` is gone and its previous version was set aside (a writer killed while swapping a directory
    without ``renameat2``), put that back. Call it holding ``path``'s lock, when no writer of it runs."""
    path = Path(path)
    pattern = re.compile(_LEFTOVER.format(name=re.escape(path.name)))
    try:
        names = sorted(os.listdir(path.parent))
    except FileNotFoundError:
        return
    for name in names:
        match = pattern.fullmatch(name)
        if match is None:
            continue
        leftover = path.parent / name
        if match.group(1) == "old" and not (path.exists() or path.is_symlink()):
            os.rename(leftover, path)
        else:
            _remove(leftover)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


def fsync_paths(paths) -> None:
    """Flush each of ``paths`` to the disk: a file's data, or a directory's entries (where the platform
    can open a directory)."""
    for path in paths:
        if os.path.isdir(path):
            _fsync_dir(Path(path))
        else:
            with open(path, "rb+") as f:
                os.fsync(f.fileno())


def syncfs(path) -> bool:
    """Flush every file of the file system that holds ``path`` to the disk, in one call (Linux
    ``syncfs``); False where that is not available (then :func:`fsync_paths` of what was written)."""
    try:
        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError, TypeError):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return call(fd) == 0
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync_tree(root: Path) -> None:
    for dirpath, _, files in os.walk(root):
        fsync_paths([*(os.path.join(dirpath, name) for name in files), dirpath])


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux ``renameat2``); False where that is not available."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError, TypeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def error_reason(err: BaseException) -> str:
    """The first line of ``err``'s message, or its type's name when it has none: the reason a refusal of
    a damaged or foreign file quotes."""
    return str(err).splitlines()[0] if str(err) else type(err).__name__


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
    """Write the Dataset ``ds`` to ``path`` as netCDF4 (h5netcdf), atomically, without fill values (NaN,
    ±inf and −0.0 round-trip bit for bit) and with a Fletcher-32 checksum on every numeric variable (a
    damaged byte is an error on reading, not a wrong value); returns the path.

    The file is built in memory, then written by Python's file IO: a failing disk (ENOSPC) is an
    ``OSError`` that leaves the previous file, where HDF5 writing the file itself crashed the
    interpreter after such an error (h5py 3.16, in its close)."""
    ds = ds.copy()
    ds.attrs = {**ds.attrs, DIGEST_ATTR: content_digest(ds)}
    encoding = no_fill_encoding(ds)
    for name, variable in ds.variables.items():
        if variable.dtype.kind in "biufc" and variable.size:  # HDF5 filters need chunked, typed data
            encoding[name]["fletcher32"] = True
    buffer = io.BytesIO()
    ds.to_netcdf(buffer, engine="h5netcdf", encoding=encoding)
    atomic_write_bytes(path, lambda f: f.write(buffer.getbuffer()))
    return Path(path)


def content_digest(ds) -> str:
    """SHA-256 of what the Dataset ``ds`` holds: every variable's name, dims, dtype, shape, values and
    attributes, and the Dataset's attributes (but :data:`DIGEST_ATTR`). A ``.nc`` file carries it,
    computed before writing, and a load recomputes it from what it read: HDF5's Fletcher-32 covers the
    chunks of numeric variables only, where a flipped byte of the chunk index read a field as zeros and
    an edited attribute (a dtype, the horizon, a string coordinate) read silently."""
    h = hashlib.sha256()

    def attrs(a) -> bytes:
        return json.dumps(
            {str(k): v for k, v in a.items() if k != DIGEST_ATTR}, sort_keys=True, default=_json_default
        ).encode()

    for name in sorted(map(str, ds.variables)):
        variable = ds.variables[name]
        values = np.asarray(variable.values)
        if values.dtype.kind in "OUS":  # strings come back as objects or at another width
            kind, payload = "str", json.dumps([str(v) for v in values.ravel().tolist()]).encode()
        else:
            kind, payload = values.dtype.str, np.ascontiguousarray(values).tobytes()
        head = json.dumps([name, list(map(str, variable.dims)), kind, list(values.shape)]).encode()
        for part in (head, attrs(variable.attrs), payload):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    h.update(attrs(ds.attrs))
    return h.hexdigest()


def check_digest(ds, path) -> None:
    """``ValueError`` naming ``path`` if the Dataset read from it does not match the
    :func:`content_digest` it carries (files written before it was added carry none)."""
    stored = ds.attrs.get(DIGEST_ATTR)
    if stored is not None and str(stored) != content_digest(ds):
        raise ValueError(
            f"{str(path)!r} is damaged: what it holds does not match its checksum ({DIGEST_ATTR}); write it "
            "again with SweepResult.save"
        )


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
            arrays[_INFO] = np.asarray(json.dumps(info, sort_keys=True, default=_json_default))
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
        the store against its manifest first (:mod:`jaxbandit.report.manifest`: it reads the whole
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
            with _reading(path), xr.open_dataset(path, engine="h5netcdf", cache=False) as ds:
                ds = ds.load()
            _check_ours(ds, path)
            check_digest(ds, path)
            with _reading(path):
                return cls.from_xarray(ds)
        xr = require("zarr", "xarray", what="SweepResult.load of .zarr")
        if verify and not lazy:
            # read once: the files checked against the manifest are the ones decoded, so a save of the
            # same path by another process meanwhile is refused or not seen, never mixed in
            files = manifest.read_files(path)
            found = manifest.parse(files.get(manifest.NAME), path)
            if found is not None:
                manifest.verify_files(path, files, found)
            source = _memory_store(files)
        else:
            found = manifest.read(path) if verify else None
            if found is not None:
                manifest.verify(path, found)
            source = path
        with _reading(path):
            ds = xr.open_dataset(source, engine="zarr", chunks=None, cache=False, consolidated=None)
        _check_ours(ds, path)
        if verify and found is None:
            raise ValueError(
                f"{str(path)!r} has no manifest ({manifest.NAME}), so it cannot be verified: it was written "
                "by an older jaxbandit or by another program; SweepResult.load(..., verify=False) reads "
                "it unchecked"
            )
        with _reading(path):
            if lazy:
                return cls._from_dataset(ds, lambda name: LazyArray(ds[name].variable, path, name))
            return cls.from_xarray(ds.load())

    @classmethod
    def _load_npz(cls, path: Path) -> SweepResult:
        """A result saved as ``.npz`` (its dims and meta inside, or, as earlier versions saved it, in
        the ``.json`` beside it); ``ValueError`` for anything else."""
        with _reading(path):
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
            with _reading(path):
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
            raise ValueError(
                f"{str(path)!r} is incomplete: it holds no dims and meta, and {meta_path.name} (where "
                f"earlier versions kept them) is missing; {fix}"
            )
        with _reading(meta_path):
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


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Whatever a reader of ``path`` raises for a damaged or foreign file (zipfile, numpy, json, h5py,
    zarr and numcodecs each raise their own kinds) as one ``ValueError`` naming it; a missing file stays
    a ``FileNotFoundError``."""
    try:
        yield
    except FileNotFoundError:
        raise
    except Exception as err:  # the readers' kinds: BadZipFile, EOFError, OSError, KeyError, RuntimeError, ...
        reason = error_reason(err)
        raise ValueError(
            f"{str(path)!r} is damaged or not a jaxbandit result ({type(err).__name__}: {reason}); write it "
            "again with SweepResult.save or jb.sweep"
        ) from None


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


def _memory_store(files: dict):
    """The store whose files (key -> bytes) are ``files``, in memory, for zarr to decode."""
    zarr = require("zarr", what="SweepResult.load of .zarr")
    files = {k: v for k, v in files.items() if not k.startswith("jaxbandit_")}
    if zarr_major(zarr) < 3:
        return files
    from zarr.core.buffer import cpu

    return zarr.storage.MemoryStore({k: cpu.Buffer.from_bytes(v) for k, v in files.items()})


def write_manifest(store) -> None:
    """Write the manifest of the complete zarr store ``store`` into it (:mod:`jaxbandit.report.manifest`)."""
    atomic_write_json(Path(store) / manifest.NAME, manifest.make(Path(store)))


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
