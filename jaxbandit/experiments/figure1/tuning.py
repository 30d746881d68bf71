"""Figure 1's tuned constants: tuning them on seeds the figure never reports, and the file that holds them.

:func:`tune` (``python -m jaxbandit tune-figure1 --out FILE``) runs :func:`jaxbandit.tune` per method and
noise setting — the grid point with the smallest mean final regret over the tuning seeds, averaged over
C ∈ {0, 100} — and writes the choice with its grid, seeds, horizon, date and package versions to a file
the user names. :func:`load_tuned` reads and checks such a file; the one shipped in
``jaxbandit/experiments/data/figure1_tuned.json`` is what ``figure1 --constants tuned`` reads by default.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import jaxbandit as jb

from ...core.validation import check_flag, check_int
from ...persist.atomic import atomic_write_json
from ..common import device_info, jsonable, now, seed_list, versions
from .methods import (
    MAIN_METHODS,
    all_methods,
    baseline_methods,
    check_methods,
    constant_names,
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
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"tuned constants file {str(path)!r} is not valid JSON ({err})") from None
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
    data["_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
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
    progress: bool = True,
    verbose: bool = True,
    command: str | None = None,
) -> dict:
    """Tune each method's free constants by :func:`jaxbandit.tune` — grid search for the smallest mean
    final regret on ``seeds`` (disjoint from the reported seeds 0..n−1), averaged over C ∈ {0, 100} —
    separately for each noise setting, and write them with their provenance to ``out`` (required; an
    existing file there keeps its other methods' entries).

    Args:
      horizon: T of the tuning runs (tune at the reported horizon).
      seeds: tuning seeds: a count n (seeds 1000..1000+n−1) or seed numbers (all ≥ 1000 by convention,
        so that reports on seeds 0..n−1 never reuse them).
      out: the JSON file to write (e.g. ``out/figure1_tuned.json``).
      methods_to_tune: registered algorithm names (default: the paper's two methods).
      grids: ``{method: {constant: values}}`` replacing that method's registry grid.
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
    grids = dict(grids or {})
    for m, g in grids.items():
        if m not in selected or not isinstance(g, Mapping) or sorted(g) != sorted(constant_names(m)):
            names = constant_names(m) if m in all_methods() else "its constants"
            raise ValueError(
                f"grids[{m!r}]={g!r} is invalid: give a list of values for each of {names}, "
                f"for a method in methods_to_tune={selected}"
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
            "per method and noise setting, the grid point with the smallest mean final cumulative "
            "regret over the tuning seeds, averaged over C in {0, 100} (jaxbandit.tune, "
            "over=('noise', 'C')); the figure reports seeds 0..n-1"
        ),
    )
    for m in selected:
        grid = {k: [float(x) for x in v] for k, v in (grids.get(m) or spec(m).grid).items()}
        data["methods"][m] = _tune_method(m, grid, horizon, seed_ids, command, progress, verbose)
        atomic_write_json(path, jsonable(data))  # after each method: a long tuning keeps its work
    if verbose:
        print(f"wrote {path}")
    return data


def _tune_method(
    m: str, grid: dict, horizon: int, seed_ids: list, command: str, progress: bool, verbose: bool
) -> dict:
    """One method's entry of the tuned file: its best constants per noise setting, with the tables."""
    entry: dict[str, Any] = {
        "label": spec(m).label,
        "horizon": horizon,
        "seeds": seed_ids,
        "grid": grid,
        "over": ["C"],
        "C": list(C_VALUES),
        "created": now(),
        "command": command,
        "versions": versions(),
        "noise": {},
    }
    t0 = time.perf_counter()
    for ni, n in enumerate(NOISES):
        full = {"noise": [float(ni)], "C": list(C_VALUES), **grid}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = jb.tune(
                tune_factory(m, horizon),
                environment,
                full,
                horizon=horizon,
                seeds=seed_ids,
                over=("noise", "C"),
                progress=progress,
            )
        table = res.table
        best_row = next(r for r in table if all(r[a] == res.best[a] for a in res.axes))
        entry["noise"][n] = {
            "best": {a: res.best[a] for a in constant_names(m)},
            "mean_final_regret": best_row["mean"],
            "stderr_final_regret": best_row["stderr"],
            "warnings": [str(w.message) for w in caught],
            "table": table,
        }
        if verbose:
            print(f"{spec(m).label}, {n}: best {entry['noise'][n]['best']}")
            print(res.format_table())
    entry["wall_seconds"] = time.perf_counter() - t0
    return entry
