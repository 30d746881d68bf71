"""What jb.testing catches that breaks science, and the correct extensions it must not reject (issue 55):
the noise families' properties (``check_noise``), the streams' and randomised algorithms' properties,
and the policy kinds the tie property applies to."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit import testing

# --------------------------------------------------------------------------------------------------------
# Noise families: zero mean and the declared moments, statistical tests of a stated false-alarm rate


def _registered_families():
    for name, spec in jb.registry.noises().items():
        for eps in (0.25, 0.5, 1.0) if spec.heavy_tailed else (1.0,):
            yield f"{name}(eps={eps:g})", spec.build(eps)


LIBRARY_FAMILIES = {
    **dict(_registered_families()),
    "gaussian(2)": jb.noise.gaussian(2.0),
    "symmetric_pareto(1.5)": jb.noise.symmetric_pareto(1.5),
    "heteroscedastic(student_t(3))": jb.noise.heteroscedastic(jb.noise.student_t(3.0)),
    "pareto(1.5)": jb.noise.pareto(1.5),  # the paper's ε < 1 noise, centred
}


@pytest.mark.parametrize("name", list(LIBRARY_FAMILIES))
def test_every_library_noise_family_passes(name):
    family = LIBRARY_FAMILIES[name]
    eps = [e for e in testing._noise.EPS if 1 + e < float(family.max_order)] or [0.05]
    testing.check_noise(family, eps=eps)


def _shifted(family, by):
    return family._replace(sample=lambda k, t: (family.sample(k, t)[0] + by, family.sample(k, t)[1]))


GAUSSIAN = jb.noise.gaussian(1.0)
BROKEN_FAMILIES = {  # name: (family, the property that catches it, a part of the message)
    "mean +0.5": (_shifted(GAUSSIAN, 0.5), "zero_mean", "center the noise"),
    "student_t(3) with mean +0.5": (_shifted(jb.noise.student_t(3.0), 0.5), "zero_mean", "draws is 0.49"),
    "student_t(1.2) declared with max_order inf and a Gaussian's bound": (
        jb.noise.student_t(1.2)._replace(max_order=float("inf"), moment_bound=GAUSSIAN.moment_bound),
        "moment_bound",
        "is max_order = inf too large, or moment_bound too small?",
    ),
    "student_t(3) declared with a Gaussian's bound": (
        jb.noise.student_t(3.0)._replace(moment_bound=GAUSSIAN.moment_bound),
        "moment_bound",
        "contradicts the draws",
    ),
    "ignores its key": (
        GAUSSIAN._replace(sample=lambda k, t: GAUSSIAN.sample(jax.random.key(0), t)),
        "sample_uses_key",
        "sample must draw",
    ),
    "a draw of shape (1,)": (
        GAUSSIAN._replace(sample=lambda k, t: (jax.random.normal(k, (1,)), jnp.ones(()))),
        "sample_dtypes",
        "float32 scalar",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN_FAMILIES))
def test_broken_noise_family_is_caught(name):
    family, prop, part = BROKEN_FAMILIES[name]
    with pytest.raises(AssertionError, match=rf"^check_noise\(.*\): property '{prop}' failed") as info:
        testing.check_noise(family)
    assert part in str(info.value)


def test_check_noise_is_deterministic_and_refuses_bad_arguments():
    family = BROKEN_FAMILIES["mean +0.5"][0]
    messages = set()
    for _ in range(2):
        with pytest.raises(AssertionError) as info:
            testing.check_noise(family)
        messages.add(str(info.value))
    assert len(messages) == 1  # seeded: the same draws, the same verdict
    with pytest.raises(ValueError, match=r"family=3 is invalid"):
        testing.check_noise(3)
    with pytest.raises(ValueError, match=r"eps=\(1.0,\) is invalid for student_t\(df=1.5\): every 1 \+ eps"):
        testing.check_noise(jb.noise.student_t(1.5), eps=(1.0,))
    with pytest.raises(ValueError, match=r"samples=100 is invalid"):
        testing.check_noise(GAUSSIAN, samples=100)


# --------------------------------------------------------------------------------------------------------
# Streams: the bounds the learners are told, and the key


D, K = 3, 5


def _linear(**kwargs):
    return jb.envs.linear(D, K, noise=jb.noise.student_t(3.0), **kwargs)


def _with_draw(env, draw=None, init=None):
    stream = env.stream
    changes = {}
    if draw is not None:
        changes["draw"] = lambda key, theta, t: draw(stream.draw, key, theta, t)
    if init is not None:
        changes["init"] = init
    return env._replace(stream=stream._replace(**changes))


def _scaled_contexts(base, key, theta, t):
    """Contexts of norm up to √3 ≈ 1.73, the means kept consistent."""
    rnd = base(key, theta, t)
    X = rnd.contexts * jnp.sqrt(3.0)
    return rnd._replace(contexts=X, means=X @ theta)


def _keyless(base, key, theta, t):
    return base(jax.random.fold_in(jax.random.key(0), t), theta, t)


BROKEN_STREAMS = {  # name: (environment, property, a part of the message)
    "contexts of norm up to 1.73": (
        lambda: _with_draw(_linear(), _scaled_contexts),
        "stream_bounds",
        "exceeds L = 1: draw contexts within L",
    ),
    "theta_star of norm 2": (
        lambda: _with_draw(_linear(), init=lambda key: 2.0 * jb.envs.uniform_sphere(key, (D,), 1.0)),
        "stream_bounds",
        "||theta_star|| = 2 exceeds S = 1",
    ),
    "ignores its key": (
        lambda: _with_draw(_linear(), _keyless, init=lambda key: _linear().stream.init(jax.random.key(0))),
        "stream_uses_key",
        "are the same under two keys",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN_STREAMS))
def test_broken_stream_is_caught(name):
    make, prop, part = BROKEN_STREAMS[name]
    match = rf"^check_environment\({name}\): property '{prop}' failed"
    with pytest.raises(AssertionError, match=match) as info:
        testing.check_environment(make(), name=name)
    assert part in str(info.value)


def test_streams_within_their_declared_bounds_pass():
    # the bounds a learner is told, when they are not 1
    testing.check_environment(_linear(S=2.0, L=3.0), S=2.0, L=3.0)
    # a stream that keeps theta_star fixed but draws its contexts and noise from the key
    testing.check_environment(_with_draw(_linear(), init=lambda key: jnp.ones(D) / jnp.sqrt(D)))
    # a replay ignores its keys by design: it holds its rounds
    T = 12
    rng = np.random.default_rng(0)
    X = rng.normal(size=(T, K, D))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    env = jb.envs.replay(theta_star=np.ones(D) / np.sqrt(D), contexts=X, noise=rng.normal(size=T))
    testing.check_environment(env)
    with pytest.raises(ValueError, match=r"L=0.0 is invalid"):
        testing.check_environment(_linear(), L=0.0)


# --------------------------------------------------------------------------------------------------------
# Algorithms: the policy kinds the tie rule applies to, and a randomised algorithm's key


class RidgeState(NamedTuple):
    V_inv: jax.Array  # [d, d]
    b: jax.Array  # [d]
    t: jax.Array  # int32


def ridge(p, *, explore=None, warm_start=False, fixed_key=False, policy="argmax"):
    """Ridge UCB (conforming); ``explore``: ε-greedy, a uniformly random arm with probability ε drawn
    from its key (``fixed_key``: from jax.random.key(0) instead); ``warm_start``: round t ≤ K plays arm
    t − 1."""
    beta = jnp.asarray(p["beta"], jnp.result_type(float))
    randomized = explore is not None

    def init():
        dtype = jnp.result_type(float)
        return RidgeState(jnp.eye(D, dtype=dtype), jnp.zeros(D, dtype), jnp.zeros((), jnp.int32))

    def select(state, contexts, *key):
        theta = jb.linalg.matvec(state.V_inv, state.b)
        arm = jb.linalg.select_ucb(contexts, theta, state.V_inv, beta)
        if randomized:
            k = jax.random.key(0) if fixed_key else key[0]
            k_coin, k_arm = jax.random.split(k)
            coin = jax.random.uniform(k_coin) < explore
            arm = jnp.where(coin, jax.random.randint(k_arm, (), 0, K, jnp.int32), arm)
        if warm_start:
            arm = jnp.where(state.t < K, state.t, arm)
        return arm

    def update(state, x, reward, nu, *key):
        r = jb.linalg.clamp_reward(reward, state.b.dtype)
        one = jnp.ones((), x.dtype)
        return RidgeState(jb.linalg.sherman_morrison(state.V_inv, x, one), state.b + r * x, state.t + 1)

    return jb.Algorithm(init, select, update, randomized=randomized, policy=policy)


def _check(factory, **kwargs):
    testing.check_algorithm(factory, {"beta": 1.0}, dim=D, num_arms=K, name="ridge", **kwargs)


@pytest.mark.parametrize(
    "variant",
    [
        dict(),
        dict(explore=0.2, policy="mixed"),
        dict(warm_start=True, policy="mixed"),
        dict(explore=0.2, warm_start=True, policy="mixed"),
        dict(policy="mixed"),  # an argmax policy declared mixed: its score-following rounds still checked
    ],
)
def test_correct_policies_of_every_kind_pass(variant):
    _check(lambda p: ridge(p, **variant))


@pytest.mark.parametrize("variant", [dict(explore=0.2), dict(warm_start=True)])
def test_an_undeclared_mixed_policy_is_told_to_declare_itself(variant):
    with pytest.raises(AssertionError, match=r"property 'tie_lowest_index' failed in round") as info:
        _check(lambda p: ridge(p, **variant))
    assert "declare jb.Algorithm(..., policy='mixed')" in str(info.value)


def test_a_mixed_policy_that_breaks_ties_to_the_highest_index_is_caught():
    def highest(p):
        alg = ridge(p, warm_start=True, policy="mixed")

        def select(state, contexts):
            theta = jb.linalg.matvec(state.V_inv, state.b)
            s = jb.linalg.dot(contexts, theta) + jb.linalg.ellipsoid_norm(state.V_inv, contexts)
            arm = (K - 1 - jnp.argmax(s[::-1])).astype(jnp.int32)
            return jnp.where(state.t < K, state.t, arm)

        return alg._replace(select=select)

    with pytest.raises(AssertionError, match=r"property 'tie_lowest_index' failed in round (6|7|8|9)"):
        _check(highest)


def test_a_randomized_algorithm_drawing_from_a_fixed_key_is_caught():
    with pytest.raises(AssertionError, match=r"property 'randomized_uses_key' failed: randomized=True, but"):
        _check(lambda p: ridge(p, explore=0.2, fixed_key=True, policy="mixed"))


def test_an_unknown_policy_is_refused():
    with pytest.raises(AssertionError, match=r"'algorithm_type' failed: Algorithm.policy='greedy' is not"):
        _check(lambda p: ridge(p, policy="greedy"))


# --------------------------------------------------------------------------------------------------------
# Late bugs: the default probe reaches round 128, or the algorithm's own horizon where that is shorter


def late(p, flaw):
    """Ridge UCB built for T = 200 that breaks after round ~45."""
    alg = ridge(p)

    def select(state, contexts):
        arm = alg.select(state, contexts)
        if flaw == "out_of_range":  # an arm index outside [0, K) once every score is negative, late
            theta = jb.linalg.matvec(state.V_inv, state.b)
            negative = jnp.all(jb.linalg.dot(contexts, theta) < 0.0)
            return jnp.where((state.t >= 45) & negative, jnp.int32(K), arm)
        return arm

    def update(state, x, reward, nu):
        new = alg.update(state, x, reward, nu)
        if flaw == "divide_by_zero":  # 1/0 in a branch taken after round 50
            bad = jax.lax.cond(state.t > 50, lambda b: b / 0.0, lambda b: b, new.b)
            return new._replace(b=bad)
        return new

    return alg._replace(select=select, update=update, horizon=200)


@pytest.mark.parametrize(
    ("flaw", "prop"),
    [("out_of_range", "action_dtype"), ("divide_by_zero", "finite_under_extreme_rewards")],
)
def test_a_late_bug_of_an_algorithm_is_caught_at_the_default_probe(flaw, prop):
    with pytest.raises(AssertionError, match=rf"property '{prop}' failed in round (4[6-9]|[5-9]\d|1[01]\d)"):
        _check(lambda p: late(p, flaw))


def test_the_probe_is_the_algorithm_s_own_horizon_where_that_is_shorter():
    # built for 40 rounds, it never reaches its late bug: checked over its 40 rounds, it passes
    _check(lambda p: late(p, "divide_by_zero")._replace(horizon=40))


def capping_until(budget, until):
    """Flips every round's reward within the budget, until round ``until``; then stops capping."""
    C = jnp.asarray(budget, jnp.result_type(float))

    def corrupt(spent, view):
        c = -2.0 * view.means[view.action]
        capped = jnp.sign(c) * jnp.minimum(jnp.abs(c), jnp.maximum(C - spent, 0.0))
        c = jnp.where(view.t > until, c, capped)
        return c, spent + jnp.abs(c)

    return jb.Adversary("late_cap", lambda: jnp.zeros((), C.dtype), corrupt, budget=lambda: C)


def test_an_adversary_that_stops_capping_after_round_50_is_caught_at_the_default_probe():
    with pytest.raises(AssertionError, match=r"property 'budget' failed in round (5[2-9]|[6-9]\d|1[01]\d)"):
        testing.check_environment(_linear(corruption=capping_until(2.0, 50)), name="late")


# --------------------------------------------------------------------------------------------------------
# Messages that point at the fix


def test_a_tracer_error_is_said_to_be_in_update_with_the_fix():
    def branching(p):
        alg = ridge(p)

        def update(state, x, reward, nu):
            if reward > 0:  # Python control flow on a traced value
                return alg.update(state, x, reward, nu)
            return state

        return alg._replace(update=update)

    with pytest.raises(AssertionError) as info:
        _check(branching)
    message = str(info.value)
    assert "update raised TracerBoolConversionError" in message, message
    assert "use jnp.where, lax.cond or lax.select" in message


def test_a_nan_from_a_zero_context_coordinate_is_not_blamed_on_the_noise():
    def divides(p):
        alg = ridge(p)

        def update(state, x, reward, nu):
            new = alg.update(state, x, reward, nu)
            return new._replace(b=new.b + jnp.sum(1.0 / x) * 0.0)  # 0/0 or inf*0 where a coordinate is 0

        return alg._replace(update=update)

    with pytest.raises(AssertionError, match=r"'finite_under_extreme_rewards' failed in round") as info:
        _check(divides)
    message = str(info.value)
    # round 1 of the extreme stream has eta = inf, but the same update with reward 0 is not finite either
    assert "not the reward alone" in message and "clamp" not in message, message
    assert "the chosen context has 2 of its 3 coordinates 0: look for a division by a context" in message


# --------------------------------------------------------------------------------------------------------
# Run time: an arm outside [0, K) is never played as a silently clamped arm


def _out_of_range_from(round_index):
    def make(p):
        alg = ridge(p)
        return alg._replace(
            select=lambda state, contexts: jnp.where(
                state.t >= round_index, jnp.int32(K), alg.select(state, contexts)
            )
        )

    return make


def test_simulate_marks_an_out_of_range_arm_with_nan_regret_and_reward():
    T = 30
    out = jb.simulate(_out_of_range_from(20)({"beta": 1.0}), _linear(), jax.random.key(0), horizon=T)
    regret, reward, action = (np.asarray(x) for x in (out.regret, out.reward, out.action))
    assert np.all(np.isfinite(regret[:20])) and np.all(np.isnan(regret[20:]))
    assert np.all(np.isnan(reward[20:])) and np.all(action[20:] == K)  # the index returned, not clamped


@pytest.mark.parametrize("record", ["all", ("log", 5)])
def test_sweep_refuses_an_algorithm_choosing_an_arm_outside_the_range(record):
    algorithms = {"good": lambda p: ridge(p), "bad": _out_of_range_from(12)}
    with pytest.raises(
        ValueError,
        match=r"an algorithm chose an arm outside \[0, K\) .* in 2 run\(s\), first at algorithm='bad', "
        r"beta=1.0, seed=0, by round \d+: the round's regret is NaN",
    ):
        jb.sweep(algorithms, _linear(), {"beta": [1.0]}, horizon=20, seeds=2, record=record)
    good = jb.sweep(
        {"good": lambda p: ridge(p)}, _linear(), {"beta": [1.0]}, horizon=20, seeds=2, record=record
    )
    assert np.all(np.isfinite(good.cumulative_regret))
