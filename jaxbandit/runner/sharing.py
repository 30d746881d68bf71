"""Which grid axes a factory reads, found by tracing it: what lets a sweep draw each seed's stream once.

Every grid point and algorithm of a seed faces the same θ*, contexts and noise unless a grid axis changes
them (a noise parameter, S, L, ...). :func:`stream_axes` traces the environment factory's *stream* — θ*
and one round — with every grid value a traced scalar and follows the data flow of the resulting program:
an axis whose value reaches no output cannot change the stream, and grid points that differ only in
such axes share one stream. The analysis is conservative (a value that enters any operation is taken to
reach all of its outputs), so two streams that differ are never merged; at worst a stream is drawn more
often than needed.

:func:`check_traceable` finds, before anything runs, a grid axis that a factory reads in Python control
flow (``if p["C"] > 0:``), which cannot be a traced ``vmap`` axis. :func:`algorithm_axes` finds the axes
an algorithm factory reads at all (through ``init``, ``select`` and ``update``): an own axis of
``jb.sweep(grids=...)`` that reaches none of them is a typo that would only repeat the same runs.

Both trace with every grid value abstract, so their answers depend on the factory, the grid's names and
the float dtype only; they are cached on those, and sweeping the same factories over new grid values
traces nothing again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import jax
import numpy as np

from ..core.dtypes import float_dtype
from ..core.types import select_action, update_state


def _placeholders(point: Mapping[str, float], traced: Sequence[str]) -> dict:
    """Abstract scalars for the ``traced`` names (an array made here would compile a program of its own)."""
    return {n: jax.ShapeDtypeStruct((), float_dtype()) for n in point if n in traced}


def check_traceable(factories: Mapping[str, Callable], point: Mapping[str, float]) -> None:
    """Raise ``ValueError`` naming the grid axis (and the factory) that cannot be traced, i.e. that a factory
    reads in Python control flow. ``point`` is a concrete grid point."""
    names = list(point)
    for label, factory in factories.items():
        if _traces_all(factory, tuple(names), float_dtype()):
            continue
        bad = [n for n in names if not _traces(factory, point, [n])]
        axis = bad[0] if bad else ", ".join(names)
        raise ValueError(
            f"grid axis {axis!r} is invalid for {label}: the factory reads it in Python control "
            "flow (if/while/float() on its value), so it cannot be a traced sweep axis; use "
            "jnp.where / lax.cond in the factory, or sweep that value in a Python loop of "
            "jb.sweep calls"
        )


@functools.lru_cache(maxsize=512)
def _traces_all(factory: Callable, names: tuple[str, ...], dtype) -> bool:
    return _traces(factory, dict.fromkeys(names, 0.0), names)


def _traces(factory: Callable, point: Mapping[str, float], traced: Sequence[str]) -> bool:
    def build(values):
        return _leaves(factory({**point, **values}))

    try:
        jax.eval_shape(build, _placeholders(point, traced))
    except jax.errors.ConcretizationTypeError:
        return False
    except jax.errors.TracerBoolConversionError:
        return False
    except jax.errors.TracerIntegerConversionError:
        return False
    return True


def _leaves(obj):
    """The array leaves of ``obj`` (an Algorithm or Environment holds functions, which eval_shape cannot
    return): building it is what is traced."""
    return [x for x in jax.tree_util.tree_leaves(obj) if isinstance(x, jax.Array)]


def stream_axes(make_env: Callable, point: Mapping[str, float]) -> tuple[str, ...]:
    """The grid axes (names of ``point``) whose values can change the stream of ``make_env``: θ* from
    ``stream.init`` and a round of ``stream.draw``. ``point`` is a concrete grid point."""
    return _stream_axes(make_env, tuple(sorted(point)), float_dtype())


@functools.lru_cache(maxsize=512)
def _stream_axes(make_env: Callable, names: tuple[str, ...], dtype) -> tuple[str, ...]:
    if not names:
        return ()
    point = dict.fromkeys(names, 0.0)

    def stream_outputs(values, key, t):
        stream = make_env({**point, **values}).stream
        k_init, k_round = jax.random.split(key)
        theta = stream.init(k_init)
        return theta, stream.draw(k_round, theta, t)

    key = jax.eval_shape(jax.random.key, 0)
    closed = jax.make_jaxpr(stream_outputs)(_placeholders(point, names), key, np.int32(0))
    jaxpr = closed.jaxpr
    by_var = {id(v): n for v, n in zip(jaxpr.invars[: len(names)], names)}  # dict leaves: sorted keys
    reached = _reaching(jaxpr, {id(v): {n} for v, n in zip(jaxpr.invars, names) if id(v) in by_var})
    return tuple(sorted(set().union(*(reached.get(id(v), set()) for v in jaxpr.outvars))))


def algorithm_axes(
    make_alg: Callable, point: Mapping[str, float], dim: int, num_arms: int
) -> tuple[str, ...]:
    """The grid axes (names of ``point``) whose values reach the algorithm of ``make_alg``: its initial
    state, an action of ``select`` or the state after an ``update``, for contexts `[num_arms, dim]`.
    Every name when the factory cannot be traced (:func:`check_traceable` says why)."""
    return _algorithm_axes(make_alg, tuple(sorted(point)), dim, num_arms, float_dtype())


@functools.lru_cache(maxsize=512)
def _algorithm_axes(make_alg: Callable, names: tuple[str, ...], dim: int, num_arms: int, dtype):
    if not names:
        return ()
    point = dict.fromkeys(names, 0.0)

    def outputs(values, contexts, reward, key):
        alg = make_alg({**point, **values})
        k_select, k_update = jax.random.split(key)
        state = alg.init()
        action = select_action(alg, state, contexts, k_select)
        nu = jax.numpy.ones((), dtype)
        return state, action, update_state(alg, state, contexts[0], reward, nu, k_update)

    contexts = jax.ShapeDtypeStruct((num_arms, dim), dtype)
    reward = jax.ShapeDtypeStruct((), dtype)
    key = jax.eval_shape(jax.random.key, 0)
    try:
        closed = jax.make_jaxpr(outputs)(_placeholders(point, names), contexts, reward, key)
    except (
        jax.errors.ConcretizationTypeError,
        jax.errors.TracerBoolConversionError,
        jax.errors.TracerIntegerConversionError,
    ):
        return names
    jaxpr = closed.jaxpr
    reached = _reaching(jaxpr, {id(v): {n} for v, n in zip(jaxpr.invars[: len(names)], names)})
    return tuple(sorted(set().union(*(reached.get(id(v), set()) for v in jaxpr.outvars))))


def _reaching(jaxpr, tainted: dict) -> dict:
    """For every variable of ``jaxpr``, the set of grid axes whose value may reach it (conservatively:
    an equation's outputs are reached by everything that reaches any of its inputs)."""
    for eqn in jaxpr.eqns:
        into = set()
        for v in eqn.invars:
            into |= tainted.get(id(v), set())
        if into:
            for v in eqn.outvars:
                tainted[id(v)] = into
    return tainted
