"""Figure 1 in one call: the regret sweeps (panels (a), (c)), the runtime panel (b), the summary and the
files (``figure1.png``, ``figure1_<constants>.png``, ``results.npz`` / ``.json`` / ``.nc``,
``figure1.json``)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np

import jaxbandit as jb

from ...core.validation import check_flag, check_int
from ...persist.atomic import atomic_write_json
from ...report.analysis import mean_and_stderr
from ...report.results import SweepResult
from ..common import device_info, jsonable, now, save_result, seed_list, versions
from .drawing import draw, format_summary
from .methods import (
    MAIN_METHODS,
    baseline_methods,
    check_methods,
    constant_names,
    figure_factory,
    problem,
    spec,
)
from .runtime import checkpoints, last_chunk_rate, runtime_slope, time_runs
from .settings import (
    C_VALUES,
    CONSTANTS,
    DIM,
    MIN_HORIZON,
    NOISES,
    NUM_ARMS,
    environment,
    noise_settings,
)
from .tuning import load_tuned, tuned_values


@dataclass
class Figure1Result:
    """What :func:`run` produced.

    - ``curves``: ``{(constants, noise, method, C): [seeds, horizon] cumulative regret}`` (the sweep's
      dtype);
    - ``runtimes``: ``{(constants, method, C): (rounds [m], seconds [repeats, m])}``;
    - ``summary``: one dict per curve (final regret mean ± s.e., log–log slope) and per runtime;
    - ``settings``: everything written to ``figure1.json``; ``paths``: the files written.
    """

    curves: dict
    runtimes: dict
    summary: list
    settings: dict
    paths: dict


def run(
    horizon: int = 5000,
    seeds: int = 10,
    out: str | os.PathLike = "out/figure1",
    *,
    constants: str = "both",
    algorithms: Sequence[str] | None = None,
    baselines: bool = False,
    tuned_file: str | os.PathLike | None = None,
    repeats: int = 3,
    progress: bool = True,
    verbose: bool = True,
    command: str | None = None,
) -> Figure1Result:
    """Reproduce Figure 1 (Section 6) and write ``figure1.png``, ``results.npz`` (a ``jb.SweepResult``)
    and ``figure1.json``.

    Args:
      horizon: T ≥ 4 rounds per run (the paper: 5000).
      seeds: n ≥ 1 reported runs per curve, seeds 0..n−1 (the paper: 10); they must not overlap the
        tuning seeds of the tuned constants.
      out: the output directory.
      constants: ``"theory"``, ``"tuned"`` (read from ``tuned_file``) or ``"both"``.
      algorithms: the registered algorithms to run (``jb.registry.names()``, a plugin's too; default:
        the paper's two, and every other one with ``baselines``).
      baselines: also run every other registered algorithm (``jb.registry``); Heavy-OFUL refits over the
        whole history every round, like GAdaOFUL, so this takes much longer.
      tuned_file: the tuned-constants JSON (default: the one shipped in ``jaxbandit/experiments/data``).
      repeats: timed runs per (method, C, constants) for panel (b), seeds 0..repeats−1.
      progress: show progress bars.
      verbose: print the summary table.
      command: the command line recorded in the JSON (default: ``sys.argv`` when run as a script).
    """
    horizon = check_int("horizon", horizon, MIN_HORIZON)
    seed_ids = seed_list(seeds, "seeds")
    if constants not in CONSTANTS:
        raise ValueError(f"constants={constants!r} is invalid: it must be one of {CONSTANTS}")
    baselines = check_flag("baselines", baselines)
    repeats = check_int("repeats", repeats, 1)
    progress = check_flag("progress", progress)
    verbose = check_flag("verbose", verbose)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out={str(out)!r} is invalid: it exists and is not a directory")
    variants = ("theory", "tuned") if constants == "both" else (constants,)
    if algorithms is not None and baselines:
        raise ValueError("algorithms and baselines=True are exclusive: give the algorithms, or every one")
    selected = MAIN_METHODS + (baseline_methods() if baselines else ())
    if algorithms is not None:
        selected = check_methods(algorithms)
    tuned_data = load_tuned(tuned_file) if "tuned" in variants else None
    tuned = {
        m: None if tuned_data is None else _tuned_for_report(tuned_data, m, seed_ids, seeds) for m in selected
    }

    t_start = time.perf_counter()
    curves, slopes, sweep_seconds = _regret_sweeps(selected, horizon, seed_ids, variants, tuned, progress)
    runtimes, runtime_seconds = _runtime_panel(selected, horizon, variants, tuned, repeats, progress)
    elapsed = time.perf_counter() - t_start
    summary = _summary(curves, slopes, runtimes)
    identical = identical_curves(curves, selected)
    settings = {
        "figure": "Tani & Futami, Section 6, Figure 1",
        "created": now(),
        "command": command if command is not None else " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "horizon": horizon,
        "seeds": seed_ids,
        "dim": DIM,
        "num_arms": NUM_ARMS,
        "S": 1.0,
        "L": 1.0,
        "C": list(C_VALUES),
        "adversary": "jb.corruption.flip(budget=C): exact budget, sum |c_t| <= C",
        "theta_star": "uniform on the unit sphere",
        "contexts": "K i.i.d. uniform on the unit sphere",
        "noise": {n: noise_settings()[n]._asdict() for n in NOISES},
        "methods": {
            m: {"label": spec(m).label, "module": spec(m).module, "constants": list(constant_names(m))}
            for m in selected
        },
        "constants": list(variants),
        "constants_used": _constants_used(selected, horizon, variants, tuned),
        "tuned_file": None
        if tuned_data is None
        else {
            "path": tuned_data["_path"],
            "sha256": tuned_data["_sha256"],
            "created": tuned_data.get("created"),
            "command": tuned_data.get("command"),
            "versions": tuned_data.get("versions"),
            "methods": {
                m: {k: tuned_data["methods"][m].get(k) for k in ("horizon", "seeds", "protocol", "over")}
                for m in selected
            },
        },
        "runtime": {
            "what": "seconds one unbatched run (eps = 1 setting) takes to reach round t, measured "
            "chunk by chunk with block_until_ready after compiling and running one chunk; "
            "seeds 0..repeats-1",
            "repeats": repeats,
            "checkpoints": checkpoints(horizon)[1].tolist(),
        },
        "versions": versions(),
        "device": device_info(),
        "wall_seconds": {
            "total": elapsed,
            "regret_sweeps_including_compilation": sweep_seconds,
            "runtime_panel_including_compilation": runtime_seconds,
        },
        "summary": summary,
        "identical": identical,
        "results": "results.npz (with results.json; results.nc with xarray): a jb.SweepResult, "
        "cumulative regret over (constants, noise, algorithm, C, seed, round); its meta holds these "
        "settings and the runtimes of panel (b)",
    }
    paths = _write(out, curves, runtimes, settings, variants, selected, horizon, seed_ids)
    if verbose:
        print(format_summary(summary, horizon, len(seed_ids)))
        for row in identical:
            a, b = (spec(m).label for m in row["pair"])
            print(f"{a} and {b}: bitwise identical curves in {row['cells']} of {row['of']} cells")
        print(
            f"\n{elapsed:.1f} s in all on {jax.devices()[0].platform} "
            f"({', '.join(f'{spec(m).label} sweep {s:.1f} s' for m, s in sweep_seconds.items())}, "
            "compilation included)"
        )
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return Figure1Result(curves=curves, runtimes=runtimes, summary=summary, settings=settings, paths=paths)


def _tuned_for_report(tuned_data: dict, method: str, seed_ids: list, seeds) -> tuple:
    """``method``'s tuned values, refusing reported seeds that it was tuned on."""
    values = tuned_values(tuned_data, method)
    shared = sorted(set(seed_ids) & set(tuned_data["methods"][method].get("seeds", [])))
    if shared:
        raise ValueError(
            f"seeds={seeds!r} is invalid: the reported seeds share {len(shared)} seed(s) "
            f"with the seeds {method} was tuned on (e.g. {shared[:3]}); report on seeds "
            "below the tuning seeds"
        )
    return values


def _variant_values(variants) -> list[float]:
    return [0.0 if v == "theory" else 1.0 for v in variants]


def _regret_sweeps(selected, horizon, seed_ids, variants, tuned, progress):
    """One :func:`jaxbandit.sweep` per method over (noise, C, constants); the curves `[seeds, T]` and
    their log–log slopes by (constants, noise, method, C), and each sweep's seconds."""
    curves, slopes, seconds = {}, {}, {}
    for m in selected:
        grid = {"noise": [0.0, 1.0], "C": list(C_VALUES)}
        if tuned[m] is not None:
            grid["variant"] = _variant_values(variants)
        t0 = time.perf_counter()
        res = jb.sweep(
            {spec(m).label: figure_factory(m, horizon, tuned[m])},
            environment,
            grid,
            horizon=horizon,
            seeds=seed_ids,
            record=1,
            progress=progress,
        )
        seconds[m] = time.perf_counter() - t0
        res = res.sel(algorithm=spec(m).label)
        if "variant" not in res.dims:  # theory only: add the axis back
            res = _with_axis(res, "variant", _variant_values(variants))
        slope = jb.loglog_slope(res)  # [noise, C, variant]
        cum = np.asarray(res.cumulative_regret)  # [noise, C, variant, seed, round]
        for vi, v in enumerate(variants):
            for ni, n in enumerate(NOISES):
                for ci, C in enumerate(C_VALUES):
                    curves[(v, n, m, C)] = cum[ni, ci, vi]
                    slopes[(v, n, m, C)] = float(slope[ni, ci, vi])
    return curves, slopes, seconds


def _runtime_panel(selected, horizon, variants, tuned, repeats, progress):
    """Panel (b) for every (constants, method, C); and each method's seconds."""
    runtimes, seconds = {}, {}
    bar = None
    if progress:
        from ...runner import progress as progress_lib

        bar = progress_lib.bar(
            total=len(selected) * len(variants) * len(C_VALUES) * repeats, desc="runtime (b)", unit="run"
        )
    for m in selected:
        t0 = time.perf_counter()
        for v, vv in zip(variants, _variant_values(variants)):
            for C in C_VALUES:
                runtimes[(v, m, C)] = time_runs(
                    m, horizon, tuned=tuned[m], variant=vv, C=C, repeats=repeats, bar=bar
                )
        seconds[m] = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    return runtimes, seconds


def _summary(curves, slopes, runtimes) -> list[dict]:
    """One row per regret curve and per runtime curve."""
    summary = []
    for (v, n, m, C), c in curves.items():
        mean, se = mean_and_stderr(c[:, -1])
        summary.append(
            {
                "kind": "regret",
                "constants": v,
                "noise": n,
                "method": m,
                "C": C,
                "final_regret_mean": float(mean),
                "final_regret_stderr": float(se),
                "loglog_slope_second_half": slopes[(v, n, m, C)],
            }
        )
    for (v, m, C), (rounds, sec) in runtimes.items():
        summary.append(
            {
                "kind": "runtime",
                "constants": v,
                "noise": "student_t",
                "method": m,
                "C": C,
                "rounds": int(rounds[-1]),
                "seconds_median": float(np.median(sec[:, -1])),
                "seconds_min": float(sec[:, -1].min()),
                "seconds_max": float(sec[:, -1].max()),
                "ms_per_round_at_end": float(np.median(last_chunk_rate(rounds, sec))) * 1e3,
                "loglog_slope_second_half": runtime_slope(rounds, sec),
            }
        )
    return summary


def identical_curves(curves: dict, selected) -> list[dict]:
    """Pairs of methods whose curves (every seed, every round) are bitwise identical in at least one cell
    (constants × noise × C): ``{"pair": [a, b], "cells": k, "of": n}``."""
    cells = sorted({(v, n, C) for v, n, _, C in curves})
    rows = []
    for i, a in enumerate(selected):
        for b in selected[i + 1 :]:
            same = sum(np.array_equal(curves[(v, n, a, C)], curves[(v, n, b, C)]) for v, n, C in cells)
            if same:
                rows.append({"pair": [a, b], "cells": int(same), "of": len(cells)})
    return rows


def _constants_used(selected, horizon, variants, tuned) -> dict:
    """The constants each curve ran with: tuned per noise setting, theory per noise setting and C."""
    used: dict = {}
    for v in variants:
        used[v] = {}
        for ni, n in enumerate(NOISES):
            used[v][n] = {}
            for m in selected:
                if v == "tuned":
                    used[v][n][m] = dict(zip(constant_names(m), tuned[m][ni]))
                    continue
                used[v][n][m] = {}
                for C in C_VALUES:
                    theory = spec(m).theory(problem(horizon, {"noise": float(ni), "C": C}))
                    used[v][n][m][f"C={C:g}"] = {k: float(np.asarray(val)) for k, val in theory.items()}
    return used


def figure_result(curves, runtimes, settings, variants, selected, horizon, seed_ids) -> SweepResult:
    """The curves as one ``jb.SweepResult`` with dims (constants, noise, algorithm, C, seed, round), string
    coordinates for the first three; ``meta``: ``settings`` and the runtimes of panel (b) as
    ``{constants: {algorithm: {"C=<C>": {"rounds": [m], "seconds": [repeats, m]}}}}``."""
    cum = np.stack(
        [
            np.stack(
                [
                    np.stack([np.stack([curves[(v, n, m, C)] for C in C_VALUES]) for m in selected])
                    for n in NOISES
                ]
            )
            for v in variants
        ]
    )
    coords = {
        "constants": np.asarray(variants),
        "noise": np.asarray(NOISES),
        "algorithm": np.asarray(selected),
        "C": np.asarray(C_VALUES, np.float64),
        "seed": np.asarray(seed_ids),
        "round": np.arange(1, horizon + 1),
    }
    timed = {
        v: {
            m: {
                f"C={C:g}": {"rounds": runtimes[(v, m, C)][0], "seconds": runtimes[(v, m, C)][1]}
                for C in C_VALUES
            }
            for m in selected
        }
        for v in variants
    }
    meta = jsonable({**settings, "runtimes": timed, "labels": {m: spec(m).label for m in selected}})
    return SweepResult(tuple(coords), coords, {"cumulative_regret": cum}, meta)


def _write(out: Path, curves, runtimes, settings, variants, selected, horizon, seed_ids) -> dict:
    """``results.npz`` (+ ``.nc``), the PNGs and ``figure1.json`` (last, listing the others);
    returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "figure1.json", "png": out / "figure1.png"}
    result = figure_result(curves, runtimes, settings, variants, selected, horizon, seed_ids)
    for written in save_result(result, out / "results.npz"):
        paths[written.suffix[1:]] = written
    draw(curves, runtimes, variants, selected, horizon, len(seed_ids), paths["png"])
    for v in variants:
        paths[f"png_{v}"] = out / f"figure1_{v}.png"
        draw(curves, runtimes, (v,), selected, horizon, len(seed_ids), paths[f"png_{v}"])
    settings["files"] = {k: str(p) for k, p in paths.items()}
    atomic_write_json(paths["json"], jsonable(settings))
    return paths


def _with_axis(res: SweepResult, name: str, values) -> SweepResult:
    """``res`` with a length-1 axis ``name`` inserted before ``seed``."""
    ax = res.dims.index("seed")
    data = {k: np.expand_dims(v, ax) for k, v in res.data.items()}
    dims = res.dims[:ax] + (name,) + res.dims[ax:]
    coords = dict(res.coords)
    coords[name] = np.asarray(values, float)
    return SweepResult(dims, {d: coords[d] for d in dims}, data, dict(res.meta))
