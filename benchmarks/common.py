"""Shared pieces of the benchmark scripts: timing, the do-nothing agent, machine description, output."""

from __future__ import annotations

import concurrent.futures
import importlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import jaxbandit as jb
from jaxbandit.core.types import Algorithm
from jaxbandit.experiments.common import device_info, versions
from jaxbandit.persist.atomic import atomic_write_json

D, K = 10, 20  # the paper's setting


def grid_betas(n: int = 16) -> list[float]:
    """The ``beta_scale`` values of the benchmarks' 16-point CR-Hvt-UCB grid (issue 12): ``n`` of them,
    log-spaced from 1e-6 to 1."""
    return np.logspace(-6, 0, n).tolist()


ROOT = Path(__file__).resolve().parents[1]


def load_previous(rev: str):
    """The package as of git revision ``rev``, imported as ``jaxbandit_previous`` beside ``jaxbandit``, so
    that a benchmark can time the previous code and the current one in one process (its sweep and
    simulation paths import relatively). ``rev`` may also be a folder holding that revision's
    ``jaxbandit`` (made with ``git archive REV jaxbandit | tar -x -C FOLDER``), for a machine without the
    repository's history, such as a GPU machine."""
    root = Path(tempfile.mkdtemp(prefix="jaxbandit-previous-"))
    if (Path(rev) / "jaxbandit").is_dir():
        shutil.copytree(Path(rev) / "jaxbandit", root / "jaxbandit")
    else:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "jaxbandit"],
            check=True,
            capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root, filter="data")
    (root / "jaxbandit").rename(root / "jaxbandit_previous")
    sys.path.insert(0, str(root))
    return importlib.import_module("jaxbandit_previous")


def sweep_options(lib, **fields) -> dict:
    """The keyword arguments that make ``lib.sweep`` execute with ``fields`` (``jb.ExecutionOptions``'
    fields; None: the backend's default): ``{"options": lib.ExecutionOptions(...)}``, or ``{}`` when every
    field is None. ``lib`` may be a revision from :func:`load_previous` older than ``ExecutionOptions``:
    there each field is that revision's module constant of the same name in capitals
    (``runner.sweep.CPU_WORKERS``), set here, the only way that code takes it, and ``{}`` is returned."""
    fields = {k: v for k, v in fields.items() if v is not None}
    if not fields:
        return {}
    if hasattr(lib, "ExecutionOptions"):
        return {"options": lib.ExecutionOptions(**fields)}
    for name, value in fields.items():
        if not hasattr(lib.runner.sweep, name.upper()):
            raise ValueError(f"{name}={value!r} is invalid for {lib.__name__}: it has no such setting")
        setattr(lib.runner.sweep, name.upper(), value)
    return {}


def null_agent(lib=jb) -> Algorithm:
    """Pulls arm 0 and only sums its rewards: with it a simulation costs exactly the environment's own
    sampling (contexts, noise, adversary) — the bound no simulator of this setting can beat. ``lib``: the
    package whose ``Algorithm`` it is (the previous code's, from :func:`load_previous`)."""
    return lib.Algorithm(
        init=lambda: jnp.zeros(()), select=lambda s, X: jnp.int32(0), update=lambda s, x, r, nu: s + r
    )


def paper_env(C=100.0):
    return jb.envs.linear(D, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(C))


def paper_alg(T, corruption=100.0, **kw):
    kw.setdefault("beta_scale", 1e-4)
    return jb.cr_hvt_ucb(T, D, eps=1.0, nu=3**0.5, corruption=corruption, **kw)


def batched_runner(alg, env, T, batch, compiler_options=None, threads=1):
    """A compiled function of nothing that runs ``batch`` runs of ``T`` rounds and returns a scalar
    that depends on every round's outputs (nothing can be dead-code eliminated); ``compiler_options``
    as for ``jax.jit``. ``threads`` > 1: the runs in that many equal parts, one program, each part
    called from a thread of its own at once (every core, as ``jb.sweep`` runs on a CPU)."""
    if batch % threads:
        raise ValueError(f"threads={threads} is invalid: it must divide batch={batch}")
    keys = jax.random.split(jax.random.key(0), batch)

    def run(keys):
        out = jax.vmap(lambda k: jb.simulate(alg, env, k, horizon=T))(keys)
        return out.regret.sum() + out.reward.sum()

    parts = [keys[i * batch // threads : (i + 1) * batch // threads] for i in range(threads)]
    compiled = jax.jit(run, compiler_options=compiler_options).lower(parts[0]).compile()
    if threads == 1:
        return lambda: compiled(keys).block_until_ready()
    pool = concurrent.futures.ThreadPoolExecutor(threads)
    return lambda: list(pool.map(lambda k: compiled(k).block_until_ready(), parts))


def interleaved_best(fns: dict, repeats=3) -> dict:
    """Best times of several functions, calls interleaved so that load changes hit all of them alike."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def machine() -> dict:
    """The devices, machine and package versions a benchmark ran on (what the experiments record beside
    their results), with the 1-minute load average at the end: the machines are shared, and what else ran
    shows there."""
    return {
        **device_info(),
        "versions": versions(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def results_dir() -> Path:
    """Where benchmarks write: ``$JAXBANDIT_BENCH_OUT``, or ``benchmarks/results``."""
    return Path(os.environ.get("JAXBANDIT_BENCH_OUT", Path(__file__).parent / "results"))


def write_json(name: str, payload: dict) -> Path:
    path = results_dir() / f"{name}.json"
    atomic_write_json(path, {"machine": machine(), **payload})
    return path


def print_table(rows: list[dict], columns: list[tuple[str, str]]) -> None:
    """``columns``: (key, format) pairs; prints a Markdown table."""
    print("| " + " | ".join(k for k, _ in columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    for r in rows:
        print("| " + " | ".join(format(r[k], f) if f else str(r[k]) for k, f in columns) + " |")
