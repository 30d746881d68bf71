"""Figure 1 of Tani & Futami (Section 6): CR-Hvt-UCB against GAdaOFUL, and optionally the other baselines.

The paper's setting: d = 10, θ* uniform on the unit sphere, K = 20 random unit contexts per round
(S = L = 1), the θ-flipping adversary with an exact budget C ∈ {0, 100} (``jb.corruption.flip``), and

- **(a)** ε = 1: Student-t(3) noise, ν = √3;
- **(c)** ε = 0.4: Pareto(shape 1.5, x_min 1) noise, centred (it has mean 3), with the paper's
  ν = 15^{1/1.4} — the (1+ε)-moment bound of the *uncentred* variable
  (``jb.noise.raw_pareto_moment_bound``);
- **(b)** runtime: the wall-clock seconds one run (ε = 1) takes to reach round t, measured after
  compilation, chunk by chunk, on single (not batched) runs.

Every curve is run twice when ``constants="both"``: with each method's theory constants, and with
constants tuned by :func:`jaxbandit.tune` on seeds 1000+ (never the reported seeds 0..n−1), averaged
over C ∈ {0, 100}, per noise setting. The tuned constants live in ``jaxbandit/experiments/data/figure1_tuned.json``,
written by :func:`tune` (``python -m jaxbandit tune-figure1``) with its grid, seeds, horizon, date and
package versions.

Each method's regret runs are one :func:`jaxbandit.sweep` — noise setting, C and constants are traced
grid axes of one compiled call (the noise setting through a selector between the two noise families,
which draws both from the same key and keeps one, so a run's stream is exactly that of
``jb.envs.linear`` with that family).

Command line::

    python -m jaxbandit figure1 [--horizon T] [--seeds N] [--out DIR] [--constants theory|tuned|both]
                                [--baselines]
    python -m jaxbandit tune-figure1 [--horizon T] [--seeds N] [--baselines] [--out FILE]

Writes ``DIR/figure1.png`` (panels (a), (b), (c); one row per constants setting), one
``DIR/figure1_<constants>.png`` per setting, ``DIR/figure1.npz`` (cumulative-regret curves
``regret/<constants>/<noise>/<method>/C<C>`` of shape `[seeds, horizon]`, runtimes
``runtime/<constants>/<method>/C<C>/rounds`` `[m]` and ``.../seconds`` `[repeats, m]`, ``rounds`` and
``seeds``; no pickles) and ``DIR/figure1.json`` (settings, constants used, tuned-file provenance,
versions, device, wall times, summary).
"""
from __future__ import annotations

import datetime
import functools
import hashlib
import json
import math
import os
import platform
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Sequence

import numpy as np

from ...report.analysis import loglog_fit

DIM, NUM_ARMS = 10, 20
C_VALUES = (0.0, 100.0)
TUNE_SEEDS = tuple(range(1000, 1010))
CONSTANTS = ("theory", "tuned", "both")
MAIN_METHODS = ("cr_hvt_ucb", "gadaoful")
BASELINE_METHODS = ("hvt_ucb", "oful", "cw_oful", "heavy_oful")
METHODS = MAIN_METHODS + BASELINE_METHODS
MIN_HORIZON = 4
TUNED_FORMAT = "jaxbandit.figure1.tuned/1"
DEFAULT_TUNED = Path(__file__).resolve().parents[1] / "data" / "figure1_tuned.json"
RUNTIME_POINTS = 20  # checkpoints of the runtime curves


# ------------------------------------------------------------------------------------------------
# Settings
# ------------------------------------------------------------------------------------------------

class NoiseSetting(NamedTuple):
    """One regret panel: its noise family, the moment order ε the algorithms are given, and ν."""

    key: str
    panel: str
    title: str
    family: str
    eps: float
    nu: float


def noise_settings() -> dict:
    """``{"student_t": (a), "pareto": (c)}`` in panel order."""
    import jaxbandit as jb

    pareto_nu = float(jb.noise.raw_pareto_moment_bound(1.5, 1.0, 0.4))
    return {
        "student_t": NoiseSetting("student_t", "(a)", "ε = 1: Student-t(3) noise, ν = √3",
                                  "student_t(df=3)", 1.0, math.sqrt(3.0)),
        "pareto": NoiseSetting("pareto", "(c)", "ε = 0.4: centred Pareto(1.5, 1) noise, ν = 15^(1/1.4)",
                               "pareto(shape=1.5, x_min=1), centred", 0.4, pareto_nu),
    }


NOISES = ("student_t", "pareto")


def _families():
    import jaxbandit as jb

    return (jb.noise.student_t(3.0), jb.noise.pareto(1.5, 1.0))


def _index(value):
    import jax.numpy as jnp

    return jnp.round(jnp.asarray(value)).astype(jnp.int32)


def _pick(values, index):
    """``values[index]`` for a (possibly traced) index, in the default float dtype."""
    from ...core.dtypes import as_float

    return as_float(values)[index]


def selected_noise(index):
    """The noise family of setting ``index`` (0: Student-t(3), 1: centred Pareto(1.5, 1)), with
    ``index`` possibly traced: both families draw from the same key and one draw is kept, so the
    stream is exactly that family's."""
    import jax.numpy as jnp

    from ...core import validation as V
    from ...envs.noise import NoiseFamily

    if not V.is_traced(index) and (np.ndim(index) != 0 or float(index) not in (0.0, 1.0)):
        raise ValueError(f"index={index!r} is invalid: it must be 0 (Student-t(3)) or 1 (Pareto(1.5, 1))")
    families = _families()
    i = _index(index)

    def sample(key, t):
        draws = [f.sample(key, t) for f in families]
        return (jnp.stack([d[0] for d in draws])[i], jnp.stack([d[1] for d in draws])[i])

    def moment_bound(eps):
        return jnp.stack([f.moment_bound(eps) for f in families])[i]

    orders = [float(f.max_order) for f in families]
    try:
        max_order = orders[int(index)]
    except Exception:  # traced: the checks that use it are skipped for traced values anyway
        max_order = _pick(orders, i)
    return NoiseFamily("student_t(df=3) | pareto(shape=1.5)", sample, moment_bound, max_order)


def environment(p):
    """The Section 6 environment for grid point ``p`` (``p["noise"]``: 0 or 1, ``p["C"]``: budget)."""
    import jaxbandit as jb

    if not isinstance(p, Mapping) or "noise" not in p or "C" not in p:
        raise ValueError(f"p={p!r} is invalid: it must be a mapping with 'noise' (0 or 1) and 'C' (>= 0)")

    return jb.envs.linear(DIM, NUM_ARMS, noise=selected_noise(p["noise"]),
                          corruption=jb.corruption.flip(p["C"]))


# ------------------------------------------------------------------------------------------------
# Methods: theory constants, tuning grids, factories
# ------------------------------------------------------------------------------------------------

class Method(NamedTuple):
    """A compared method.

    ``names``: its free constants (tuned by :func:`tune`); ``grid``: their tuning grid;
    ``theory(T, C)``: their theory values (may depend on C, which may be traced);
    ``build(T, eps, nu, C, values)``: the algorithm.
    """

    key: str
    label: str
    names: tuple
    grid: dict
    theory: Callable
    build: Callable
    color: str


@functools.lru_cache(maxsize=None)
def _gadaoful_theory(T):
    """GAdaOFUL's theory τ₀ and m₀ at horizon T (they depend on T and d only)."""
    from ...agents.gadaoful import gadaoful_constants

    c = gadaoful_constants(horizon=T, dim=DIM, corruption=0.0, constants="theory")
    return float(c.tau0), float(c.m0)


def _methods() -> dict:
    import jaxbandit as jb
    from ...core.dtypes import as_float

    def cr_build(T, eps, nu, C, v):
        return jb.cr_hvt_ucb(T, DIM, eps=eps, nu=nu, corruption=C, beta_scale=v["beta_scale"],
                             alpha=v["alpha"])

    def hvt_build(T, eps, nu, C, v):
        return jb.hvt_ucb(T, DIM, eps=eps, nu=nu, beta_scale=v["beta_scale"], alpha=v["alpha"])

    def gada_build(T, eps, nu, C, v):
        return jb.gadaoful(T, DIM, nu=nu, corruption=C, constants="theory", beta_scale=v["beta_scale"],
                           tau0=v["tau0"], m0=v["m0"])

    def gada_theory(T, C):
        tau0, m0 = _gadaoful_theory(T)
        return {"beta_scale": 1.0, "tau0": tau0, "m0": m0}

    def oful_build(T, eps, nu, C, v):
        return jb.oful(T, DIM, beta_scale=v["beta_scale"])

    cw_bias = math.sqrt(DIM) + 1.0  # R√d + √λ S with R = λ = S = 1

    def cw_build(T, eps, nu, C, v):
        return jb.cw_oful(T, DIM, corruption=C, known_corruption=True, beta_scale=v["beta_scale"],
                          alpha=v["alpha"])

    def cw_theory(T, C):  # Theorem 4.2: α = (R√d + √λS)/C, ∞ at C = 0
        return {"beta_scale": 1.0, "alpha": cw_bias / as_float(C)}

    def heavy_build(T, eps, nu, C, v):
        return jb.heavy_oful(T, DIM, eps=eps, nu=nu, beta_scale=v["beta_scale"])

    ucb_scales = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1.0]
    ucb_alphas = [0.5, 2.0, 8.0, 32.0, 128.0]
    return {
        "cr_hvt_ucb": Method("cr_hvt_ucb", "CR-Hvt-UCB", ("beta_scale", "alpha"),
                             {"beta_scale": ucb_scales, "alpha": ucb_alphas},
                             lambda T, C: {"beta_scale": 1.0, "alpha": 8.0}, cr_build, "tab:blue"),
        "gadaoful": Method("gadaoful", "GAdaOFUL", ("beta_scale", "tau0", "m0"),
                           {"beta_scale": [1e-7, 1e-6, 1e-5, 1e-4, 1e-3], "tau0": [0.01, 0.03, 0.1, 0.3, 1.0],
                            "m0": [1.0]},
                           gada_theory, gada_build, "tab:red"),
        "hvt_ucb": Method("hvt_ucb", "Hvt-UCB", ("beta_scale", "alpha"),
                          {"beta_scale": ucb_scales, "alpha": ucb_alphas},
                          lambda T, C: {"beta_scale": 1.0, "alpha": 8.0}, hvt_build, "tab:cyan"),
        "oful": Method("oful", "OFUL", ("beta_scale",),
                       {"beta_scale": [1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1.0]},
                       lambda T, C: {"beta_scale": 1.0}, oful_build, "tab:gray"),
        "cw_oful": Method("cw_oful", "CW-OFUL", ("beta_scale", "alpha"),
                          {"beta_scale": [1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0], "alpha": [0.005, 0.02, 0.1, 0.5, 2.0]},
                          cw_theory, cw_build, "tab:green"),
        "heavy_oful": Method("heavy_oful", "Heavy-OFUL", ("beta_scale",),
                             {"beta_scale": [3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2]},
                             lambda T, C: {"beta_scale": 1.0}, heavy_build, "tab:orange"),
    }


@functools.lru_cache(maxsize=None)
def methods() -> dict:
    """``{key: Method}`` for every method of the figure, main methods first."""
    return _methods()


def _eps_nu_values() -> tuple[list, list]:
    """ε and ν of each noise setting, in ``NOISES`` order (a traced noise index picks one)."""
    settings = noise_settings()
    return [settings[n].eps for n in NOISES], [settings[n].nu for n in NOISES]


@functools.lru_cache(maxsize=None)
def _figure_factory(method: str, horizon: int, tuned: tuple | None):
    """The algorithm factory of the figure's sweep. ``tuned``: per noise setting, the tuned values in
    ``Method.names`` order, or None (theory constants only, no ``variant`` axis). Cached, so the
    compiled sweep is reused when the same figure is run again in one process."""
    import jax.numpy as jnp

    spec = methods()[method]
    eps_values, nu_values = _eps_nu_values()

    def make(p):
        i = _index(p["noise"])
        eps, nu, C = _pick(eps_values, i), _pick(nu_values, i), p["C"]
        values = spec.theory(horizon, C)
        if tuned is not None:
            tuned_now = {n: _pick([t[k] for t in tuned], i) for k, n in enumerate(spec.names)}
            values = {n: jnp.where(p["variant"] < 0.5, values[n], tuned_now[n]) for n in spec.names}
        return spec.build(horizon, eps, nu, C, values)

    make.__qualname__ = f"figure1.{method}"
    return make


@functools.lru_cache(maxsize=None)
def _tune_factory(method: str, horizon: int):
    """The factory :func:`tune` sweeps: the method's free constants are grid axes."""
    spec = methods()[method]
    eps_values, nu_values = _eps_nu_values()

    def make(p):
        i = _index(p["noise"])
        return spec.build(horizon, _pick(eps_values, i), _pick(nu_values, i), p["C"],
                          {n: p[n] for n in spec.names})

    make.__qualname__ = f"figure1.tune.{method}"
    return make


# ------------------------------------------------------------------------------------------------
# Provenance
# ------------------------------------------------------------------------------------------------

def versions() -> dict:
    """Package versions a result depends on."""
    import jax
    import jaxlib
    import matplotlib

    import jaxbandit

    return {"jaxbandit": jaxbandit.__version__, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "numpy": np.__version__, "matplotlib": matplotlib.__version__,
            "python": platform.python_version()}


def device_info() -> dict:
    import jax

    from ...core.dtypes import float_dtype

    devs = jax.devices()
    return {"backend": jax.default_backend(), "devices": [str(d) for d in devs],
            "device_kind": devs[0].device_kind, "cpu_count": os.cpu_count(),
            "machine": platform.machine(), "processor": platform.processor() or None,
            "system": f"{platform.system()} {platform.release()}",
            "dtype": str(np.dtype(float_dtype()))}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _jsonable(x):
    """Floats that JSON cannot hold (inf, nan) as strings."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.ndarray, np.generic)):
        return _jsonable(np.asarray(x).tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------

def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low \
            or (high is not None and value > high):
        rng = f"[{low}, {high}]" if high is not None else f"[{low}, inf)"
        raise ValueError(f"{name}={value!r} is invalid: it must be an integer in {rng}")
    return int(value)


def _check_flag(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} is invalid: it must be True or False")
    return bool(value)


def _check_methods(selected) -> tuple:
    if isinstance(selected, str):
        selected = (selected,)
    selected = tuple(selected)
    bad = [m for m in selected if m not in METHODS]
    if not selected or bad:
        raise ValueError(f"methods={selected!r} is invalid: choose from {METHODS}")
    if len(set(selected)) != len(selected):
        raise ValueError(f"methods={selected!r} is invalid: a method is named twice")
    return selected


def _seed_list(seeds, name) -> list:
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        _check_int(name, seeds, 1)
        return list(range(int(seeds)))
    try:
        ids = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise ValueError(f"{name}={seeds!r} is invalid: give a count >= 1 or non-negative integer seeds") \
            from None
    if not ids or min(ids) < 0 or len(set(ids)) != len(ids) or any(
            isinstance(s, bool) or not float(s).is_integer() for s in seeds):
        raise ValueError(f"{name}={seeds!r} is invalid: give a count >= 1 or distinct non-negative "
                         "integer seeds")
    return ids


# ------------------------------------------------------------------------------------------------
# Tuned constants: the committed file
# ------------------------------------------------------------------------------------------------

def load_tuned(path=None) -> dict:
    """The tuned-constants file (default: the one shipped in ``jaxbandit/experiments/data``), checked.

    Raises ``ValueError`` naming the file when it is missing, not JSON, or not in the expected format.
    """
    path = DEFAULT_TUNED if path is None else Path(path)
    if not path.is_file():
        raise ValueError(f"tuned constants file {str(path)!r} does not exist: create it with "
                         "'python -m jaxbandit tune-figure1'")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"tuned constants file {str(path)!r} is not valid JSON ({err})") from None
    if not isinstance(data, dict) or data.get("format") != TUNED_FORMAT \
            or not isinstance(data.get("methods"), dict):
        raise ValueError(f"tuned constants file {str(path)!r} is not a {TUNED_FORMAT} file "
                         "(written by 'python -m jaxbandit tune-figure1')")
    for key, entry in data["methods"].items():
        if key not in METHODS:
            raise ValueError(f"tuned constants file {str(path)!r} names an unknown method {key!r}; "
                             f"methods: {METHODS}")
        names = methods()[key].names
        for noise in NOISES:
            best = entry.get("noise", {}).get(noise, {}).get("best")
            if not isinstance(best, dict) or sorted(best) != sorted(names) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in best.values()):
                raise ValueError(f"tuned constants file {str(path)!r}: {key}/{noise} must give positive "
                                 f"numbers for {names}, got {best!r}")
    data["_path"] = str(path)
    data["_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return data


def _tuned_values(data: dict, method: str) -> tuple:
    """Per noise setting (``NOISES`` order), the tuned values of ``method`` in ``Method.names`` order."""
    entry = data["methods"].get(method)
    if entry is None:
        extra = " --baselines" if method in BASELINE_METHODS else ""
        raise ValueError(f"the tuned constants file {data.get('_path')!r} has no entry for {method!r} "
                         f"(it has {sorted(data['methods'])}): run 'python -m jaxbandit tune-figure1{extra}' "
                         "or use --constants theory")
    names = methods()[method].names
    return tuple(tuple(float(entry["noise"][n]["best"][k]) for k in names) for n in NOISES)


# ------------------------------------------------------------------------------------------------
# Runtime: single runs, chunk by chunk, after compilation
# ------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _runners(method: str, horizon: int, tuned: tuple | None):
    """Jitted ``init(key, params)`` and ``chunk(carry, params, rounds)`` for one (unbatched) run;
    ``params`` `[3]` = (noise index, C, variant)."""
    import jax

    from ...runner.simulate import init_carry, rollout

    make = _figure_factory(method, horizon, tuned)

    def build(params):
        p = {"noise": params[0], "C": params[1], "variant": params[2]}
        return make(p), environment(p)

    @jax.jit
    def init(key, params):
        alg, env = build(params)
        return init_carry(alg, env, key)

    @jax.jit
    def chunk(carry, params, rounds):
        alg, env = build(params)
        carry, traj = rollout(alg, env, carry, rounds)
        return carry, traj.regret.sum()

    return init, chunk


def _checkpoints(horizon: int, points: int = RUNTIME_POINTS):
    """Chunk length c and the timed rounds c, 2c, …, ⌊T/c⌋c (the last equals T when c divides T)."""
    c = max(1, math.ceil(horizon / points))
    return c, np.arange(1, horizon // c + 1) * c


def _time_runs(method: str, horizon: int, *, tuned: tuple | None, variant: float, C: float,
              repeats: int, bar=None) -> tuple:
    """Seconds one run (ε = 1 setting, budget C) takes to reach each checkpoint round, for the seeds
    0..repeats−1 (the reported runs), after compilation. Returns ``(rounds [m], seconds [repeats, m])``.
    """
    import jax
    import jax.numpy as jnp

    from ...core.dtypes import float_dtype

    init, chunk = _runners(method, horizon, tuned)
    c, rounds = _checkpoints(horizon)
    params = jnp.asarray([0.0, C, variant], float_dtype())
    blocks = [jnp.arange(k * c, (k + 1) * c, dtype=jnp.int32) for k in range(rounds.size)]
    base = jax.random.key(0)
    # compile (and run one chunk) outside the timing
    jax.block_until_ready(chunk(init(jax.random.fold_in(base, 0), params), params, blocks[0]))
    seconds = np.zeros((repeats, rounds.size))
    for r in range(repeats):
        carry = jax.block_until_ready(init(jax.random.fold_in(base, r), params))
        start = time.perf_counter()
        for k, block in enumerate(blocks):
            carry, _ = chunk(carry, params, block)
            jax.block_until_ready(carry)
            seconds[r, k] = time.perf_counter() - start
        if bar is not None:
            bar.update(1)
    return rounds, seconds


def _last_chunk_rate(rounds, seconds):
    """Seconds per round over the last timed chunk, per repeat `[repeats]`."""
    rounds = np.asarray(rounds, float)
    seconds = np.asarray(seconds, float).reshape(-1, rounds.size)
    if rounds.size == 1:
        return seconds[:, 0] / rounds[0]
    return (seconds[:, -1] - seconds[:, -2]) / (rounds[-1] - rounds[-2])


def _runtime_slope(rounds, seconds) -> float:
    """Log–log slope of the median time against t over the checkpoints t ≥ T/2 (1: constant cost per
    round; 2: cost per round growing linearly in t)."""
    rounds = np.asarray(rounds, float)
    mid = np.median(np.asarray(seconds, float).reshape(-1, rounds.size), axis=0)
    window = rounds >= rounds[-1] / 2
    return float(loglog_fit(rounds[window], mid[window]))


# ------------------------------------------------------------------------------------------------
# The figure
# ------------------------------------------------------------------------------------------------

@dataclass
class Figure1Result:
    """What :func:`run` produced.

    - ``curves``: ``{(constants, noise, method, C): [seeds, horizon] cumulative regret}``;
    - ``runtimes``: ``{(constants, method, C): (rounds [m], seconds [repeats, m])}``;
    - ``summary``: one dict per curve (final regret mean ± s.e., log–log slope) and per runtime;
    - ``settings``: everything written to ``figure1.json``; ``paths``: the files written.
    """

    curves: dict
    runtimes: dict
    summary: list
    settings: dict
    paths: dict


def _curve_key(constants, noise, method, C) -> str:
    return f"regret/{constants}/{noise}/{method}/C{C:g}"


def _runtime_key(constants, method, C) -> str:
    return f"runtime/{constants}/{method}/C{C:g}"


def run(horizon: int = 5000, seeds: int = 10, out="out/figure1", *, constants: str = "both",
        baselines: bool = False, tuned_file=None, repeats: int = 3, progress: bool = True,
        verbose: bool = True, command: str | None = None) -> Figure1Result:
    """Reproduce Figure 1 (Section 6) and write ``figure1.png``, ``figure1.npz`` and ``figure1.json``.

    Args:
      horizon: T ≥ 4 rounds per run (the paper: 5000).
      seeds: n ≥ 1 reported runs per curve, seeds 0..n−1 (the paper: 10); they must not overlap the
        tuning seeds of the tuned constants.
      out: the output directory.
      constants: ``"theory"``, ``"tuned"`` (read from ``tuned_file``) or ``"both"``.
      baselines: also run Hvt-UCB, OFUL, CW-OFUL and Heavy-OFUL (Heavy-OFUL refits over the whole
        history every round, like GAdaOFUL, so this takes much longer).
      tuned_file: the tuned-constants JSON (default: the one shipped in ``jaxbandit/experiments/data``).
      repeats: timed runs per (method, C, constants) for panel (b), seeds 0..repeats−1.
      progress: show progress bars; verbose: print the summary table.
      command: the command line recorded in the JSON (default: ``sys.argv`` when run as a script).
    """
    horizon = _check_int("horizon", horizon, MIN_HORIZON)
    seed_ids = _seed_list(seeds, "seeds")
    if constants not in CONSTANTS:
        raise ValueError(f"constants={constants!r} is invalid: it must be one of {CONSTANTS}")
    baselines = _check_flag("baselines", baselines)
    repeats = _check_int("repeats", repeats, 1)
    progress = _check_flag("progress", progress)
    verbose = _check_flag("verbose", verbose)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out={str(out)!r} is invalid: it exists and is not a directory")
    variants = ("theory", "tuned") if constants == "both" else (constants,)
    selected = MAIN_METHODS + (BASELINE_METHODS if baselines else ())
    tuned_data = None
    tuned = {m: None for m in selected}
    if "tuned" in variants:
        tuned_data = load_tuned(tuned_file)
        for m in selected:
            tuned[m] = _tuned_values(tuned_data, m)
            shared = sorted(set(seed_ids) & set(tuned_data["methods"][m].get("seeds", [])))
            if shared:
                raise ValueError(f"seeds={seeds!r} is invalid: the reported seeds share {len(shared)} seed(s) "
                                 f"with the seeds {m} was tuned on (e.g. {shared[:3]}); report on seeds "
                                 "below the tuning seeds")

    import jax

    import jaxbandit as jb
    from ...report.analysis import mean_and_stderr
    from ...report.results import atomic_savez, atomic_write_json

    settings_noise = noise_settings()
    spec = methods()
    variant_values = [0.0 if v == "theory" else 1.0 for v in variants]
    t_start = time.perf_counter()
    curves, slopes, sweep_seconds = {}, {}, {}
    for m in selected:
        make = _figure_factory(m, horizon, tuned[m])
        grid = {"noise": [0.0, 1.0], "C": list(C_VALUES)}
        if tuned[m] is not None:
            grid["variant"] = variant_values
        t0 = time.perf_counter()
        res = jb.sweep({spec[m].label: make}, environment, grid, horizon=horizon, seeds=seed_ids,
                       record=1, progress=progress)
        sweep_seconds[m] = time.perf_counter() - t0
        res = res.sel(algorithm=spec[m].label)
        if "variant" not in res.dims:                       # theory only: add the axis back
            res = _with_axis(res, "variant", variant_values)
        slope = jb.loglog_slope(res)                        # [noise, C, variant]
        cum = np.asarray(res.cumulative_regret, np.float64)  # [noise, C, variant, seed, round]
        for vi, v in enumerate(variants):
            for ni, n in enumerate(NOISES):
                for ci, C in enumerate(C_VALUES):
                    curves[(v, n, m, C)] = cum[ni, ci, vi]
                    slopes[(v, n, m, C)] = float(slope[ni, ci, vi])

    runtimes, runtime_seconds = {}, {}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(selected) * len(variants) * len(C_VALUES) * repeats, desc="runtime (b)",
                   unit="run")
    for m in selected:
        t0 = time.perf_counter()
        for v, vv in zip(variants, variant_values):
            for C in C_VALUES:
                runtimes[(v, m, C)] = _time_runs(m, horizon, tuned=tuned[m], variant=vv, C=C,
                                                repeats=repeats, bar=bar)
        runtime_seconds[m] = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    elapsed = time.perf_counter() - t_start

    summary = []
    for (v, n, m, C), c in curves.items():
        mean, se = mean_and_stderr(c[:, -1])
        summary.append({"kind": "regret", "constants": v, "noise": n, "method": m, "C": C,
                        "final_regret_mean": float(mean), "final_regret_stderr": float(se),
                        "loglog_slope_second_half": slopes[(v, n, m, C)]})
    for (v, m, C), (rounds, sec) in runtimes.items():
        summary.append({"kind": "runtime", "constants": v, "noise": "student_t", "method": m, "C": C,
                        "rounds": int(rounds[-1]), "seconds_median": float(np.median(sec[:, -1])),
                        "seconds_min": float(sec[:, -1].min()), "seconds_max": float(sec[:, -1].max()),
                        "ms_per_round_at_end": float(np.median(_last_chunk_rate(rounds, sec))) * 1e3,
                        "loglog_slope_second_half": _runtime_slope(rounds, sec)})

    used = {}
    for v, vv in zip(variants, variant_values):
        used[v] = {}
        for ni, n in enumerate(NOISES):
            used[v][n] = {}
            for m in selected:
                if v == "tuned":
                    used[v][n][m] = dict(zip(spec[m].names, tuned[m][ni]))
                else:
                    used[v][n][m] = {C_label: {k: float(np.asarray(val)) for k, val in
                                               spec[m].theory(horizon, C).items()}
                                     for C_label, C in ((f"C={C:g}", C) for C in C_VALUES)}
    settings = {
        "figure": "Tani & Futami, Section 6, Figure 1",
        "created": _now(),
        "command": command if command is not None else " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
        "horizon": horizon, "seeds": seed_ids, "dim": DIM, "num_arms": NUM_ARMS, "S": 1.0, "L": 1.0,
        "C": list(C_VALUES), "adversary": "jb.corruption.flip(budget=C): exact budget, sum |c_t| <= C",
        "theta_star": "uniform on the unit sphere", "contexts": "K i.i.d. uniform on the unit sphere",
        "noise": {n: settings_noise[n]._asdict() for n in NOISES},
        "methods": {m: {"label": spec[m].label, "constants": list(spec[m].names)} for m in selected},
        "constants": list(variants), "constants_used": used,
        "tuned_file": None if tuned_data is None else {
            "path": tuned_data["_path"], "sha256": tuned_data["_sha256"], "created": tuned_data.get("created"),
            "command": tuned_data.get("command"), "versions": tuned_data.get("versions"),
            "methods": {m: {k: tuned_data["methods"][m].get(k) for k in ("horizon", "seeds", "grid", "over")}
                        for m in selected}},
        "runtime": {"what": "seconds one unbatched run (eps = 1 setting) takes to reach round t, measured "
                            "chunk by chunk with block_until_ready after compiling and running one chunk; "
                            "seeds 0..repeats-1",
                    "repeats": repeats, "checkpoints": _checkpoints(horizon)[1].tolist()},
        "versions": versions(), "device": device_info(),
        "wall_seconds": {"total": elapsed, "regret_sweeps_including_compilation": sweep_seconds,
                         "runtime_panel_including_compilation": runtime_seconds},
        "summary": summary,
        "npz_keys": {"regret": "regret/<constants>/<noise>/<method>/C<C>: [seeds, horizon] cumulative "
                               "regret, rounds 1..T",
                     "runtime": "runtime/<constants>/<method>/C<C>/rounds [m] and /seconds [repeats, m]"},
    }

    out.mkdir(parents=True, exist_ok=True)
    arrays = {"rounds": np.arange(1, horizon + 1), "seeds": np.asarray(seed_ids)}
    for (v, n, m, C), c in curves.items():
        arrays[_curve_key(v, n, m, C)] = c
    for (v, m, C), (rounds, sec) in runtimes.items():
        arrays[_runtime_key(v, m, C) + "/rounds"] = rounds
        arrays[_runtime_key(v, m, C) + "/seconds"] = sec
    paths = {"npz": out / "figure1.npz", "json": out / "figure1.json", "png": out / "figure1.png"}
    atomic_savez(paths["npz"], **arrays)
    _draw(curves, runtimes, variants, selected, horizon, len(seed_ids), paths["png"])
    for v in variants:
        paths[f"png_{v}"] = out / f"figure1_{v}.png"
        _draw(curves, runtimes, (v,), selected, horizon, len(seed_ids), paths[f"png_{v}"])
    settings["files"] = {k: str(p) for k, p in paths.items()}
    atomic_write_json(paths["json"], _jsonable(settings))
    if verbose:
        print(_format_summary(summary, horizon, len(seed_ids)))
        print(f"\n{elapsed:.1f} s in all on {jax.devices()[0].platform} "
              f"({', '.join(f'{spec[m].label} sweep {s:.1f} s' for m, s in sweep_seconds.items())}, "
              "compilation included)")
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return Figure1Result(curves=curves, runtimes=runtimes, summary=summary, settings=settings, paths=paths)


def _with_axis(res, name, values):
    """``res`` with a length-1 axis ``name`` inserted before ``seed``."""
    from ...report.results import SweepResult

    ax = res.dims.index("seed")
    data = {k: np.expand_dims(v, ax) for k, v in res.data.items()}
    dims = res.dims[:ax] + (name,) + res.dims[ax:]
    coords = dict(res.coords)
    coords[name] = np.asarray(values, float)
    return SweepResult(dims, {d: coords[d] for d in dims}, data, dict(res.meta))


def _format_summary(summary, horizon, num_seeds) -> str:
    """The summary as a text table."""
    spec = methods()
    lines = [f"Figure 1: T = {horizon}, mean ± s.e. over {num_seeds} seed(s); slope = log–log slope of "
             "the mean cumulative regret against t over t ≥ T/2 (1: linear, < 1: sublinear)",
             f"{'constants':<9} {'noise':<10} {'method':<11} {'C':>5} {'final regret':>19} {'slope':>7}"]
    for r in (r for r in summary if r["kind"] == "regret"):
        lines.append(f"{r['constants']:<9} {r['noise']:<10} {spec[r['method']].label:<11} {r['C']:>5g} "
                     f"{r['final_regret_mean']:>10.1f} ± {r['final_regret_stderr']:<6.1f} "
                     f"{r['loglog_slope_second_half']:>7.2f}")
    lines.append("")
    lines.append("Runtime (b), ε = 1: seconds for one run of T rounds, median [min, max] over repeats, after "
                 "compilation; ms per round over the last chunk; slope of time against t over t ≥ T/2 "
                 "(1: constant cost per round, 2: cost per round ∝ t)")
    lines.append(f"{'constants':<9} {'method':<11} {'C':>5} {'seconds per run':>30} {'ms/round':>9} "
                 f"{'slope':>6}")
    for r in (r for r in summary if r["kind"] == "runtime"):
        lines.append(f"{r['constants']:<9} {spec[r['method']].label:<11} {r['C']:>5g} "
                     f"{r['seconds_median']:>10.4g} [{r['seconds_min']:.4g}, {r['seconds_max']:.4g}]"
                     f"{'':>3} {r['ms_per_round_at_end']:>9.3g} {r['loglog_slope_second_half']:>6.2f}")
    return "\n".join(lines)


def _draw(curves: Mapping, runtimes: Mapping, variants: Sequence[str], selected: Sequence[str],
         horizon: int, num_seeds: int, path):
    """Panels (a), (b), (c) — one row per constants setting in ``variants`` — saved to ``path``."""
    from matplotlib import ticker

    from ...report.analysis import mean_and_stderr
    from ...report.plots import _pyplot, save_figure

    plt = _pyplot()
    spec = methods()
    settings = noise_settings()
    rows = len(variants)
    fig, axes = plt.subplots(rows, 3, figsize=(17, 4.6 * rows), squeeze=False)
    t = np.arange(1, horizon + 1)
    styles = {0.0: "-", 100.0: "--"}
    for row, v in zip(axes, variants):
        for ax, n in ((row[0], "student_t"), (row[2], "pareto")):
            for m in selected:
                for C in C_VALUES:
                    mean, se = mean_and_stderr(curves[(v, n, m, C)], axis=0)
                    ax.plot(t, mean, styles[C], color=spec[m].color, label=f"{spec[m].label}, C={C:g}")
                    ax.fill_between(t, mean - se, mean + se, color=spec[m].color, alpha=0.2, linewidth=0)
            ax.set_title(f"{settings[n].panel} regret, {settings[n].title}\n({v} constants)", fontsize=10)
            ax.set_xlabel("round t")
            ax.set_ylabel(f"cumulative regret (mean ± s.e., {num_seeds} seeds)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        ax = row[1]
        for m in selected:
            for C in C_VALUES:
                rounds, sec = runtimes[(v, m, C)]
                mid = np.median(sec, axis=0)
                slope = _runtime_slope(rounds, sec)
                ax.plot(rounds, mid, styles[C], marker="o", markersize=3, color=spec[m].color,
                        label=f"{spec[m].label}, C={C:g} (slope {slope:.2f})")
                if sec.shape[0] > 1:
                    ax.fill_between(rounds, sec.min(axis=0), sec.max(axis=0), color=spec[m].color,
                                    alpha=0.2, linewidth=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(f"(b) runtime, ε = 1: seconds to reach round t, one run\n({v} constants; median, "
                     "min–max band)", fontsize=10)
        ax.set_xlabel("round t")
        ax.set_ylabel("wall-clock seconds (after compilation)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


# ------------------------------------------------------------------------------------------------
# Tuning
# ------------------------------------------------------------------------------------------------

def tune(horizon: int = 5000, seeds=TUNE_SEEDS, *, methods_to_tune: Sequence[str] = MAIN_METHODS,
         out=None, grids: Mapping[str, Mapping] | None = None, progress: bool = True,
         verbose: bool = True, command: str | None = None) -> dict:
    """Tune each method's free constants by :func:`jaxbandit.tune` — grid search for the smallest mean
    final regret on ``seeds`` (disjoint from the reported seeds 0..n−1), averaged over C ∈ {0, 100} —
    separately for each noise setting, and write them with their provenance to ``out`` (default: the
    packaged ``jaxbandit/experiments/data/figure1_tuned.json``; an existing file keeps its other methods' entries).

    Args:
      horizon: T of the tuning runs (tune at the reported horizon).
      seeds: tuning seeds: a count n (seeds 1000..1000+n−1) or seed numbers (all ≥ 1000 by convention,
        so that reports on seeds 0..n−1 never reuse them).
      methods_to_tune: method keys (``MAIN_METHODS``, ``BASELINE_METHODS``).
      grids: ``{method: {constant: values}}`` replacing that method's default grid.
    Returns the file's content.
    """
    import jaxbandit as jb

    horizon = _check_int("horizon", horizon, MIN_HORIZON)
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        seed_ids = [TUNE_SEEDS[0] + s for s in range(_check_int("seeds", seeds, 1))]
    else:
        seed_ids = _seed_list(seeds, "seeds")
    selected = _check_methods(methods_to_tune)
    progress = _check_flag("progress", progress)
    verbose = _check_flag("verbose", verbose)
    spec = methods()
    grids = dict(grids or {})
    for m, g in grids.items():
        if m not in selected or not isinstance(g, Mapping) or sorted(g) != sorted(spec[m].names):
            names = spec[m].names if m in spec else "its constants"
            raise ValueError(f"grids[{m!r}]={g!r} is invalid: give a list of values for each of {names}, "
                             f"for a method in methods_to_tune={selected}")
    path = DEFAULT_TUNED if out is None else Path(out)
    data = {"format": TUNED_FORMAT, "methods": {}}
    if path.is_file():
        data = {k: v for k, v in load_tuned(path).items() if not k.startswith("_")}
    command = command if command is not None else " ".join([Path(sys.argv[0]).name] + sys.argv[1:])
    data.update(format=TUNED_FORMAT, created=_now(), versions=versions(), device=device_info(),
                command=command,
                what=("per method and noise setting, the grid point with the smallest mean final cumulative "
                      "regret over the tuning seeds, averaged over C in {0, 100} (jaxbandit.tune, "
                      "over=('noise', 'C')); the figure reports seeds 0..n-1"))
    for m in selected:
        grid = {k: [float(x) for x in v] for k, v in (grids.get(m) or spec[m].grid).items()}
        make = _tune_factory(m, horizon)
        entry = {"label": spec[m].label, "horizon": horizon, "seeds": seed_ids, "grid": grid,
                 "over": ["C"], "C": list(C_VALUES), "created": _now(), "command": command,
                 "versions": versions(), "noise": {}}
        t0 = time.perf_counter()
        for ni, n in enumerate(NOISES):
            full = {"noise": [float(ni)], "C": list(C_VALUES), **grid}
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = jb.tune(make, environment, full, horizon=horizon, seeds=seed_ids,
                              over=("noise", "C"), progress=progress)
            table = res.table
            best_row = next(r for r in table if all(r[a] == res.best[a] for a in res.axes))
            entry["noise"][n] = {"best": {a: res.best[a] for a in spec[m].names},
                                 "mean_final_regret": best_row["mean"],
                                 "stderr_final_regret": best_row["stderr"],
                                 "warnings": [str(w.message) for w in caught],
                                 "table": table}
            if verbose:
                print(f"{spec[m].label}, {n}: best {entry['noise'][n]['best']}")
                print(res.format_table())
        entry["wall_seconds"] = time.perf_counter() - t0
        data["methods"][m] = entry
        _write_tuned(path, data)     # after each method, so a long tuning keeps what it has done
    if verbose:
        print(f"wrote {path}")
    return data


def _write_tuned(path: Path, data: dict) -> None:
    from ...report.results import atomic_write_json

    atomic_write_json(path, _jsonable(data))
