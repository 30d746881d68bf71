"""The scaling run in one call: the sweeps (one compiled :func:`jaxbandit.sweep` per algorithm, horizon and
dimension, run concurrently), the fits, and the files (``scaling.json``, ``scaling.md``, the final
regrets as ``jb.SweepResult`` files ``results_T.npz``, ``results_C.npz``, ``results_d.npz`` with their
``.json`` (and ``.nc`` with xarray), ``scaling_T.png``, ``scaling_C.png``, ``scaling_d.png``)."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

import jaxbandit as jb

from ...core.validation import check_flag
from ...persist.atomic import atomic_write_bytes, atomic_write_json
from ..common import device_info, jsonable, now, read_json, save_result, versions
from ..figure1.settings import DIM, NUM_ARMS
from . import fit as F
from . import tuning as tuning_lib
from .report import PAPER_BOUND_SOURCE, arrays_from, draw, markdown  # noqa: F401 (arrays_from: re-exported)
from .settings import (
    FULL,
    LINEAR_COST,
    QUICK,
    TAIL_MARGIN,
    Plan,
    algorithm_factory,
    check_algorithms,
    check_plan,
    environment,
    moment_bound,
    override,
    variant_names,
)


class Job(NamedTuple):
    """One compiled sweep: ``method`` at horizon T and dimension d over the grid ε × ``budgets`` ×
    variant × seeds."""

    method: str
    horizon: int
    dim: int
    budgets: tuple[float, ...]


@dataclass
class ScalingResult:
    """What :func:`run` produced: the final regrets (``arrays``: ``T/<method>`` `[variant, eps, horizon,
    seed]`, ``C/<method>``, ``C_spent/<method>``, ``d/<method>`` and the grids; the results files hold them
    as :func:`results`), the JSON content (``data``: settings, fits, timings) and the paths written."""

    arrays: dict
    data: dict
    paths: dict


def plan_jobs(plan: Plan, methods) -> list[Job]:
    """Every sweep the plan needs, most expensive first (so the long ones start early): per method, one
    per horizon it runs at d = 10 (the one at the corruption horizon over the whole C grid, the others
    at C = 0), and one per other dimension at the dimension horizon (C = 0)."""
    jobs = []
    for m in methods:
        spec = jb.registry.algorithm(m)
        for T in plan.horizons_for(spec):
            budgets = plan.budgets if T == plan.corruption_horizon else (0.0,)
            jobs.append(Job(m, T, DIM, budgets))
        jobs += [Job(m, plan.dim_horizon, d, (0.0,)) for d in plan.dims if d != DIM]

    def cost(job: Job) -> float:
        per_round = job.horizon if jb.registry.algorithm(job.method).cost == LINEAR_COST else 1.0
        return job.horizon * per_round * len(job.budgets) * job.dim**2

    return sorted(jobs, key=cost, reverse=True)


#: Each part's grid in the arrays, by the name of its axis.
GRIDS = {"T": "horizons", "C": "budgets", "d": "dims"}


def identical_runs(arrays: dict, methods) -> list[dict]:
    """Pairs of algorithms whose runs are bitwise identical (every seed's final regret) in at least one
    cell (constants × ε × grid point) of some part, counted per part: ``{"pair": [a, b], "T": {"identical":
    k, "cells": n, "differ_at": [grid values where some cell differs]}, "C": ..., "d": ...}`` (cells
    where either did not run are not counted)."""
    rows = []
    for i, a in enumerate(methods):
        for b in methods[i + 1 :]:
            row: dict = {"pair": [a, b]}
            for part, grid in GRIDS.items():
                A, B = arrays[f"{part}/{a}"], arrays[f"{part}/{b}"]  # [variant, eps, grid, seed]
                ran = np.all(np.isfinite(A), axis=-1) & np.all(np.isfinite(B), axis=-1)
                same = np.all(A == B, axis=-1) & ran
                differ = np.any(ran & ~same, axis=(0, 1))
                row[part] = {
                    "identical": int(same.sum()),
                    "cells": int(ran.sum()),
                    "differ_at": np.asarray(arrays[grid])[differ].tolist(),
                }
            if any(row[p]["identical"] for p in GRIDS):
                rows.append(row)
    return rows


def default_workers() -> int:
    """Sweeps to run at once: the CPU count, at most 8 on a GPU or TPU (threads: the host's cores compile
    while the device runs) and at most 4 on a CPU backend (worker processes, see :func:`_run_jobs`)."""
    cap = 4 if jax.default_backend() == "cpu" else 8
    return max(1, min(cap, os.cpu_count() or 1))


def random_play_regret(dims, *, samples: int = 200_000, seed: int = 0) -> dict:
    """Per-round pseudo-regret of choosing an arm uniformly at random, E[max_k ⟨x_k, θ*⟩] (the mean arm
    has mean 0), for K = 20 contexts uniform on the unit sphere of ℝ^d: ⟨x, θ*⟩² ~ Beta(1/2, (d−1)/2)
    with a random sign. Monte Carlo; ``{d: (mean, standard error)}``. T times it is the linear ceiling."""
    rng = np.random.default_rng(seed)
    out = {}
    for d in dims:
        if d == 1:
            z = rng.choice([-1.0, 1.0], size=(samples, NUM_ARMS))
        else:
            z = np.sqrt(rng.beta(0.5, (d - 1) / 2.0, size=(samples, NUM_ARMS)))
            z *= rng.choice([-1.0, 1.0], size=z.shape)
        m = z.max(axis=1)
        out[int(d)] = (float(m.mean()), float(m.std(ddof=1) / np.sqrt(samples)))
    return out


def run(
    quick: bool = False,
    out: str | os.PathLike = "out/scaling",
    *,
    algorithms: Sequence[str] | None = None,
    seeds: int | None = None,
    horizons: Sequence[int] | None = None,
    eps: Sequence[float] | None = None,
    budgets: Sequence[float] | None = None,
    dims: Sequence[int] | None = None,
    linear_cost_max_horizon: int | None = None,
    tune_horizons: Sequence[int] | None = None,
    tuned_file: str | os.PathLike | None = None,
    workers: int | None = None,
    resamples: int = F.DEFAULT_RESAMPLES,
    progress: bool = True,
    verbose: bool = True,
    command: str | None = None,
) -> ScalingResult:
    """Measure how final regret grows with T (per ε), with C and with d, for every selected algorithm
    with its theory constants and with constants tuned for this study per ε at each tuning horizon
    (:mod:`.tuning`), fit the exponents with bootstrap confidence intervals, and write ``tuning.json``,
    ``scaling.json``, ``scaling.md``, ``results_{T,C,d}.npz`` and the figures.

    Args:
      quick: the small plan (:data:`QUICK`, a few minutes on a 2-core CPU) instead of :data:`FULL` (meant
        for a GPU).
      out: the output directory.
      algorithms: registered names (default: every algorithm in ``jb.registry``).
      seeds: reported seeds 0..n−1, n ≥ 2 (default: the plan's).
      horizons: the horizons T of part (a) (see :class:`Plan`; None keeps the plan's, as for the next
        four).
      eps: the moment orders ε of part (a).
      budgets: the corruption budgets C of part (b); they must hold 0.
      dims: the dimensions d of part (c).
      linear_cost_max_horizon: the largest T at which the algorithms of registry cost "O(t)" run.
      tune_horizons: the horizons the constants are tuned at, per ε (each set a constants variant
        ``tuned@T``; ``()``: theory constants only).
      tuned_file: a ``tuning.json`` of an earlier scaling run to start from (its entries are reused,
        the missing ones tuned); default ``out/tuning.json`` when it exists (a resumed run).
      workers: sweeps compiled and run concurrently (default :func:`default_workers`): threads on a
        GPU, processes on a CPU backend; 1 runs them one after another in this process.
      resamples: bootstrap resamples per confidence interval.
      progress: a progress bar over the sweeps.
      verbose: print the summary.
      command: the command line recorded in the JSON.
    """
    quick = check_flag("quick", quick)
    progress = check_flag("progress", progress)
    verbose = check_flag("verbose", verbose)
    methods = check_algorithms(algorithms)
    default = QUICK if quick else FULL
    plan = override(
        default,
        horizons=horizons,
        eps=eps,
        budgets=budgets,
        dims=dims,
        seeds=seeds,
        linear_cost_max_horizon=linear_cost_max_horizon,
        tune_horizons=None if tune_horizons is None else tuple(tune_horizons),
    )
    if workers is None:
        workers = default_workers()
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers={workers!r} is invalid: it must be an integer >= 1")
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 100:
        raise ValueError(f"resamples={resamples!r} is invalid: it must be an integer >= 100")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out={str(out)!r} is invalid: it exists and is not a directory")
    custom = plan._replace(seeds=0) != check_plan(default)._replace(seeds=0)
    mode = ("quick" if quick else "full") + (" (custom grids)" if custom else "")
    seed_ids = list(range(plan.seeds))
    variants = variant_names(plan.tune_horizons)
    tuned_path = out / "tuning.json"
    start = None
    if tuned_file is not None:
        start = tuning_lib.load(tuned_file)
    elif tuned_path.exists():
        start = tuning_lib.load(tuned_path)
    t_tune = time.perf_counter()
    tuned_data = None
    if plan.tune_horizons:
        out.mkdir(parents=True, exist_ok=True)
        entries = sum(len(tuning_lib.tune_horizons_for(plan, m)) for m in methods) * len(plan.eps)
        bar = None
        if progress:
            from ...runner import progress as progress_lib

            bar = progress_lib.bar(total=entries, desc="scaling tuning", unit="setting")
        tuned_data = tuning_lib.tune(plan, methods, tuned_path, start, bar)
        if bar is not None:
            bar.close()
    tune_seconds = time.perf_counter() - t_tune
    tuned: dict[str, tuple] = {
        m: tuning_lib.table(tuned_data, plan, m) if tuned_data else ((), None) for m in methods
    }

    jobs = plan_jobs(plan, methods)
    t_start = time.perf_counter()
    done = _run_jobs(jobs, plan, seed_ids, tuned, workers, progress)
    sweep_seconds = time.perf_counter() - t_start
    arrays = _assemble(done, plan, methods, seed_ids)
    t_fit = time.perf_counter()
    fits = _fits(arrays, plan, methods, resamples)
    fit_seconds = time.perf_counter() - t_fit
    random_play = random_play_regret(sorted(set(plan.dims) | {DIM}))
    identical = identical_runs(arrays, methods)

    data: dict[str, Any] = {
        "experiment": "scaling of final regret in T (per eps), C and d, against Tani & Futami's bound",
        "created": now(),
        "command": command if command is not None else " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "mode": mode,
        "theory": {
            "bound": "Reg(T) = O~(d T^{1/(1+eps)} + d T^{(1-eps)/(2(1+eps))} (1 v C)) "
            + PAPER_BOUND_SOURCE
            + "; at eps = 1 the corruption term is d C",
            "exponent_T": "1/(1+eps) (C = 0)",
            "growth_C": "linear (slope of R(C) - R(0) against C on log-log axes: 1)",
            "growth_d": "linear (log-log slope 1); the lower bound of Tajdini et al. 2025 grows as "
            "d^{2 eps/(1+eps)}",
        },
        "fit_method": F.METHOD,
        "confidence_level": F.DEFAULT_LEVEL,
        "resamples": resamples,
        "settings": {
            "plan": plan._asdict(),
            "corruption_horizon": plan.corruption_horizon,
            "dim_horizon": plan.dim_horizon,
            "seeds": seed_ids,
            "base_dim": DIM,
            "num_arms": NUM_ARMS,
            "S": 1.0,
            "L": 1.0,
            "theta_star": "uniform on the unit sphere",
            "contexts": "K i.i.d. uniform on the unit sphere",
            "noise": f"centred Pareto(shape = 1 + eps + {TAIL_MARGIN}, x_min = 1): the (1+eps)-moment "
            "exists and no moment of order >= 1 + eps + 0.1 does (eps = 0.4 is Figure 1's (c))",
            "nu": {
                "what": "max(paper's uncentred bound (E X^{1+eps})^{1/(1+eps)}, exact centred bound); "
                "the algorithms know eps, nu and C",
                "values": {f"{e:g}": float(moment_bound(e)) for e in plan.eps},
            },
            "adversary": "jb.corruption.flip(budget=C): exact budget, sum |c_t| <= C",
            "record": "final round only (cumulative pseudo-regret at T)",
            "beta_with_T": "Each T is its own run. Theory constants: every constant is the theory value for "
            "that T (CR-Hvt-UCB's beta_t = 409 log(2T^2/delta) tau_0 t^e + sqrt(lambda(2+4S^2)) with "
            "delta = 1/(8T), so the radius grows with log T). Tuned constants tuned@T': tuned for this "
            "study per eps at the horizon T' (the radius as a multiple of the theory radius, the second "
            "constant as a value); at every T the run uses that multiple of the theory radius for T, so "
            "a set is tested away from the horizon it was tuned for as well as at it.",
            "linear_cost_cap": f"algorithms with registry cost {LINEAR_COST} run horizons <= "
            f"{plan.linear_cost_max_horizon} only",
            "variants": list(variants),
            "tuned": {
                "file": str(tuned_path) if tuned_data else None,
                "sha256": read_json(tuned_path, f"tuned_file={str(tuned_path)!r}")[1] if tuned_data else None,
                "tune_horizons": list(plan.tune_horizons),
                "setting": tuning_lib.setting(),
                "protocol": "jaxbandit.experiments.bench.protocol (radius multiple of its theory value "
                "over the same grid for every algorithm, then its second constant; edges extended)",
            },
        },
        "algorithms": {
            m: {
                "label": jb.registry.algorithm(m).label,
                "module": jb.registry.algorithm(m).module,
                "cost": jb.registry.algorithm(m).cost,
                "knowledge": list(jb.registry.algorithm(m).knowledge),
                "horizons": list(plan.horizons_for(jb.registry.algorithm(m))),
                "constants": ["theory"] + [f"tuned@{T}" for T in tuned[m][0]],
                "tuned": _tuned_summary(tuned_data, m, tuned[m][0], plan.eps),
            }
            for m in methods
        },
        "random_play": {
            "what": "per-round pseudo-regret of a uniformly random arm, E[max_k <x_k, theta*>] (Monte Carlo, "
            "200000 draws); T times it is the regret of never learning",
            "per_round": {str(d): {"mean": v[0], "stderr": v[1]} for d, v in random_play.items()},
        },
        "fits": fits,
        "identical": {
            "what": "pairs of algorithms whose runs (every seed's final regret) are bitwise identical in at "
            "least one cell (constants x eps x grid point) of a part, with the count per part and the grid "
            "values where they differ",
            "pairs": identical,
        },
        "versions": versions(),
        "device": device_info(),
        "workers": workers,
        "wall_seconds": {
            "total": None,  # everything after the tuning
            "tuning": tune_seconds,
            "sweeps_including_compilation": sweep_seconds,
            "fits": fit_seconds,
            "per_sweep": [
                {
                    "algorithm": j.method,
                    "horizon": j.horizon,
                    "dim": j.dim,
                    "budgets": len(j.budgets),
                    "runs": r["runs"],
                    "seconds_including_compilation": r["seconds"],
                }
                for j, r in done.items()
            ],
        },
    }
    paths = _write(out, arrays, data, plan, methods, t_start)
    if verbose:
        print(_summary_lines(data))
        print(
            f"\n{tune_seconds + data['wall_seconds']['total']:.1f} s in all ({tune_seconds:.1f} s of "
            f"tuning) on {jax.devices()[0].platform} "
            f"({len(jobs)} compiled sweeps, {workers} at a time)"
        )
        print("wrote " + ", ".join(str(p) for p in paths.values()))
        for part, grid in GRIDS.items():
            if f"png_{part}" not in paths:
                print(
                    f"no scaling_{part}.png: its grid ({grid}) has fewer than two positive values, and a "
                    "line on log-log axes needs two"
                )
    return ScalingResult(arrays=arrays, data=data, paths=paths)


def _tuned_summary(data: dict | None, method: str, horizons, eps) -> dict:
    """Per tuning horizon and ε: the chosen point (radius multiplier and second constant), its
    tuning-seed mean ± s.e., the budget, the edges reached and whether the radius curve is flat."""
    out: dict = {}
    if data is None:
        return out
    for T in horizons:
        for e in eps:
            entry = data["methods"][method][str(T)][f"{float(e):g}"]
            best = [r for r in entry["rows"] if all(r.get(n) == v for n, v in entry["best"].items())]
            out.setdefault(f"tuned@{T}", {})[f"{float(e):g}"] = {
                "point": entry["best"],
                "mean": best[0]["mean"] if best else None,
                "stderr": best[0]["stderr"] if best else None,
                "budget": entry["budget"],
                "edges": entry["edges"],
                "radius_curve_flat": entry["radius_curve"]["flat"],
            }
    return out


# --- the sweeps --------------------------------------------------------------------------------------


def _run_job(job: Job, plan: Plan, seed_ids, tuned) -> dict:
    """One sweep; its regret and budget spent as `[eps, C, variant, seed]` over the plan's variants
    (NaN for a tuning horizon the method was not tuned at)."""
    horizons, table = tuned
    grid = {"eps": list(plan.eps), "C": list(job.budgets)}
    if table is not None:
        grid["variant"] = [float(k) for k in range(len(horizons) + 1)]
    t0 = time.perf_counter()
    res = jb.sweep(
        algorithm_factory(job.method, job.horizon, job.dim, table, plan.eps if table else None),
        environment(job.dim),
        grid,
        horizon=job.horizon,
        seeds=seed_ids,
        record=[job.horizon],
        progress=False,
    )
    regret = np.asarray(res.final_regret, np.float64)  # [eps, C, (variant,) seed]
    spent = np.asarray(res.data["corruption_spent"][..., -1], np.float64)
    if table is None:
        regret, spent = regret[:, :, None], spent[:, :, None]
    where = [0] + [1 + plan.tune_horizons.index(T) for T in horizons]  # the plan's variant index
    shape = (*regret.shape[:2], 1 + len(plan.tune_horizons), regret.shape[-1])
    regret_all, spent_all = np.full(shape, np.nan), np.full(shape, np.nan)
    regret_all[:, :, where], spent_all[:, :, where] = regret, spent
    regret, spent = regret_all, spent_all
    runs = int(np.prod(res.final_regret.shape))
    return {"regret": regret, "spent": spent, "seconds": time.perf_counter() - t0, "runs": runs}


def _run_jobs(jobs, plan, seed_ids, tuned, workers, progress) -> dict:
    """Every job's result, keyed by job, up to ``workers`` sweeps at a time (a run's numbers do not
    depend on what else runs): threads on a GPU or TPU (the host compiles while the device runs), worker
    processes on a CPU backend (each with its own intra-op thread pool: two XLA:CPU executions in one
    process, each holding a pool thread while its LAPACK eigendecomposition — TOFU's V^{-1/2} — waits
    for pool tasks, deadlocked here on 2 cores), or one at a time in this process when ``workers`` is 1
    or an algorithm is registered outside jaxbandit (a fresh process would not know it)."""
    for job in jobs:  # build the cached factories here, not concurrently in the threads
        environment(job.dim)
        table = tuned[job.method][1]
        algorithm_factory(job.method, job.horizon, job.dim, table, plan.eps if table else None)
    bar = None
    if progress:
        from ...runner import progress as progress_lib

        bar = progress_lib.bar(total=len(jobs), desc="scaling sweeps", unit="sweep")
    done = {}

    def finished(job: Job, result: dict) -> None:
        done[job] = result
        if bar is not None:
            bar.set_postfix_str(f"{job.method} T={job.horizon} d={job.dim}: {result['seconds']:.1f} s")
            bar.update(1)

    pool = _pool(workers, len(jobs), {j.method for j in jobs})
    if pool is None:
        for j in jobs:
            finished(j, _run_job(j, plan, seed_ids, tuned[j.method]))
    else:
        with pool:
            futures = {pool.submit(_run_job, j, plan, seed_ids, tuned[j.method]): j for j in jobs}
            for fut in as_completed(futures):
                finished(futures[fut], fut.result())
    if bar is not None:
        bar.close()
    return {j: done[j] for j in jobs}


def _pool(workers: int, num_jobs: int, methods) -> Executor | None:
    workers = min(workers, num_jobs)
    if workers <= 1:
        return None
    if jax.default_backend() != "cpu":
        return ThreadPoolExecutor(max_workers=workers)
    if not all(jb.registry.algorithm(m).factory.__module__.startswith("jaxbandit.") for m in methods):
        return None
    config = {name: getattr(jax.config, name) for name in _INHERITED_CONFIG}
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_init_worker,
        initargs=(config,),
    )


#: JAX settings a worker process takes over from this one (environment variables it inherits anyway).
_INHERITED_CONFIG = (
    "jax_enable_x64",
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
)


def _init_worker(config: dict) -> None:
    for name, value in config.items():
        jax.config.update(name, value)


def _assemble(done: dict, plan: Plan, methods, seed_ids) -> dict:
    """The final regrets as arrays (NaN where not run):

    - ``T/<method>`` `[variant, eps, horizon, seed]` at d = 10, C = 0 (part (a));
    - ``C/<method>`` and ``C_spent/<method>`` `[variant, eps, budget, seed]` at the corruption horizon,
      d = 10 (part (b));
    - ``d/<method>`` `[variant, eps, dim, seed]` at the dimension horizon, C = 0 (part (c));
    and the grids ``horizons``, ``eps``, ``budgets``, ``dims``, ``seeds``."""
    n_v, n_e, n_s = len(variant_names(plan.tune_horizons)), len(plan.eps), len(seed_ids)
    arrays: dict = {
        "horizons": np.asarray(plan.horizons),
        "eps": np.asarray(plan.eps),
        "budgets": np.asarray(plan.budgets),
        "dims": np.asarray(plan.dims),
        "seeds": np.asarray(seed_ids),
    }
    for m in methods:
        T = np.full((n_v, n_e, len(plan.horizons), n_s), np.nan)
        C = np.full((n_v, n_e, len(plan.budgets), n_s), np.nan)
        spent = np.full_like(C, np.nan)
        D = np.full((n_v, n_e, len(plan.dims), n_s), np.nan)
        for job, r in done.items():
            if job.method != m:
                continue
            reg = np.moveaxis(r["regret"], 2, 0)  # [variant, eps, C, seed]
            zero = job.budgets.index(0.0)
            if job.dim == DIM:
                T[:, :, plan.horizons.index(job.horizon)] = reg[:, :, zero]
                if job.horizon == plan.corruption_horizon:
                    C[:] = reg
                    spent[:] = np.moveaxis(r["spent"], 2, 0)
            if job.horizon == plan.dim_horizon and job.dim in plan.dims:
                D[:, :, plan.dims.index(job.dim)] = reg[:, :, zero]
        arrays[f"T/{m}"], arrays[f"C/{m}"], arrays[f"C_spent/{m}"], arrays[f"d/{m}"] = T, C, spent, D
    return arrays


# --- the fits ----------------------------------------------------------------------------------------


def _try(fit_fn, x, Y, resamples) -> dict:
    try:
        return fit_fn(x, Y, resamples=resamples).as_dict()
    except ValueError as err:
        return {"error": str(err)}


def _fits(arrays: dict, plan: Plan, methods, resamples) -> list[dict]:
    """One entry per (algorithm, constants, ε) that ran: the three parts' fits and what the theory
    predicts."""
    rows = []
    for m in methods:
        for vi, v in enumerate(variant_names(plan.tune_horizons)):
            if not np.isfinite(arrays[f"T/{m}"][vi]).any():  # not tuned at that horizon
                continue
            for ei, e in enumerate(plan.eps):
                T = arrays[f"T/{m}"][vi, ei]
                run_T = np.all(np.isfinite(T), axis=1)
                row: dict = {"algorithm": m, "constants": v, "eps": e}
                fit_T = _try(F.window_fit, np.asarray(plan.horizons)[run_T], T[run_T], resamples)
                fit_T.update(theory=1.0 / (1.0 + e), reference_half=0.5)
                _compare(fit_T, {"theory": 1.0 / (1.0 + e), "half": 0.5, "linear": 1.0})
                row["T"] = fit_T
                C = arrays[f"C/{m}"][vi, ei]
                spent = arrays[f"C_spent/{m}"][vi, ei].mean(axis=1)
                with np.errstate(invalid="ignore"):
                    per_unit = np.diff(C.mean(axis=1)) / np.diff(plan.budgets)
                row["C"] = {
                    "horizon": plan.corruption_horizon,
                    "spent_mean": spent.tolist(),
                    "added_per_unit": per_unit.tolist(),
                    "linear": _try(F.linear_fit, plan.budgets, C, resamples),
                    "excess_loglog": _try(F.excess_loglog_fit, plan.budgets, C, resamples),
                }
                _compare(row["C"]["excess_loglog"], {"linear": 1.0})
                D = arrays[f"d/{m}"][vi, ei]
                row["d"] = _try(F.loglog_fit, plan.dims, D, resamples)
                row["d"]["horizon"] = plan.dim_horizon
                _compare(row["d"], {"linear": 1.0})
                rows.append(row)
    return rows


def _compare(fit: dict, refs: dict) -> None:
    """Add, per reference value, where the fit's interval lies: below, contains or above."""
    if "error" in fit:
        return
    fit["interval_vs"] = {
        k: "below" if fit["ci_high"] < v else "above" if fit["ci_low"] > v else "contains"
        for k, v in refs.items()
    }


# --- output ------------------------------------------------------------------------------------------


def _summary_lines(data: dict) -> str:
    lines = [
        "Exponent of final regret in T (C = 0, d = 10), least squares on seed means, 95% bootstrap CI:",
        f"{'algorithm':<17} {'constants':<8} {'eps':>4} {'b':>6} {'95% CI':>16} {'1/(1+eps)':>9}",
    ]
    for r in data["fits"]:
        f = r["T"]
        if "error" in f:
            lines.append(f"{r['algorithm']:<17} {r['constants']:<8} {r['eps']:>4g} {f['error']}")
            continue
        lines.append(
            f"{r['algorithm']:<17} {r['constants']:<8} {r['eps']:>4g} {f['slope']:>6.2f} "
            f"[{f['ci_low']:>6.2f}, {f['ci_high']:>6.2f}] {f['theory']:>9.2f}"
        )
    return "\n".join(lines)


#: The parts' grid axes in the results files, and what their ``round`` coordinate is.
PARTS = {
    "T": (None, "the horizon T: each value is the final round of its own run of T rounds (theory constants "
          "for that T), so a curve along round is regret against T, not one run's trajectory"),
    "C": ("C", "the corruption horizon: the final round of every run"),
    "d": ("dim", "the dimension horizon: the final round of every run"),
}  # fmt: skip


def results(arrays: dict, methods, plan: Plan, info: dict | None = None) -> dict[str, jb.SweepResult]:
    """The final regrets of the three parts as ``jb.SweepResult``s ``{"T": …, "C": …, "d": …}`` with dims
    (algorithm, constants, eps, [C | dim,] seed, round): part T's ``round`` is the horizon grid, the
    others' the plan's corruption or dimension horizon; fields ``cumulative_regret`` (and
    ``corruption_spent`` for part C); NaN where a run was not made (an O(t) algorithm beyond its cap,
    tuned constants it has none of). ``info`` goes into ``meta``."""
    out = {}
    for part, (axis, round_means) in PARTS.items():
        regret = np.stack([arrays[f"{part}/{m}"] for m in methods])  # [alg, variant, eps, grid, seed]
        coords: dict = {
            "algorithm": np.asarray(methods),
            "constants": np.asarray(variant_names(plan.tune_horizons)),
            "eps": arrays["eps"],
        }
        if part == "T":
            fields = {"cumulative_regret": np.moveaxis(regret, 3, -1)}
            coords.update(seed=arrays["seeds"], round=arrays["horizons"])
        else:
            grid = arrays["budgets"] if part == "C" else arrays["dims"]
            horizon = plan.corruption_horizon if part == "C" else plan.dim_horizon
            fields = {"cumulative_regret": regret[..., None]}
            if part == "C":
                fields["corruption_spent"] = np.stack([arrays[f"C_spent/{m}"] for m in methods])[..., None]
            coords.update({axis: grid, "seed": arrays["seeds"], "round": np.asarray([horizon])})
        meta = {"part": part, "round": round_means, **(info or {})}
        out[part] = jb.SweepResult(tuple(coords), coords, fields, meta)
    return out


def _write(out: Path, arrays: dict, data: dict, plan: Plan, methods, t_start: float) -> dict:
    """``results_{T,C,d}.npz`` (+ ``.nc``), the figures, ``scaling.md`` and ``scaling.json``
    (last, listing the others)."""
    out.mkdir(parents=True, exist_ok=True)
    paths: dict = {"json": out / "scaling.json", "md": out / "scaling.md"}
    info = jsonable(
        {k: data[k] for k in ("experiment", "created", "command", "mode", "settings", "versions", "device")}
    )
    for part, result in results(arrays, methods, plan, info).items():
        for written in save_result(result, out / f"results_{part}.npz"):
            paths[f"{written.suffix[1:]}_{part}"] = written
    paths.update(draw(arrays, data, out))
    data["files"] = {k: str(p) for k, p in paths.items()}
    data["wall_seconds"]["total"] = time.perf_counter() - t_start
    data = jsonable(data)
    text = markdown(data)
    atomic_write_bytes(paths["md"], lambda f: f.write(text.encode()))
    atomic_write_json(paths["json"], data)
    return paths
