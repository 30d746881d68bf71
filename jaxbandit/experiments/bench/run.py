"""Run the benchmark: per algorithm, tune its free constants on the tuning seeds over *all* scenarios
together (one setting per algorithm), then run theory and tuned constants on the reported seeds; save
after each algorithm, so a killed benchmark resumes where it stopped.

Output directory::

    bench.json            settings, scenarios, tuned constants, timings, versions, device (the manifest)
    parts/<algorithm>.npz one SweepResult per finished algorithm (with its .json)
    results.npz / .json   every algorithm: dims (algorithm, constants, noise, attack, seed, round)
    results.nc            the same as an xarray Dataset (netCDF), when xarray and h5netcdf are installed
    report.md, *.png      the report (``jaxbandit.experiments.bench.report``)
"""

from __future__ import annotations

import functools
import json
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

import jaxbandit as jb

from ...core.dtypes import as_float, as_index
from ...report.results import SweepResult, atomic_write_json
from ...runner.tune import choose
from ..common import device_info, jsonable, now, save_result, versions
from .report import write_report
from .settings import CONSTANTS, BenchSettings, Scenarios, environment_factory, problem, scenarios

FORMAT = "jaxbandit-bench/1"


def tuning_grid(method: str, coarse: bool) -> dict[str, np.ndarray]:
    """The registry's tuning grid of ``method``; ``coarse``: every other value of each axis, both ends
    kept (the quick benchmark: the O(t) algorithms' sweeps cost about grid size × T²)."""
    grid = {n: np.asarray(v, np.float64) for n, v in jb.registry.algorithm(method).grid.items()}
    if coarse:
        grid = {n: np.unique(np.append(v[::2], v[-1])) for n, v in grid.items()}
    return grid


def constant_points(grid: dict[str, np.ndarray]) -> np.ndarray:
    """A tuning grid flattened: `[points, constants]`, the last constant fastest."""
    mesh = np.meshgrid(*grid.values(), indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=-1)


@functools.cache
def algorithm_factory(method: str, scen: Scenarios, horizon: int, coarse: bool):
    """``p -> Algorithm`` for ``p["setting"]``: 0 the theory constants, i ≥ 1 the tuning grid's point i − 1
    (:func:`constant_points`), so that tuning and report share one compiled sweep."""
    spec = jb.registry.algorithm(method)
    points = constant_points(tuning_grid(method, coarse))

    def make(p):
        prob = problem(scen, horizon, p)
        theory = spec.theory(prob)
        i = as_index(p["setting"])
        values = {
            n: jnp.where(i == 0, theory[n], as_float(points[:, k])[jnp.maximum(i - 1, 0)])
            for k, n in enumerate(spec.grid)
        }
        return spec.build(prob, values)

    make.__qualname__ = f"bench.{method}"
    return make


def _scenario_grid(scen: Scenarios) -> dict[str, Any]:
    return {
        "noise": np.arange(len(scen.noises), dtype=float),
        "attack": np.arange(len(scen.attacks), dtype=float),
    }


def manifest(settings: BenchSettings) -> dict:
    scen = scenarios(settings)
    return {
        "format": FORMAT,
        "settings": settings.as_dict(),
        "noises": [n._asdict() for n in scen.noises],
        "attacks": [a._asdict() for a in scen.attacks],
    }


def _same_benchmark(found: dict, wanted: dict) -> bool:
    keys = ("format", "settings", "noises", "attacks")
    return json.loads(json.dumps(jsonable({k: found.get(k) for k in keys}))) == json.loads(
        json.dumps(jsonable({k: wanted[k] for k in keys}))
    )


def prepare_out(out: Path, settings: BenchSettings, resume: bool) -> dict:
    """The manifest to continue from: a fresh one for an empty (or new) directory, the stored one when
    ``resume`` and the settings match; ``ValueError`` for a directory holding another benchmark."""
    out = Path(out)
    path = out / "bench.json"
    wanted = manifest(settings)
    if path.exists():
        found = json.loads(path.read_text())
        if not resume:
            raise ValueError(
                f"out={str(out)!r} is invalid: it already holds a benchmark; pass --resume to continue it "
                "(with the same settings) or choose another --out"
            )
        if not _same_benchmark(found, wanted):
            raise ValueError(
                f"out={str(out)!r} is invalid for --resume: it holds a benchmark with other settings "
                f"({found.get('settings')}); run with those settings or choose another --out"
            )
        return found
    if out.exists() and any(out.iterdir()):
        raise ValueError(
            f"out={str(out)!r} is invalid: the directory is not empty and holds no benchmark; choose "
            "another --out"
        )
    wanted.update(tuned={}, timings={}, started=now(), versions=versions(), device=device_info())
    atomic_write_json(path, jsonable(wanted))
    return wanted


def _part_path(out: Path, method: str) -> Path:
    return Path(out) / "parts" / f"{method}.npz"


def _tuning_view(res: SweepResult, grid: dict, tune_idx: np.ndarray) -> SweepResult:
    """The tuning seeds' runs at the grid points, with the grid's constants as axes again."""
    final = res.data["cumulative_regret"][1:][..., tune_idx, -1:]  # [points, noise, attack, seed, 1]
    shape = tuple(len(v) for v in grid.values())
    data = {"cumulative_regret": final.reshape(shape + final.shape[1:])}
    coords = dict(grid)
    coords.update(noise=res.coords["noise"], attack=res.coords["attack"], seed=res.coords["seed"][tune_idx])
    coords["round"] = res.coords["round"][-1:]
    return SweepResult((*grid, "noise", "attack", "seed", "round"), coords, data)


def run_algorithm(
    method: str, settings: BenchSettings, out: Path, info: dict, progress: bool, devices=None
) -> SweepResult:
    """One sweep of ``method`` over its theory constants and tuning grid × every scenario × the reported
    and tuning seeds; the tuned setting is the grid point with the least final regret on the tuning
    seeds averaged over all scenarios (``jb.runner.tune.choose``). Returns dims (constants, noise,
    attack, seed, round) on the reported seeds: theory, then tuned."""
    scen = scenarios(settings)
    grid = tuning_grid(method, settings.coarse_tuning)
    points = constant_points(grid)
    seeds = list(settings.seeds) + list(settings.tune_seeds)
    checkpoint = Path(out) / "checkpoints" / method
    started = time.perf_counter()
    res = jb.sweep(
        algorithm_factory(method, scen, settings.horizon, settings.coarse_tuning),
        environment_factory(scen),
        {"setting": list(range(len(points) + 1)), **_scenario_grid(scen)},
        horizon=settings.horizon,
        seeds=seeds,
        record=("log", settings.record_points),
        progress=progress,
        checkpoint=checkpoint,
        devices=devices,
    )
    seconds = time.perf_counter() - started
    ids = np.asarray(res.coords["seed"])
    tune_idx = np.flatnonzero(np.isin(ids, settings.tune_seeds))
    report_idx = np.flatnonzero(np.isin(ids, settings.seeds))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuned = choose(_tuning_view(res, grid, tune_idx), over=("noise", "attack"))
    best = 1 + int(np.ravel_multi_index(tuned.best_index, tuple(len(v) for v in grid.values())))
    data = {k: v[[0, best]][..., report_idx, :] for k, v in res.data.items()}
    coords = {
        "constants": np.array(CONSTANTS),
        "noise": np.array([n.name for n in scen.noises]),
        "attack": np.array([a.name for a in scen.attacks]),
        "seed": ids[report_idx],
        "round": res.coords["round"],
    }
    part = SweepResult(("constants", "noise", "attack", "seed", "round"), coords, data)
    part.meta.update(
        algorithm=method,
        tuned=dict(tuned.best),
        tune_table=tuned.table,
        tune_warnings=[str(w.message) for w in caught],
        seconds=seconds,
    )
    part.save(_part_path(out, method))
    shutil.rmtree(checkpoint, ignore_errors=True)
    info["tuned"][method] = dict(tuned.best)
    info["timings"][method] = round(seconds, 2)
    atomic_write_json(Path(out) / "bench.json", jsonable(info))
    return part


def combine(parts: dict[str, SweepResult], info: dict) -> SweepResult:
    """One result with a leading ``algorithm`` axis, in the order of ``parts``."""
    first = next(iter(parts.values()))
    data = {k: np.stack([p.data[k] for p in parts.values()]) for k in first.data}
    coords = {"algorithm": np.array(list(parts)), **first.coords}
    return SweepResult(("algorithm", *first.dims), coords, data, jsonable(dict(info)))


def to_dataset(result: SweepResult, info: dict):
    """``result`` as an xarray Dataset with the scenarios' labels as coordinates: noise_family, noise_eps,
    noise_nu on ``noise``; adversary and C on ``attack``; the manifest as attributes."""
    ds = result.to_xarray()
    ds = ds.assign_coords(
        noise_family=("noise", [n["family"] for n in info["noises"]]),
        noise_eps=("noise", [n["eps"] for n in info["noises"]]),
        noise_nu=("noise", [n["nu"] for n in info["noises"]]),
        adversary=("attack", [a["adversary"] for a in info["attacks"]]),
        C=("attack", [a["C"] for a in info["attacks"]]),
    )
    ds.attrs.update(
        title="jaxbandit robustness benchmark",
        horizon=info["settings"]["horizon"],
        jaxbandit_version=info.get("versions", {}).get("jaxbandit", ""),
        device=info.get("device", {}).get("device_kind", ""),
    )
    return ds


def save_results(out: Path, result: SweepResult, info: dict) -> list[Path]:
    """``results.npz`` always; ``results.nc`` (:func:`to_dataset`) too when xarray and h5netcdf are
    installed."""
    try:
        dataset = to_dataset(result, info)
    except ImportError:
        dataset = None
    return save_result(result, Path(out) / "results.npz", dataset)


def run_bench(
    settings: BenchSettings, out, *, resume: bool = False, progress: bool = True, devices=None
) -> SweepResult:
    """Run (or resume) the benchmark ``settings`` into ``out``; returns the combined result. ``devices``:
    what ``jb.sweep`` shards the streams over (default: every device of the default backend)."""
    if not isinstance(settings, BenchSettings):
        raise ValueError(
            f"settings={type(settings).__name__} is invalid: build it with "
            "jaxbandit.experiments.bench.make_settings(...)"
        )
    out = Path(out)
    info = prepare_out(out, settings, resume)
    parts: dict[str, SweepResult] = {}
    bar = _outer_bar(settings.algorithms, progress)
    for method in settings.algorithms:
        label = jb.registry.algorithm(method).label
        if bar is not None:
            bar.set_description(label)
        path = _part_path(out, method)
        if path.exists() and method in info.get("tuned", {}):
            parts[method] = SweepResult.load(path)
        else:
            parts[method] = run_algorithm(method, settings, out, info, progress, devices)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    info["finished"] = now()
    atomic_write_json(out / "bench.json", jsonable(info))
    result = combine(parts, info)
    save_results(out, result, info)
    write_report(result, info, out)
    return result


def backend_devices(name: str | None):
    """The devices of backend ``name`` (``cpu``, ``gpu``, ``tpu``), or None for JAX's default."""
    if name is None:
        return None
    import jax

    try:
        return jax.devices(name)
    except RuntimeError:
        available = sorted({d.platform for d in jax.devices()} | {"cpu"})
        raise ValueError(f"device={name!r} is invalid: backends available here are {available}") from None


def _outer_bar(methods, progress):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=len(methods), desc="benchmark", unit="algorithm", position=0, leave=True)
