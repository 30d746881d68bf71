"""Independent float64 NumPy loops written from the papers, for comparison with the JAX code.

They share no code with ``jaxbandit``: the Gram matrix V is kept explicitly and solved each round, the
projection brackets the multiplier with Brent's method on V's own eigendecomposition.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq


def project_v_ball(theta_tilde, V, S):
    """argmin_{‖θ‖ ≤ S} (θ − θ̃)ᵀV(θ − θ̃) by Brent's method on μ in θ(μ) = (V + μI)⁻¹Vθ̃."""
    if np.linalg.norm(theta_tilde) <= S:
        return theta_tilde.copy()
    lam, Q = np.linalg.eigh(V)
    c = Q.T @ theta_tilde

    def excess(mu):
        return np.linalg.norm(lam * c / (lam + mu)) - S

    hi = lam.max() * (np.linalg.norm(c) / S)
    mu = brentq(excess, 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    return Q @ (lam * c / (lam + mu))


def lowest_argmax(mean, bonus):
    """The first arm whose score mean + bonus is maximal up to float rounding (ties: lowest index)."""
    scores = mean + bonus
    tol = 1e-12 * np.max(np.abs(mean) + np.abs(bonus))
    return int(np.flatnonzero(scores >= scores.max() - tol)[0])


def flip_corruption(mean, spent, budget):
    """The exact-budget flip of DESIGN.md: c = −sign(m)·min(2|m|, C − spent)."""
    c = -np.sign(mean) * min(2 * abs(mean), budget - spent)
    return c, spent + abs(c)


def cr_hvt_ucb(
    theta_star,
    contexts,
    noise,
    *,
    eps,
    nu,
    C,
    budget,
    S=1.0,
    L=1.0,
    lam=None,
    alpha=8.0,
    delta=None,
    sigma_min=None,
    beta_scale=1.0,
    nus=None,
):
    """Algorithm 1 of the seed paper, line by line. ``C`` is the algorithm's C (or C̄), ``budget`` the
    adversary's; ``nus`` `[T]`, if given, are the revealed ν_t used instead of ``nu``."""
    T, _K, d = contexts.shape
    lam = float(d) if lam is None else lam
    delta = 1.0 / (8 * T) if delta is None else delta
    sigma_min = 1.0 / math.sqrt(T) if sigma_min is None else sigma_min
    kappa = d * math.log(1 + L**2 * T / (sigma_min**2 * lam * alpha * d))
    e = (1 - eps) / (2 * (1 + eps))
    log_term = math.log(2 * T**2 / delta)
    tau0 = math.sqrt(2 * kappa) * math.log(3 * T) ** e / log_term ** (1 / (1 + eps))

    def beta(t):
        return beta_scale * (409 * log_term * tau0 * t**e + math.sqrt(lam * (2 + 4 * S**2)))

    V = lam * np.eye(d)
    theta = np.zeros(d)
    spent = 0.0
    actions, regrets = np.zeros(T, int), np.zeros(T)
    for t in range(1, T + 1):
        X = contexts[t - 1]
        V_inv = np.linalg.inv(V)
        b = beta(t - 1)
        bonus = np.sqrt(np.einsum("ki,ij,kj->k", X, V_inv, X))
        a = lowest_argmax(X @ theta, b * bonus)
        x = X[a]
        means = X @ theta_star
        c, spent = flip_corruption(means[a], spent, budget)
        r = means[a] + noise[t - 1] + c
        actions[t - 1], regrets[t - 1] = a, means.max() - means[a]

        nu_t = nu if nus is None else nus[t - 1]
        x_norm = math.sqrt(x @ V_inv @ x)
        sigma = max(
            nu_t,
            sigma_min,
            math.sqrt(2 * b / (tau0 * math.sqrt(alpha) * t**e)) * x_norm,
            math.sqrt(C) * kappa**-0.25 * math.sqrt(x_norm),
        )
        w = x_norm / (math.sqrt(alpha) * sigma)
        tau = tau0 * math.sqrt(1 + w * w) / w * t**e
        V = V + np.outer(x, x) / (alpha * sigma**2)
        z = (r - x @ theta) / sigma
        huber_slope = z if abs(z) <= tau else tau * np.sign(z)  # f'_τ(z), def:huber_gra
        grad = -huber_slope * x / sigma
        theta_tilde = theta - np.linalg.solve(V, grad)
        theta = project_v_ball(theta_tilde, V, S)
    return actions, regrets
