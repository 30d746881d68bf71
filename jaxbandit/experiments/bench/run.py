"""Run the benchmark: per algorithm, search its free constants by the tuning protocol (``protocol``: the
same radius-multiplier grid and the same budget for every algorithm, edges extended) on the tuning seeds
over *all* scenarios together (one setting per algorithm), then run the theory and the tuned constants on
the reported seeds; save after each algorithm, so a killed benchmark resumes where it stopped (and a
resume that names more algorithms adds them to a finished one).

Output directory::

    bench.json             settings, scenarios, the module each registered piece came from
                           (provenance), tuned constants, searches, timings, versions, device
    tuning/<algorithm>.json every setting the search evaluated (mean ± s.e. over the tuning seeds)
    parts/<algorithm>.npz  one SweepResult per finished algorithm (with its .json)
    results.npz / .json    every algorithm: dims (algorithm, constants, noise, attack, seed, round)
    results.nc             the same as an xarray Dataset (netCDF), when xarray and h5netcdf are installed
    per_seed.npz / .json   the compact per-seed results the report is computed from (see ``report``)
    report.md, *.png       the report (``jaxbandit.experiments.bench.report``)
"""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

import jaxbandit as jb

from ...persist.atomic import atomic_write_json
from ...report.analysis import mean_and_stderr
from ...report.results import SweepResult
from ..common import device_info, jsonable, now, save_result, versions
from . import protocol
from .protocol import constant_axes
from .report import compact, write_report
from .settings import CONSTANTS, BenchSettings, Scenarios, environment_factory, problem, scenarios

FORMAT = "jaxbandit-bench/2"
#: The grid axis that picks the constants: 0 the theory ones, 1 those of the protocol's axes.
CONSTANTS_AXIS = "constants"


@functools.cache
def algorithm_factory(method: str, scen: Scenarios, horizon: int):
    """``p -> Algorithm``: at ``p["constants"]`` 0 the theory constants; at 1 the radius constant (the
    registry grid's first) as ``p["beta_scale"]`` (:data:`protocol.RADIUS`) × its theory value and every
    other free constant as ``p[name]``. Every value is a traced grid axis: the tuning's settings and the
    report share one factory, and settings of the same count share one compiled sweep."""
    spec = jb.registry.algorithm(method)
    names = tuple(spec.grid)

    def make(p):
        prob = problem(scen, horizon, p)
        theory = spec.theory(prob)
        chosen = protocol.constants(names, theory[names[0]], p)
        values = {n: jnp.where(p[CONSTANTS_AXIS] < 0.5, theory[n], chosen[n]) for n in names}
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
        "stream": {"name": settings.stream, "description": jb.registry.stream(settings.stream).description},
        "provenance": provenance(settings),
    }


def provenance(settings: BenchSettings) -> dict[str, dict[str, str]]:
    """The module that registered each algorithm, adversary, noise family and the stream the benchmark
    runs (``jb.registry``'s ``spec.module``): a plugin's pieces are told from the library's."""
    return {
        "algorithms": {n: jb.registry.algorithm(n).module for n in settings.algorithms},
        "adversaries": {n: jb.registry.adversary(n).module for n in settings.adversaries},
        "noises": {n: jb.registry.noise(n).module for n in settings.noises},
        "stream": {settings.stream: jb.registry.stream(settings.stream).module},
    }


def _same_benchmark(found: dict, wanted: dict) -> bool:
    """Whether ``found`` is the benchmark ``wanted`` or ``wanted`` less some of its algorithms (a resume
    may add algorithms to a benchmark; every other setting must match)."""
    keys = ("format", "settings", "noises", "attacks")
    # a bench.json that names no stream ran the paper's
    found = {**found, "settings": {"stream": "linear", **(found.get("settings") or {})}}
    found, wanted = (json.loads(json.dumps(jsonable({k: m.get(k) for k in keys}))) for m in (found, wanted))
    had, wants = found["settings"].pop("algorithms", []), wanted["settings"].pop("algorithms")
    return found == wanted and set(had) <= set(wants)


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
                f"({found.get('settings')}); run with those settings (more algorithms may be added) or "
                "choose another --out"
            )
        # the algorithms a resume adds join the manifest, in the order asked for
        found.update(settings=wanted["settings"], provenance=wanted["provenance"])
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


def _key(point: dict) -> str:
    return json.dumps({k: float(v) for k, v in sorted(point.items())})


def _key_grid(grid: dict) -> str:
    return json.dumps({k: [float(v) for v in values] for k, values in grid.items()})


class _Tuning:
    """The protocol's ``evaluate`` for one algorithm: sweeps of :func:`protocol.batch_width` settings
    each (the last padded with repeats, so that every batch is one compiled program) on the tuning seeds
    over every scenario; the objective per setting (final regret averaged over the scenarios per seed,
    mean ± s.e. over seeds). Each setting's result is kept in ``tuning/<method>.json``, so that a resumed
    benchmark replays the search without running a finished batch again."""

    def __init__(self, method, settings: BenchSettings, out: Path, progress: bool, devices):
        self.method, self.settings, self.progress, self.devices = method, settings, progress, devices
        self.scen = scenarios(settings)
        self.width = protocol.batch_width(settings.coarse_tuning)
        self.path = Path(out) / "tuning" / f"{method}.json"
        self.checkpoints = Path(out) / "checkpoints" / method
        self.known: dict = json.loads(self.path.read_text()) if self.path.exists() else {}

    def __call__(self, axis: str, values, fixed) -> tuple[np.ndarray, np.ndarray]:
        points = [{**fixed, axis: float(v)} for v in values]
        missing = [float(v) for v, p in zip(values, points) if _key(p) not in self.known]
        for _, padded in protocol.batches(missing, self.width):
            with warnings.catch_warnings():  # the padding repeats a value on purpose: one compiled width
                warnings.simplefilter("ignore", jb.runner.grid.RepeatedValueWarning)
                self._run(axis, padded, fixed)
        found = np.asarray([self.known[_key(p)] for p in points], np.float64)
        return found[:, 0], found[:, 1]

    def _run(self, axis: str, values: list[float], fixed) -> None:
        grid = {CONSTANTS_AXIS: [1.0], **protocol.evaluation_grid(self.method, axis, values, fixed)}
        checkpoint = self.checkpoints / (
            "tuning-" + hashlib.sha256(_key_grid(grid).encode()).hexdigest()[:16]
        )
        res = jb.sweep(
            algorithm_factory(self.method, self.scen, self.settings.horizon),
            environment_factory(self.scen),
            {**grid, **_scenario_grid(self.scen)},
            horizon=self.settings.horizon,
            seeds=list(self.settings.tune_seeds),
            record=[self.settings.horizon],
            progress=self.progress,
            checkpoint=checkpoint,
            devices=self.devices,
        )
        final = np.asarray(res.final_regret, np.float64)  # [1, (axes...), noise, attack, seed]
        final = final.reshape(len(values), len(self.scen.noises) * len(self.scen.attacks), -1)
        mean, se = mean_and_stderr(final.mean(axis=1), axis=-1)
        for v, m, e in zip(values, mean, se):
            self.known[_key({**fixed, axis: v})] = [float(m), float(e)]
        atomic_write_json(self.path, self.known)
        shutil.rmtree(checkpoint, ignore_errors=True)


def run_algorithm(
    method: str, settings: BenchSettings, out: Path, info: dict, progress: bool, devices=None
) -> SweepResult:
    """Tune ``method`` by the protocol (``jaxbandit.experiments.bench.protocol``) on the tuning seeds over
    every scenario together, then one sweep of its theory and tuned constants × every scenario on the
    reported seeds. Returns dims (constants, noise, attack, seed, round): theory, then tuned; its meta
    holds the search (every setting evaluated, the edges, the budget)."""
    scen = scenarios(settings)
    started = time.perf_counter()
    evaluate = _Tuning(method, settings, out, progress, devices)
    found = protocol.search(protocol.axes(method, settings.coarse_tuning), evaluate, protocol.fixed(method))
    grid = {CONSTANTS_AXIS: [0.0, 1.0], **{n: [found.best[n]] for n in constant_axes(method)}}
    res = jb.sweep(
        algorithm_factory(method, scen, settings.horizon),
        environment_factory(scen),
        {**grid, **_scenario_grid(scen)},
        horizon=settings.horizon,
        seeds=list(settings.seeds),
        record=("log", settings.record_points),
        progress=progress,
        checkpoint=evaluate.checkpoints / "report",
        devices=devices,
    )
    seconds = time.perf_counter() - started
    shape = (2, len(scen.noises), len(scen.attacks), len(settings.seeds), -1)
    data = {k: np.asarray(v).reshape(shape) for k, v in res.data.items()}
    coords = {
        "constants": np.array(CONSTANTS),
        "noise": np.array([n.name for n in scen.noises]),
        "attack": np.array([a.name for a in scen.attacks]),
        "seed": np.asarray(res.coords["seed"]),
        "round": res.coords["round"],
    }
    part = SweepResult(("constants", "noise", "attack", "seed", "round"), coords, data)
    search = {"rows": found.rows, "edges": found.edges, "budget": found.budget}
    part.meta.update(algorithm=method, tuned=dict(found.best), search=search, seconds=seconds)
    part.save(_part_path(out, method))
    shutil.rmtree(evaluate.checkpoints, ignore_errors=True)
    info["tuned"][method] = dict(found.best)
    info.setdefault("search", {})[method] = {"edges": found.edges, "budget": found.budget}
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
    per_seed = compact(result)
    save_result(per_seed, out / "per_seed.npz")
    write_report(per_seed, info, out)
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
    from ...runner import progress as progress_lib

    return progress_lib.bar(total=len(methods), desc="benchmark", unit="algorithm")
