"""Streaming a sweep's kept rounds into a zarr store: ``jb.sweep(..., out="r.zarr")``.

The store is a zarr (format 2) group laid out as :meth:`SweepResult.save` writes one — one array per field
over the result's dims, the coordinates, ``meta`` as attributes — so ``SweepResult.load`` and xarray read
it. It is created (in a temporary directory, swapped into place) before the first chunk runs, with the
attribute ``jaxbandit_complete = False``; each compiled chunk's kept rounds are then written into their
region of the arrays as soon as the chunk finishes, so that the host holds one chunk's results at a time;
the attribute becomes True after the last chunk, and the store gets its manifest
(:mod:`jaxbandit.persist.manifest`: every file's checksum, checked by ``SweepResult.load``). Arrays are
chunked one algorithm and one grid point at a time, by the rounds one compiled chunk keeps and by as
many seeds as fill about 2^20 values; every chunk is written, zeros included.

The sweep holds the store's lock (:mod:`jaxbandit.persist.lock`) from before it is opened to the end, and
the store carries the sweep's :mod:`~jaxbandit.runner.fingerprint`: another sweep is refused, saying what
differs. With ``checkpoint=``, a chunk's region is written before its checkpoint, and the checkpoints name
the store they belong to (its ``jaxbandit_store_id``): a sweep stopped anywhere and run again resumes into
the same store and ends with the arrays an uninterrupted run writes. Each region written is journaled
(``jaxbandit_journal.jsonl``: its place and the SHA-256 of its values) until the manifest replaces the
journal, and a resumed sweep first reads every journaled region back and checks it (a complete store:
its manifest), so a chunk deleted or damaged while the sweep was stopped is found, not built upon.
With ``checkpoint=``, the store's new chunks are flushed to the disk before they are journaled and the
journal before each checkpoint (:meth:`StoreWriter.sync`), so not even a power loss leaves a checkpoint
ahead of its store, or a journaled region that did not reach the disk.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import uuid
import warnings
from pathlib import Path

import numpy as np

from ..persist import atomic
from ..persist import formats as F
from ..persist import manifest as manifest_lib
from ..report.results import SweepResult
from . import fingerprint as fingerprint_lib

SWEEP_ATTR = "jaxbandit_sweep"  # the sweep's fingerprint, as JSON
STORE_ID_ATTR = "jaxbandit_store_id"  # a fresh id per store created; checkpoints name it
JOURNAL = "jaxbandit_journal.jsonl"
CHUNK_VALUES = 1 << 20
#: The metadata files of a zarr (format 2) group: a directory holding one is a store.
_ZARR_METADATA = (".zgroup", ".zattrs", ".zmetadata")


def check_out(out) -> Path:
    """``out`` as a path; ``ValueError`` unless it names a ``.zarr`` store, ``ImportError`` naming the
    extra if xarray or zarr is missing."""
    path = Path(out)
    if path.suffix.lower() != ".zarr":
        raise ValueError(
            f"out={str(out)!r} is invalid: a sweep streams its results into a zarr store, so out must "
            "end in '.zarr' (valid: '.zarr'); to write .npz or .nc, call .save(path) on the result"
        )
    F.require("zarr", "xarray", what="jb.sweep(out=...)")
    return path


def _zarr():
    return F.require("zarr", what="jb.sweep(out=...)")


def open_group(path: Path, mode: str):
    """The zarr group at ``path`` as its files say now (``.zattrs``, each array's ``.zarray``), never as
    the consolidated ``.zmetadata`` says: the checks before a resume and the writer read the same
    metadata, so that a ``.zarray`` changed while the sweep was stopped is read, and refused, as the
    writer would read it."""
    zarr = _zarr()
    fresh = {"use_consolidated": False} if F.zarr_major(zarr) >= 3 else {}
    return zarr.open_group(str(path), mode=mode, **fresh)


def read_attrs(path: Path) -> dict | None:
    """The attributes of the zarr group at ``path``; None if there is none."""
    try:
        return dict(open_group(path, "r").attrs)
    except Exception:  # not a zarr group (a file, another kind of directory): each version raises its own
        return None


def check_existing(path: Path, finger: dict, *, overwrite: bool = False) -> dict | None:
    """The attributes of the store this same sweep (fingerprint ``finger``) left at ``path``, None if
    there is nothing there (or, with ``overwrite``, a store of another sweep or a damaged one, to be
    replaced); ``ValueError`` if there is anything else."""
    if not (path.exists() or path.is_symlink()):
        return None
    fix = "give another path, pass overwrite=True to start over, or delete it"
    is_store = path.is_dir() and any((path / name).is_file() for name in _ZARR_METADATA)
    attrs = read_attrs(path) if is_store else None
    if is_store and attrs is None:
        if overwrite:
            return None
        raise ValueError(f"out={str(path)!r} is a damaged store (its metadata cannot be read); {fix}")
    if attrs is None or attrs.get(SWEEP_ATTR) is None or attrs.get(STORE_ID_ATTR) is None:
        raise ValueError(
            f"out={str(path)!r} is invalid: it exists and is not a store streamed by jb.sweep; give "
            "another path or delete it (valid: a path that does not exist, or a store this same sweep "
            "wrote: resumed with its checkpoint=, rewritten without)"
        )
    diff = fingerprint_lib.differences(fingerprint_lib.parse(attrs[SWEEP_ATTR]), finger)
    if diff:
        if overwrite:
            return None
        raise ValueError(
            f"out={str(path)!r} is invalid: it holds a different sweep ({fingerprint_lib.describe(diff)} "
            f"differ{'s' if len(diff) == 1 else ''}); {fix}"
        )
    return attrs


def resumable(path: Path, finger: dict, *, resume: bool, overwrite: bool) -> str | None:
    """The id of the store at ``path`` that this sweep (fingerprint ``finger``) will resume into, None if
    it will create one (nothing there, no ``resume``, or ``overwrite``); ``ValueError`` as
    :func:`check_existing`."""
    attrs = check_existing(path, finger, overwrite=overwrite)
    return attrs[STORE_ID_ATTR] if attrs is not None and resume else None


class StoreWriter:
    """Writes one sweep's kept rounds into the store at ``path``; see the module docstring."""

    def __init__(
        self, path: Path, dims: tuple, sizes: tuple, round_chunk: int, store_id: str, durable: bool = False
    ):
        self.path, self.dims, self.sizes, self.store_id = path, dims, sizes, store_id
        self.durable = durable  #: a checkpointed sweep's: flushed (`sync`) before each checkpoint
        lead = len(dims) - 2  # algorithm and grid axes: one per chunk
        seeds = sizes[-2]
        rounds = max(1, min(round_chunk, sizes[-1]))
        self.chunks = (1,) * lead + (max(1, min(seeds, CHUNK_VALUES // rounds)), rounds)
        self._group = open_group(path, "r+")
        self._arrays: dict = {}
        self._complete = bool(self._group.attrs.get(F.COMPLETE_ATTR, False))
        self._unsynced: list[tuple[str, list]] = []  # durable: (field, bounds) written since the last `sync`
        self._unjournaled: list[str] = []  # durable: the journal's lines for what `sync` has not flushed
        self._chunk_names: dict = {}  # per array: (its chunk shape, its dimension_separator)
        # how far the store reaches: the journal's complete lines and their SHA-256, which each checkpoint
        # records (`reach`) and a resume checks (`check_reach`)
        self._journal_lines, self._journal_hash = 0, hashlib.sha256()
        if durable:
            self._journal_lines, self._journal_hash = _journal_reach(self.path, truncate=True)

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        dims,
        coords,
        meta,
        finger: dict,
        resume: bool,
        round_chunk: int,
        overwrite=False,
        durable=False,
    ) -> StoreWriter:
        """Create the store (or, with ``resume``, reopen the one this same sweep left, having checked
        what it holds); ``ValueError`` if ``path`` holds anything else (with ``overwrite``: another
        sweep's store or a damaged one is replaced). Call it before anything runs, holding the store's
        lock. ``durable``: see :meth:`sync`."""
        sizes = tuple(np.size(coords[d]) for d in dims)
        attrs = check_existing(path, finger, overwrite=overwrite)
        if attrs is not None and resume:
            verify_written(path)
            remove_transient(path)
            # a complete store stays complete, with its manifest, until something is written into it
            return cls(path, dims, sizes, round_chunk, attrs[STORE_ID_ATTR], durable)
        store_id = uuid.uuid4().hex
        skeleton = SweepResult(dims, coords, {}, meta).to_xarray()  # coordinates and attributes
        text = json.dumps(finger, sort_keys=True)
        skeleton.attrs.update({F.COMPLETE_ATTR: False, SWEEP_ATTR: text, STORE_ID_ATTR: store_id})
        with atomic.atomic_directory(path) as tmp:
            skeleton.to_zarr(
                str(tmp),
                mode="w",
                encoding=F.no_fill_encoding(skeleton),
                write_empty_chunks=True,
                **F.zarr_format_kwargs(_zarr()),
            )
        return cls(path, dims, sizes, round_chunk, store_id, durable)

    def write(self, field: str, region: tuple, values: np.ndarray) -> None:
        """Write ``values`` into ``region`` of the array ``field`` (created on first use with this
        dtype and the result's full shape)."""
        if self._complete:  # no longer: complete again, with a new manifest, at the end
            (self.path / manifest_lib.NAME).unlink(missing_ok=True)
            self._set_attrs({F.COMPLETE_ATTR: False})
            self._complete = False
        if field not in self._arrays:
            arr = self._group[field] if field in self._group else self._create(field, values.dtype)
            if hasattr(arr, "with_config"):  # zarr-python >= 3: by default it drops chunks of zeros
                arr = arr.with_config({"write_empty_chunks": True})
            self._arrays[field] = arr
        self._arrays[field][region] = values
        bounds = [
            [r, r + 1] if isinstance(r, (int, np.integer)) else list(r.indices(n)[:2])
            for r, n in zip(region, self.sizes)
        ]
        entry = {"field": field, "region": bounds, "sha256": _values_digest(values)}
        if self.durable:  # flushed, then journaled, by `sync` before the checkpoint
            self._unsynced.append((field, bounds))
            self._unjournaled.append(json.dumps(entry) + "\n")
        else:  # after the values: a writer killed while writing them has not journaled them
            self._append_to_journal([json.dumps(entry) + "\n"])

    def _append_to_journal(self, lines: list[str]) -> None:
        with open(self.path / JOURNAL, "a") as f:
            f.writelines(lines)
        for line in lines:
            self._journal_hash.update(line.encode())
        self._journal_lines += len(lines)

    def reach(self) -> dict:
        """How far the store reaches now, for the checkpoint about to be written: the number of journal
        lines (regions flushed) and their SHA-256."""
        return {"journal_lines": self._journal_lines, "journal_sha256": self._journal_hash.hexdigest()}

    def check_reach(self, recorded: dict | None, checkpoint: Path) -> None:
        """``ValueError`` unless the store reaches as far as the checkpoint ``checkpoint`` recorded
        (``recorded``: its :meth:`reach`; None for a checkpoint without a store): its journal begins with
        the lines the checkpoint counted, or it is complete with its manifest. A store restored or copied
        from an earlier moment would otherwise be resumed after the chunks it lacks."""
        if not recorded or (self.path / manifest_lib.NAME).is_file():
            return
        lines, digest = _journal_reach(self.path, upto=int(recorded["journal_lines"]))
        if lines < int(recorded["journal_lines"]) or digest.hexdigest() != recorded["journal_sha256"]:
            raise ValueError(
                f"out={str(self.path)!r} is behind its checkpoint {checkpoint.name}: it holds {lines} of the "
                f"{recorded['journal_lines']} regions the checkpoint counts as written, or others (a store "
                "restored or copied from an earlier moment); resume with the store the checkpoint was "
                "written with, or start over with overwrite=True"
            )

    def sync(self) -> None:
        """Flush to the disk what was written since the last call (chunks, their directories, the
        metadata), then journal it and flush the journal: called before each checkpoint, which must
        never be ahead of the store it names, and no region journaled before its values are on the disk,
        even across a power loss (a region written after the last checkpoint is not journaled: a resume
        writes it again). The values by one ``syncfs`` where Linux has it, else an ``fsync`` of each file
        (`benchmarks/durable_store.py`: 0.97x and 1.22x the sweep not flushing its chunks)."""
        if self._unsynced and not atomic.syncfs(
            self.path
        ):  # each chunk file, then the directories listing them
            dirs = [self.path / field for field in dict.fromkeys(f for f, _ in self._unsynced)]
            meta = [d / name for d in [*dirs, self.path] for name in (".zarray", *_ZARR_METADATA)]
            chunks = {p for field, bounds in self._unsynced for p in self._chunk_files(field, bounds)}
            atomic.fsync_paths([*sorted(chunks), *(p for p in meta if p.is_file()), *dirs, self.path])
        self._unsynced.clear()
        if self._unjournaled:
            self._append_to_journal(self._unjournaled)
            atomic.fsync_paths([self.path / JOURNAL, self.path])
            self._unjournaled.clear()

    def _chunk_files(self, field: str, bounds: list) -> list[Path]:
        """The chunk files of ``field`` that the region ``bounds`` (`[start, stop)` per axis) lies in, as
        zarr format 2 names them (chunk indices joined by the array's ``dimension_separator``)."""
        if field not in self._chunk_names:
            meta = json.loads((self.path / field / ".zarray").read_text())
            self._chunk_names[field] = meta["chunks"], meta.get("dimension_separator") or "."
        chunks, sep = self._chunk_names[field]
        ranges = [range(a // c, -(-b // c)) for (a, b), c in zip(bounds, chunks)]
        return [self.path / field / sep.join(map(str, idx)) for idx in itertools.product(*ranges)]

    def _create(self, field: str, dtype):
        kw = dict(shape=self.sizes, chunks=self.chunks, dtype=dtype, fill_value=None)
        if hasattr(self._group, "create_array"):  # zarr-python >= 3
            arr = self._group.create_array(field, **kw, attributes={"_ARRAY_DIMENSIONS": list(self.dims)})
        else:  # zarr-python 2 writes every chunk, zeros included
            arr = self._group.create_dataset(field, **kw)
            arr.attrs["_ARRAY_DIMENSIONS"] = list(self.dims)
        dtypes = json.loads(self._group.attrs.get(F.DTYPES_ATTR, "{}"))
        dtypes[field] = np.dtype(dtype).str
        self._set_attrs({F.DTYPES_ATTR: json.dumps(dtypes, sort_keys=True)})
        return arr

    def finish(self) -> None:
        """Mark the store complete and write its manifest (:mod:`jaxbandit.persist.manifest`), which
        replaces the journal (a store resumed complete and not written since is left as it was; one
        marked complete whose manifest was never written, its writer stopped between the two, gets it)."""
        if self._complete and (self.path / manifest_lib.NAME).is_file():
            return
        self._set_attrs({F.COMPLETE_ATTR: True})
        F.write_manifest(self.path)
        (self.path / JOURNAL).unlink(missing_ok=True)
        self._complete = True

    def _set_attrs(self, attrs: dict) -> None:
        self._group.attrs.update(attrs)
        with warnings.catch_warnings():  # zarr-python 3 warns of every file that is not zarr's
            warnings.filterwarnings("ignore", message=f"Object at {JOURNAL} is not recognized")
            _zarr().consolidate_metadata(str(self.path))


def _journal_reach(path: Path, *, upto: int | None = None, truncate: bool = False):
    """``(lines, sha256)`` of the complete lines of ``path``'s journal (at most ``upto``); ``truncate``:
    cut the line a killed writer was appending, so that the next line starts a line of its own."""
    try:
        data = (path / JOURNAL).read_bytes()
    except FileNotFoundError:
        data = b""
    complete = data[: data.rfind(b"\n") + 1]
    if truncate and len(complete) < len(data):
        with open(path / JOURNAL, "r+b") as f:
            f.truncate(len(complete))
    lines = complete.splitlines(keepends=True)[:upto]
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line)
    return len(lines), digest


def _values_digest(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


def verify_written(path: Path) -> None:
    """``ValueError`` unless what a stopped sweep wrote into the store at ``path`` is intact: every
    region its journal lists reads back with the values written (a complete store: every file matches
    its manifest)."""
    fix = "start over with overwrite=True (or delete it and the checkpoint directory)"
    found = manifest_lib.read(path, what="out=", fix=fix)
    if found is not None:
        manifest_lib.verify(path, found, what="out=", fix=fix)
        return
    try:
        lines = (path / JOURNAL).read_text().splitlines()
    except FileNotFoundError:
        return
    _check_consolidated(path, fix)
    group = open_group(path, "r")
    for number, line in enumerate(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            if number == len(lines) - 1:  # the line a killed writer was appending: its region is rewritten
                continue
            raise ValueError(f"out={str(path)!r} is damaged: its {JOURNAL} cannot be read; {fix}") from None
        region = tuple(slice(a, b) for a, b in entry["region"])
        where = f"the region {entry['region']} of {entry['field']!r}"
        try:
            array = group[entry["field"]]
            recorded = np.dtype(json.loads(group.attrs.get(F.DTYPES_ATTR, "{}"))[entry["field"]])
            if array.dtype != recorded:  # the same bytes read as another type
                raise ValueError(f"its .zarray says {array.dtype}, the store recorded {recorded}")
            values = np.asarray(array[region])
        except Exception as err:  # a missing array, a chunk that does not decompress, ...
            reason = atomic.error_reason(err)
            raise ValueError(
                f"out={str(path)!r} is damaged: {where} cannot be read ({reason}); {fix}"
            ) from None
        if _values_digest(values) != entry["sha256"]:
            raise ValueError(
                f"out={str(path)!r} is damaged: {where}, written before the sweep stopped, does not read "
                f"back as written (a chunk deleted or changed since); {fix}"
            )


#: The entries of an array's metadata that decide what its bytes are read as: its dtype, shape, chunks and
#: axes (another zarr version may spell the rest, codecs included, differently in ``.zmetadata``; a
#: changed codec makes a journaled region unreadable, which the journal's check finds).
_DECODING = ("dtype", "shape", "chunks", "_ARRAY_DIMENSIONS")


def _check_consolidated(path: Path, fix: str) -> None:
    """``ValueError`` if an array's metadata (``.zarray``, its ``.zattrs``) differs from what the store's
    consolidated ``.zmetadata`` says of it: both are written when the array is created and neither
    changes after, so a difference is damage (a dtype ``<f4`` edited to ``<i4`` reads other values). The
    group's own ``.zattrs`` may be newer than ``.zmetadata`` (a writer stopped between the two)."""
    try:
        consolidated = json.loads((path / ".zmetadata").read_text())["metadata"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # nothing to compare with: the journal's regions are read as the writer reads them
    for key, expected in sorted(consolidated.items()):
        if "/" not in key:
            continue
        try:
            found = json.loads((path / key).read_text())
        except (OSError, ValueError) as err:
            reason = atomic.error_reason(err)
            raise ValueError(
                f"out={str(path)!r} is damaged: {key} cannot be read ({reason}); {fix}"
            ) from None
        if isinstance(found, dict) and isinstance(expected, dict):  # what decides how the bytes are read
            found, expected = ({k: d.get(k) for k in _DECODING} for d in (found, expected))
        if found != expected:
            raise ValueError(
                f"out={str(path)!r} is damaged: {key} differs from what its .zmetadata says of it (edited or "
                f"damaged while the sweep was stopped); {fix}"
            )


def remove_transient(path: Path) -> None:
    """Remove what writers killed midway left inside the store (zarr's ``*.partial`` chunk writes, the
    atomic writes' temporary files, their locks). Call it holding the store's lock."""
    for dirpath, _, files in os.walk(path):
        for name in files:
            if name.endswith(manifest_lib.TRANSIENT):
                os.unlink(os.path.join(dirpath, name))
