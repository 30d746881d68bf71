"""The benchmark's scenarios: noise settings (a family and the moment order ε the learners are told),
attacks (an adversary and its corruption level C), the quick and full configurations, and the one
environment factory every algorithm's sweep traces.

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
#: Every adversary of the benchmark; ``none`` is the C = 0 scenario of every other one.
ADVERSARIES = ("none", "flip", "flip_rounds", "random_sign", "targeted")
#: Noise families; each heavy-tailed one is run at every ε of the grid with the tail as heavy as that
#: ε allows (Student-t with df = 2 + ε, centred Pareto with shape 1.1 + ε: the (1+ε)-moment is finite
#: and the next moments are not; ε = 1 gives the paper's t₃, ε = 0.4 its Pareto(1.5)).
NOISES = ("gaussian", "student_t", "pareto", "empirical")
#: Families with every moment finite are run at ε = 1 only (the variance case).
LIGHT_NOISES = ("gaussian", "empirical")
CONSTANTS = ("theory", "tuned")


class NoiseSetting(NamedTuple):
    """One value of the noise axis: a family, the ε the learners are told and the family's ν there."""

    name: str  # e.g. "student_t(ε=0.5)"
    family: str  # one of NOISES
    eps: float
    nu: float
    description: str


class Attack(NamedTuple):
    """One value of the attack axis: an adversary and its level C (the learners are told C)."""

    name: str  # e.g. "flip C=100"
    adversary: str  # one of ADVERSARIES
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
    coarse_tuning: bool  # the protocol's coarse grids (quick): radius scale in decades, every other value

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
    adversaries=ADVERSARIES,
    noises=NOISES,
    horizon: int | None = None,
    seeds: int | None = None,
    tune_seeds: int | None = None,
    eps_grid: Sequence[float] | None = None,
    C_grid: Sequence[float] | None = None,
) -> BenchSettings:
    """The quick or full configuration with any field overridden; ``ValueError`` on bad input, naming
    the valid values. Reported seeds are 0..n−1, tuning seeds 1000..1000+m−1 (disjoint)."""
    base = QUICK if quick else FULL
    algorithms = jb.registry.names() if algorithms is None else algorithms
    algs = V.check_names("algorithms", algorithms, jb.registry.names())
    advs = V.check_names("adversaries", adversaries, ADVERSARIES)
    nois = V.check_names("noises", noises, NOISES)
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
    )


# --- the scenario axes ------------------------------------------------------------------------------


@functools.cache
def empirical_series() -> np.ndarray:
    """The S&P 500 daily returns of jb.datasets (10 stocks, pooled), standardised to unit variance."""
    x = np.asarray(jb.datasets.sp500_returns(), np.float64).ravel()
    return (x - x.mean()) / x.std()


def _family(family: str, eps: float) -> tuple[jb.noise.NoiseFamily, str]:
    if family == "gaussian":
        return jb.noise.gaussian(1.0), "N(0, 1)"
    if family == "student_t":
        return jb.noise.student_t(2.0 + eps), f"Student-t, df = {2.0 + eps:g}"
    if family == "pareto":
        return jb.noise.pareto(1.1 + eps, 1.0), f"centred Pareto, shape {1.1 + eps:g}, x_min = 1"
    return (
        jb.noise.empirical(empirical_series(), name="sp500"),
        "S&P 500 daily returns (10 stocks, standardised), resampled",
    )


def noise_settings(settings: BenchSettings) -> list[NoiseSetting]:
    """The noise axis: each light family at ε = 1, each heavy one at every ε of the grid."""
    out = []
    for family in settings.noises:
        for eps in (1.0,) if family in LIGHT_NOISES else settings.eps_grid:
            fam, text = _family(family, eps)
            with jax.ensure_compile_time_eval():
                nu = float(fam.moment_bound(eps))
            out.append(NoiseSetting(f"{family}(ε={eps:g})", family, eps, nu, text))
    return out


def attacks(settings: BenchSettings) -> list[Attack]:
    """The attack axis: no corruption (C = 0), then every other adversary at every C of the grid."""
    out = [Attack("none", "none", 0.0)] if "none" in settings.adversaries else []
    for adv in settings.adversaries:
        if adv != "none":
            out += [Attack(f"{adv} C={c:g}", adv, c) for c in settings.C_grid]
    return out


@functools.cache
def attack_target() -> np.ndarray:
    """θ† of the targeted attack: one fixed unit vector (``default_rng(0)``), the same for every run.
    Its default θ† = −θ* would make it the flip attack here: with K = 20 arms −θ* and θ* always prefer
    different arms, so it would corrupt every round by −2⟨X, θ*⟩, exactly as flip does."""
    v = np.random.default_rng(0).standard_normal(DIM)
    return v / np.linalg.norm(v)


def _adversary(kind: str, C) -> jb.Adversary:
    if kind == "none":
        return jb.corruption.none()
    if kind == "flip_rounds":
        # The "C" of public baseline code: C rounds flipped (Σ|c_t| up to 2C when |⟨x, θ*⟩| ≤ 1).
        return jb.corruption.flip_rounds(C)
    if kind == "targeted":
        return jb.corruption.targeted(C, target=attack_target())
    return getattr(jb.corruption, kind)(C)


class Scenarios(NamedTuple):
    """The two axes as the traced factories read them."""

    noises: tuple[NoiseSetting, ...]
    attacks: tuple[Attack, ...]


def scenarios(settings: BenchSettings) -> Scenarios:
    return Scenarios(tuple(noise_settings(settings)), tuple(attacks(settings)))


@functools.cache
def environment_factory(scen: Scenarios):
    """``p -> Environment`` for ``p["noise"]`` and ``p["attack"]`` (indices into ``scen``)."""
    families = [_family(n.family, n.eps)[0] for n in scen.noises]
    kinds = tuple(dict.fromkeys(a.adversary for a in scen.attacks))
    kind_index = [kinds.index(a.adversary) for a in scen.attacks]
    levels = [a.C for a in scen.attacks]

    def make(p):
        attack = as_index(p["attack"])
        C = as_float(levels)[attack]
        adversary = jb.corruption.select([_adversary(k, C) for k in kinds], jnp.asarray(kind_index)[attack])
        noise = jb.noise.select(families, p["noise"])
        return jb.envs.linear(DIM, NUM_ARMS, noise=noise, corruption=adversary)

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
