"""Independent float64 NumPy loops of the baselines, written from the papers, for comparison with jaxbandit.

They share no code with ``jaxbandit``: Gram matrices are kept explicitly and solved or inverted each
round, and the robust regressions are solved by SciPy (an unconstrained trust-region Newton solve, then,
if the solution leaves the ball, Brent's method on the KKT multiplier μ of ‖θ‖ ≤ S). The arm-choice tie
rule and the flip adversary are those of ``tests/reference.py``.
"""

from __future__ import annotations

import math

import numpy as np
from reference import flip_corruption, lowest_argmax, project_v_ball
from scipy.optimize import brentq, minimize

# --------------------------------------------------------------------------------------------------
# OFUL and CW-OFUL
# --------------------------------------------------------------------------------------------------


def cw_oful(theta_star, contexts, noise, *, lam, beta, alpha, budget=0.0):
    """CW-OFUL, Algorithm 1 of He et al. (2022): Σ = λI + Σ w xxᵀ, θ = Σ⁻¹b, UCB with radius β,
    w_t = min{1, α/‖X_t‖_{Σ⁻¹}} from the Σ before the update. ``alpha=inf`` is OFUL."""
    T, _K, d = contexts.shape
    Sigma = lam * np.eye(d)
    b = np.zeros(d)
    spent = 0.0
    actions, regrets = np.zeros(T, int), np.zeros(T)
    for t in range(T):
        X = contexts[t]
        theta = np.linalg.solve(Sigma, b)
        Sigma_inv = np.linalg.inv(Sigma)
        widths = np.sqrt(np.einsum("ki,ij,kj->k", X, Sigma_inv, X))
        bt = beta(t) if callable(beta) else beta
        a = lowest_argmax(X @ theta, bt * widths)
        x = X[a]
        means = X @ theta_star
        c, spent = flip_corruption(means[a], spent, budget)
        r = means[a] + noise[t] + c
        actions[t], regrets[t] = a, means.max() - means[a]
        w = 1.0 if math.isinf(alpha) else min(1.0, alpha / widths[a])
        Sigma = Sigma + w * np.outer(x, x)
        b = b + w * r * x
    return actions, regrets


def oful(
    theta_star,
    contexts,
    noise,
    *,
    lam=1.0,
    beta=None,
    beta_scale=1.0,
    S=1.0,
    L=1.0,
    R=1.0,
    delta=None,
    budget=0.0,
):
    """OFUL (Abbasi-Yadkori et al. 2011) with β_t = R√(d log((1 + tL²/λ)/δ)) + √λS after t rounds."""
    T, _, d = contexts.shape
    delta = 1.0 / T if delta is None else delta
    if beta is None:

        def radius(t):
            return beta_scale * (
                R * math.sqrt(d * math.log((1 + t * L * L / lam) / delta)) + math.sqrt(lam) * S
            )
    else:

        def radius(t):
            return beta_scale * beta

    return cw_oful(theta_star, contexts, noise, lam=lam, beta=radius, alpha=math.inf, budget=budget)


def cw_oful_theory(
    theta_star,
    contexts,
    noise,
    *,
    C,
    known=True,
    lam=1.0,
    S=1.0,
    L=1.0,
    R=1.0,
    delta=None,
    beta_scale=1.0,
    budget=0.0,
):
    """CW-OFUL with Theorem 4.2 (known C) or Theorem 4.9 (estimate C̄; None: √T) constants."""
    T, _, d = contexts.shape
    delta = 1.0 / T if delta is None else delta
    C = math.sqrt(T) if C is None else C
    alpha = math.inf if C == 0 else (R * math.sqrt(d) + math.sqrt(lam) * S) / C
    log_term = math.sqrt(d * math.log((1 + T * L * L / lam) / delta))
    if known:
        beta = R * log_term + (alpha * C if C > 0 else 0.0) + math.sqrt(lam) * S
    else:
        beta = 2 * R * log_term + 2 * math.sqrt(lam) * S
    return cw_oful(theta_star, contexts, noise, lam=lam, beta=beta_scale * beta, alpha=alpha, budget=budget)


# --------------------------------------------------------------------------------------------------
# Robust regressions
# --------------------------------------------------------------------------------------------------


def loss_terms(z, tau, kind):
    """(ρ, ρ', ρ'') of the Huber loss or of the pseudo-Huber loss τ²(√(1 + (z/τ)²) − 1)."""
    if kind == "huber":
        inside = np.abs(z) <= tau
        rho = np.where(inside, 0.5 * z**2, tau * np.abs(z) - 0.5 * tau**2)
        return rho, np.clip(z, -tau, tau), inside.astype(float)
    q = np.sqrt(tau**2 + z**2)
    return tau * z**2 / (q + tau), tau * z / q, tau**3 / q**3  # τ(q − τ) without cancellation


def robust_objective(theta, X, r, sigma, tau, reg, kind):
    """(reg/2)‖θ‖² + Σ ρ_τ((r − Xθ)/σ), with gradient and Hessian."""
    z = (r - X @ theta) / sigma
    rho, d1, d2 = loss_terms(z, tau, kind)
    f = 0.5 * reg * theta @ theta + rho.sum()
    g = reg * theta - X.T @ (d1 / sigma)
    H = reg * np.eye(theta.size) + (X * (d2 / sigma**2)[:, None]).T @ X
    return f, g, H


def _fit_free(X, r, sigma, tau, reg, kind, x0):
    """The unconstrained minimiser: SciPy's trust-region Newton, then plain Newton steps to polish
    (the trust region stalls once objective differences reach rounding)."""
    fun = lambda th: robust_objective(th, X, r, sigma, tau, reg, kind)
    res = minimize(
        lambda th: fun(th)[0],
        x0,
        jac=lambda th: fun(th)[1],
        hess=lambda th: fun(th)[2],
        method="trust-exact",
        options={"gtol": 1e-12, "maxiter": 2000},
    )
    theta = res.x
    for _ in range(20):
        f, g, H = fun(theta)
        if np.linalg.norm(g) <= 1e-13 * (1.0 + reg * np.linalg.norm(theta)):
            break
        step = np.linalg.solve(H, g)
        s = 1.0
        while fun(theta - s * step)[0] > f + 1e-12 * abs(f) and s > 1e-6:
            s *= 0.5
        theta = theta - s * step
    grad = fun(theta)[1]
    assert np.linalg.norm(grad) <= 1e-9 * (1.0 + reg * np.linalg.norm(theta)), np.linalg.norm(grad)
    return theta


def robust_fit(X, r, sigma, tau, reg, S, kind, x0=None):
    """argmin_{‖θ‖ ≤ S} (reg/2)‖θ‖² + Σ ρ_τ((r − Xθ)/σ) by KKT: the free minimiser if it lies in the
    ball, else θ(μ) = argmin of the objective plus (μ/2)‖θ‖² with μ > 0 solving ‖θ(μ)‖ = S (Brent)."""
    x0 = np.zeros(X.shape[1]) if x0 is None else x0
    free = _fit_free(X, r, sigma, tau, reg, kind, x0)
    if np.linalg.norm(free) <= S:
        return free
    cache = {}

    def excess(mu):
        cache[mu] = _fit_free(X, r, sigma, tau, reg + mu, kind, free)
        return np.linalg.norm(cache[mu]) - S

    hi = 1.0
    while excess(hi) > 0:
        hi *= 4.0
    mu = brentq(excess, 0.0, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    return cache[mu] if mu in cache else _fit_free(X, r, sigma, tau, reg + mu, kind, free)


# --------------------------------------------------------------------------------------------------
# Heavy-OFUL and GAdaOFUL
# --------------------------------------------------------------------------------------------------


def ellipsoid_ball_value(x, theta, H, beta, S):
    """max ⟨x, θ'⟩ s.t. ‖θ'‖ ≤ S and ‖θ' − θ‖_H ≤ β, by SLSQP as the GAdaOFUL authors' code does (here
    from three starts — θ, the origin, Sx/‖x‖ —, to tolerance 1e-14, keeping the best feasible point)."""
    cons = [
        {"type": "ineq", "fun": lambda v: S * S - v @ v, "jac": lambda v: -2 * v},
        {
            "type": "ineq",
            "fun": lambda v: beta * beta - (v - theta) @ H @ (v - theta),
            "jac": lambda v: -2 * H @ (v - theta),
        },
    ]
    best = -np.inf
    for start in (theta, np.zeros_like(theta), S * x / np.linalg.norm(x)):
        res = minimize(
            lambda v: -x @ v,
            start,
            jac=lambda v: -x,
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        )
        v = res.x
        if v @ v <= S * S * (1 + 1e-7) and (v - theta) @ H @ (v - theta) <= beta * beta * (1 + 1e-7):
            best = max(best, float(x @ v))
    return best


def _robust_ucb(
    theta_star,
    contexts,
    noise,
    *,
    lam,
    reg,
    S,
    kind,
    beta,
    sigma_fn,
    tau_fn,
    nus,
    budget,
    arm_rule="ellipsoid",
):
    """The loop both robust baselines share: UCB with H⁻¹ (or, ``arm_rule="ellipsoid_ball"``, the
    maximum over the ellipsoid and the ball by SLSQP); σ_t, τ_t from H_{t−1}; refit over rounds 1..t;
    H_t = H_{t−1} + X_tX_tᵀ/σ_t²."""
    T, _, d = contexts.shape
    H = lam * np.eye(d)
    theta = np.zeros(d)
    Xs, rs, sig, taus = [], [], [], []
    spent = 0.0
    actions, regrets = np.zeros(T, int), np.zeros(T)
    for t in range(1, T + 1):
        X = contexts[t - 1]
        H_inv = np.linalg.inv(H)
        widths = np.sqrt(np.einsum("ki,ij,kj->k", X, H_inv, X))
        if arm_rule == "ellipsoid":
            a = lowest_argmax(X @ theta, beta(t - 1) * widths)
        else:
            scores = np.array([ellipsoid_ball_value(x, theta, H, beta(t - 1), S) for x in X])
            a = lowest_argmax(scores, np.zeros_like(scores))
        x = X[a]
        means = X @ theta_star
        c, spent = flip_corruption(means[a], spent, budget)
        r = means[a] + noise[t - 1] + c
        actions[t - 1], regrets[t - 1] = a, means.max() - means[a]

        x_norm = widths[a]
        sigma = sigma_fn(nus[t - 1], x_norm)
        w = x_norm / sigma
        Xs.append(x), rs.append(r), sig.append(sigma), taus.append(tau_fn(w, t))
        theta = robust_fit(np.array(Xs), np.array(rs), np.array(sig), np.array(taus), reg, S, kind, x0=theta)
        H = H + np.outer(x, x) / sigma**2
    return actions, regrets


def heavy_oful(
    theta_star,
    contexts,
    noise,
    *,
    eps,
    nu,
    S=1.0,
    L=1.0,
    lam=None,
    delta=None,
    sigma_min=None,
    beta=None,
    beta_scale=1.0,
    nus=None,
    budget=0.0,
):
    """Heavy-OFUL (Huang et al. 2023) with the constants of the authors' experiment script:
    c₀ = 1/√(23 log(2T²/δ)), c₁ = (log 3T)^{(1−ε)/(1+ε)}/(48 log(2T²/δ)^{2/(1+ε)}),
    κ = d log(1 + TL²/(dλσ_min²)), τ₀ = √(2κ)(log 3T)^e/log(2T²/δ)^{1/(1+ε)}, e = (1−ε)/(2(1+ε)),
    σ_t = max{ν_t, σ_min, ‖X‖/c₀, √‖X‖/(2c₁κ)^{1/4}}, τ_t = τ₀√(1+w²)/w t^e,
    β_t = 3√λS + 24 t^e √(2κ)(log 3T)^e log(2T²/δ)^{ε/(1+ε)} (0⁰ = 1), Huber loss, (λ/2)‖θ‖²."""
    T, _, d = contexts.shape
    lam = d / S**2 if lam is None else lam
    delta = 1.0 / T if delta is None else delta
    sigma_min = 1 / math.sqrt(T) if sigma_min is None else sigma_min
    e = (1 - eps) / (2 * (1 + eps))
    lg = math.log(2 * T * T / delta)
    c0 = 1 / math.sqrt(23 * lg)
    c1 = math.log(3 * T) ** ((1 - eps) / (1 + eps)) / (48 * lg ** (2 / (1 + eps)))
    kappa = d * math.log(1 + T * L * L / (d * lam * sigma_min**2))
    tau0 = math.sqrt(2 * kappa) * math.log(3 * T) ** e / lg ** (1 / (1 + eps))
    nus = np.full(T, nu) if nus is None else nus

    def radius(t):
        if beta is not None:
            return beta_scale * beta
        return beta_scale * (
            3 * math.sqrt(lam) * S
            + 24
            * (t**e if t > 0 else 1.0)
            * math.sqrt(2 * kappa)
            * math.log(3 * T) ** e
            * lg ** (eps / (1 + eps))
        )

    def sigma_fn(nu_t, x_norm):
        return max(nu_t, sigma_min, x_norm / c0, math.sqrt(x_norm) / (2 * c1 * kappa) ** 0.25)

    def tau_fn(w, t):
        return tau0 * math.sqrt(1 + w * w) / w * t**e

    return _robust_ucb(
        theta_star,
        contexts,
        noise,
        lam=lam,
        reg=lam,
        S=S,
        kind="huber",
        beta=radius,
        sigma_fn=sigma_fn,
        tau_fn=tau_fn,
        nus=nus,
        budget=budget,
    )


def gadaoful(
    theta_star,
    contexts,
    noise,
    *,
    nu,
    C,
    constants="public",
    S=1.0,
    L=1.0,
    beta=None,
    beta_scale=1.0,
    nus=None,
    budget=0.0,
    arm_rule=None,
    **overrides,
):
    """GAdaOFUL (Yu et al.) for the identity link, pseudo-Huber loss, (λk/2)‖θ‖², ‖θ‖ ≤ S,
    σ_t = max{ν_t, σ_min, ‖X‖/m₀, α_C√‖X‖}, τ_t = τ₀√(1+w²)/w, H_t = H_{t−1} + XXᵀ/σ_t², with
    m₁ = 1/(42 log(2T²/δ)), κ = d log(1 + TL²/(dλσ_min²)), α_C = max(√K/(m₁d)^{1/4}, √C κ^{−1/4}).
    Public constants: λ = 0.1, k = 1/6, K = 1/4, δ = 0.001, τ₀ = m₀ = β = 1; the identity-link script's:
    λ = 20, k = 1, τ₀ = 1, m₀ = 1.5, α_C = 1, β = 0.6. Theory constants:
    λ = d/S², k = K = 1, δ = 1/T, τ₀ = max(√(2κ), 2√d)/√log(2T²/δ), m₀ = 1/(6√(3 log(2T²/δ))),
    β_t = (64/k)(2√(κ log(2t²/δ)) + √(d log(2t²/δ))) + 5√λS + 4√κ/k at t ≥ 1."""
    T, _, d = contexts.shape
    if arm_rule is None:  # the authors' presets use their rule
        arm_rule = "ellipsoid" if constants == "theory" else "ellipsoid_ball"
    if constants == "public":
        p = dict(lam=0.1, k=1 / 6, K=0.25, delta=0.001, tau0=1.0, m0=1.0)
    elif constants == "public_identity":  # NeXAIS/GAdaOFUL GAdaOFUL.py: lambda_ = 20, m_0 = 1.5, alpha = 1
        p = dict(lam=20.0, k=1.0, K=1.0, delta=0.001, tau0=1.0, m0=1.5, alpha_c=1.0)
    else:
        p = dict(lam=d / S**2, k=1.0, K=1.0, delta=1.0 / T)
    p["sigma_min"] = 1 / math.sqrt(T)
    p.update(overrides)
    lam, k, delta = p["lam"], p["k"], p["delta"]
    lg = math.log(2 * T * T / delta)
    kappa = d * math.log(1 + T * L * L / (d * lam * p["sigma_min"] ** 2))
    m1 = 1 / (42 * lg)
    if constants == "theory":
        p.setdefault("tau0", max(math.sqrt(2 * kappa), 2 * math.sqrt(d)) / math.sqrt(lg))
        p.setdefault("m0", 1 / (6 * math.sqrt(3 * lg)))
    alpha_c = p.get("alpha_c", max(math.sqrt(p["K"]) / (m1**0.25 * d**0.25), math.sqrt(C) * kappa**-0.25))
    nus = np.full(T, nu) if nus is None else nus

    def radius(t):
        if beta is not None:
            return beta_scale * beta
        if constants == "public":
            return beta_scale * 1.0
        if constants == "public_identity":
            return beta_scale * 0.6
        t = max(t, 1)
        l2 = math.log(2 * t * t / delta)
        return beta_scale * (
            (64 / k) * (2 * math.sqrt(kappa * l2) + math.sqrt(d * l2))
            + 5 * math.sqrt(lam) * S
            + 4 * math.sqrt(kappa) / k
        )

    def sigma_fn(nu_t, x_norm):
        return max(nu_t, p["sigma_min"], x_norm / p["m0"], alpha_c * math.sqrt(x_norm))

    def tau_fn(w, t):
        return p["tau0"] * math.sqrt(1 + w * w) / w

    return _robust_ucb(
        theta_star,
        contexts,
        noise,
        lam=lam,
        reg=lam * k,
        S=S,
        kind="pseudo_huber",
        beta=radius,
        sigma_fn=sigma_fn,
        tau_fn=tau_fn,
        nus=nus,
        budget=budget,
        arm_rule=arm_rule,
    )


# --------------------------------------------------------------------------------------------------
# GLB-OMD (Zhang, Xu, Zhao & Sugiyama 2025), identity link
# --------------------------------------------------------------------------------------------------


def omd_glb(
    theta_star,
    contexts,
    noise,
    *,
    lam=None,
    eta=1.0,
    sigma=1.0,
    S=1.0,
    L=1.0,
    delta=None,
    beta=None,
    beta_scale=1.0,
    budget=0.0,
):
    """Algorithm 1 with ℓ_t(θ) = (r_t − xᵀθ)²/(2σ²): H̃ = H + η xxᵀ/σ², θ' = θ − η H̃⁻¹∇ℓ_t(θ) (solved),
    θ ← the H̃-norm projection of θ' onto ‖θ‖ ≤ S, H ← H + xxᵀ/σ²; UCB with
    β_t = √(4λS² + 2η log(1/δ) + d(6η²+η) log(1 + tL²/(σ²λ))) in round t (1-based)."""
    T, _K, d = contexts.shape
    lam = float(d) if lam is None else lam
    delta = 1.0 / T if delta is None else delta
    H = lam * np.eye(d)
    theta = np.zeros(d)
    spent = 0.0
    actions, regrets = np.zeros(T, int), np.zeros(T)
    for t in range(T):
        X = contexts[t]
        if beta is None:
            growth = (t + 1) * L * L / (sigma**2 * lam)
            radius = math.sqrt(
                4 * lam * S * S + 2 * eta * math.log(1 / delta) + d * (6 * eta**2 + eta) * math.log1p(growth)
            )
        else:
            radius = beta
        widths = np.sqrt(np.einsum("ki,ij,kj->k", X, np.linalg.inv(H), X))
        a = lowest_argmax(X @ theta, beta_scale * radius * widths)
        x = X[a]
        means = X @ theta_star
        c, spent = flip_corruption(means[a], spent, budget)
        r = means[a] + noise[t] + c
        actions[t], regrets[t] = a, means.max() - means[a]
        hessian = np.outer(x, x) / sigma**2
        gradient = (x @ theta - r) * x / sigma**2
        H_tilde = H + eta * hessian
        theta = project_v_ball(theta - eta * np.linalg.solve(H_tilde, gradient), H_tilde, S)
        H = H + hessian
    return actions, regrets


# --------------------------------------------------------------------------------------------------
# CRT (Medina & Yang 2016, as in Xue et al. 2020's public code)
# --------------------------------------------------------------------------------------------------


def crt(
    theta_star, contexts, noise, *, eps, nu, lam=1.0, S=1.0, delta=0.01, beta=None, beta_scale=1.0, budget=0.0
):
    """Ridge regression on rewards zeroed when |y_t| > t^{1/(2(1+ε))} (t counting the current one), V and
    its determinant kept explicitly; β_t = 2√(2 t^{1/(1+ε)} log(√(det V_t/det λI)/δ)) + √(2v² log t) + √λS
    with v = ν^{1+ε} after t observations (β_0 = √λS)."""
    T, _K, d = contexts.shape
    V = lam * np.eye(d)
    b = np.zeros(d)
    spent = 0.0
    v = nu ** (1 + eps)
    actions, regrets = np.zeros(T, int), np.zeros(T)
    for t in range(T):  # t observations so far
        X = contexts[t]
        theta = np.linalg.solve(V, b)
        if beta is None:
            log_ratio = 0.5 * (np.linalg.slogdet(V)[1] - d * math.log(lam))
            radius = (
                2 * math.sqrt(2 * t ** (1 / (1 + eps)) * max(log_ratio + math.log(1 / delta), 0.0))
                + math.sqrt(2 * v * v * math.log(max(t, 1)))
                + math.sqrt(lam) * S
            )
        else:
            radius = beta
        widths = np.sqrt(np.einsum("ki,ij,kj->k", X, np.linalg.inv(V), X))
        a = lowest_argmax(X @ theta, beta_scale * radius * widths)
        x = X[a]
        means = X @ theta_star
        c, spent = flip_corruption(means[a], spent, budget)
        y = means[a] + noise[t] + c
        actions[t], regrets[t] = a, means.max() - means[a]
        y_truncated = y if abs(y) <= (t + 1) ** (1 / (2 * (1 + eps))) else 0.0
        V = V + np.outer(x, x)
        b = b + y_truncated * x
    return actions, regrets


# --------------------------------------------------------------------------------------------------
# Multi-layer OFUL (M_OFUL of He et al. 2022's public code, unweighted)
# --------------------------------------------------------------------------------------------------


def multilayer_oful(
    theta_star,
    contexts,
    noise,
    layers,
    *,
    lam=1.0,
    S=1.0,
    L=1.0,
    R=0.5,
    beta_scale=1.0,
    delta=0.033,
    budget=0.0,
):
    """``layers[t]`` (1-based) is round t's layer, drawn outside. Global and per-layer Gram matrices kept
    explicitly; the arm maximises min(global UCB with β_{t,ℓ}, layer ℓ's UCB with γ_{t,ℓ})."""
    T, _K, d = contexts.shape
    n_layers = int(math.log2(2 * T) + 1)
    G, g = lam * np.eye(d), np.zeros(d)
    Gl, gl = [lam * np.eye(d) for _ in range(n_layers)], [np.zeros(d) for _ in range(n_layers)]
    spent = 0.0
    actions, regrets = np.zeros(T, int), np.zeros(T)
    for t in range(T):
        ell = int(layers[t])
        tr = t + 1
        a_t = math.sqrt(math.log(1 + tr * L * L / ((R + 1) ** 2 * lam)))
        l1 = math.log(4 * tr * tr / delta)
        l2 = math.log(4 * tr * tr * n_layers / delta)
        beta = (
            8 * math.sqrt(d * a_t * l1) + 4 * math.sqrt(d) * l1 + math.sqrt(lam) * S + 2**ell * math.sqrt(d)
        )
        gamma = (
            8 * math.sqrt(d * a_t * l2)
            + 4 * math.sqrt(d) * l2
            + (math.log(2 * ell * ell / delta) + 3) * math.sqrt(d)
            + math.sqrt(lam) * S
        )
        X = contexts[t]

        def ucb(M, b, radius):
            mean = X @ np.linalg.solve(M, b)
            bonus = beta_scale * radius * np.sqrt(np.einsum("ki,ij,kj->k", X, np.linalg.inv(M), X))
            return mean + bonus, np.abs(mean) + np.abs(bonus)

        s_g, m_g = ucb(G, g, beta)
        s_l, m_l = ucb(Gl[ell - 1], gl[ell - 1], gamma)
        scores = np.minimum(s_g, s_l)
        tol = 1e-12 * np.max(m_g + m_l)
        a = int(np.flatnonzero(scores >= scores.max() - tol)[0])
        x = X[a]
        means = X @ theta_star
        c, spent = flip_corruption(means[a], spent, budget)
        r = means[a] + noise[t] + c
        actions[t], regrets[t] = a, means.max() - means[a]
        G, g = G + np.outer(x, x), g + r * x
        Gl[ell - 1], gl[ell - 1] = Gl[ell - 1] + np.outer(x, x), gl[ell - 1] + r * x
    return actions, regrets


# --------------------------------------------------------------------------------------------------
# TOFU (Shao et al. 2018, as in Xue et al. 2020's public code)
# --------------------------------------------------------------------------------------------------


def tofu(
    theta_star, contexts, noise, *, eps, nu, lam=1.0, S=1.0, delta=0.01, beta=None, beta_scale=1.0, budget=0.0
):
    """Every round: V = λI + Σ xxᵀ, R = V^{−1/2} by eigh, M = R Xᵀ over the whole history,
    u_i = Σ_s M_is y_s 1{|y_s M_is| ≤ b_t}, θ̂ = R u, b_t = (v/log(2T/δ))^{1/2} t^{(1−ε)/(2(1+ε))};
    β_t = 4√d ν (log(2dT/δ))^{ε/(1+ε)} t^{(1−ε)/(2(1+ε))} + √λS after t ≥ 1 rounds, β_0 = √λS."""
    T, _K, d = contexts.shape
    V = lam * np.eye(d)
    theta = np.zeros(d)
    xs, ys = [], []
    spent = 0.0
    v = nu ** (1 + eps)
    power = (1 - eps) / (2 * (1 + eps))
    actions, regrets = np.zeros(T, int), np.zeros(T)
    for t in range(T):  # t observations so far
        X = contexts[t]
        if beta is not None:
            radius = beta
        elif t == 0:
            radius = math.sqrt(lam) * S
        else:
            log_term = math.log(2 * d * T / delta)
            radius = 4 * math.sqrt(d) * nu * log_term ** (eps / (1 + eps)) * t**power + math.sqrt(lam) * S
        widths = np.sqrt(np.einsum("ki,ij,kj->k", X, np.linalg.inv(V), X))
        a = lowest_argmax(X @ theta, beta_scale * radius * widths)
        x = X[a]
        means = X @ theta_star
        c, spent = flip_corruption(means[a], spent, budget)
        y = means[a] + noise[t] + c
        actions[t], regrets[t] = a, means.max() - means[a]
        xs.append(x)
        ys.append(y)
        V = V + np.outer(x, x)
        w, Q = np.linalg.eigh(V)
        R = Q @ np.diag(w**-0.5) @ Q.T
        M = R @ np.array(xs).T  # [d, t+1]
        Y = np.array(ys)[None, :]
        b = math.sqrt(v / math.log(2 * T / delta)) * (t + 1) ** power
        u = np.sum(np.where(np.abs(Y * M) <= b, M * Y, 0.0), axis=1)
        theta = R @ u
    return actions, regrets
