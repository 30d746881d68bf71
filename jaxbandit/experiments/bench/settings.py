"""The benchmark's scenarios: noise settings (a family and the moment order ε the learners are told),
attacks (an adversary and its corruption level C), the quick and full configurations, and the one
environment factory every algorithm's sweep traces.

The families and adversaries are the registered ones (``jb.registry.noises()``, ``adversaries()``: the
library's, and any a plugin registers), built by their specs; ``none`` is the C = 0 scenario of every
other adversary.

Noise settings and attacks are indices into the lists below, so each is one traced grid axis: the
noise axis changes the stream (each seed's θ*, contexts and η_t are drawn once per noise setting and
shared by every attack and constant), the attack axis only the adversary.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxbandit as jb

from ...agents.registry import Problem
from ...core import validation as V
from ...core.dtypes import as_float, as_index
from ..common import check_numbers

DIM, NUM_ARMS = 10, 20
CONSTANTS = ("theory", "tuned")


class NoiseSetting(NamedTuple):
    """One value of the noise axis: a family, the ε the learners are told and the family's ν there, and
    the tail index computed from the built family (moments of order p < ``max_order`` are finite)."""

    name: str  # e.g. "student_t(ε=0.5)"
    family: str  # a registered noise family
    eps: float
    nu: float
    description: str  # the registered description, then what the computed max_order says of the moments
    max_order: float = float("inf")


class Attack(NamedTuple):
    """One value of the attack axis: an adversary and its level C (the learners are told C)."""

    name: str  # e.g. "flip C=100"
    adversary: str  # a registered adversary
    C: float


class BenchSettings(NamedTuple):
    """Everything a benchmark's numbers depend on (stored with the results; resuming requires equality)."""

    horizon: int
    seeds: tuple[int, ...]
    tune_seeds: tuple[int, ...]
    algorithms: tuple[str, ...]
    adversaries: tuple[str, ...]
    noises: tuple[str, ...]
    eps_grid: tuple[float, ...]
    C_grid: tuple[float, ...]
    record_points: int
    coarse_tuning: (
        bool  # the protocol's coarse grids (quick): radius multiplier in decades, every other value
    )
    stream: str = "linear"  # a registered stream: θ*, the contexts and η_t of every scenario

    def as_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self._asdict().items()}


QUICK: dict[str, Any] = dict(
    horizon=400, seeds=5, tune_seeds=10, eps_grid=(0.5, 1.0), C_grid=(40.0,), record_points=12,
    coarse_tuning=True,
)  # fmt: skip
FULL: dict[str, Any] = dict(
    horizon=5000, seeds=20, tune_seeds=10, eps_grid=(0.25, 0.5, 1.0), C_grid=(10.0, 30.0, 100.0, 300.0),
    record_points=24, coarse_tuning=False,
)  # fmt: skip
TUNE_SEED_START = 1000


def make_settings(
    *,
    quick: bool = False,
    algorithms=None,
    adversaries=None,
    noises=None,
    horizon: int | None = None,
    seeds: int | None = None,
    tune_seeds: int | None = None,
    eps_grid: Sequence[float] | None = None,
    C_grid: Sequence[float] | None = None,
    stream: str = "linear",
) -> BenchSettings:
    """The quick or full configuration with any field overridden; ``ValueError`` on bad input, naming
    the valid values. ``algorithms``, ``adversaries``, ``noises``: registered names (default: every
    registered one, less the adversaries registered with ``in_benchmark=False``); ``stream``: a registered
    stream (default the paper's). Reported seeds are 0..n−1,
    tuning seeds 1000..1000+m−1 (disjoint)."""
    base = QUICK if quick else FULL
    registered = jb.registry.names(), tuple(jb.registry.adversaries()), tuple(jb.registry.noises())
    defaults = (
        registered[0],
        tuple(name for name, spec in jb.registry.adversaries().items() if spec.in_benchmark),
        registered[2],
    )
    labels = ({jb.registry.algorithm(n).label: n for n in registered[0]}, None, None)
    algs, advs, nois = (
        V.check_names(name, default if given is None else given, valid, label)
        for name, given, default, valid, label in zip(
            ("algorithms", "adversaries", "noises"),
            (algorithms, adversaries, noises),
            defaults,
            registered,
            labels,
        )
    )
    horizon = base["horizon"] if horizon is None else horizon
    seeds = base["seeds"] if seeds is None else seeds
    tune_seeds = base["tune_seeds"] if tune_seeds is None else tune_seeds
    horizon = V.check_int("horizon", horizon, 20)
    seeds = V.check_int("seeds", seeds, 2)
    tune_seeds = V.check_int("tune_seeds", tune_seeds, 1)
    if seeds > TUNE_SEED_START:
        raise ValueError(f"seeds={seeds} is invalid: at most {TUNE_SEED_START} (tuning seeds start there)")
    eps = check_numbers(
        "eps_grid", base["eps_grid"] if eps_grid is None else eps_grid, 0.0, 1.0, low_open=True
    )
    cs = check_numbers("C_grid", base["C_grid"] if C_grid is None else C_grid, 0.0, low_open=True)
    stream = check_stream(stream)
    return BenchSettings(
        horizon=int(horizon),
        seeds=tuple(range(int(seeds))),
        tune_seeds=tuple(range(TUNE_SEED_START, TUNE_SEED_START + int(tune_seeds))),
        algorithms=algs,
        adversaries=advs,
        noises=nois,
        eps_grid=eps,
        C_grid=cs,
        record_points=base["record_points"],
        coarse_tuning=base["coarse_tuning"],
        stream=stream,
    )


def check_stream(name: str) -> str:
    """``name``, a registered stream whose ``build`` gives a ``jb.Stream`` of the benchmark's d and K
    (tried with N(0, 1) noise); ``ValueError`` otherwise, before anything runs."""
    built = jb.registry.stream(name).build(DIM, NUM_ARMS, jb.noise.gaussian(1.0))
    if not isinstance(built, jb.Stream) or (built.dim, built.num_arms) != (DIM, NUM_ARMS):
        got = (
            f"a jb.Stream with dim={built.dim}, num_arms={built.num_arms}"
            if isinstance(built, jb.Stream)
            else type(built).__name__
        )
        raise ValueError(
            f"stream={name!r} is invalid: its build({DIM}, {NUM_ARMS}, noise) returned {got}; it must "
            f"return a jb.Stream with dim={DIM}, num_arms={NUM_ARMS}"
        )
    return name


# --- the scenario axes ------------------------------------------------------------------------------


def noise_settings(settings: BenchSettings) -> list[NoiseSetting]:
    """The noise axis: each family with every moment finite at ε = 1, each heavy-tailed one at every ε
    of the grid. A setting's description says what the built family's tail index implies (the label
    comes from the piece, not its name); a heavy-tailed family whose variance is finite at an ε < 1 of
    the grid is refused: it would be an ε = 1 scenario under an ε < 1 label."""
    out = []
    for family in settings.noises:
        spec = jb.registry.noise(family)
        for eps in settings.eps_grid if spec.heavy_tailed else (1.0,):
            built = spec.build(eps)
            with jax.ensure_compile_time_eval():
                nu = float(built.moment_bound(eps))
            tail = float(np.asarray(built.max_order))
            if spec.heavy_tailed and eps < 1.0 and tail > 2.0:
                raise ValueError(
                    f"noise={family!r} is invalid at eps={eps:g}: its family {built.name} has a finite "
                    f"variance (moments finite below order {tail:g}); a heavy-tailed family at eps < 1 must "
                    f"have max_order in (1 + eps, 2], or register it with heavy_tailed=False"
                )
            moments = "every moment finite" if np.isinf(tail) else f"moments finite below order {tail:g}"
            variance = "variance finite" if tail > 2.0 else "variance infinite"
            text = f"{spec.describe(eps)} ({moments}: {variance})"
            out.append(NoiseSetting(f"{family}(ε={eps:g})", family, eps, nu, text, tail))
    return out


def attacks(settings: BenchSettings) -> list[Attack]:
    """The attack axis: the adversaries without a level (``none``: no corruption) at C = 0, then every
    other adversary at every C of the grid."""
    levels = {adv: jb.registry.adversary(adv).takes_level for adv in settings.adversaries}
    out = [Attack(adv, adv, 0.0) for adv in settings.adversaries if not levels[adv]]
    for adv in settings.adversaries:
        if levels[adv]:
            out += [Attack(f"{adv} C={c:g}", adv, c) for c in settings.C_grid]
    return out


class Scenarios(NamedTuple):
    """The two axes as the traced factories read them, and the stream every scenario draws from."""

    noises: tuple[NoiseSetting, ...]
    attacks: tuple[Attack, ...]
    stream: str = "linear"


def scenarios(settings: BenchSettings) -> Scenarios:
    return Scenarios(tuple(noise_settings(settings)), tuple(attacks(settings)), settings.stream)


@functools.cache
def environment_factory(scen: Scenarios):
    """``p -> Environment`` for ``p["noise"]`` and ``p["attack"]`` (indices into ``scen``), on the
    registered stream ``scen.stream`` (``linear``: ``jb.envs.linear``'s)."""
    families = [jb.registry.noise(n.family).build(n.eps) for n in scen.noises]
    build_stream = jb.registry.stream(scen.stream).build
    kinds = tuple(dict.fromkeys(a.adversary for a in scen.attacks))
    kind_index = [kinds.index(a.adversary) for a in scen.attacks]
    levels = [a.C for a in scen.attacks]

    def make(p):
        attack = as_index(p["attack"])
        C = as_float(levels)[attack]
        built = [jb.registry.adversary(k).build(C, DIM) for k in kinds]
        adversary = jb.corruption.select(built, jnp.asarray(kind_index)[attack])
        noise = jb.noise.select(families, p["noise"])
        return jb.Environment(build_stream(DIM, NUM_ARMS, noise), adversary)

    make.__qualname__ = "bench.environment"
    return make


def problem(scen: Scenarios, horizon: int, p: Mapping) -> Problem:
    """What the learner is told at grid point ``p``: ε and ν of its noise setting, C of its attack."""
    noise, attack = as_index(p["noise"]), as_index(p["attack"])
    return Problem(
        horizon,
        DIM,
        eps=as_float([n.eps for n in scen.noises])[noise],
        nu=as_float([n.nu for n in scen.noises])[noise],
        corruption=as_float([a.C for a in scen.attacks])[attack],
    )
