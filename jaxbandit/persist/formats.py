"""The result files' formats as files: which format a path names, the attributes jaxbandit writes into a
Dataset, netCDF written whole and atomically, the checksum of all a ``.nc`` holds, zarr's version
differences, a store read once into memory, and one ``ValueError`` naming the file for whatever a reader
raises on a damaged or foreign one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from . import manifest
from .atomic import atomic_write_bytes, atomic_write_json, error_reason, json_default

#: Dataset attributes jaxbandit writes itself (``meta`` keys of these names are not copied as readable
#: attributes).
META_ATTR = "jaxbandit_meta"  # the whole ``meta`` as JSON
DTYPES_ATTR = "jaxbandit_dtypes"  # {name: numpy dtype} of every coordinate and field
COMPLETE_ATTR = "jaxbandit_complete"  # False while jb.sweep(out=...) is still writing the store
DIGEST_ATTR = "jaxbandit_sha256"  # a .nc file's: SHA-256 of everything else it holds (content_digest)
RESERVED_ATTRS = (META_ATTR, DTYPES_ATTR, COMPLETE_ATTR, DIGEST_ATTR, "jaxbandit_sweep", "jaxbandit_store_id")


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
            {str(k): v for k, v in a.items() if k != DIGEST_ATTR}, sort_keys=True, default=json_default
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


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Whatever a reader of ``path`` raises for a damaged or foreign file (zipfile, numpy, json, h5py,
    zarr and numcodecs each raise their own kinds) as one ``ValueError`` naming it; a missing file stays
    a ``FileNotFoundError``."""
    try:
        yield
    except FileNotFoundError:
        raise
    except Exception as err:  # the readers' kinds: BadZipFile, EOFError, OSError, KeyError, RuntimeError, ...
        reason = error_reason(err)
        # the reader's objects (a half-opened file) are let go now, not when the refusal is
        traceback.clear_frames(err.__traceback__)
        raise ValueError(
            f"{str(path)!r} is damaged or not a jaxbandit result ({type(err).__name__}: {reason}); write it "
            "again with SweepResult.save or jb.sweep"
        ) from None


@contextlib.contextmanager
def quiet_h5netcdf_del() -> Iterator[None]:
    """Drop what h5netcdf's ``File.__del__`` raises for a file it failed to open (``'File' object has no
    attribute '_writable'``, which Python prints as "Exception ignored ..." beside the refusal of a
    damaged ``.nc``); anything else goes to the hook as before."""
    before = sys.unraisablehook

    def hook(unraisable):
        if not (
            isinstance(unraisable.exc_value, AttributeError) and "_writable" in str(unraisable.exc_value)
        ):
            before(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = before


def memory_store(files: dict):
    """The store whose files (key -> bytes) are ``files``, in memory, for zarr to decode."""
    zarr = require("zarr", what="SweepResult.load of .zarr")
    files = {k: v for k, v in files.items() if not k.startswith("jaxbandit_")}
    if zarr_major(zarr) < 3:
        return files
    from zarr.core.buffer import cpu

    return zarr.storage.MemoryStore({k: cpu.Buffer.from_bytes(v) for k, v in files.items()})


def write_manifest(store) -> None:
    """Write the manifest of the complete zarr store ``store`` into it (:mod:`jaxbandit.persist.manifest`)."""
    atomic_write_json(Path(store) / manifest.NAME, manifest.make(Path(store)))


def no_fill_encoding(ds) -> dict:
    """No ``_FillValue`` on any variable: values are stored and read back as they are, NaNs included."""
    return {name: {"_FillValue": None} for name in ds.variables}


def zarr_major(zarr) -> int:
    """The major version of the ``zarr`` module (2 and 3 differ in a few calls)."""
    return int(zarr.__version__.split(".")[0])


def zarr_format_kwargs(zarr) -> dict:
    """Write zarr format 2 (readable by zarr-python 2 and 3; format 3 has no stable fixed-width string
    dtype yet): zarr-python >= 3 is told so, older ones write nothing else."""
    return {"zarr_format": 2} if zarr_major(zarr) >= 3 else {}
