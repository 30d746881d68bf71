"""An independent float64 NumPy loop of LinTS (Agrawal & Goyal 2013, Algorithm 1), written from the paper.

It shares no code with ``jaxbandit``: the Gram matrix B is kept explicitly, μ̂ = B⁻¹f is solved each
round, and the Gaussian draws z_t `[T, d]` are given, mapped to μ̃_t = μ̂_t + v·L_t z_t with L_t the lower
Cholesky factor of B_t⁻¹ (the convention of ``jaxbandit.agents.lin_ts``).
"""

from __future__ import annotations

import math

import numpy as np


def scale(d, *, R, epsilon, delta):
    """v = R√(24/ε · d · ln(1/δ)) (Algorithm 1)."""
    return R * math.sqrt(24.0 / epsilon * d * math.log(1.0 / delta))


def run_lin_ts(theta_star, contexts, noise, z, *, lam, v, corruption=None):
    """LinTS on contexts `[T, K, d]` with rewards ⟨X_t, θ*⟩ + noise `[T]` + corruption `[T]` (default 0)
    and standard normal draws ``z`` `[T, d]`; returns (actions `[T]`, regret `[T]`)."""
    T, _, d = contexts.shape
    corruption = np.zeros(T) if corruption is None else corruption
    B = lam * np.eye(d)
    f = np.zeros(d)
    actions, regrets = np.zeros(T, int), np.zeros(T)
    for t in range(T):
        X = contexts[t]
        mu_hat = np.linalg.solve(B, f)
        L = np.linalg.cholesky(np.linalg.inv(B))
        scores = X @ (mu_hat + v * L @ z[t])
        # lowest index among the arms within rounding of the maximum
        a = int(np.flatnonzero(scores >= scores.max() - 1e-12 * np.max(np.abs(scores)))[0])
        means = X @ theta_star
        actions[t], regrets[t] = a, means.max() - means[a]
        B = B + np.outer(X[a], X[a])
        f = f + (means[a] + noise[t] + corruption[t]) * X[a]
    return actions, regrets
