"""What making a checkpointed ``jb.sweep(out=...)`` survive a power loss costs: before each checkpoint the
store's new chunks are flushed to the disk, by one ``syncfs`` (Linux, the library's way) or by an ``fsync``
of each chunk file (elsewhere), against the same sweep not flushing them (a ``syncfs`` that does nothing;
the journal and the checkpoints are flushed in all three).

In one process, interleaved, best of ``--repeats``: OFUL on the linear environment, two algorithms × a
grid of ``--grid`` β × 8 seeds, 8 checkpointed chunks, so ``5 fields × 2 × grid`` chunk files a chunk.
The store and checkpoints are written under ``--dir`` (default: the results directory's file system).

    python benchmarks/durable_store.py [--grid 64] [--repeats 4]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import common
import numpy as np

import jaxbandit as jb
from jaxbandit.persist import atomic

T, CHUNK, SEEDS, D, K = 2000, 250, 8, 5, 10


def sweep_into(folder: Path, grid: dict) -> float:
    env = jb.envs.linear(D, K, noise=jb.noise.gaussian(1.0))

    def alg(p):
        return jb.oful(T, D, beta_scale=p["beta_scale"])

    run = tempfile.mkdtemp(dir=folder)
    start = time.perf_counter()
    jb.sweep(
        {"a": alg, "b": alg},
        env,
        grid,
        horizon=T,
        seeds=SEEDS,
        chunk_size=CHUNK,
        out=Path(run) / "r.zarr",
        checkpoint=Path(run) / "ckpt",
    )
    seconds = time.perf_counter() - start
    shutil.rmtree(run)
    return seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    folder = args.dir or common.results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    grid = {"beta_scale": list(np.linspace(0.01, 1.0, args.grid))}
    library_syncfs = atomic.syncfs
    if not library_syncfs(folder):
        raise SystemExit(f"no syncfs on {folder}: the library flushes each file there")

    def variant(syncfs):
        def run():
            atomic.syncfs = syncfs
            try:
                return sweep_into(folder, grid)
            finally:
                atomic.syncfs = library_syncfs

        return run

    fns = {  # the store's writer told that a syncfs succeeded, or that there is none
        "chunks not flushed": variant(lambda path: True),
        "syncfs (the library)": variant(library_syncfs),
        "fsync of each file": variant(lambda path: False),
    }
    fns["chunks not flushed"]()  # compiles the program all three run
    best = {name: float("inf") for name in fns}
    for _ in range(args.repeats):
        for name, fn in fns.items():
            best[name] = min(best[name], fn())
    rows = [dict(variant=k, seconds=s, vs_first=s / best["chunks not flushed"]) for k, s in best.items()]
    files = 5 * 2 * args.grid
    print(f"\n{T // CHUNK} checkpointed chunks of {files} chunk files each; best of {args.repeats}\n")
    common.print_table(rows, [("variant", ""), ("seconds", ".2f"), ("vs_first", ".3f")])
    common.write_json(
        "durable_store",
        {
            "grid": args.grid,
            "chunk_files": files,
            "chunks": T // CHUNK,
            "repeats": args.repeats,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
