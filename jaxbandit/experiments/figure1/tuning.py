"""Figure 1's tuned constants: tuning them on seeds the figure never reports, and the file that holds them.

:func:`tune` (``python -m jaxbandit tune-figure1 --out FILE``) searches each method's free constants per
noise setting by the benchmark's tuning protocol (:mod:`jaxbandit.experiments.bench.protocol`: the radius
as a multiple of its theory value over the same grid for every method, then the method's second constant,
edges extended, every method about the same budget), the objective being the final regret averaged over
C ∈ {0, 100} per tuning seed. It writes the choice with every setting evaluated, the seeds, horizon,
date and package versions to a file the user names. :func:`load_tuned` reads and checks such a file; the
one shipped in ``jaxbandit/experiments/data/figure1_tuned.json`` is what ``figure1 --constants tuned``
reads by default.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import jaxbandit as jb

from ...core.validation import check_flag, check_int
from ...persist.atomic import atomic_write_json
from ...report.analysis import mean_and_stderr
from ..bench import protocol
from ..common import device_info, jsonable, now, read_json, seed_list, versions
from .methods import (
    MAIN_METHODS,
    all_methods,
    baseline_methods,
    check_methods,
    constant_names,
    problem,
    spec,
    tune_factory,
)
from .settings import (
    C_VALUES,
    MIN_HORIZON,
    NOISES,
    TUNE_SEEDS,
    environment,
)

TUNED_FORMAT = "jaxbandit.figure1.tuned/1"
DEFAULT_TUNED = Path(__file__).resolve().parents[1] / "data" / "figure1_tuned.json"


def load_tuned(path=None) -> dict:
    """The tuned-constants file (default: the one shipped in ``jaxbandit/experiments/data``), checked.

    Raises ``ValueError`` naming the file when it is missing, not JSON, or not in the expected format.
    """
    path = DEFAULT_TUNED if path is None else Path(path)
    if not path.is_file():
        raise ValueError(
            f"tuned constants file {str(path)!r} does not exist: create it with "
            "'python -m jaxbandit tune-figure1 --out FILE'"
        )
    data, sha256 = read_json(path, f"tuned constants file {str(path)!r}")
    if (
        not isinstance(data, dict)
        or data.get("format") != TUNED_FORMAT
        or not isinstance(data.get("methods"), dict)
    ):
        raise ValueError(
            f"tuned constants file {str(path)!r} is not a {TUNED_FORMAT} file "
            "(written by 'python -m jaxbandit tune-figure1')"
        )
    for key, entry in data["methods"].items():
        if key not in all_methods():
            raise ValueError(
                f"tuned constants file {str(path)!r} names an unknown method {key!r}; "
                f"methods: {all_methods()}"
            )
        names = constant_names(key)
        for noise in NOISES:
            best = entry.get("noise", {}).get(noise, {}).get("best")
            if (
                not isinstance(best, dict)
                or sorted(best) != sorted(names)
                or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in best.values()
                )
            ):
                raise ValueError(
                    f"tuned constants file {str(path)!r}: {key}/{noise} must give positive "
                    f"numbers for {names}, got {best!r}"
                )
    data["_path"] = str(path)
    data["_sha256"] = sha256
    return data


def tuned_values(data: dict, method: str) -> tuple:
    """Per noise setting (``NOISES`` order), the tuned values of ``method`` in :func:`constant_names`
    order."""
    entry = data["methods"].get(method)
    if entry is None:
        extra = " --baselines" if method in baseline_methods() else ""
        raise ValueError(
            f"the tuned constants file {data.get('_path')!r} has no entry for {method!r} "
            f"(it has {sorted(data['methods'])}): run 'python -m jaxbandit tune-figure1{extra} "
            "--out FILE' and pass --tuned-file FILE, or use --constants theory"
        )
    names = constant_names(method)
    return tuple(tuple(float(entry["noise"][n]["best"][k]) for k in names) for n in NOISES)


def tune(
    horizon: int = 5000,
    seeds: int | Sequence[int] = TUNE_SEEDS,
    *,
    out: str | os.PathLike,
    methods_to_tune: Sequence[str] = MAIN_METHODS,
    grids: Mapping[str, Mapping] | None = None,
    coarse: bool = False,
    progress: bool = True,
    verbose: bool = True,
    command: str | None = None,
) -> dict:
    """Search each method's free constants by the benchmark's tuning protocol
    (:func:`jaxbandit.experiments.bench.protocol.search`) for the smallest mean final regret on ``seeds``
    (disjoint from the reported seeds 0..n−1), averaged over C ∈ {0, 100}, separately for each noise
    setting, and write the choice with every setting evaluated to ``out`` (required; an existing file
    there keeps its other methods' entries).

    Args:
      horizon: T of the tuning runs (tune at the reported horizon).
      seeds: tuning seeds: a count n (seeds 1000..1000+n−1) or seed numbers (all ≥ 1000 by convention,
        so that reports on seeds 0..n−1 never reuse them).
      out: the JSON file to write (e.g. ``out/figure1_tuned.json``).
      methods_to_tune: registered algorithm names (default: the paper's two methods).
      grids: ``{method: {axis: values}}`` replacing the values the protocol first tries on an axis of that
        method (``"beta_scale"``, a multiple of the theory radius, or a constant's name); edges are
        still extended.
      coarse: the protocol's coarse grids (radius multiplier in decades, every other secondary value).
    Returns the file's content.
    """
    horizon = check_int("horizon", horizon, MIN_HORIZON)
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        seed_ids = [TUNE_SEEDS[0] + s for s in range(check_int("seeds", seeds, 1))]
    else:
        seed_ids = seed_list(seeds, "seeds")
    selected = check_methods(methods_to_tune)
    progress = check_flag("progress", progress)
    verbose = check_flag("verbose", verbose)
    coarse = check_flag("coarse", coarse)
    grids = dict(grids or {})
    for m, g in grids.items():
        names = [a.name for a in protocol.axes(m, coarse)] if m in all_methods() else "its axes"
        if (
            m not in selected
            or not isinstance(g, Mapping)
            or not set(g) <= set(names)
            or not all(_distinct_positive(v) for v in g.values())
        ):
            raise ValueError(
                f"grids[{m!r}]={g!r} is invalid: give at least two distinct positive values for some of "
                f"{names}, for a method in methods_to_tune={selected}"
            )
    if out is None or (Path(out).exists() and Path(out).is_dir()):
        raise ValueError(f"out={out!r} is invalid: name the JSON file to write the tuned constants to")
    path = Path(out)
    data: dict[str, Any] = {"format": TUNED_FORMAT, "methods": {}}
    if path.is_file():
        data = {k: v for k, v in load_tuned(path).items() if not k.startswith("_")}
    command = command if command is not None else " ".join([Path(sys.argv[0]).name] + sys.argv[1:])
    data.update(
        format=TUNED_FORMAT,
        created=now(),
        versions=versions(),
        device=device_info(),
        command=command,
        what=(
            "per method and noise setting, the setting the benchmark's tuning protocol chose (radius "
            "multiplier x theory over the common grid, then the second constant; edges extended) for the "
            "smallest mean final cumulative regret over the tuning seeds, averaged over C in {0, 100}; "
            "the figure reports seeds 0..n-1"
        ),
    )
    for m in selected:
        axes_ = tuple(
            a._replace(values=tuple(sorted(float(v) for v in grids[m][a.name])))
            if a.name in grids.get(m, {})
            else a
            for a in protocol.axes(m, coarse)
        )
        data["methods"][m] = _tune_method(m, axes_, horizon, seed_ids, command, progress, verbose)
        atomic_write_json(path, jsonable(data))  # after each method: a long tuning keeps its work
    if verbose:
        print(f"wrote {path}")
    return data


def _distinct_positive(values) -> bool:
    try:
        v = [float(x) for x in values]
    except (TypeError, ValueError):
        return False
    return len(set(v)) >= 2 and all(x > 0 and np.isfinite(x) for x in v)


@dataclasses.dataclass(frozen=True)
class _Objective:
    """The protocol's ``evaluate`` for one method and noise setting: one sweep of the settings asked
    for (every other axis at its ``fixed`` value) × C ∈ {0, 100} × the tuning seeds; per setting the
    final regret averaged over C per seed, mean ± s.e. over the seeds."""

    method: str
    noise: int
    horizon: int
    seeds: list
    progress: bool

    def __call__(self, axis: str, values, fixed) -> tuple[np.ndarray, np.ndarray]:
        grid = {**protocol.evaluation_grid(self.method, axis, values, fixed), "noise": [float(self.noise)]}
        grid["C"] = list(C_VALUES)
        res = jb.sweep(
            tune_factory(self.method, self.horizon),
            environment,
            grid,
            horizon=self.horizon,
            seeds=self.seeds,
            record=[self.horizon],
            progress=self.progress,
        )
        final = np.asarray(res.final_regret, np.float64).reshape(len(values), len(C_VALUES), len(self.seeds))
        return mean_and_stderr(final.mean(axis=1), axis=-1)


def _theory_radius(method: str, noise: int, horizon: int) -> float:
    """The theory value of ``method``'s radius constant at noise setting ``noise``, the same at every C of
    the figure (``ValueError`` otherwise: one tuned value per noise setting could not stand for it)."""
    name = constant_names(method)[0]
    values = {
        float(spec(method).theory(problem(horizon, {"noise": float(noise), "C": c}))[name]) for c in C_VALUES
    }
    if len(values) != 1:
        raise ValueError(
            f"method={method!r} is invalid for tune-figure1: the theory value of its radius constant "
            f"{name!r} differs across C in {C_VALUES} ({sorted(values)}), so one tuned value per noise "
            "setting cannot scale it"
        )
    return values.pop()


def _tune_method(
    m: str, axes_: tuple, horizon: int, seed_ids: list, command: str, progress: bool, verbose: bool
) -> dict:
    """One method's entry of the tuned file: its best constants per noise setting, with the search."""
    held = protocol.fixed(m)
    names = constant_names(m)
    entry: dict[str, Any] = {
        "label": spec(m).label,
        "horizon": horizon,
        "seeds": seed_ids,
        "protocol": {
            "axes": [a._asdict() for a in axes_],
            "held": held,
            "radius": f"{protocol.RADIUS} x the theory value of {names[0]}",
        },
        "over": ["C"],
        "C": list(C_VALUES),
        "created": now(),
        "command": command,
        "versions": versions(),
        "noise": {},
    }
    t0 = time.perf_counter()
    for ni, n in enumerate(NOISES):
        theory = _theory_radius(m, ni, horizon)
        found = protocol.search(axes_, _Objective(m, ni, horizon, seed_ids, progress), held)
        chosen = {a.name: found.best[a.name] for a in axes_}
        best_row = next(r for r in found.rows if all(r[k] == v for k, v in chosen.items()))
        curve = [r for r in found.rows if r["axis"] == protocol.RADIUS]
        entry["noise"][n] = {
            "best": protocol.constants(names, theory, found.best),
            "chosen": chosen,
            "theory_radius": theory,
            "mean_final_regret": best_row["mean"],
            "stderr_final_regret": best_row["stderr"],
            "budget": found.budget,
            "edges": found.edges,
            "radius_curve": protocol.flatness([r["mean"] for r in curve], [r["stderr"] for r in curve]),
            "rows": found.rows,
        }
        if verbose:
            e = entry["noise"][n]
            print(
                f"{spec(m).label}, {n}: best {e['best']} ({found.budget} settings"
                f"{', edge ' + str(found.edges) if found.edges else ''}), mean final regret "
                f"{e['mean_final_regret']:.1f} ± {e['stderr_final_regret']:.1f}"
            )
    entry["wall_seconds"] = time.perf_counter() - t0
    return entry


def tuning_table(data: dict) -> str:
    """A Markdown table of a tuned file (:func:`load_tuned`): per method and noise setting the constants
    chosen, the settings the search evaluated, any edge it could not pass, and whether its radius curve
    is flat (more than half of the radius values within their own standard error of the best)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("methods"), Mapping):
        raise ValueError(
            f"data={type(data).__name__} is invalid: give a tuned-constants file's content "
            "(figure1.load_tuned(path))"
        )
    lines = [
        "| method | noise | chosen | settings | edges | radius curve |",
        "|---|---|---|---|---|---|",
    ]
    for method, entry in data["methods"].items():
        for noise in (n for n in NOISES if n in entry["noise"]):
            e = entry["noise"][noise]
            order = constant_names(method) if method in all_methods() else sorted(e["best"])
            chosen = ", ".join(f"{k} = {e['best'][k]:.3g}" for k in order)
            curve = e["radius_curve"]
            flat = f"{'**flat**' if curve['flat'] else 'resolved'} ({curve['within']} of {curve['values']})"
            edges = ", ".join(f"{k}: {v}" for k, v in e["edges"].items()) or "none"
            lines.append(f"| {entry['label']} | {noise} | {chosen} | {e['budget']} | {edges} | {flat} |")
    return "\n".join(lines) + "\n"
