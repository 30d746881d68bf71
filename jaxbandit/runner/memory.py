"""What a sweep's results will take in memory, estimated from its arguments before anything is allocated,
so that a sweep that cannot fit is one ``ValueError`` saying what would, not a ``MemoryError`` or
``RESOURCE_EXHAUSTED`` after minutes (``seeds=10**9`` once allocated 8 GiB of seed numbers first).

The estimate is a lower bound: the kept rounds of every run (``runs × recorded rounds × fields``, 4 or 8
bytes each), or, with ``out=``, one chunk of them (the store holds the rest), and the seed numbers.
The algorithms' states come on top.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..core import validation as V

#: The fewest rounds a chunk runs (``plan.default_chunk``'s floor): what streaming to disk cannot cut.
SMALLEST_CHUNK = 64
GiB = 1 << 30


def rounds_recorded(record, horizon: int) -> int:
    """How many rounds ``record`` keeps of ``horizon`` (at most; :func:`~jaxbandit.runner.plan.record_rounds`
    without its arrays)."""
    if isinstance(record, str):
        return horizon
    if isinstance(record, tuple) and len(record) == 2 and record[0] == "log":
        return int(V.check_int("record[1]", record[1], low=2)) + 1
    if isinstance(record, (int, np.integer)) and not isinstance(record, bool):
        return horizon // max(int(record), 1) + 1
    return int(np.size(record))


def seed_count(seeds) -> int:
    return int(V.check_int("seeds", seeds)) if np.ndim(seeds) == 0 else int(np.size(seeds))


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the machine's, or its cgroup's limit if lower; None where
    neither can be read."""
    limits = []
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        pass
    for path in (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")):
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            limits.append(int(text))
    return min(limits) if limits else None


def check_fits(
    *, algorithms: int, points: int, seeds, horizon: int, record, streamed: bool, itemsize: int, limit=None
) -> None:
    """``ValueError`` naming the arguments if the sweep's results (see the module docstring) need more
    than ``limit`` bytes (default :func:`machine_memory`; nothing is checked where it is unknown)."""
    limit = machine_memory() if limit is None else limit
    if limit is None:
        return
    n_seeds = seed_count(seeds)
    rounds = rounds_recorded(record, horizon)
    fields = 5 if isinstance(record, str) else 2
    runs = algorithms * points * n_seeds
    kept = min(rounds, SMALLEST_CHUNK) if streamed else rounds
    need = runs * kept * fields * itemsize + n_seeds * 8
    if need <= limit:
        return
    where = "one chunk of them" if streamed else "its results alone"
    fix = (
        "run fewer seeds or grid points, or split the sweep"
        if streamed
        else "record fewer rounds (record=('log', 100)), stream them to disk (out='….zarr'), or run fewer "
        "seeds or grid points"
    )
    raise ValueError(
        f"seeds={n_seeds}, horizon={horizon}, record={record!r} over {points} grid points and {algorithms} "
        f"algorithm(s) are too many for this machine: {where} would take {need / GiB:.3g} GiB ({runs} runs × "
        f"{kept} rounds × {fields} fields × {itemsize} bytes), more than its {limit / GiB:.3g} GiB of "
        f"memory; {fix}"
    )
