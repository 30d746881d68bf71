"""One writer at a time: an exclusive lock on each result, store and checkpoint directory jaxbandit writes.

The lock of a target ``DIR/NAME`` is the file ``DIR/.NAME.lock``, locked with ``fcntl.flock`` for as long
as the writer runs (``jb.sweep``: its ``out=`` store and its ``checkpoint=`` directory, from before the
first chunk to the end; ``SweepResult.save`` and every atomic write: while it writes). It holds the
holder's pid, host, start time and command, which a second writer's ``ValueError`` names. The kernel
releases a lock whose process dies (``kill -9`` included), so a lock left by a dead writer is free: the
next writer takes it over. Within a process a lock is reentrant on the thread that holds it (a sweep's
store lock covers the store's own atomic writes). On NFS, Linux takes ``flock`` locks on the server, so
writers on different hosts exclude each other too; on a file system without locks (ENOLCK, ENOSYS,
EOPNOTSUPP) the write goes on unlocked, with a warning.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; writes go on unlocked, with a warning
    fcntl = None  # type: ignore[assignment]

_GUARD = threading.Lock()
#: The locks this process holds: lock file -> [file descriptor or None (unlocked), thread id, depth].
_HELD: dict[str, list] = {}
#: What a file system without locks raises from ``flock``.
_UNSUPPORTED = (errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP)


def lock_file(target) -> Path:
    """The lock file of ``target``: ``.NAME.lock`` beside it."""
    target = Path(target)
    return target.parent / f".{target.name}.lock"


@contextlib.contextmanager
def holding(target, *, what: str = "", on_acquire: Callable[[Path], None] | None = None) -> Iterator[None]:
    """Hold ``target``'s lock for the block. ``ValueError`` naming the holder (``what`` prefixes the
    target in the message, e.g. ``"out="``) if another process, or another thread of this one, holds it.
    ``on_acquire(target)`` runs once the lock is taken (not again when this thread already held it):
    where a killed writer's leftovers are cleaned, no live writer of ``target`` being possible."""
    target = Path(target)
    key = os.path.abspath(lock_file(target))
    with _GUARD:
        held = _HELD.get(key)
        if held is not None:
            if held[1] != threading.get_ident():
                raise ValueError(
                    f"{what}{str(target)!r} is being written by another thread of this process; wait for "
                    "it to finish"
                )
            held[2] += 1
        else:
            _HELD[key] = [_acquire(target, what), threading.get_ident(), 1]
    try:
        if held is None and on_acquire is not None:
            on_acquire(target)
        yield
    finally:
        with _GUARD:
            entry = _HELD[key]
            entry[2] -= 1
            if entry[2] == 0:
                del _HELD[key]
                _release(Path(key), entry[0])


@contextlib.contextmanager
def holding_all(targets: dict, *, on_acquire: Callable[[Path], None] | None = None) -> Iterator[None]:
    """Hold the lock of every target of ``targets`` (``what -> path``; None skipped, e.g.
    ``{"out=": store, "checkpoint=": directory}``), taken in that order, for the block."""
    with contextlib.ExitStack() as stack:
        for what, target in targets.items():
            if target is not None:
                stack.enter_context(holding(target, what=what, on_acquire=on_acquire))
        yield


def holder(target) -> dict | None:
    """What ``target``'s lock file says about its holder (pid, host, started, command); None if there is
    no lock file or it says nothing readable."""
    try:
        text = lock_file(target).read_text()
        info = json.loads(text)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _acquire(target: Path, what: str) -> int | None:
    lock = lock_file(target)
    lock.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        _unlocked(target, "this platform has no fcntl.flock")
        return None
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ValueError(_held_message(target, what)) from None
        except OSError as err:
            os.close(fd)
            if err.errno not in _UNSUPPORTED:
                raise
            _unlocked(target, f"its file system cannot lock files ({os.strerror(err.errno)})")
            return None
        # The holder before us unlinks the file as it releases it: locked after that, our descriptor
        # is of a file no longer at this path, which a third writer could create and lock. Try again.
        try:
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "command": " ".join(sys.argv),
    }
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode())
    except BaseException:  # a full disk: the lock is given up, not left held by a lost descriptor
        _release(lock, fd)
        raise
    return fd


def _release(lock: Path, fd: int | None) -> None:
    if fd is None:
        return
    # unlinked while still locked: a writer that opened it meanwhile sees it gone and starts over
    with contextlib.suppress(FileNotFoundError):
        os.unlink(lock)
    os.close(fd)


def _held_message(target: Path, what: str) -> str:
    info = holder(target) or {}
    who = f"pid {info.get('pid', '?')} on {info.get('host', '?')}, since {info.get('started', '?')}"
    if info.get("command"):
        who += f": {info['command']}"
    return (
        f"{what}{str(target)!r} is being written by another process ({who}); wait for it to finish or "
        "stop it, or write somewhere else"
    )


def _unlocked(target: Path, why: str) -> None:
    warnings.warn(
        f"{str(target)!r} is written without a lock ({why}): two writers at once could mix their data",
        stacklevel=4,
    )
