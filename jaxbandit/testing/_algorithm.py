"""``check_algorithm``: the contract of ``jaxbandit.core.types.Algorithm``, property by property."""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from ..core import validation as V
from ..core.dtypes import float_dtype
from ..core.linalg import dot
from ..core.types import POLICIES, Algorithm, select_action, update_state
from ._common import (
    _BATCH_HINT,
    BATCH,
    BIG_NU,
    DEFAULT_HORIZON,
    EAGER_KEYS,
    EAGER_ROUNDS,
    EAGER_SELECT_ROUNDS,
    LANE,
    MIN_HORIZON,
    NU,
    OTHER_NU,
    SEED,
    _agent_key,
    _at,
    _check_leaves,
    _check_name,
    _compiled,
    _extreme_problem,
    _first_difference,
    _first_line,
    _first_nonfinite,
    _host,
    _is_float,
    _num,
    _one_round,
    _problem,
    _program,
    _program_difference,
    _Report,
    _round_keys,
    _rtol,
    _run,
    _select_keys,
    _step,
)

Array = jax.Array


class _Case:
    """One algorithm under test: its factory and example params, the synthetic problem and the compiled
    reference run (Python-valued params, computed once and shared by the properties)."""

    def __init__(self, factory, params, alg: Algorithm, dim: int, num_arms: int, horizon: int):
        self.factory, self.params, self.alg = factory, params, alg
        self.dim, self.num_arms, self.horizon = dim, num_arms, horizon
        self.data = _problem(SEED, horizon, num_arms, dim)
        # a deterministic algorithm is never passed a key: its runs under other keys are the same run
        self.keys = [_agent_key(SEED + i) for i in range(EAGER_KEYS if alg.randomized else 1)]
        self.key = self.keys[0]
        self.run = _compiled(functools.partial(_run, alg))
        self._reference: Any = None
        self.device_reference: Any = None
        self._eager_first: Any = None
        self.traced: Any = None  # (traced-params run, its output): _check_traceable_hyperparameters

    @property
    def reference(self):
        """(actions, states) of the reference run, as NumPy (``device_reference``: as returned)."""
        if self._reference is None:
            self.device_reference = self.run(self.data, self.key)
            self._reference = _host(self.device_reference)
        return self._reference

    def round_one(self):
        """The initial state and round 1's arguments: (state, contexts, select key, update key)."""
        k_select, k_update = _round_keys(self.key, 0)
        return self.alg.init(), self.data.contexts[0], k_select, k_update

    def feedback(self, contexts, action, t: int):
        """(x, r_t, ν_t) of round ``t`` for the arm ``action`` chosen: r_t = ⟨x, θ*⟩ + η_t."""
        x = contexts[action]
        return x, dot(x, self.data.theta) + self.data.eta[t], self.data.nu[t]

    @property
    def eager_first(self):
        """(action, state after it) of round 1, select and update called eagerly."""
        if self._eager_first is None:
            state, contexts, k_select, k_update = self.round_one()
            action = select_action(self.alg, state, contexts, k_select)
            x, reward, nu = self.feedback(contexts, action, 0)
            state = update_state(self.alg, state, x, reward, nu, k_update)
            self._eager_first = (action, state)
        return self._eager_first


def _other_params(params: dict) -> dict:
    """Different example values: 3/4 of each (1/4 for a zero)."""
    return {k: 0.75 * v if v != 0 else 0.25 for k, v in params.items()}


def _as_traced_args(params: dict) -> dict:
    return {k: jnp.asarray(v, float_dtype()) for k, v in params.items()}


# --------------------------------------------------------------------------------------------------------
# check_algorithm


def check_algorithm(
    factory: Callable[[dict], Algorithm],
    params: Mapping[str, float],
    *,
    dim: int,
    num_arms: int,
    horizon: int | None = None,
    name: str | None = None,
) -> None:
    """Check that ``factory(params)`` is a conforming :class:`jaxbandit.Algorithm`.

    Args:
      factory: ``params -> Algorithm``, as ``jb.sweep`` takes it (it gets traced float scalars there).
      params: example hyperparameters ``{name: float}`` (may be empty).
      dim: the dimension d to test with (the factory must build for this ``dim``).
      num_arms: the number of arms K to test with.
      horizon: rounds per synthetic run (≥ ``MIN_HORIZON``; the factory's own horizon must be at least
        this). Default: ``DEFAULT_HORIZON`` = 128, or the algorithm's declared ``horizon`` where that is
        shorter (at least ``MIN_HORIZON``). A bug that shows only after round 128 needs it set longer.
      name: the algorithm's name in messages (default: the factory's ``__qualname__``).

    The properties, checked in this order (each a private ``_check_<id>``): ``algorithm_type``,
    ``state_dtypes_shapes``, ``action_dtype``, ``pure``, ``tie_lowest_index``, ``jit_equals_eager``,
    ``randomized_uses_key``, ``finite_under_extreme_rewards``, ``traceable_hyperparameters``,
    ``vmap_bitwise``, ``uses_revealed_nu``. Returns None; raises ``AssertionError`` naming the first
    that fails, and ``ValueError`` for bad arguments (also when the factory itself refuses ``params``).
    """
    if not callable(factory):
        raise ValueError(f"factory={factory!r} is invalid: it must be a function params -> jb.Algorithm")
    params = _check_params(params)
    dim = V.check_int("dim", dim)
    num_arms = V.check_int("num_arms", num_arms)
    if horizon is not None:
        horizon = V.check_int("horizon", horizon, low=MIN_HORIZON)
    label = _check_name(name, getattr(factory, "__qualname__", type(factory).__name__))
    rep = _Report("check_algorithm", label)

    try:
        alg = factory(dict(params))
    except ValueError:
        raise  # the example params are invalid for the factory: a bad argument, as the factory says
    except Exception as err:  # the factory's own failure is the algorithm's
        rep.fail(
            "algorithm_type", f"factory(params) raised {type(err).__name__}: {_first_line(err)}", cause=err
        )
    _check_algorithm_type(rep, alg)
    rep.functions = {"init": alg.init, "select": alg.select, "update": alg.update}
    if horizon is None:
        declared = alg.horizon if isinstance(alg.horizon, int) and alg.horizon > 0 else DEFAULT_HORIZON
        horizon = max(MIN_HORIZON, min(DEFAULT_HORIZON, declared))
    case = _Case(factory, params, alg, dim, num_arms, horizon)
    for check in (
        _check_state_dtypes_shapes,
        _check_action_dtype,
        _check_pure,
        _check_tie_lowest_index,
        _check_jit_equals_eager,
        _check_randomized_uses_key,
        _check_finite_under_extreme_rewards,
        _check_traceable_hyperparameters,
        _check_vmap_bitwise,
        _check_uses_revealed_nu,
    ):
        check(rep, case)


def _check_params(params) -> dict:
    if not isinstance(params, Mapping):
        raise ValueError(f"params={params!r} is invalid: it must be a dict name -> float (may be empty)")
    out = {}
    for key, value in params.items():
        if not isinstance(key, str):
            raise ValueError(f"params key {key!r} is invalid: it must be a str")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or math.isnan(value):
            raise ValueError(
                f"params[{key!r}]={value!r} is invalid: it must be a real number (a Python float, not NaN)"
            )
        out[key] = float(value)
    return out


def _check_algorithm_type(rep: _Report, alg) -> None:
    """``algorithm_type``: the factory returns a ``jb.Algorithm`` with callable ``init``/``select``/``update``
    and bool flags."""
    prop = "algorithm_type"
    if not isinstance(alg, Algorithm):
        rep.fail(prop, f"factory(params) returned a {type(alg).__name__}, not a jb.Algorithm")
    for field in ("init", "select", "update"):
        if not callable(getattr(alg, field)):
            rep.fail(prop, f"Algorithm.{field} is a {type(getattr(alg, field)).__name__}, not a function")
    for field in ("uses_revealed_nu", "randomized"):
        if not isinstance(getattr(alg, field), (bool, np.bool_)):
            rep.fail(prop, f"Algorithm.{field}={getattr(alg, field)!r} is not a bool")
    if alg.policy not in POLICIES:
        rep.fail(prop, f"Algorithm.policy={alg.policy!r} is not one of {POLICIES}")


def _check_state_dtypes_shapes(rep: _Report, case: _Case) -> None:
    """``state_dtypes_shapes``: every leaf of ``init()`` is a JAX array, floating leaves have the default
    float dtype, and ``update`` (of arm 0's context, evaluated abstractly as ``jax.jit`` would compile it,
    by ``jax.eval_shape``) returns the same tree structure, shapes and dtypes
    (``chex.assert_trees_all_equal_structs`` / ``..._shapes_and_dtypes``). Checked on round 1: the
    ``lax.scan`` of every later check refuses a state whose type changes in any round."""
    prop, alg, data = "state_dtypes_shapes", case.alg, case.data
    with rep.guard(prop):
        state = alg.init()
        _check_leaves(rep, prop, state, "init()")
        _, k_update = _round_keys(case.key, 0)
        x = data.contexts[0, 0]
        new = jax.eval_shape(
            lambda s, x, r, nu, k: update_state(alg, s, x, r, nu, k),
            state,
            x,
            dot(x, data.theta) + data.eta[0],
            data.nu[0],
            k_update,
        )
        try:
            chex.assert_trees_all_equal_structs(state, new)
            chex.assert_trees_all_equal_shapes_and_dtypes(state, new)
        except AssertionError as err:
            rep.fail(
                prop,
                f"update changed the state's structure, shapes or dtypes: {_first_line(err)}",
                t=0,
                cause=err,
            )


def _check_action_dtype(rep: _Report, case: _Case) -> None:
    """``action_dtype``: ``select`` returns an int32 scalar (evaluated abstractly as ``jax.jit`` would
    compile it, by ``jax.eval_shape``), and in every round of the reference run an arm in [0, K)."""
    prop, alg, data = "action_dtype", case.alg, case.data
    with rep.guard(prop):
        k_select, _ = _round_keys(case.key, 0)
        action = jax.eval_shape(
            lambda s, X, k: select_action(alg, s, X, k), alg.init(), data.contexts[0], k_select
        )
        if not isinstance(action, jax.ShapeDtypeStruct):
            rep.fail(prop, f"select returned a {type(action).__name__}: it must be an int32 scalar", t=0)
        if action.dtype != jnp.int32 or action.shape != ():
            got = f"dtype {action.dtype} and shape {action.shape}"
            rep.fail(prop, f"select returned {got}: it must be an int32 scalar", t=0)
        actions, _ = case.reference
        _check_actions_in_range(rep, prop, actions, case.num_arms, "")


def _check_actions_in_range(rep: _Report, prop: str, actions: np.ndarray, num_arms: int, where: str):
    bad = np.flatnonzero((actions < 0) | (actions >= num_arms))
    if bad.size:
        t = int(bad[0])
        rep.fail(prop, f"select returned arm {int(actions[t])}{where}, outside [0, {num_arms})", t=t)


def _check_pure(rep: _Report, case: _Case) -> None:
    """``pure``: ``select`` and ``update`` are functions of their arguments alone. Traced twice afresh
    (``jax.make_jaxpr`` of a new function each time) with round 1's arguments, each gives the same
    program, constants included: Python state read while tracing (a global counter, ``np.random``, the
    clock) would make ``jb.simulate`` and ``jb.sweep`` run different programs from the same seed. Called
    twice eagerly with the same arguments (round 1 from the initial state), each gives bitwise the same
    output: a callback to Python state would differ between runs of one program."""
    prop, alg = "pure", case.alg
    hint = (
        "it must not read Python state that changes between calls (a global counter, np.random, "
        "the clock): compute from its arguments{} alone"
    ).format(" and key" if alg.randomized else "")
    with rep.guard(prop):
        state, contexts, k_select, k_update = case.round_one()
        x, reward, nu = case.feedback(contexts, 0, 0)
        calls = (
            ("select", lambda s, X, k: select_action(alg, s, X, k), (state, contexts, k_select)),
            ("update", lambda s, *a: update_state(alg, s, *a), (state, x, reward, nu, k_update)),
        )
        for what, fn, args in calls:
            diff = _program_difference(_program(fn, *args), _program(fn, *args))
            if diff is not None:
                rep.fail(
                    prop,
                    f"{what} traced twice with the same arguments gave different programs ({diff}): {hint}",
                )
        first, after = case.eager_first
        again = select_action(alg, state, contexts, k_select)
        if int(again) != int(first):
            rep.fail(
                prop,
                f"select called twice eagerly with the same arguments chose arm {int(first)}, then arm "
                f"{int(again)}: {hint}",
                t=0,
            )
        x, reward, nu = case.feedback(contexts, first, 0)
        repeat = update_state(alg, state, x, reward, nu, k_update)
        diff = _first_difference(_one_round(_host(after)), _one_round(_host(repeat)))
        if diff is not None:
            _, path, a, b = diff
            rep.fail(
                prop,
                f"update called twice eagerly with the same arguments gave state leaf {path} = {_num(a)}, "
                f"then {_num(b)}: {hint}",
                t=0,
            )


def _check_tie_lowest_index(rep: _Report, case: _Case) -> None:
    """``tie_lowest_index``: from the state before every round t of the reference run (the initial state
    for t = 1), with the same select key, (a) with all K contexts equal to the chosen arm's, select picks
    arm 0; (b) with the chosen arm a's context copied to arm i = 0 (or to arm K − 1 when a = 0), the two tie
    and select picks min(a, i). (b) is inapplicable for K = 1, where (a) alone is checked.

    The rule is about choices made by scores. An ``"argmax"`` policy (``Algorithm.policy``) is checked
    in every round. A ``"mixed"`` one only in the rounds whose choice follows the contexts: with the
    arms' contexts shifted by one arm (arm i + 1 gets arm i's), select picks another arm than it did; a
    round whose choice stays (ε-greedy's random arm, a round-robin warm start) is exempt."""
    prop, alg, data, K = "tie_lowest_index", case.alg, case.data, case.num_arms
    with rep.guard(prop):
        actions, _ = case.reference
        before = jax.tree_util.tree_map(
            lambda i, s: jnp.concatenate([i[None], s[:-1]]), alg.init(), case.device_reference[1]
        )
        rounds = np.arange(case.horizon)
        select_keys = _select_keys(case.key, case.horizon)
        select = _compiled(jax.vmap(lambda s, X, k: select_action(alg, s, X, k)))
        contexts = np.asarray(data.contexts)
        checked = np.ones(case.horizon, bool)
        if alg.policy == "mixed" and K > 1:
            shifted = np.asarray(select(before, jnp.asarray(np.roll(contexts, 1, axis=1)), select_keys))
            checked = shifted != actions
        hint = (
            ""
            if alg.policy == "mixed"
            else "; if select does not choose by an argmax of per-arm scores in every round (ε-greedy's "
            "random arm, a round-robin warm start), declare jb.Algorithm(..., policy='mixed')"
        )
        chosen = contexts[rounds, actions]
        equal = np.broadcast_to(chosen[:, None, :], contexts.shape)
        got = np.asarray(select(before, jnp.asarray(equal), select_keys))
        bad = np.flatnonzero((got != 0) & checked)
        if bad.size:
            t = int(bad[0])
            rep.fail(
                prop, f"with all {K} contexts equal, select chose arm {int(got[t])}, not arm 0{hint}", t=t
            )
        if K == 1:
            return
        target = np.where(actions > 0, 0, K - 1)
        copied = contexts.copy()
        copied[rounds, target] = chosen
        got = np.asarray(select(before, jnp.asarray(copied), select_keys))
        expected = np.minimum(actions, target)
        bad = np.flatnonzero((got != expected) & checked)
        if bad.size:
            t = int(bad[0])
            rep.fail(
                prop,
                f"select chose arm {int(actions[t])}; with its context copied to arm "
                f"{int(target[t])} the two tie, and select chose arm {int(got[t])}, not the "
                f"lowest index {int(expected[t])}{hint}",
                t=t,
            )


def _check_jit_equals_eager(rep: _Report, case: _Case) -> None:
    """``jit_equals_eager``: code that runs differently traced and untraced (a branch on
    ``isinstance(x, jax.core.Tracer)``, a perturbation drawn differently under ``jax.jit``) is caught
    where it shows.

    (a) In the first ``EAGER_SELECT_ROUNDS`` rounds of ``EAGER_KEYS`` jitted runs (agent keys from seeds
    ``SEED``, ``SEED + 1``, …), ``select`` called eagerly (a Python call, its JAX operations dispatched
    one by one) from the jitted run's state before that round, with the round's key, chooses the jitted
    run's arm. One run for an algorithm that is not ``randomized``: its ``select`` and ``update`` are
    never passed a key, so its runs under other keys are the same run.
    (b) The first ``EAGER_ROUNDS`` rounds run eagerly, select and update chained, choose the jitted
    run's arms, and their states equal its states within a tolerance per leaf and round of 1e-4
    (float32) or 1e-10 (float64) times max(1, the leaf's largest |entry|): eager and jitted XLA may
    round differently in the last bits (fused multiply–adds, x/√y as x·rsqrt y)."""
    prop, alg, data = "jit_equals_eager", case.alg, case.data
    with rep.guard(prop):
        contexts = np.asarray(data.contexts)
        initial = alg.init()
        for i, key in enumerate(case.keys):
            device = case.device_reference if i == 0 else case.run(data, key)
            actions = np.asarray(device[0])
            n = min(EAGER_SELECT_ROUNDS, case.horizon)
            befores = [initial] + _unstack(device[1], n - 1)
            select_keys = _select_keys(key, n)
            for t, before in enumerate(befores):
                eager = int(select_action(alg, before, jnp.asarray(contexts[t]), select_keys[t]))
                if eager != actions[t]:
                    rep.fail(
                        prop,
                        f"in run {i + 1} of {len(case.keys)} (agent key {i + 1}), select chose arm {eager} "
                        f"eagerly but arm {int(actions[t])} under jax.jit, from the same state and key: it "
                        "must compute the same traced and untraced (no branch on isinstance(x, "
                        "jax.core.Tracer); no host callback, jax.pure_callback or io_callback, reading "
                        "Python state)",
                        t=t,
                    )
        n = min(EAGER_ROUNDS, case.horizon)
        action, state = case.eager_first
        eager_actions, states = [int(action)], [_host(state)]
        for t in range(1, n):
            action, state = _step(
                alg, state, data.contexts[t], data.theta, data.eta[t], data.nu[t], case.key, jnp.int32(t)
            )
            eager_actions.append(int(action))
            states.append(_host(state))
        ref_actions, ref_states = case.reference
        bad = np.flatnonzero(np.asarray(eager_actions) != ref_actions[:n])
        if bad.size:
            t = int(bad[0])
            rep.fail(
                prop,
                f"run eagerly, select chose arm {eager_actions[t]}, under jax.jit arm {int(ref_actions[t])}",
                t=t,
            )
        eager = jax.tree_util.tree_map(lambda *xs: np.stack(xs), *states)
        jitted = jax.tree_util.tree_map(lambda x: x[:n], ref_states)
        try:
            chex.assert_trees_all_close(*_scaled(eager, jitted), rtol=0.0, atol=_rtol())
        except AssertionError as err:
            diff = _first_difference(eager, jitted, rtol=_rtol())
            if diff is None:
                rep.fail(prop, f"the states differ eagerly and under jax.jit: {_first_line(err)}", cause=err)
            t, path, x, y = diff
            rep.fail(
                prop,
                f"state leaf {path} is {_num(x)} eagerly but {_num(y)} under jax.jit (tolerance "
                f"{_rtol():g}·max(1, |leaf|))",
                t=t,
                cause=err,
            )


def _check_randomized_uses_key(rep: _Report, case: _Case) -> None:
    """``randomized_uses_key``: a ``randomized`` algorithm's runs under the ``EAGER_KEYS`` agent keys
    differ (in some action or state): one that draws from a fixed key (``jax.random.key(0)``) instead of
    the key it is passed makes every seed of a sweep the same run. Not applicable to a deterministic
    algorithm, which is never passed a key."""
    prop = "randomized_uses_key"
    if not case.alg.randomized:
        return
    with rep.guard(prop):
        runs = [case.reference] + [_host(case.run(case.data, key)) for key in case.keys[1:]]
        if all(_first_difference(runs[0], other) is None for other in runs[1:]):
            rep.fail(
                prop,
                f"randomized=True, but its runs under {len(runs)} different agent keys are the same "
                f"({case.horizon} rounds, actions and states): select and update must draw from the key "
                "they are passed (their last argument), not a fixed one such as jax.random.key(0)",
            )


def _unstack(tree, n: int) -> list:
    """The first ``n`` per-round trees of ``tree``'s leading axis, with JAX array leaves (PRNG keys stay
    keys)."""

    def rows(x):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            return [x[t] for t in range(n)]
        return [jnp.asarray(row) for row in np.asarray(x[:n])]

    leaves, treedef = jax.tree_util.tree_flatten(tree)
    columns = [rows(x) for x in leaves]
    return [jax.tree_util.tree_unflatten(treedef, [c[t] for c in columns]) for t in range(n)]


def _scaled(a, b):
    """Float leaves of ``a`` and ``b`` divided by max(1, the largest |b| of their leaf and round), so that
    one ``atol`` is a tolerance relative to the leaf above 1 and absolute below: a leaf that is only
    rounding noise around 0 (a solver's residual gradient) has no relative precision to compare."""

    def scale(y):
        m = np.max(np.abs(y.reshape(y.shape[0], -1)), axis=1)
        return np.maximum(m, 1.0).reshape((-1,) + (1,) * (y.ndim - 1))

    def div(x, y):
        return x / scale(y) if _is_float(y) else x

    return jax.tree_util.tree_map(div, a, b), jax.tree_util.tree_map(div, b, b)


def _check_finite_under_extreme_rewards(rep: _Report, case: _Case) -> None:
    """``finite_under_extreme_rewards``: every floating state leaf is finite after every round of the
    reference run and of a run whose rewards are +inf, −inf, ±1e30 and spikes at ±(float max) in
    alternate rounds, with contexts exactly at the norm bound (``chex.assert_tree_all_finite``); the
    actions stay in [0, K). NaN rewards are outside the contract and not tried."""
    prop = "finite_under_extreme_rewards"
    with rep.guard(prop):
        extreme = _extreme_problem(case.horizon, case.num_arms, case.dim)
        runs = (("the synthetic stream", case.data, case.reference), ("the extreme stream", extreme, None))
        for what, data, out in runs:
            actions, states = out if out is not None else _host(case.run(data, case.key))
            _check_actions_in_range(rep, prop, actions, case.num_arms, f" on {what}")
            try:
                chex.assert_tree_all_finite(states)
            except AssertionError as err:
                t, path = _first_nonfinite(states)
                eta = float(np.asarray(data.eta)[t])
                x = np.asarray(data.contexts)[t, int(actions[t])]
                zeros = int(np.sum(x == 0))
                if not np.isfinite(eta) and _finite_with_a_finite_reward(case, states, data, actions, t):
                    eta = 0.0  # the same update with a finite reward stays finite: the reward's fault
                    cause_hint = (
                        "the reward was infinite (the same update with reward 0 stays finite): clamp it "
                        "before using it (jb.linalg.clamp_reward), as every library algorithm does"
                    )
                elif np.isfinite(eta) or zeros:
                    cause_hint = (
                        f"{'the reward was finite' if np.isfinite(eta) else _NOT_THE_REWARD}, "
                        f"and the chosen context has {zeros} of its {x.size} coordinates 0: look for a "
                        "division by a context coordinate, a norm or a variance that can be 0"
                        if zeros
                        else "the reward and the chosen context were finite: look for a division by a "
                        "quantity that can be 0, or a log/sqrt of one that can be negative"
                    )
                else:
                    cause_hint = (
                        "the reward was infinite: clamp it before using it (jb.linalg.clamp_reward), as "
                        "every library algorithm does"
                    )
                eta = float(np.asarray(data.eta)[t])
                rep.fail(
                    prop,
                    f"on {what}, after a round with noise eta={_num(eta)} (reward mean + eta) and arm "
                    f"{int(actions[t])} chosen, state leaf {path} is not finite; {cause_hint}",
                    t=t,
                    cause=err,
                )


_NOT_THE_REWARD = "not the reward alone (the same update with reward 0 is not finite either)"


def _finite_with_a_finite_reward(case: _Case, states, data, actions, t: int) -> bool:
    """Whether round ``t``'s update, from the run's state before it and with its context, gives a finite
    state with reward 0 (False also when that cannot be tried: a state holding PRNG keys)."""
    try:
        before = (
            case.alg.init() if t == 0 else jax.tree_util.tree_map(lambda s: jnp.asarray(s[t - 1]), states)
        )
        x = jnp.asarray(np.asarray(data.contexts)[t, int(actions[t])])
        _, k_update = _round_keys(case.key, t)
        reward = jnp.zeros((), float_dtype())
        after = update_state(case.alg, before, x, reward, jnp.asarray(np.asarray(data.nu)[t]), k_update)
        return all(
            bool(np.all(np.isfinite(leaf)))
            for leaf in jax.tree_util.tree_leaves(_host(after))
            if np.issubdtype(np.asarray(leaf).dtype, np.floating)
        )
    except Exception:  # a state that cannot be rebuilt from its host copy: no diagnosis
        return False


def _check_traceable_hyperparameters(rep: _Report, case: _Case) -> None:
    """``traceable_hyperparameters``: the run jitted with the params as traced float scalars
    (``jax.jit(lambda p, ...: run(factory(p), ...))``) builds (a factory doing Python control flow on a
    param raises a tracer error: the params that cannot be traced are named), choose the reference run's
    actions, and is not traced again for new values (3/4 of each; with no params, called again as it
    is). Traces are counted by the traced function itself, not ``chex.assert_max_traces``, whose counter
    is global per call site and would count every earlier check too."""
    prop, factory, params = "traceable_hyperparameters", case.factory, case.params
    traces = [0]

    def traced(p, data, key):
        traces[0] += 1
        return _run(factory(p), data, key)

    run = _compiled(traced)
    try:
        out = _host(run(_as_traced_args(params), case.data, case.key))
    except Exception as err:  # a tracer error, or anything a traced factory raises
        untraceable = [name for name in params if not _traces(case, name)]
        which = f"params {untraceable} cannot" if untraceable else "the params together cannot"
        rep.fail(
            prop,
            f"{which} be traced ({type(err).__name__}: {_first_line(err)}); use jnp operations "
            "on them, not Python control flow (jb.sweep passes traced scalars)",
            cause=err,
        )
    with rep.guard(prop):
        run(_as_traced_args(_other_params(params)), case.data, case.key)
        if traces[0] > 1:
            rep.fail(
                prop,
                f"the jitted run was traced {traces[0]} times for two sets of values of "
                f"{sorted(params)}: new values must not recompile",
            )
        ref_actions, _ = case.reference
        bad = np.flatnonzero(out[0] != ref_actions)
        if bad.size:
            t = int(bad[0])
            rep.fail(
                prop,
                f"with traced params select chose arm {int(out[0][t])}, with Python floats arm "
                f"{int(ref_actions[t])}",
                t=t,
            )
    case.traced = (traced, out)


def _traces(case: _Case, name: str) -> bool:
    """Whether the run traces with only ``params[name]`` traced."""

    def build(value):
        return _run(case.factory({**case.params, name: value}), case.data, case.key)

    try:
        jax.eval_shape(build, jnp.asarray(case.params[name], float_dtype()))
    except Exception:  # any failure to trace
        return False
    return True


def _check_vmap_bitwise(rep: _Report, case: _Case) -> None:
    """``vmap_bitwise``: the traced-params run alone (jitted) equals, bitwise, lane ``LANE`` of a jitted
    ``vmap`` batch of ``BATCH`` runs whose other lanes have other streams, keys and (every other lane)
    params (``chex.assert_trees_all_equal`` on actions and every state)."""
    prop = "vmap_bitwise"
    traced, alone = case.traced
    with rep.guard(prop):
        seeds = [SEED if i == LANE else SEED + 10 + i for i in range(BATCH)]
        datas = [_problem(s, case.horizon, case.num_arms, case.dim) for s in seeds]
        lanes = [case.params if i % 2 == 0 else _other_params(case.params) for i in range(BATCH)]
        data = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *datas)
        params = {k: jnp.asarray([p[k] for p in lanes], float_dtype()) for k in case.params}
        keys = jnp.stack([_agent_key(s) for s in seeds])
        batch = _host(_compiled(jax.vmap(traced))(params, data, keys))
        lane = _at(batch, LANE)
        try:
            chex.assert_trees_all_equal(alone, lane)
        except AssertionError as err:
            diff = _first_difference(alone, lane)
            if diff is None:
                rep.fail(prop, f"the run differs alone and in a vmap batch: {_first_line(err)}", cause=err)
            t, path, x, y = diff
            rep.fail(
                prop,
                f"{_leaf_name(path)} is {_num(x)} alone but {_num(y)} in lane {LANE} of a vmap "
                f"batch of {BATCH}: a run must not depend on its batch{_BATCH_HINT}",
                t=t,
                cause=err,
            )


def _check_uses_revealed_nu(rep: _Report, case: _Case) -> None:
    """``uses_revealed_nu``: False: the states after every round are bitwise the same with ν_t = NaN and
    ν_t = 3.7 (``update`` ignores ν). True: some round's state differs between ν_t = 1.3 and ν_t = 1000
    (``update`` reads ν_t; a ν that large dominates any max(ν_t, …) such as σ_t), and every state is
    finite with ν_t = 1000."""
    prop, alg, data = "uses_revealed_nu", case.alg, case.data

    def with_nu(value):
        return _host(case.run(data._replace(nu=jnp.full_like(data.nu, value)), case.key))

    with rep.guard(prop):
        if not alg.uses_revealed_nu:
            diff = _first_difference(with_nu(np.nan), with_nu(OTHER_NU))
            if diff is not None:
                t, path, x, y = diff
                rep.fail(
                    prop,
                    f"uses_revealed_nu=False, but update reads nu: {_leaf_name(path)} is "
                    f"{_num(x)} with nu=nan and {_num(y)} with nu={OTHER_NU}",
                    t=t,
                )
            return
        big = with_nu(BIG_NU)
        nonfinite = _first_nonfinite(big[1])
        if nonfinite is not None:
            t, path = nonfinite
            rep.fail(prop, f"with nu={BIG_NU:g} state leaf {path} is not finite", t=t)
        if _first_difference(case.reference, big) is None:
            rep.fail(
                prop,
                f"uses_revealed_nu=True, but no state of {case.horizon} rounds changes when nu "
                f"changes from {NU} to {BIG_NU:g}: update ignores nu",
            )


def _leaf_name(path: str) -> str:
    """A path of the (actions, states) pair as a description."""
    return "the action" if path == "[0]" else f"state leaf {path[3:] or '<state>'}"
