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
    path = Path(store) / NAME
    where = f"{what}{str(store)!r} is damaged"
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise ValueError(f"{where}: its manifest {NAME} cannot be read ({err}); {fix}") from None
    if not (isinstance(manifest, dict) and manifest.get("format") == FORMAT and "files" in manifest):
        raise ValueError(f"{where}: {NAME} is not a jaxbandit manifest; {fix}")
    return manifest


def verify(store: Path, manifest: dict, *, what: str = "", fix: str = FIX) -> None:
    """``ValueError`` naming the first array and chunk (or metadata file) of ``store`` that is missing,
    damaged, not listed, or absent from the manifest though its array's grid has it; ``what`` prefixes
    the store's name (``"out="``) and ``fix`` ends the message."""
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
    for key in listed:
        if key.endswith("/.zarray"):
            array = key[: -len("/.zarray")]
            meta = json.loads((store / key).read_text())
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
