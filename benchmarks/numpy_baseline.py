"""CR-Hvt-UCB as a plain NumPy per-run loop: the code a researcher would otherwise write.

One run at a time, one round at a time, float64: contexts and noise from NumPy's generator, V⁻¹ by
Sherman–Morrison, the projection by Newton on the multiplier over an eigendecomposition. Used by
``throughput.py`` as the speed baseline (it is not a fidelity reference: tests/reference.py is).
"""

from __future__ import annotations

import math

import numpy as np


def run(T, *, seed=0, d=10, K=20, eps=1.0, nu=3**0.5, C=100.0, beta_scale=1e-4, S=1.0, L=1.0, alpha=8.0):
    rng = np.random.default_rng(seed)
    lam, delta, sigma_min = float(d), 1.0 / (8 * T), 1.0 / math.sqrt(T)
    kappa = d * math.log(1 + L * L * T / (sigma_min**2 * lam * alpha * d))
    e = (1 - eps) / (2 * (1 + eps))
    log_term = math.log(2 * T * T / delta)
    tau0 = math.sqrt(2 * kappa) * math.log(3 * T) ** e / log_term ** (1 / (1 + eps))

    def beta(t):
        return beta_scale * (409 * log_term * tau0 * t**e + math.sqrt(lam * (2 + 4 * S * S)))

    theta_star = rng.normal(size=d)
    theta_star *= S / np.linalg.norm(theta_star)
    A = np.eye(d) / lam
    theta = np.zeros(d)
    b = beta(0)
    spent = 0.0
    regret = 0.0
    for t in range(1, T + 1):
        X = rng.normal(size=(K, d))
        X *= L / np.linalg.norm(X, axis=1, keepdims=True)
        scores = X @ theta + b * np.sqrt(np.einsum("ki,ij,kj->k", X, A, X))
        a = int(np.argmax(scores))
        x = X[a]
        means = X @ theta_star
        c = -np.sign(means[a]) * min(2 * abs(means[a]), C - spent)
        spent += abs(c)
        r = means[a] + rng.standard_t(3.0) + c
        regret += means.max() - means[a]
        Ax = A @ x
        x_norm = math.sqrt(x @ Ax)
        sigma = max(
            nu,
            sigma_min,
            math.sqrt(2 * b / (tau0 * math.sqrt(alpha) * t**e)) * x_norm,
            math.sqrt(C) * kappa**-0.25 * math.sqrt(x_norm),
        )
        w = x_norm / (math.sqrt(alpha) * sigma)
        tau = tau0 * math.sqrt(1 + w * w) / w * t**e
        weight = 1.0 / (alpha * sigma * sigma)
        A = A - (weight / (1 + weight * x_norm**2)) * np.outer(Ax, Ax)
        z = (r - x @ theta) / sigma
        theta_tilde = theta + (A @ x) * (np.clip(z, -tau, tau) / sigma)
        theta = _project(theta_tilde, A, S)
        b = beta(t)
    return regret


def _project(theta_tilde, A, S, iters=30):
    if np.linalg.norm(theta_tilde) <= S:
        return theta_tilde
    a, Q = np.linalg.eigh(A)
    c = Q.T @ theta_tilde
    mu = 0.0
    for _ in range(iters):
        q = 1.0 / (1.0 + mu * a)
        n2 = np.sum(c * c * q * q)
        n = math.sqrt(n2)
        dn2 = -2.0 * np.sum(c * c * a * q**3)
        mu = max(mu - (1 / n - 1 / S) / (-0.5 * dn2 / (n2 * n)), 0.0)
    return Q @ (c / (1.0 + mu * a))
