"""The manifest of a zarr store: what a complete store holds, so that a missing or damaged file is an
error on reading rather than zeros or a wrong value.

Written into the store (``jaxbandit_manifest.json``) when it is complete — by ``SweepResult.save`` and at
the end of ``jb.sweep(out=...)`` — it lists every file of the store (metadata and chunks) with its size
and SHA-256. :func:`verify` reads each file again and checks it, and that each array holds every chunk
of its grid (the stores are written with every chunk, empty ones included). Zarr's own codecs would
check a chunk only when it is read, and could not tell a deleted chunk from one never written.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

NAME = "jaxbandit_manifest.json"
FORMAT = "jaxbandit-manifest/1"
#: What writers leave in a store while they run (zarr's ``*.partial`` chunk writes, the atomic writes'
#: ``.NAME.<id>.tmp``, locks): not part of it.
TRANSIENT = (".partial", ".tmp", ".lock", ".old")


def make(store: Path) -> dict:
    """The manifest of the store at ``store``: every file but the transient ones, with size and hash."""
    store = Path(store)
    return {
        "format": FORMAT,
        "hash": "sha256",
        "files": {key: [(store / key).stat().st_size, _digest(store / key)] for key in _keys(store)},
    }


#: What a refusal of a saved store suggests.
FIX = "write it again (SweepResult.load(..., verify=False) reads it unchecked)"


def read(store: Path, *, what: str = "", fix: str = FIX) -> dict | None:
    """The manifest in ``store``; None if there is none. ``ValueError`` if it is not one (``what`` and
    ``fix`` as in :func:`verify`)."""
    try:
        data = (Path(store) / NAME).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        where = f"{what}{str(store)!r} is damaged"
        raise ValueError(f"{where}: its manifest {NAME} cannot be read ({err}); {fix}") from None
    return parse(data, store, what=what, fix=fix)


def parse(data: bytes | None, store: Path, *, what: str = "", fix: str = FIX) -> dict | None:
    """The manifest whose bytes are ``data`` (None: there is none); ``ValueError`` if it is not one."""
    if data is None:
        return None
    where = f"{what}{str(store)!r} is damaged"
    try:
        manifest = json.loads(data)
    except ValueError as err:
        raise ValueError(f"{where}: its manifest {NAME} cannot be read ({err}); {fix}") from None
    if not (isinstance(manifest, dict) and manifest.get("format") == FORMAT and "files" in manifest):
        raise ValueError(f"{where}: {NAME} is not a jaxbandit manifest; {fix}")
    return manifest


def read_files(store: Path) -> dict[str, bytes]:
    """Every file of ``store`` (its manifest included, the transient ones left out) as ``key -> bytes``,
    each read once."""
    store = Path(store)
    files = {}
    for path in sorted(store.rglob("*")):
        if path.is_file() and not path.name.endswith(TRANSIENT):
            files[path.relative_to(store).as_posix()] = path.read_bytes()
    return files


def verify(store: Path, manifest: dict, *, what: str = "", fix: str = FIX) -> None:
    """``ValueError`` naming the first array and chunk (or metadata file) of ``store`` that is missing,
    damaged, not listed, or absent from the manifest though its array's grid has it; ``what`` prefixes
    the store's name (``"out="``) and ``fix`` ends the message. Reads one file at a time (a store may be
    larger than memory)."""
    store = Path(store)
    listed: dict = manifest["files"]
    where = f"{what}{str(store)!r} is damaged"
    for key, (size, digest) in sorted(listed.items()):
        path = store / key
        if not path.is_file():
            if "/" in key and not path.parent.is_dir():
                raise ValueError(
                    f"{where}: the array {key.rsplit('/', 1)[0]!r} is missing (its directory); {fix}"
                )
            raise ValueError(f"{where}: {_what(key)} is missing ({key}); {fix}")
        if path.stat().st_size != size or _digest(path) != digest:
            raise ValueError(f"{where}: {_what(key)} does not match its checksum ({key}); {fix}")
    for key in _keys(store):
        if key not in listed:
            raise ValueError(f"{where}: it holds {key}, which its manifest does not list; {fix}")
    _check_grids(listed, lambda key: (store / key).read_bytes(), where, fix)


def verify_files(
    store: Path, files: dict[str, bytes], manifest: dict, *, what: str = "", fix: str = FIX
) -> None:
    """:func:`verify` of the files ``files`` (:func:`read_files`, read once) of ``store``: what is
    checked is what the caller decodes."""
    listed: dict = manifest["files"]
    where = f"{what}{str(store)!r} is damaged"
    for key, (size, digest) in sorted(listed.items()):
        data = files.get(key)
        if data is None:
            array = key.rsplit("/", 1)[0]
            if "/" in key and not any(k.startswith(array + "/") for k in files):
                raise ValueError(f"{where}: the array {array!r} is missing (its directory); {fix}")
            raise ValueError(f"{where}: {_what(key)} is missing ({key}); {fix}")
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"{where}: {_what(key)} does not match its checksum ({key}); {fix}")
    for key in files:
        own = "/" not in key and key.startswith("jaxbandit_")  # this manifest, a journal
        if key not in listed and not own:
            raise ValueError(f"{where}: it holds {key}, which its manifest does not list; {fix}")
    _check_grids(listed, files.__getitem__, where, fix)


def _check_grids(listed: dict, read, where: str, fix: str) -> None:
    """``ValueError`` unless each array of ``listed`` lists every chunk of its grid (``read(key)``: the
    bytes of a listed file)."""
    for key in listed:
        if key.endswith("/.zarray"):
            array = key[: -len("/.zarray")]
            meta = json.loads(read(key))
            grid = [math.ceil(n / c) for n, c in zip(meta["shape"], meta["chunks"])]
            expected = math.prod(grid)
            chunks = sum(
                1 for k in listed if k.startswith(f"{array}/") and not k.rsplit("/", 1)[1].startswith(".")
            )
            if chunks != expected:
                raise ValueError(
                    f"{where}: the array {array!r} lists {chunks} of its {expected} chunks; {fix}"
                )


def _keys(store: Path) -> list[str]:
    """The store's files (``/``-separated, relative), jaxbandit's own (``jaxbandit_*`` at the top: the
    manifest, a streamed store's journal) and transient ones left out."""
    keys = []
    for path in sorted(store.rglob("*")):
        own = path.parent == store and path.name.startswith("jaxbandit_")  # this manifest, a journal
        if path.is_file() and not own and not path.name.endswith(TRANSIENT):
            keys.append(path.relative_to(store).as_posix())
    return keys


def _what(key: str) -> str:
    if "/" not in key:
        return f"the store's metadata {key}"
    array, name = key.rsplit("/", 1)
    return (
        f"the metadata {name} of the array {array!r}"
        if name.startswith(".")
        else f"chunk {name} of the array {array!r}"
    )


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
