"""``check_environment``: the contract of a ``Stream`` and its ``Adversary``, property by property."""

from __future__ import annotations

import functools
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from ..core import validation as V
from ..core.dtypes import float_dtype
from ..core.types import AdversaryView, Algorithm, Environment, Round
from ..runner.simulate import init_carry
from ._common import (
    _BATCH_HINT,
    BATCH,
    DEFAULT_HORIZON,
    LANE,
    SEED,
    _at,
    _check_leaves,
    _check_name,
    _compiled,
    _first_difference,
    _first_line,
    _host,
    _num,
    _one_round,
    _program,
    _program_difference,
    _Report,
    _rtol,
)

Array = jax.Array

# --------------------------------------------------------------------------------------------------------
# check_environment


#: The learner ``init_carry`` is given in ``check_environment``'s runs; they choose arm t mod K themselves.
_NO_LEARNER = Algorithm(
    init=lambda: jnp.zeros((), jnp.int32),
    select=lambda state, contexts: jnp.zeros((), jnp.int32),
    update=lambda state, x, reward, nu: state,
)


def check_environment(
    env: Environment,
    *,
    horizon: int | None = None,
    name: str | None = None,
    S: float = 1.0,
    L: float = 1.0,
) -> None:
    """Check that ``env`` is a conforming :class:`jaxbandit.Environment`.

    Args:
      env: the environment (``jb.envs.linear``, ``jb.envs.replay`` or your own).
      horizon: rounds per run (≥ 2; default ``DEFAULT_HORIZON`` = 128, or the environment's horizon if
        shorter; at most ``env.horizon`` when that is set). An adversary or stream that changes only
        after round 128 needs it set longer.
      name: the environment's name in messages (default: its stream's factory and adversary's names).
      S: the bound the learners are told on ‖θ*‖ (``jb.registry.Problem``'s; the library's streams'
        default is 1).
      L: the bound the learners are told on every context's ‖x‖ (as ``S``).

    The properties, in this order: ``stream_shapes_dtypes``, ``stream_deterministic``,
    ``stream_uses_key``, ``adversary_dtypes``, ``adversary_pure``, ``jit_equals_eager``,
    ``stream_means``, ``stream_bounds``, ``reveals_nu``,
    ``adversary_run``, ``budget``, ``chunked_equals_unchunked``, ``vmap_bitwise``. Runs choose arm
    t mod K in round t and derive their keys as the runner does (``init_carry``, and ``rollout``'s round
    keys). Returns None; raises ``AssertionError`` naming the first failing property, ``ValueError`` for
    bad arguments.
    """
    V.check_instance("env", env, Environment, "a jb.Environment (e.g. jb.envs.linear(...))")
    if env.horizon is not None and env.horizon < 2:
        raise ValueError(f"env holds {env.horizon} round: check_environment needs at least 2")
    limit = env.horizon
    if horizon is None:
        horizon = DEFAULT_HORIZON if limit is None else min(DEFAULT_HORIZON, limit)
    horizon = V.check_int("horizon", horizon, low=2)
    if limit is not None and horizon > limit:
        raise ValueError(
            f"horizon={horizon} is invalid: the environment holds only {limit} rounds (valid "
            f"range [2, {limit}])"
        )
    S = V.check_positive("S", S, required=True, why="the bound on the norm of theta_star")
    L = V.check_positive("L", L, required=True, why="the bound on the norm of a context")
    draw_name = getattr(env.stream.draw, "__qualname__", "stream").split(".<locals>")[0]
    rep = _Report("check_environment", _check_name(name, f"{draw_name}+{env.adversary.name}"))
    case = _EnvCase(env, horizon, float(S), float(L))
    rep.functions = {
        "stream.init": env.stream.init,
        "stream.draw": env.stream.draw,
        "adversary.init": env.adversary.init,
        "adversary.corrupt": env.adversary.corrupt,
    }
    for check in (
        _check_stream_shapes_dtypes,
        _check_stream_deterministic,
        _check_stream_uses_key,
        _check_adversary_dtypes,
        _check_adversary_pure,
        _check_jit_equals_eager,
        _check_stream_means,
        _check_stream_bounds,
        _check_reveals_nu,
        _check_adversary_run,
        _check_budget,
        _check_chunked_equals_unchunked,
        _check_env_vmap_bitwise,
    ):
        check(rep, case)


class _EnvCase:
    """One environment under test and the compiled functions its checks share."""

    def __init__(self, env: Environment, horizon: int, S: float = 1.0, L: float = 1.0):
        self.env, self.horizon = env, horizon
        self.S, self.L = S, L  # the bounds the learners are told
        self.key = jax.random.key(SEED)
        self.init_key = jax.random.split(self.key)[0]  # the key init_carry gives stream.init
        self.init = _compiled(functools.partial(init_carry, _NO_LEARNER, env))
        self.rounds = _compiled(functools.partial(_env_rounds, env))
        self._carry = self._device_reference = self._reference = None

    @property
    def carry(self):
        """The reference run's initial carry (θ*, the adversary's state, the runner's keys)."""
        if self._carry is None:
            self._carry = self.init(self.key)
        return self._carry

    @property
    def reference(self):
        """(final carry, rounds, feedback) of the reference run, as NumPy."""
        if self._reference is None:
            self._reference = _host(self.device_reference)
        return self._reference

    @property
    def device_reference(self):
        """The reference run as returned (PRNG keys in the adversary's state stay keys)."""
        if self._device_reference is None:
            self._device_reference = self.run(self.carry, 0, self.horizon)
        return self._device_reference

    def run(self, carry, start: int, stop: int):
        """Rounds [start, stop) from ``carry``: (carry, rounds, feedback). Every run is one compiled
        program of ``horizon`` rounds: a shorter one is padded with inactive repeats of its last round,
        which leave the carry as it is (as ``jb.sweep`` pads its last chunk) and are dropped."""
        rounds, active = _padded(start, stop, self.horizon)
        carry, out = self.rounds(carry, rounds, active)
        return (carry,) + jax.tree_util.tree_map(lambda x: x[: stop - start], out)

    def round_args(self, t: int):
        """(key, θ*, t) of round ``t`` of the reference run, as the runner derives them."""
        return (jax.random.fold_in(self.carry.round_key, t), self.carry.env_state.theta_star, jnp.int32(t))

    def view(self, t: int) -> AdversaryView:
        """The adversary's view of round ``t`` of the reference run (the learner chose arm t mod K)."""
        rounds = self.reference[1]
        return AdversaryView(
            jnp.asarray(rounds.contexts[t]),
            self.carry.env_state.theta_star,
            jnp.asarray(rounds.means[t]),
            jnp.int32(t % self.env.num_arms),
            jnp.asarray(rounds.eta[t]),
            jnp.int32(t),
        )


def _padded(start: int, stop: int, length: int):
    """Round indices [start, stop) padded to ``length`` with repeats of ``stop − 1``, and which are real."""
    t = np.arange(start, start + length)
    return jnp.asarray(np.minimum(t, stop - 1), jnp.int32), jnp.asarray(t < stop)


def _env_rounds(env: Environment, carry, rounds: Array, active: Array):
    """The runner's rounds (``rollout``'s body and keys) with the policy "arm t mod K", recording each
    round's ``Round`` and ``Feedback``: (carry, (rounds, feedback)), each `[n]`; an inactive round leaves
    the carry as it is."""

    def body(c, inputs):
        t, real = inputs
        rnd = env.stream.draw(jax.random.fold_in(c.round_key, t), c.env_state.theta_star, t)
        env_state, fb = env.respond(c.env_state, rnd, t % env.num_arms, t)
        env_state = jax.tree_util.tree_map(lambda new, old: jnp.where(real, new, old), env_state, c.env_state)
        return c._replace(env_state=env_state), (rnd, fb)

    return jax.lax.scan(body, carry, (rounds, active))


def _eager(fn, *args):
    """``fn(*args)`` op by op."""
    with jax.disable_jit():
        return fn(*args)


def _check_stream_shapes_dtypes(rep: _Report, case: _EnvCase) -> None:
    """``stream_shapes_dtypes``: ``dim``/``num_arms`` are ints ≥ 1; ``init(key)`` is θ* `[d]` and
    ``draw(key, θ*, t)`` a ``Round`` of contexts `[K, d]`, means `[K]` and scalar eta and nu, every one a
    JAX array of the default float dtype (eagerly, and under ``jax.jit`` by ``jax.eval_shape``)."""
    prop, stream = "stream_shapes_dtypes", case.env.stream
    for field in ("dim", "num_arms"):
        value = getattr(stream, field)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            rep.fail(prop, f"Stream.{field}={value!r} is not an int >= 1")
    d, K = stream.dim, stream.num_arms
    with rep.guard(prop):
        _check_float_array(rep, prop, "init(key) (theta_star)", _eager(stream.init, case.init_key), (d,))
        args = case.round_args(0)
        for how, rnd in (
            ("eagerly", _eager(stream.draw, *args)),
            ("under jax.jit", jax.eval_shape(stream.draw, *args)),
        ):
            if not isinstance(rnd, Round):
                rep.fail(prop, f"draw returned a {type(rnd).__name__} {how}, not a jb.core.types.Round")
            for field, shape in (("contexts", (K, d)), ("means", (K,)), ("eta", ()), ("nu", ())):
                _check_float_array(rep, prop, f"draw(...).{field} {how}", getattr(rnd, field), shape)


def _check_float_array(rep: _Report, prop: str, what: str, x, shape) -> None:
    if not isinstance(x, (jax.Array, jax.ShapeDtypeStruct)):
        rep.fail(prop, f"{what} is a {type(x).__name__}, not a JAX array")
    if x.shape != shape or x.dtype != float_dtype():
        rep.fail(
            prop,
            f"{what} has shape {x.shape} and dtype {x.dtype}: expected {shape} and "
            f"{np.dtype(float_dtype()).name}",
        )


def _check_stream_deterministic(rep: _Report, case: _EnvCase) -> None:
    """``stream_deterministic``: ``init`` and ``draw`` called twice op by op with the same (key, θ*, t), in
    the first and last round, give bitwise the same θ* and ``Round`` (``chex.assert_trees_all_equal``): a
    stream is a function of its arguments alone."""
    prop, stream = "stream_deterministic", case.env.stream
    with rep.guard(prop):
        try:
            chex.assert_trees_all_equal(*(_eager(stream.init, case.init_key) for _ in range(2)))
        except AssertionError as err:
            rep.fail(prop, "init(key) called twice with the same key gave different theta_star", cause=err)
        for t in (0, case.horizon - 1):
            args = case.round_args(t)
            try:
                chex.assert_trees_all_equal(_eager(stream.draw, *args), _eager(stream.draw, *args))
            except AssertionError as err:
                rep.fail(
                    prop,
                    "draw(key, theta_star, t) called twice with the same arguments gave different "
                    "rounds: it must depend on (key, theta_star, t) alone",
                    t=t,
                    cause=err,
                )


def _check_adversary_pure(rep: _Report, case: _EnvCase) -> None:
    """``adversary_pure``: ``corrupt`` is a function of its arguments alone, as a stream's ``draw`` is.
    Traced twice afresh (``jax.make_jaxpr`` of a new function each time) with round 1's (state, view),
    it gives the same program, constants included; called twice eagerly with the same arguments, from
    the initial state in round 1 and from the reference run's final state in its last round, it gives
    bitwise the same (c_t, state). An adversary reading ``np.random`` or a Python counter would corrupt
    differently under ``jb.simulate`` and ``jb.sweep`` from the same seed."""
    prop, adversary = "adversary_pure", case.env.adversary
    hint = (
        "it must not read Python state that changes between calls (a global counter, np.random, the "
        "clock): compute c_t from its state and the view alone"
    )
    with rep.guard(prop):
        initial, view = adversary.init(), case.view(0)
        diff = _program_difference(*(_program(adversary.corrupt, initial, view) for _ in range(2)))
        if diff is not None:
            rep.fail(
                prop, f"corrupt traced twice with the same arguments gave different programs ({diff}): {hint}"
            )
        last = case.horizon - 1
        for r, state in ((0, initial), (last, case.device_reference[0].env_state.adversary)):
            outs = [_host(adversary.corrupt(state, case.view(r))) for _ in range(2)]
            diff = _first_difference(*(_one_round(o) for o in outs))
            if diff is not None:
                _, path, x, y = diff
                what = "c_t" if path.startswith("[0]") else f"the state{path[3:]}"
                rep.fail(
                    prop,
                    f"corrupt called twice eagerly with the same arguments gave {what} = {_num(x)}, then "
                    f"{_num(y)}: {hint}",
                    t=r,
                )


def _check_jit_equals_eager(rep: _Report, case: _EnvCase) -> None:
    """``jit_equals_eager``: θ* and the first and last rounds of the reference run (``init`` and ``draw``
    under ``jax.jit``) equal ``init`` and ``draw`` called op by op, and the adversary's c_t in every round
    of it equals ``corrupt`` called eagerly round by round (a Python call, its JAX operations dispatched
    one by one, its state carried), within the tolerance of ``check_algorithm``'s property of that name:
    an adversary that branches on ``isinstance(x, jax.core.Tracer)`` or keeps Python state shows here."""
    prop, stream, adversary = "jit_equals_eager", case.env.stream, case.env.adversary
    with rep.guard(prop):
        carry, rounds, fb = case.reference
        pairs: list[tuple[str, str, int | None, Any, Any]] = [
            ("init(key)", "op by op", None, _eager(stream.init, case.init_key), carry.env_state.theta_star)
        ]
        for i in (0, case.horizon - 1):
            eager = _eager(stream.draw, *case.round_args(i))
            pairs.append(("draw(key, theta_star, t)", "op by op", i, eager, _at(rounds, i)))
        state = adversary.init()
        for r in range(case.horizon):
            c, state = adversary.corrupt(state, case.view(r))
            pairs.append(("corrupt(state, view)'s c_t", "called eagerly", r, c, fb.corruption[r]))
        for what, how, t, eager, jitted in pairs:
            diff = _first_difference(_one_round(eager), _one_round(jitted), rtol=_rtol())
            if diff is not None:
                _, path, x, y = diff
                rep.fail(
                    prop,
                    f"{what}{'' if path == '<state>' else path} is {_num(x)} {how} but {_num(y)} under "
                    f"jax.jit (tolerance {_rtol():g}·max(1, |value|))",
                    t=t,
                )


def _check_stream_means(rep: _Report, case: _EnvCase) -> None:
    """``stream_means``: in every round of the reference run, means = contexts·θ* (in float64, to the
    relative tolerance of Σ|x_i θ_i|)."""
    prop = "stream_means"
    with rep.guard(prop):
        _, rounds, _ = case.reference
        theta = np.asarray(case.carry.env_state.theta_star, np.float64)
        X = rounds.contexts.astype(np.float64)
        expected = X @ theta
        err = np.abs(rounds.means - expected) > _rtol() * (np.abs(X) @ np.abs(theta))
        bad = np.flatnonzero(err.any(axis=1))
        if bad.size:
            t = int(bad[0])
            k = int(np.argmax(err[t]))
            rep.fail(
                prop,
                f"means[{k}] = {_num(rounds.means[t, k])}, but contexts[{k}]·theta_star = "
                f"{_num(expected[t, k])}",
                t=t,
            )


def _check_stream_bounds(rep: _Report, case: _EnvCase) -> None:
    """``stream_bounds``: ‖θ*‖ ≤ S and, in every round of the reference run, every context's ‖x‖ ≤ L
    (to the float tolerance): the bounds the learners are told, which their confidence radii and
    clipping thresholds assume."""
    prop = "stream_bounds"
    with rep.guard(prop):
        _, rounds, _ = case.reference
        theta = np.linalg.norm(np.asarray(case.carry.env_state.theta_star, np.float64))
        if theta > case.S * (1 + _rtol()):
            rep.fail(
                prop,
                f"||theta_star|| = {theta:.6g} exceeds S = {case.S:g}: draw theta_star within S, or pass the "
                "S the learners are told to check_environment (S=)",
            )
        norms = np.linalg.norm(rounds.contexts.astype(np.float64), axis=-1)
        bad = np.flatnonzero((norms > case.L * (1 + _rtol())).any(axis=1))
        if bad.size:
            t = int(bad[0])
            k = int(np.argmax(norms[t]))
            rep.fail(
                prop,
                f"||contexts[{k}]|| = {norms[t, k]:.6g} exceeds L = {case.L:g}: draw contexts within L (e.g. "
                "normalise them), or pass the L the learners are told to check_environment (L=)",
                t=t,
            )


def _check_stream_uses_key(rep: _Report, case: _EnvCase) -> None:
    """``stream_uses_key``: a stream without a ``horizon`` (one that draws its rounds, not a replay of
    stored ones) gives another θ* or other rounds (contexts or η) under another key, in the first
    ``min(horizon, 8)`` rounds: otherwise every seed of a sweep runs the same problem, and its standard
    errors are zero. A replay (``horizon`` set) ignores its keys by design and is exempt."""
    prop, stream = "stream_uses_key", case.env.stream
    if stream.horizon is not None:
        return
    with rep.guard(prop):
        n = min(case.horizon, 8)
        runs = []
        for seed in (SEED, SEED + 1):
            carry = case.init(jax.random.key(seed))
            _, rounds, _ = case.run(carry, 0, n)
            runs.append(_host((carry.env_state.theta_star, rounds.contexts, rounds.eta)))
        if _first_difference(*runs) is None:
            rep.fail(
                prop,
                f"theta_star and the first {n} rounds' contexts and eta are the same under two keys: "
                "init and draw must draw from their keys (split the key by role: "
                "k_ctx, k_noise = jax.random.split(key)), or the stream must declare the horizon of the "
                "rounds it replays",
            )


def _check_reveals_nu(rep: _Report, case: _EnvCase) -> None:
    """``reveals_nu``: with ``reveals_nu`` every round's ν_t is finite and > 0, without it every ν_t is
    NaN."""
    prop, reveals = "reveals_nu", case.env.reveals_nu
    with rep.guard(prop):
        nu = case.reference[1].nu
        bad = np.flatnonzero(~(np.isfinite(nu) & (nu > 0)) if reveals else ~np.isnan(nu))
        if bad.size:
            t = int(bad[0])
            want = "a finite nu_t > 0" if reveals else "nu_t = nan (no nu revealed)"
            rep.fail(
                prop, f"reveals_nu={reveals}, so every round must have {want}, but nu_t = {_num(nu[t])}", t=t
            )


def _check_adversary_dtypes(rep: _Report, case: _EnvCase) -> None:
    """``adversary_dtypes``: every leaf of ``adversary.init()`` is a JAX array, floating ones of the default
    float dtype; ``corrupt`` (by ``jax.eval_shape``, as ``jax.jit`` compiles it) returns c_t, a scalar of
    that dtype, and a state of the same structure, shapes and dtypes; ``budget()``, if declared, is a
    scalar ≥ 0 (inf allowed)."""
    prop, adversary = "adversary_dtypes", case.env.adversary
    with rep.guard(prop):
        state = adversary.init()
        _check_leaves(rep, prop, state, "adversary.init()")
        key, theta, t = case.round_args(0)
        rnd = _eager(case.env.stream.draw, key, theta, t)
        view = AdversaryView(rnd.contexts, theta, rnd.means, jnp.int32(0), rnd.eta, t)
        c, new = jax.eval_shape(adversary.corrupt, state, view)
        _check_float_array(rep, prop, "corrupt(...)'s c_t", c, ())
        try:
            chex.assert_trees_all_equal_structs(state, new)
            chex.assert_trees_all_equal_shapes_and_dtypes(state, new)
        except AssertionError as err:
            rep.fail(
                prop,
                f"corrupt changed the adversary state's structure, shapes or dtypes: {_first_line(err)}",
                t=0,
                cause=err,
            )
        if adversary.budget is not None:
            budget = np.asarray(adversary.budget())
            if budget.shape != () or not budget >= 0:
                rep.fail(prop, f"budget() returned {budget!r}: it must be a scalar >= 0 (inf allowed)")


def _check_adversary_run(rep: _Report, case: _EnvCase) -> None:
    """``adversary_run``: in every round of the reference run, the regret is finite and ≥ 0 (to the
    float tolerance) and equals
    max(means) − means[a], c_t is finite, and reward = means[a] + eta + c_t (float64, relative tolerance;
    exactly where it is infinite)."""
    prop = "adversary_run"
    with rep.guard(prop):
        _, rounds, fb = case.reference
        t_all = np.arange(case.horizon)
        chosen = rounds.means[t_all, t_all % case.env.num_arms].astype(np.float64)
        eta, c = rounds.eta.astype(np.float64), fb.corruption.astype(np.float64)
        regret = rounds.means.max(axis=1).astype(np.float64) - chosen
        with np.errstate(invalid="ignore", over="ignore"):
            expected = chosen + eta + c
            reward_ok = (fb.reward == expected) | (
                np.abs(fb.reward - expected) <= _rtol() * (np.abs(chosen) + np.abs(eta) + np.abs(c))
            )
        # >= 0 to the float tolerance: XLA may compute max(means) and means[a] in differently fused
        # programs (at optimisation level 0 a run's regret was -3e-8 where the two arms' means tie)
        floor = -_rtol() * (1.0 + np.abs(rounds.means).max(axis=1))
        checks = (
            (
                ~(np.isfinite(fb.regret) & (fb.regret >= floor)),
                lambda t: f"regret = {_num(fb.regret[t])}: it must be finite and >= 0",
            ),
            (
                ~(np.abs(fb.regret - regret) <= _rtol() * (1.0 + np.abs(regret))),
                lambda t: f"regret = {_num(fb.regret[t])}, but max(means) - means[a] = {_num(regret[t])}",
            ),
            (~np.isfinite(c), lambda t: f"c_t = {_num(c[t])}: it must be finite"),
            (
                ~reward_ok,
                lambda t: f"reward = {_num(fb.reward[t])}, but means[a] + eta + c_t = {_num(expected[t])}",
            ),
        )
        firsts = [(int(np.flatnonzero(bad)[0]), i) for i, (bad, _) in enumerate(checks) if bad.any()]
        if firsts:
            t, i = min(firsts)
            rep.fail(prop, checks[i][1](t), t=t)


def _check_budget(rep: _Report, case: _EnvCase) -> None:
    """``budget``: when the adversary declares ``budget()``, the total corruption Σ|c_t| of the reference
    run (float64) never exceeds it by more than a relative 1e-5."""
    prop, adversary = "budget", case.env.adversary
    if adversary.budget is None:
        return
    with rep.guard(prop):
        budget = float(np.asarray(adversary.budget()))
        spent = np.cumsum(np.abs(case.reference[2].corruption.astype(np.float64)))
        bad = np.flatnonzero(spent > budget * (1.0 + 1e-5))
        if bad.size:
            t = int(bad[0])
            rep.fail(
                prop, f"sum |c_t| reached {_num(spent[t])}, above the declared budget() = {_num(budget)}", t=t
            )


def _check_chunked_equals_unchunked(rep: _Report, case: _EnvCase) -> None:
    """``chunked_equals_unchunked``: the run in two chunks (rounds [0, ⌈T/2⌉) and [⌈T/2⌉, T), carrying the
    state and padding the chunks as ``jb.sweep`` does) equals the run in one, bitwise
    (``chex.assert_trees_all_equal``): a round depends only on (key, θ*, t)."""
    prop = "chunked_equals_unchunked"
    with rep.guard(prop):
        half = (case.horizon + 1) // 2
        carry, *first = case.run(case.carry, 0, half)
        carry, *second = case.run(carry, half, case.horizon)
        chunked = (_host(carry),) + tuple(
            jax.tree_util.tree_map(lambda a, b: np.concatenate([a, b]), _host(first), _host(second))
        )
        _assert_runs_equal(rep, prop, case.reference, chunked, "in one chunk", "in two")


def _assert_runs_equal(rep: _Report, prop: str, a, b, how_a: str, how_b: str, hint: str = ""):
    """Bitwise equality of two (carry, rounds, trajectory) runs, reporting the first differing round."""
    try:
        chex.assert_trees_all_equal(a, b)
    except AssertionError as err:
        diff = _first_difference(a[1:], b[1:])
        if diff is None:
            rep.fail(prop, f"the final carries differ {how_a} and {how_b}{hint}", cause=err)
        t, path, x, y = diff
        field = ("Round" if path.startswith("[0]") else "Feedback") + path[3:]
        rep.fail(
            prop,
            f"{field} is {_num(x)} {how_a} but {_num(y)} {how_b}: a round must depend only on "
            f"(key, theta_star, t){hint}",
            t=t,
            cause=err,
        )


def _check_env_vmap_bitwise(rep: _Report, case: _EnvCase) -> None:
    """``vmap_bitwise``: jitted ``vmap``s over ``BATCH`` keys of ``init_carry`` and of the run equal, bitwise,
    the jitted run of each key alone (final carry, rounds and feedback, ``chex.assert_trees_all_equal``).
    Both compile ``init_carry`` apart from the rounds (as ``jb.sweep`` does), so that θ* is never a
    compile-time constant that XLA could fold with other rounding in one program only."""
    prop = "vmap_bitwise"
    with rep.guard(prop):
        keys = jnp.stack([jax.random.key(SEED if i == LANE else SEED + 10 + i) for i in range(BATCH)])
        rounds, active = _padded(0, case.horizon, case.horizon)
        carries = _compiled(jax.vmap(case.init))(keys)  # apart from the rounds, as for the run alone
        carry, out = _compiled(jax.vmap(case.rounds, in_axes=(0, None, None)))(carries, rounds, active)
        batch = _host((carry, *out))
        for i in range(BATCH):
            alone = case.reference if i == LANE else _host(case.run(case.init(keys[i]), 0, case.horizon))
            lane = _at(batch, i)
            _assert_runs_equal(
                rep, prop, alone, lane, "alone", f"in lane {i} of a vmap batch of {BATCH}", hint=_BATCH_HINT
            )
