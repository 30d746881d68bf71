"""The scaling study's own tuned constants: per algorithm, moment order ε and tuning horizon.

Constants tuned for one horizon are only evidence about that horizon: the study tunes each algorithm
separately for every ε of its grid and at (at least) two horizons (the plan's ``tune_horizons``), in
the study's own environment (d = 10, K = 20, centred Pareto(1.1 + ε), ν as the study gives it, C = 0)
on the tuning seeds 1000–1009, by the benchmark's protocol (:mod:`jaxbandit.experiments.bench.protocol`:
the radius as a multiple of its theory value over the same grid for every algorithm, then its second
constant, edges extended, the same budget for all). The objective is the mean final regret at the
tuning horizon.

A tuned point holds the radius *multiplier*: at every horizon the run uses that multiple of the theory
radius for its own T, so a set tuned at T₁ is tested at every other T as "constants tuned at T₁".
The file (``tuning.json`` in the run's directory) keeps, per entry, the choice, every setting evaluated,
the edges, the budget and the radius curve's flatness; a run finds the entries it already has there
and tunes only the missing ones, so a killed run resumes.
"""

from __future__ import annotations

import functools
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

import jaxbandit as jb

from ...agents.registry import Problem
from ...persist.atomic import atomic_write_json
from ...report.analysis import mean_and_stderr
from ..bench import protocol
from ..common import jsonable, now, read_json, versions
from ..figure1.settings import DIM, NUM_ARMS, TUNE_SEEDS
from .settings import TAIL_MARGIN, Plan, check_algorithms, check_plan, environment, moment_bound

FORMAT = "jaxbandit-scaling-tuning/1"
OBJECTIVE = "mean final regret at the tuning horizon over the tuning seeds (C = 0, d = 10)"


def setting() -> dict:
    """What a tuned entry depends on besides (algorithm, T, ε): a file made under another setting is
    refused."""
    return {
        "dim": DIM,
        "num_arms": NUM_ARMS,
        "noise": f"centred Pareto(1 + eps + {TAIL_MARGIN}, 1)",
        "C": 0.0,
        "tune_seeds": list(TUNE_SEEDS),
        "objective": OBJECTIVE,
        "radius_grid": list(protocol.RADIUS_GRID),
    }


def tune_horizons_for(plan: Plan, method: str) -> tuple[int, ...]:
    """The tuning horizons of ``method``: all of the plan's, or those up to the cap for an O(t) one."""
    return plan.within_cap(jb.registry.algorithm(method), plan.tune_horizons)


def _key(eps: float) -> str:
    return f"{float(eps):g}"


@functools.cache
def tuning_factory(method: str, horizon: int):
    """``p -> Algorithm`` at (T, d = 10) for the protocol's point ``p`` (the radius multiplier, the
    second constant) and ``p["eps"]``; cached, so a (method, T) compiles once for every ε and batch."""
    spec = jb.registry.algorithm(method)
    names = tuple(spec.grid)

    def make(p):
        prob = Problem(horizon, DIM, eps=p["eps"], nu=moment_bound(p["eps"]), corruption=0.0)
        return spec.build(prob, protocol.constants(names, spec.theory(prob)[names[0]], p))

    make.__qualname__ = f"scaling.tune.{method}.T{horizon}"
    return make


def tune_one(method: str, horizon: int, eps: float) -> dict:
    """The protocol's search for ``method`` at one tuning horizon and ε: the choice (``best``, a point
    of :func:`protocol.constant_axes`), every setting evaluated, edges, budget, the radius curve's
    flatness, seconds."""
    width = protocol.batch_width()
    make = tuning_factory(method, horizon)
    started = time.perf_counter()

    def evaluate(axis, values, fixed):
        values = [float(v) for v in values]
        means, ses = [], []
        for part, padded in protocol.batches(values, width):
            grid = {**protocol.evaluation_grid(method, axis, padded, fixed), "eps": [eps], "C": [0.0]}
            with warnings.catch_warnings():  # the padding repeats a value on purpose: one compiled width
                warnings.simplefilter("ignore", jb.runner.grid.RepeatedValueWarning)
                res = jb.sweep(
                    make, environment(DIM), grid, horizon=horizon, seeds=list(TUNE_SEEDS),
                    record=[horizon], progress=False,
                )  # fmt: skip
            final = np.asarray(res.final_regret, np.float64).reshape(width, len(TUNE_SEEDS))[: len(part)]
            mean, se = mean_and_stderr(final, axis=-1)
            means += list(np.atleast_1d(mean))
            ses += list(np.atleast_1d(se))
        return np.asarray(means), np.asarray(ses)

    found = protocol.search(protocol.axes(method), evaluate, protocol.fixed(method))
    curve = [r for r in found.rows if r["axis"] == protocol.RADIUS]
    return {
        "best": {n: float(found.best[n]) for n in protocol.constant_axes(method)},
        "rows": found.rows,
        "edges": found.edges,
        "budget": found.budget,
        "radius_curve": protocol.flatness([r["mean"] for r in curve], [r["stderr"] for r in curve]),
        "seconds": time.perf_counter() - started,
    }


def load(path: str | os.PathLike) -> dict:
    """A scaling tuning file, checked (format, setting, and every entry's chosen point: positive finite
    numbers for the algorithm's constant axes); ``ValueError`` naming the file and the entry."""
    data, _ = read_json(path, f"tuned_file={str(path)!r}")
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("methods"), dict)
    ):
        raise ValueError(
            f"tuned_file={str(path)!r} is invalid: not a {FORMAT} file (the tuning.json a scaling run writes)"
        )
    if json.loads(json.dumps(data.get("setting"))) != json.loads(json.dumps(setting())):
        raise ValueError(
            f"tuned_file={str(path)!r} is invalid: it was tuned under another setting "
            f"({data.get('setting')}), not {setting()}"
        )
    for method, by_horizon in data["methods"].items():
        names = protocol.constant_axes(method) if method in jb.registry.names() else None
        for T, by_eps in by_horizon.items() if isinstance(by_horizon, dict) else [(None, None)]:
            for e, entry in by_eps.items() if isinstance(by_eps, dict) else [(None, None)]:
                best, rows = (
                    (entry.get("best"), entry.get("rows")) if isinstance(entry, dict) else (None, None)
                )
                if (
                    names is None
                    or not isinstance(best, dict)
                    or sorted(best) != sorted(names)
                    or not all(_positive(v) for v in best.values())
                    or not isinstance(rows, list)
                ):
                    raise ValueError(
                        f"tuned_file={str(path)!r} is invalid at {method}/{T}/{e}: an entry of a "
                        f"registered algorithm must hold its search's rows and a point of positive numbers "
                        f"for {names}, got {best!r}; delete the entry (or the file) to tune it again"
                    )
    return data


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")


def tune(plan: Plan, methods, path: str | os.PathLike, start: dict | None = None, bar=None) -> dict:
    """Every (method, tuning horizon, ε) entry the plan needs, in the file ``path``: the entries of
    ``start`` (a loaded file) are kept, the missing ones tuned, the file rewritten atomically after each
    (so a killed run resumes). ``bar``: a progress bar advanced per entry."""
    plan, methods = check_plan(plan), check_algorithms(methods)
    data = start or {"format": FORMAT, "setting": setting(), "created": now(), "methods": {}}
    data["versions"] = versions()
    for m in methods:
        for T in tune_horizons_for(plan, m):
            for e in plan.eps:
                entries = data["methods"].setdefault(m, {}).setdefault(str(T), {})
                if _key(e) not in entries:
                    entries[_key(e)] = tune_one(m, T, float(e))
                    atomic_write_json(Path(path), jsonable(data))
                if bar is not None:
                    bar.update(1)
    atomic_write_json(Path(path), jsonable(data))
    return data


def table(data: dict, plan: Plan, method: str) -> tuple[tuple[int, ...], tuple | None]:
    """``method``'s tuning horizons and its tuned points ``[set][eps][constant]`` (the protocol's
    :func:`~protocol.constant_axes` order; nested tuples, hashable), or None without tuning horizons."""
    horizons = tune_horizons_for(plan, method)
    if not horizons:
        return horizons, None
    names = protocol.constant_axes(method)
    entries = data["methods"][method]
    rows = tuple(
        tuple(tuple(float(entries[str(T)][_key(e)]["best"][n]) for n in names) for e in plan.eps)
        for T in horizons
    )
    return horizons, rows
