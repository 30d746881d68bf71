"""The methods Figure 1 compares — every registered algorithm (``jb.registry``) — and the factories its
sweeps trace: noise setting, C and constants are grid axes of one compiled call per method."""

from __future__ import annotations

import functools

import jax.numpy as jnp

import jaxbandit as jb

from ...agents.registry import AlgorithmSpec, Problem
from ...core import validation as V
from ..bench import protocol
from .settings import DIM, eps_nu_values, index, pick

#: The paper's two methods; every other registered algorithm is a baseline (``--baselines``).
MAIN_METHODS = ("cr_hvt_ucb", "gadaoful")


def baseline_methods() -> tuple[str, ...]:
    """The registered algorithms other than the paper's two, in registry order."""
    return tuple(n for n in jb.registry.names() if n not in MAIN_METHODS)


def all_methods() -> tuple[str, ...]:
    """The paper's two methods, then the baselines."""
    return MAIN_METHODS + baseline_methods()


def spec(method: str) -> AlgorithmSpec:
    return jb.registry.algorithm(method)


def constant_names(method: str) -> tuple[str, ...]:
    """The free constants of ``method`` (its registry grid's names), in order."""
    return tuple(spec(method).grid)


def check_methods(selected) -> tuple[str, ...]:
    """``selected`` as a tuple of distinct registered names."""
    return V.check_names("methods", selected, all_methods(), {spec(m).label: m for m in all_methods()})


def problem(horizon: int, p) -> Problem:
    """The :class:`Problem` of grid point ``p``: its noise setting's ε and ν, and its C."""
    eps_values, nu_values = eps_nu_values()
    i = index(p["noise"])
    return Problem(horizon, DIM, eps=pick(eps_values, i), nu=pick(nu_values, i), corruption=p["C"])


@functools.cache
def figure_factory(method: str, horizon: int, tuned: tuple | None):
    """The algorithm factory of the figure's sweep. ``tuned``: per noise setting, the tuned values in
    :func:`constant_names` order, or None (theory constants only, no ``variant`` axis). Cached, so the
    compiled sweep is reused when the same figure is run again in one process."""
    s = spec(method)
    names = constant_names(method)

    def make(p):
        prob = problem(horizon, p)
        values = s.theory(prob)
        if tuned is not None:
            i = index(p["noise"])
            tuned_now = {n: pick([t[k] for t in tuned], i) for k, n in enumerate(names)}
            values = {n: jnp.where(p["variant"] < 0.5, values[n], tuned_now[n]) for n in names}
        return s.build(prob, values)

    make.__qualname__ = f"figure1.{method}"
    return make


@functools.cache
def tune_factory(method: str, horizon: int):
    """The factory :func:`jaxbandit.experiments.figure1.tune` sweeps, as the benchmark's protocol names
    the free constants: the radius constant (the first) as ``p["beta_scale"]`` × its theory value, every
    other one as ``p[name]``; all are grid axes."""
    s = spec(method)
    names = constant_names(method)

    def make(p):
        prob = problem(horizon, p)
        return s.build(prob, protocol.constants(names, s.theory(prob)[names[0]], p))

    make.__qualname__ = f"figure1.tune.{method}"
    return make
