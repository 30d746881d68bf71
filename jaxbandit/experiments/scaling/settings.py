"""The scaling experiment's setting: the environment (Section 6's, with Pareto noise as heavy as each ε
allows), the grids of the quick and full runs (with the horizons its constants are tuned at), and the
factories its sweeps trace (one per algorithm, horizon and dimension: all three are static)."""

from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

import jaxbandit as jb

from ...agents.registry import AlgorithmSpec, Problem
from ...core import validation as V
from ..bench import protocol
from ..common import check_numbers
from ..figure1.settings import DIM, NUM_ARMS, TUNE_SEEDS  # noqa: F401 (DIM: the base dimension)

#: Pareto's tail index exceeds 1 + ε by this much: the (1+ε)-moment exists, the (1.1+ε)-moment does not.
TAIL_MARGIN = 0.1
#: Algorithms whose registry cost is this run only up to the plan's ``linear_cost_max_horizon``.
LINEAR_COST = "O(t)"
MIN_HORIZON = 4


class Plan(NamedTuple):
    """The grids of one scaling run.

    - ``horizons``: T, each its own compiled sweep with the theory constants for that T (part (a));
    - ``eps``: the moment orders ε (a traced grid axis; noise centred Pareto(1 + ε + 0.1, 1));
    - ``budgets``: the flip adversary's C (a traced grid axis), run at ``corruption_horizon`` (part (b));
    - ``dims``: d, each its own compiled sweep at ``dim_horizon`` with C = 0 (part (c)); d = 10 (the
      paper's) is where (a) and (b) run;
    - ``seeds``: reported seeds 0..n−1;
    - ``linear_cost_max_horizon``: algorithms whose per-round cost grows with t (registry cost
      ``"O(t)"``: a refit over the whole history every round) run only the horizons up to this one;
    - ``corruption_horizon``, ``dim_horizon``: the T of parts (b) and (c) (horizons of the grid within
      the cap, so that every algorithm runs them);
    - ``tune_horizons``: the horizons at which each algorithm's constants are tuned, per ε
      (:mod:`.tuning`); every set runs every horizon as its own constants variant ``tuned@T``. Empty:
      theory constants only. An O(t) algorithm is tuned only at those up to the cap.
    """

    horizons: tuple[int, ...]
    eps: tuple[float, ...]
    budgets: tuple[float, ...]
    dims: tuple[int, ...]
    seeds: int
    linear_cost_max_horizon: int
    corruption_horizon: int
    dim_horizon: int
    tune_horizons: tuple[int, ...] = ()

    def horizons_for(self, spec: AlgorithmSpec) -> tuple[int, ...]:
        """The horizons ``spec`` runs: all, or those up to the cap for an O(t) algorithm."""
        return self.within_cap(spec, self.horizons)

    def within_cap(self, spec: AlgorithmSpec, horizons: tuple[int, ...]) -> tuple[int, ...]:
        """``horizons``, or for an O(t) algorithm those up to ``linear_cost_max_horizon``."""
        if spec.cost == LINEAR_COST:
            return tuple(t for t in horizons if t <= self.linear_cost_max_horizon)
        return horizons


QUICK = Plan(
    horizons=(200, 400, 800, 1600),
    eps=(0.4, 1.0),
    budgets=(0.0, 10.0, 20.0, 40.0, 80.0),
    dims=(5, 10),
    seeds=6,
    linear_cost_max_horizon=1600,
    corruption_horizon=400,
    dim_horizon=400,
    tune_horizons=(400, 1600),
)
FULL = Plan(
    horizons=(500, 1000, 2000, 4000, 8000, 16000),
    eps=(0.2, 0.4, 0.6, 0.8, 1.0),
    budgets=(0.0, 25.0, 50.0, 100.0, 200.0, 400.0, 800.0),
    dims=(5, 10, 20, 40),
    seeds=100,
    linear_cost_max_horizon=4000,
    corruption_horizon=2000,
    dim_horizon=2000,
    tune_horizons=(2000, 16000),
)


def pareto_shape(eps):
    """The tail index 1 + ε + 0.1 of the noise at moment order ε (possibly traced)."""
    return 1.0 + eps + TAIL_MARGIN


def noise(eps) -> jb.noise.NoiseFamily:
    """Centred Pareto(1 + ε + 0.1, x_min = 1): its (1+ε)-moment exists, barely (ε = 0.4 is Figure 1's (c))."""
    return jb.noise.pareto(pareto_shape(eps), 1.0)


def moment_bound(eps):
    """ν given to the algorithms: the larger of the paper's uncentred bound (E X^{1+ε})^{1/(1+ε)}
    (15^{1/1.4} at ε = 0.4, Figure 1's ν) and the exact centred one (which exceeds it for ε ≲ 0.15),
    so it is always a valid upper bound and equals the paper's ν in the paper's setting."""
    shape = pareto_shape(eps)
    return jnp.maximum(jb.noise.raw_pareto_moment_bound(shape, 1.0, eps), noise(eps).moment_bound(eps))


@functools.cache
def environment(dim: int):
    """Section 6's environment in dimension ``dim`` for grid point ``p`` (``p["eps"]``, ``p["C"]``): θ*
    and K = 20 contexts uniform on unit spheres, the flip adversary with budget C. Cached per d."""

    def make(p):
        return jb.envs.linear(dim, NUM_ARMS, noise=noise(p["eps"]), corruption=jb.corruption.flip(p["C"]))

    make.__qualname__ = f"scaling.environment.d{dim}"
    return make


def variant_names(tune_horizons) -> tuple[str, ...]:
    """The constants variants of a run: ``theory``, then ``tuned@T`` per tuning horizon T."""
    return ("theory",) + tuple(f"tuned@{int(T)}" for T in tune_horizons)


@functools.cache
def algorithm_factory(method: str, horizon: int, dim: int, tuned: tuple | None = None, eps=None):
    """The factory of ``method``'s sweep at (T, d): theory constants for that T and d from the registry,
    and with ``tuned`` (points ``[set][ε][constant]`` in :func:`protocol.constant_axes` order, for the ε
    grid ``eps``) a ``variant`` axis: 0 the theory constants, k the k-th set's point at ``p["eps"]``
    (the radius as that multiple of the theory radius for this T). The algorithm knows ε, ν
    (:func:`moment_bound`) and C. Cached, so each (method, T, d) compiles once."""
    spec = jb.registry.algorithm(method)
    names = tuple(spec.grid)
    axes = protocol.constant_axes(method)
    table = None if tuned is None else jnp.asarray(tuned)  # [set, eps, constant]
    grid = None if eps is None else jnp.asarray(eps)

    def make(p):
        prob = Problem(horizon, dim, eps=p["eps"], nu=moment_bound(p["eps"]), corruption=p["C"])
        values = spec.theory(prob)
        if table is not None:
            k = jnp.asarray(p["variant"]).astype(jnp.int32)
            row = table[jnp.maximum(k - 1, 0), jnp.argmin(jnp.abs(grid - p["eps"]))]
            chosen = protocol.constants(names, values[names[0]], {n: row[i] for i, n in enumerate(axes)})
            values = {n: jnp.where(k == 0, values[n], chosen[n]) for n in names}
        return spec.build(prob, values)

    make.__qualname__ = f"scaling.{method}.T{horizon}.d{dim}"
    return make


# --- the constants the study used to borrow --------------------------------------------------------


def tuned_constants(data: dict | None, method: str) -> tuple[tuple | None, str]:
    """Deprecated: ``method``'s values (registry-grid order) in Figure 1's centred Pareto setting (tuned
    at ε = 0.4, T = 5000), or None with the reason — the constants the study borrowed for every ε and T
    before it tuned its own (:mod:`.tuning`, ``tune_constants``); kept so that code calling it runs."""
    warnings.warn(
        "scaling.tuned_constants is deprecated: the scaling study tunes its own constants per eps and "
        "horizon (jaxbandit.experiments.scaling.tune_constants, load_tuning)",
        DeprecationWarning,
        stacklevel=2,
    )
    if data is None:
        return None, "not requested"
    entry = data["methods"].get(method)
    if entry is None:
        return None, f"the tuned constants file has no entry for {method!r}: theory constants only"
    best = entry.get("noise", {}).get("pareto", {}).get("best")
    names = tuple(jb.registry.algorithm(method).grid)
    if not isinstance(best, dict) or sorted(best) != sorted(names):
        return None, (
            f"the tuned constants file has no 'pareto' setting for {method!r} with its constants {names}: "
            "theory constants only"
        )
    return tuple(
        float(best[n]) for n in names
    ), "Figure 1's pareto setting, used unchanged at every eps, T and d"


# --- argument checks ---------------------------------------------------------------------------------


def check_plan(plan: Plan) -> Plan:
    """``plan`` with sorted grids, or a ``ValueError`` naming the first bad field."""
    horizons = check_numbers("horizons", plan.horizons, MIN_HORIZON, integer=True, at_least=2)
    eps = check_numbers("eps", plan.eps, 0.0, 1.0, low_open=True)
    budgets = check_numbers("budgets", plan.budgets, 0.0)
    if 0.0 not in budgets:
        raise ValueError(f"budgets={plan.budgets!r} is invalid: it must include 0 (R(C) - R(0) needs R(0))")
    dims = check_numbers("dims", plan.dims, 1, integer=True)
    seeds = plan.seeds
    if isinstance(seeds, (bool, np.bool_)) or not isinstance(seeds, (int, np.integer)) or seeds < 2:
        raise ValueError(
            f"seeds={seeds!r} is invalid: give an integer >= 2 (the confidence intervals resample seeds)"
        )
    if int(seeds) > TUNE_SEEDS[0]:
        raise ValueError(
            f"seeds={seeds!r} is invalid: reported seeds 0..{int(seeds) - 1} would include the tuning "
            f"seeds {TUNE_SEEDS[0]}..{TUNE_SEEDS[-1]}; use at most {TUNE_SEEDS[0]}"
        )
    cap = plan.linear_cost_max_horizon
    if isinstance(cap, (bool, np.bool_)) or not isinstance(cap, (int, np.integer)) or cap < horizons[0]:
        raise ValueError(
            f"linear_cost_max_horizon={cap!r} is invalid: it must be an integer >= the smallest horizon "
            f"{horizons[0]} (O(t) algorithms run the horizons up to it)"
        )
    for name in ("corruption_horizon", "dim_horizon"):
        value = getattr(plan, name)
        if value not in horizons or value > cap:
            raise ValueError(
                f"{name}={value!r} is invalid: it must be one of the horizons {horizons} and at most "
                f"linear_cost_max_horizon={cap}"
            )
    tune_horizons: tuple = ()
    if not (isinstance(plan.tune_horizons, (tuple, list)) and len(plan.tune_horizons) == 0):
        tune_horizons = check_numbers("tune_horizons", plan.tune_horizons, MIN_HORIZON, integer=True)
    return Plan(
        horizons,
        eps,
        budgets,
        dims,
        int(seeds),
        int(cap),
        int(plan.corruption_horizon),
        int(plan.dim_horizon),
        tuple(int(T) for T in tune_horizons),
    )


def override(plan: Plan, **fields) -> Plan:
    """``plan`` with the fields given (None: keep), checked. When the horizons or the cap change so that
    ``corruption_horizon`` or ``dim_horizon`` (not given) is no longer a horizon within the cap, it becomes
    the largest horizon within the cap."""
    unknown = sorted(set(fields) - set(Plan._fields))
    if unknown:
        raise ValueError(f"{unknown[0]} is not a field of the plan: fields are {Plan._fields}")
    new = plan._replace(**{k: v for k, v in fields.items() if v is not None})
    horizons = check_numbers("horizons", new.horizons, MIN_HORIZON, integer=True, at_least=2)
    cap = new.linear_cost_max_horizon
    if isinstance(cap, (int, np.integer)) and not isinstance(cap, bool) and cap >= horizons[0]:
        largest = max(t for t in horizons if t <= cap)

        def stale(name: str) -> bool:
            value = getattr(new, name)
            return fields.get(name) is None and (value not in horizons or value > cap)

        if stale("corruption_horizon"):
            new = new._replace(corruption_horizon=largest)
        if stale("dim_horizon"):
            new = new._replace(dim_horizon=largest)
    return check_plan(new)


def check_algorithms(selected) -> tuple[str, ...]:
    """Registered names (default: every registered algorithm), distinct; a ``ValueError`` lists the
    valid names."""
    if selected is None:
        return jb.registry.names()
    names = jb.registry.names()
    return V.check_names("algorithms", selected, names, {jb.registry.algorithm(n).label: n for n in names})
