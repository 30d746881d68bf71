"""Adversaries: the flip budget is exact and never exceeded."""

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxbandit as jb


def run_adversary(adv, means, actions):
    def step(spent, inp):
        m, a, t = inp
        view = jb.corruption.AdversaryView(
            contexts=jnp.zeros((m.shape[0], 1)),
            theta_star=jnp.zeros(1),
            means=m,
            action=a,
            eta=jnp.zeros(()),
            t=t,
        )
        c, spent = adv.corrupt(spent, view)
        return spent, c

    T = means.shape[0]
    spent, cs = jax.lax.scan(step, adv.init(), (means, actions, jnp.arange(T)))
    return float(spent), np.asarray(cs)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.floats(0.0, 50.0), T=st.integers(1, 200))
def test_flip_never_exceeds_its_budget(seed, budget, T):
    rng = np.random.default_rng(seed)
    means = jnp.asarray(rng.uniform(-1, 1, size=(T, 4)), jnp.float32)
    actions = jnp.asarray(rng.integers(0, 4, size=T), jnp.int32)
    _spent, cs = run_adversary(jb.corruption.flip(budget), means, actions)
    total = np.abs(cs).sum()
    assert total <= budget * (1 + 1e-5) + 1e-6
    chosen = np.asarray(means)[np.arange(T), np.asarray(actions)]
    full = 2 * np.abs(chosen)
    # rounds before the budget ran out are full flips; the budget is used up exactly if it can be
    if full.sum() >= budget:
        assert abs(total - budget) <= 1e-4 * max(budget, 1)
    else:
        np.testing.assert_allclose(cs, -2 * chosen, rtol=1e-6)
    # the corruption always pushes the mean reward towards its negative
    assert np.all(cs * chosen <= 1e-12)


def test_flip_last_round_is_partial():
    means = jnp.full((5, 1), 0.5, jnp.float32)
    _, cs = run_adversary(jb.corruption.flip(2.5), means, jnp.zeros(5, jnp.int32))
    np.testing.assert_allclose(cs, [-1.0, -1.0, -0.5, 0.0, 0.0])


def test_flip_rounds_flips_a_count_of_rounds():
    means = jnp.asarray([[0.5], [-0.25], [0.1], [0.3]], jnp.float32)
    spent, cs = run_adversary(jb.corruption.flip_rounds(2), means, jnp.zeros(4, jnp.int32))
    np.testing.assert_allclose(cs, [-1.0, 0.5, 0.0, 0.0])
    assert spent == 1.5


def test_flip_with_infinite_budget_flips_every_round():
    means = jnp.asarray([[0.5], [-0.25]], jnp.float32)
    _, cs = run_adversary(jb.corruption.flip(np.inf), means, jnp.zeros(2, jnp.int32))
    np.testing.assert_allclose(cs, [-1.0, 0.5])


# --- accounting across whole simulate runs, with random actions ---


def random_actions(num_arms, seed):
    """An 'algorithm' choosing uniformly random arms (from its own key), learning nothing."""

    def init():
        return jax.random.key_data(jax.random.key(seed)), jnp.zeros((), jnp.int32)

    def select(state, contexts):
        key = jax.random.wrap_key_data(state[0])
        return jax.random.randint(jax.random.fold_in(key, state[1]), (), 0, num_arms).astype(jnp.int32)

    def update(state, x, reward, nu):
        return state[0], state[1] + 1

    return jb.Algorithm(init, select, update)


T_RUN, K_RUN, D_RUN = 80, 5, 3


@jax.jit
def _flip_run(X, th, seed, budget, rounds):
    """One compiled run for every example: contexts, θ*, the actions' seed and the adversary traced."""
    out_budget = jb.simulate(
        random_actions(K_RUN, seed),
        jb.envs.replay(
            theta_star=th, contexts=X, noise=jnp.zeros(T_RUN), corruption=jb.corruption.flip(budget)
        ),
        jax.random.key(0),
        horizon=T_RUN,
    )
    out_rounds = jb.simulate(
        random_actions(K_RUN, seed),
        jb.envs.replay(
            theta_star=th, contexts=X, noise=jnp.zeros(T_RUN), corruption=jb.corruption.flip_rounds(rounds)
        ),
        jax.random.key(0),
        horizon=T_RUN,
    )
    return out_budget, out_rounds


def replay_run(seed, budget, rounds):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T_RUN, K_RUN, D_RUN)) * rng.uniform(0.1, 2.0, size=(T_RUN, K_RUN, 1))
    th = rng.normal(size=D_RUN)
    outs = _flip_run(
        jnp.asarray(X, jnp.float32),
        jnp.asarray(th, jnp.float32),
        jnp.int32(seed),
        jnp.float32(budget),
        jnp.float32(rounds),
    )
    results = []
    for out in outs:
        action = np.asarray(out.action)
        chosen = (np.asarray(X, np.float32).astype(np.float64) @ np.asarray(th, np.float32))[
            np.arange(T_RUN), action
        ]
        results.append(
            (chosen, np.asarray(out.corruption, np.float64), np.asarray(out.reward, np.float64), action)
        )
    return results


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.one_of(st.floats(0.0, 150.0), st.just(np.inf)))
def test_flip_budget_accounting_over_a_simulated_run(seed, budget):
    (chosen, c, reward, action), _ = replay_run(seed, budget, 0)
    assert np.all((action >= 0) & (action < K_RUN)) and len(np.unique(action)) > 1  # random actions
    np.testing.assert_allclose(reward, chosen + c, rtol=1e-5, atol=1e-5)  # r_t = ⟨X_t, θ*⟩ + c_t here
    spent = np.cumsum(np.abs(c))
    assert spent[-1] <= budget * (1 + 1e-5) + 1e-5  # never beyond C
    assert np.all(np.abs(c) <= 2 * np.abs(chosen) * (1 + 1e-5) + 1e-6)  # at most a full flip
    assert np.all(c * chosen <= 1e-9)  # always against the mean
    before = np.concatenate([[0.0], spent[:-1]])
    # a round is a full flip while the budget left covers it, and takes exactly what is left otherwise
    need = 2 * np.abs(chosen)
    full = before + need <= budget * (1 - 1e-5)
    np.testing.assert_allclose(np.abs(c[full]), need[full], rtol=1e-4, atol=1e-6)
    if np.isfinite(budget):
        np.testing.assert_allclose(spent[-1], min(budget, need.sum()), rtol=1e-4, atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), rounds=st.integers(0, T_RUN + 20))
def test_flip_rounds_accounting_over_a_simulated_run(seed, rounds):
    _, (chosen, c, reward, _) = replay_run(seed, 0.0, rounds)
    n = min(rounds, T_RUN)
    np.testing.assert_allclose(c[:n], -2 * chosen[:n], rtol=1e-5, atol=1e-6)  # the first n rounds flip
    assert np.all(c[n:] == 0)  # and no other round
    np.testing.assert_allclose(reward, chosen + c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.abs(c).sum(), 2 * np.abs(chosen[:n]).sum(), rtol=1e-5, atol=1e-5)


def test_sweep_reports_the_corruption_spent():
    T, K, d = 60, 5, 3

    def make_env(p):
        return jb.envs.linear(d, K, noise=jb.noise.gaussian(0.1), corruption=jb.corruption.flip(p["C"]))

    res = jb.sweep(lambda p: random_actions(K, 0), make_env, {"C": [0.0, 3.0, np.inf]}, horizon=T, seeds=2)
    spent = res.corruption_spent[..., -1]
    np.testing.assert_allclose(spent, np.abs(res.corruption).sum(axis=-1), rtol=1e-5)
    assert np.all(spent[0] == 0) and np.all(spent[1] <= 3.0 * (1 + 1e-6))
    assert np.all(spent[2] > spent[1])


def run_with_contexts(adv, contexts, theta, actions):
    """Drive an adversary through rounds of contexts `[T, K, d]` with θ* and the learner's actions."""

    def step(spent, inp):
        X, a, t = inp
        means = X @ theta
        view = jb.corruption.AdversaryView(X, theta, means, a, jnp.zeros(()), t)
        c, spent = adv.corrupt(spent, view)
        return spent, c

    T = contexts.shape[0]
    spent, cs = jax.jit(lambda: jax.lax.scan(step, adv.init(), (contexts, actions, jnp.arange(T))))()
    return float(spent), np.asarray(cs, np.float64)


def targeted_reference(budget, contexts, theta, actions, target):
    """The targeted attack written from its definition, in float64: c_t = ⟨X_a, θ†⟩ − ⟨X_a, θ*⟩ in the
    rounds where θ† and θ* prefer different arms, cut to what is left of the budget."""
    spent, out = 0.0, []
    for X, a in zip(contexts.astype(np.float64), actions):
        means = X @ theta
        wanted = -means if target is None else X @ target
        c = wanted[a] - means[a] if np.argmax(wanted) != np.argmax(means) else 0.0
        c = np.sign(c) * min(abs(c), max(budget - spent, 0.0))
        spent += abs(c)
        out.append(c)
    return np.asarray(out)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10**6), budget=st.floats(0.0, 20.0), own_target=st.booleans())
def test_targeted_matches_its_definition_and_budget(seed, budget, own_target):
    rng = np.random.default_rng(seed)
    T, K, d = 60, 5, 3
    X = rng.normal(size=(T, K, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    theta = rng.normal(size=d)
    theta /= np.linalg.norm(theta)
    target = rng.normal(size=d) if own_target else None
    actions = rng.integers(0, K, size=T)
    adv = jb.corruption.targeted(budget, target=target)
    spent, cs = run_with_contexts(
        adv, jnp.asarray(X, jnp.float32), jnp.asarray(theta, jnp.float32), jnp.asarray(actions, jnp.int32)
    )
    X32, th32 = X.astype(np.float32).astype(np.float64), theta.astype(np.float32).astype(np.float64)
    want = targeted_reference(
        budget, X32, th32, actions, None if target is None else target.astype(np.float32).astype(np.float64)
    )
    np.testing.assert_allclose(cs, want, rtol=1e-5, atol=1e-5)
    assert np.abs(cs).sum() <= budget * (1 + 1e-5) + 1e-6
    assert abs(spent - np.abs(cs).sum()) <= 1e-4 * max(1.0, budget)  # the state is what was spent


def test_targeted_spends_only_where_the_ranking_changes():
    rng = np.random.default_rng(3)
    T, K, d = 200, 4, 2
    X = rng.normal(size=(T, K, d))
    theta = np.array([1.0, 0.0])
    target = np.array([1.0, 0.1])  # agrees with θ* on most rounds' best arm
    adv = jb.corruption.targeted(np.inf, target=target)
    _, cs = run_with_contexts(
        adv, jnp.asarray(X, jnp.float32), jnp.asarray(theta, jnp.float32), jnp.zeros(T, jnp.int32)
    )
    agree = np.argmax(X @ theta, axis=1) == np.argmax(X @ target, axis=1)
    assert agree.any() and (~agree).any()
    assert np.all(cs[agree] == 0.0)


def test_random_sign_is_oblivious_within_budget_and_rate():
    rng = np.random.default_rng(0)
    T = 4000
    adv = jb.corruption.random_sign(np.inf, rate=0.3, scale=2.0, seed=5)
    means = jnp.asarray(rng.uniform(-1, 1, size=(T, 4)), jnp.float32)
    _, a = run_adversary(adv, means, jnp.zeros(T, jnp.int32))
    _, b = run_adversary(adv, -means, jnp.asarray(rng.integers(0, 4, size=T), jnp.int32))
    np.testing.assert_array_equal(a, b)  # fixed in advance: not a function of the learner or the stream
    hit = a != 0
    assert abs(hit.mean() - 0.3) < 4 * np.sqrt(0.3 * 0.7 / T)
    assert abs((a[hit] > 0).mean() - 0.5) < 4 * np.sqrt(0.25 / hit.sum())
    assert np.all(np.abs(a) <= 2.0) and abs(np.abs(a[hit]).mean() - 1.0) < 0.1  # U(0, 2) magnitudes
    _, other = run_adversary(
        jb.corruption.random_sign(np.inf, rate=0.3, scale=2.0, seed=6), means, jnp.zeros(T, jnp.int32)
    )
    assert not np.array_equal(a, other)
    # a budget cuts the same sequence: the running total stops at C exactly
    _, cut = run_adversary(
        jb.corruption.random_sign(25.0, rate=0.3, scale=2.0, seed=5), means, jnp.zeros(T, jnp.int32)
    )
    assert abs(np.abs(cut).sum() - 25.0) <= 1e-3
    first = np.flatnonzero(np.cumsum(np.abs(a)) > 25.0)[0]
    np.testing.assert_array_equal(cut[:first], a[:first])
    assert np.all(cut[first + 1 :] == 0.0)
