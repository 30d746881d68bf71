r"""Atomic writes and their flushes, and what a killed writer leaves behind.

A file goes to a temporary file beside its target (``.NAME.<8 characters>.tmp``, created with the mode
the umask gives any new file, not ``tempfile``'s 0o600), is ``fsync``\ ed and renamed onto the target, and
the directory is flushed so that the rename survives a power loss. A directory (a zarr store) is built
beside its target and swapped in with one ``renameat2(RENAME_EXCHANGE)`` on Linux (elsewhere: the old one
renamed aside first and put back if the new one cannot be moved in). The target's lock
(:mod:`jaxbandit.persist.lock`) is held meanwhile, and the next writer of a target removes what a killed
one left beside it. A symbolic link at the target is followed: its target is written. :func:`syncfs`
flushes a whole file system in one call (Linux), which a durable store uses before each checkpoint.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from . import lock


def atomic_write_bytes(path, write) -> None:
    """Call ``write(fileobj)`` on a temporary file next to ``path`` and move it into place."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        write(f)


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
    """Hold ``path``'s lock (:mod:`jaxbandit.persist.lock`; ``ValueError`` naming the holder if another
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
    text = json.dumps(obj, indent=2, sort_keys=True, default=json_default).encode()
    atomic_write_bytes(path, lambda f: f.write(text))


def atomic_savez(path, **arrays) -> None:
    """``np.savez`` to ``path`` atomically (``path`` should end in ``.npz``)."""
    atomic_write_bytes(path, lambda f: np.savez(f, **arrays))


def json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
