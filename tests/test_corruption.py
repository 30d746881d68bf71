"""Adversaries: the flip budget is exact and never exceeded."""
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings, strategies as st

import jaxbandit as jb


def run_adversary(adv, means, actions):
    def step(spent, inp):
        m, a, t = inp
        c, spent = adv.corrupt(spent, m, a, jnp.zeros(()), t)
        return spent, c

    T = means.shape[0]
    spent, cs = jax.lax.scan(step, adv.init(), (means, actions, jnp.arange(T)))
    return float(spent), np.asarray(cs)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10 ** 6), budget=st.floats(0.0, 50.0), T=st.integers(1, 200))
def test_flip_never_exceeds_its_budget(seed, budget, T):
    rng = np.random.default_rng(seed)
    means = jnp.asarray(rng.uniform(-1, 1, size=(T, 4)), jnp.float32)
    actions = jnp.asarray(rng.integers(0, 4, size=T), jnp.int32)
    spent, cs = run_adversary(jb.corruption.flip(budget), means, actions)
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
