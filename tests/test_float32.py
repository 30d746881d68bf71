"""float32, the default, agrees with x64 statistically for every registered algorithm, in both regimes a
user meets: the theory constants (radii ~10⁴, scores far above the rewards' scale) and small tuned radii.

Arm choices of the two precisions part ways within a few rounds (score gaps near float32's resolution),
so runs are compared by their final regret over seeds, as two samples: the means must agree within 3
combined standard errors. A tie window wider than the scores' rounding error fails it: with the
16-ulp window of old, CR-Hvt-UCB's float32 regret at its theory constants was 4 % (z = 4.5) above x64's at
this size. The large check (T = 3000, 64 seeds) is ``benchmarks/float32_agreement.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb

T, D, K, SEEDS = 1000, 10, 20, 16
PROBLEM = jb.registry.Problem(horizon=T, dim=D, eps=1.0, nu=3**0.5, corruption=0.0)
REGIMES = ("theory", "tuned")


def tuned_constants(spec: jb.registry.AlgorithmSpec) -> dict:
    """The middle of each free constant's tuning grid: small radii, as tuning picks them."""
    return {name: values[len(values) // 2] for name, values in spec.grid.items()}


def both_regimes(spec: jb.registry.AlgorithmSpec):
    """A factory of ``p["regime"]`` (0: theory constants, 1: tuned), one traced axis: one program."""
    theory, tuned = spec.theory(PROBLEM), tuned_constants(spec)

    def make(p):
        pick = {k: jnp.where(p["regime"] == 0, jnp.asarray(theory[k], float), tuned[k]) for k in spec.grid}
        return spec.build(PROBLEM, pick)

    return make


@pytest.fixture(scope="module")
def finals() -> dict[bool, jb.SweepResult]:
    """Final regret `[algorithm, regime, seed]` per precision (x64 off, on), the same seeds."""
    out = {}
    env = jb.envs.linear(D, K, noise=jb.noise.student_t(3.0))
    for x64 in (False, True):
        with jax.enable_x64(x64):
            algs = {name: both_regimes(jb.registry.algorithm(name)) for name in jb.registry.names()}
            res = jb.sweep(algs, env, {"regime": [0.0, 1.0]}, horizon=T, seeds=SEEDS, record=("log", 2))
            out[x64] = res
    return out


@pytest.mark.slow
@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("name", jb.registry.names())
def test_float32_final_regret_agrees_with_x64(finals, name, regime):
    samples = []
    for x64 in (False, True):
        res = finals[x64]
        i = list(res.coords["algorithm"]).index(name)
        samples.append(np.asarray(res.final_regret, np.float64)[i, REGIMES.index(regime)].reshape(-1))
    f32, f64 = samples
    se = np.sqrt(f32.var(ddof=1) / f32.size + f64.var(ddof=1) / f64.size)
    z = (f32.mean() - f64.mean()) / se
    assert abs(z) <= 3.0, (
        f"{name}, {regime}: float32 {f32.mean():.1f} against x64 {f64.mean():.1f} (z = {z:+.2f})"
    )
