"""What a sweep persists, owned by one object: :class:`SweepOutput` holds the locks of the ``out=`` store
and the ``checkpoint=`` directory, refuses before anything runs what another sweep wrote (the
:mod:`~jaxbandit.runner.fingerprint`), a damaged checkpoint or store, or a store behind its checkpoints,
opens the store, and gives each compiled program its checkpoint file, its fingerprint and the sink its
kept rounds are written through. ``jb.sweep`` computes; this writes.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import jax

from ..persist import lock as lock_lib
from ..persist.atomic import remove_leftovers
from ..report.results import SweepResult
from . import checkpoint as checkpoint_lib
from . import driver
from . import store as store_lib
from .fingerprint import Sweep


class SweepOutput:
    """One sweep's store, checkpoints, locks and fingerprint checks; made by :meth:`open`.

    ``groups``: the indices of the algorithms each compiled program runs (``names``: the algorithms'
    names, in order); group ``i`` checkpoints into :meth:`checkpoint` ``(i)`` with :meth:`finger` ``(i)``
    and writes its kept rounds through :meth:`sink` ``(i)``."""

    def __init__(self, out: Path | None, directory: Path | None, fingers: Sweep | None, groups, names):
        self.out, self.directory, self.fingers = out, directory, fingers
        self.groups, self.names = [tuple(g) for g in groups], list(names)
        self.files = [
            f"algorithm-{g[0]}.npz" if len(g) == 1 else f"algorithms-{g[0]}-{g[-1]}.npz" for g in groups
        ]
        self.writer: store_lib.StoreWriter | None = None
        self.store_id: str | None = None

    @classmethod
    @contextlib.contextmanager
    def open(
        cls,
        *,
        out: Path | None,
        checkpoint: Path | None,
        fingers: Sweep | None,
        groups,
        names,
        overwrite: bool,
        dims,
        coords,
        meta,
        plan,
        rounds_kept,
    ) -> Iterator[SweepOutput]:
        """Take the locks (process 0), check and prepare everything, then yield; ``ValueError`` before
        anything is written or run (the checkpoints untouched) for anything another sweep wrote, damage,
        or a store behind its checkpoints. ``overwrite``: remove the checkpoints and replace the store."""
        self = cls(out, checkpoint, fingers, groups, names)
        writers = {"out=": out, "checkpoint=": checkpoint} if jax.process_index() == 0 else {}
        with lock_lib.holding_all(writers, on_acquire=remove_leftovers):
            if overwrite and checkpoint is not None:
                checkpoint_lib.remove(checkpoint)
            if fingers is not None:
                self._prepare(fingers, overwrite, dims, coords, meta, plan, rounds_kept)
            yield self

    def _prepare(self, fingers: Sweep, overwrite, dims, coords, meta, plan, rounds_kept) -> None:
        resume = self.directory is not None and not overwrite
        if self.out is not None:
            self.store_id = store_lib.resumable(self.out, fingers.store, resume=resume, overwrite=overwrite)
        for i in range(len(self.groups)):
            path = self.checkpoint(i)
            if path is not None:
                checkpoint_lib.check(path, fingers.group(self.names, self.groups[i], self.store_id))
        if self.out is None:
            return
        self.writer, self.store_id = driver.open_store(
            self.out,
            dims,
            coords,
            meta,
            fingers.store,
            self.store_id is not None,
            plan,
            rounds_kept,
            overwrite,
            durable=self.directory is not None,
        )
        if self.writer is not None and self.directory is not None:
            for i in range(len(self.groups)):
                path = self.directory / self.files[i]
                self.writer.check_reach(checkpoint_lib.store_reach(path), path)

    def checkpoint(self, i: int) -> Path | None:
        """Group ``i``'s checkpoint file; None without ``checkpoint=``."""
        return None if self.directory is None else self.directory / self.files[i]

    def finger(self, i: int) -> dict | None:
        """Group ``i``'s checkpoint fingerprint (naming the store); None when nothing is persisted."""
        return None if self.fingers is None else self.fingers.group(self.names, self.groups[i], self.store_id)

    def sink(self, i: int, lead: bool, plan, rounds_kept) -> Callable | None:
        """Where group ``i``'s chunks' kept rounds go (``driver.write_chunks`` into the store); None
        without ``out=``. ``lead``: whether the result has an ``algorithm`` axis."""
        if self.out is None:
            return None
        leads = [(index,) if lead else () for index in self.groups[i]]
        return functools.partial(driver.write_chunks, self.writer, plan, rounds_kept, leads)

    @property
    def reach(self) -> Callable[[], dict] | None:
        """How far the store reaches, for each checkpoint to record; None without both ``out=`` and
        ``checkpoint=``."""
        return None if self.writer is None or self.directory is None else self.writer.reach

    def finish(self) -> SweepResult:
        """Mark the store complete with its manifest and return it read lazily (``out=`` only)."""
        assert self.out is not None
        return driver.finish_store(self.writer, self.out)
