"""GAdaOFUL (Yu et al.; the seed paper's experimental comparator) for the linear (identity) link.

Every round it refits an adaptive pseudo-Huber regression over all past rounds (def:yu_estimator of the
seed paper), so its per-round cost grows with t: the point of the seed paper's Figure 1b. In round t:

- choose X_t = argmax_x ⟨x, θ̂_{t−1}⟩ + β_{t−1}‖x‖_{H_{t−1}⁻¹}, ties to the lowest index;
- σ_t = max{ν_t, σ_min, ‖X_t‖_{H_{t−1}⁻¹}/m₀, α_C √‖X_t‖_{H_{t−1}⁻¹}}, w_t = ‖X_t‖_{H_{t−1}⁻¹}/σ_t,
  τ_t = τ₀ √(1 + w_t²)/w_t;
- θ̂_t = argmin_{‖θ‖ ≤ S} (λk/2)‖θ‖² + Σ_{s≤t} φ_{τ_s}((r_s − ⟨X_s, θ⟩)/σ_s), solved by
  ``robust_regression.solve`` to ``tol``, warm-started at the last point where the previous refit
  evaluated the objective (within ``tol`` of θ̂_{t−1}), whose value, gradient and Hessian are carried in
  the state and brought up to round t by adding round t's term — so a refit whose first Newton step is
  accepted costs one pass over the history (O(t d²)), not two or more;
- H_t = H_{t−1} + X_tX_tᵀ/σ_t² (H₀ = λI), H⁻¹ by Sherman–Morrison.

The loss is the standard pseudo-Huber φ_τ(x) = τ²(√(1 + (x/τ)²) − 1), whose derivative τx/√(τ² + x²) is
what the public GAdaOFUL code uses; the seed paper's def:pseudo_huber, τ²(√(τ² + x²) − 1), misplaces a τ.
The regulariser is (λk/2)‖θ‖²: def:yu_estimator writes λ/2, the public code λ·k/2 with the link's
lower slope bound k (1/6 there); for the identity link k = 1. α_C and m₁ use the upper slope bound K.

Two sets of constants (``constants=``), each overridable argument by argument. Shared:
σ_min = 1/√T, m₁ = 1/(42 log(2T²/δ)), κ = d log(1 + TL²/(dλσ_min²)),
α_C = max{√K/(m₁^{1/4} d^{1/4}), √C κ^{−1/4}}.

- ``"public"``: the GAdaOFUL authors' *exp-link* experiment notebook (NeXAIS/GAdaOFUL, ``gada1.ipynb``,
  first commit): λ = 0.1, k = 1/6 (the exp link's lower slope bound), K = 1/4, δ = 0.001, τ₀ = 1, m₀ = 1,
  β = 1 constant. (That notebook starts with β = √λ in round 1, which picks the same arm as any β > 0
  because θ̂₀ = 0.) Their C is a count of flipped rounds, not a budget.
- ``"public_identity"``: the authors' *identity-link* script (``GAdaOFUL.py``): λ = 20, k = 1, τ₀ = 1,
  m₀ = 1.5, α_C = 1 (no C in it), β = 0.6 constant, σ_min = 1/√T (K and δ then enter nothing).
- ``"theory"``: the formulas left as comments in that notebook: λ = d/S², k = K = 1, δ = 1/T,
  τ₀ = max{√(2κ), 2√d}/√log(2T²/δ), m₀ = 1/(6√(3 log(2T²/δ))),
  β_t = (64/k)(2√(κ log(2t²/δ)) + √(d log(2t²/δ))) + 5√λ S + 4√κ/k (the comment's 5√d is 5√λS at
  λ = d/S²), evaluated at t ≥ 1 (β₁ is used in round 1).

The arm rule: the authors' presets (``"public"``, ``"public_identity"``) use their rule by default, the
maximum of ⟨x, θ⟩ over the confidence ellipsoid intersected with the ball ‖θ‖ ≤ S (their code solves it
by SLSQP per arm; here exactly, ``arm_rule="ellipsoid_ball"``); ``"theory"`` uses the usual UCB
⟨x, θ̂⟩ + β‖x‖_{H⁻¹} (``arm_rule="ellipsoid"``). Other differences from the public code, by design: the
refit is solved to ``tol`` (the code stops SLSQP at its defaults), and ``corruption`` is a budget C on
Σ|c_t|.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import (
    argmax_lowest,
    clamp_reward,
    ellipsoid_ball_scores,
    ellipsoid_norm,
    select_ucb,
    sherman_morrison,
)
from ..core.types import Algorithm
from . import registry, robust
from . import robust_regression as rr

Array = jax.Array

#: The authors' constants: ``"public"`` from their exp-link experiment notebook (gada1.ipynb),
#: ``"public_identity"`` from their identity-link script (GAdaOFUL.py). ``alpha_c=None``: the α_C formula.
PUBLIC_CONSTANTS: dict[str, dict[str, float | None]] = {
    "public": dict(
        lam=0.1, reg_scale=1.0 / 6.0, link_bound=0.25, delta=0.001, tau0=1.0, m0=1.0, alpha_c=None, beta=1.0
    ),
    "public_identity": dict(
        lam=20.0, reg_scale=1.0, link_bound=1.0, delta=0.001, tau0=1.0, m0=1.5, alpha_c=1.0, beta=0.6
    ),
}
PRESETS = ("public", "public_identity", "theory")
ARM_RULES = ("ellipsoid", "ellipsoid_ball")


class GAdaOFULState(NamedTuple):
    """State after t rounds: H_t⁻¹ `[d, d]`, θ̂_t `[d]`, the history buffers (the contexts by component
    `[d, N]`, as ``robust_regression.History`` keeps them; r, σ, τ `[N]`), the refit's warm start (the
    point θₑ `[d]` last evaluated and the objective's value, gradient `[d]` and Hessian `[d, d]` there over
    the t rounds: a cache, see ``robust_regression.solve``) and t."""

    H_inv: Array
    theta: Array
    XT_hist: Array
    r_hist: Array
    sigma_hist: Array
    tau_hist: Array
    fit_theta: Array
    fit_value: Array
    fit_grad: Array
    fit_hess: Array
    t: Array

    @property
    def X_hist(self) -> Array:
        """The history's contexts `[N, d]` (row s is X_s)."""
        return jnp.swapaxes(self.XT_hist, -1, -2)


class GAdaOFULConstants(NamedTuple):
    lam: Array
    reg_scale: Array  # k
    link_bound: Array  # K
    delta: Array
    sigma_min: Array
    kappa: Array
    tau0: Array
    m0: Array
    alpha_c: Array


def gadaoful_constants(
    *,
    horizon,
    dim,
    corruption,
    constants="public",
    S=1.0,
    L=1.0,
    lam=None,
    reg_scale=None,
    link_bound=None,
    delta=None,
    sigma_min=None,
    tau0=None,
    m0=None,
    alpha_c=None,
) -> GAdaOFULConstants:
    """The preset's constants as ``jnp`` scalars, any of them overridden (see the module docstring)."""
    if constants not in PRESETS:
        raise ValueError(f"constants={constants!r} is invalid: it must be one of {PRESETS}")
    T = as_float(horizon)
    d = as_float(dim)
    public = PUBLIC_CONSTANTS.get(constants)
    if public is not None:
        lam = public["lam"] if lam is None else lam
        reg_scale = public["reg_scale"] if reg_scale is None else reg_scale
        link_bound = public["link_bound"] if link_bound is None else link_bound
        delta = public["delta"] if delta is None else delta
        tau0 = public["tau0"] if tau0 is None else tau0
        m0 = public["m0"] if m0 is None else m0
        alpha_c = public["alpha_c"] if alpha_c is None else alpha_c
    if lam is None:
        lam = d / as_float(S) ** 2
    if reg_scale is None:
        reg_scale = 1.0
    if link_bound is None:
        link_bound = 1.0
    if delta is None:
        delta = 1.0 / T
    lam, delta = as_float(lam), as_float(delta)
    sigma_min = 1.0 / jnp.sqrt(T) if sigma_min is None else as_float(sigma_min)
    log_delta = jnp.log(2.0 * T**2 / delta)
    kappa = robust.kappa(dim=d, horizon=T, L=L, lam=lam, sigma_min=sigma_min)
    m1 = 1.0 / (42.0 * log_delta)
    if tau0 is None:
        tau0 = jnp.maximum(jnp.sqrt(2.0 * kappa), 2.0 * jnp.sqrt(d)) / jnp.sqrt(log_delta)
    if m0 is None:
        m0 = 1.0 / (6.0 * jnp.sqrt(3.0 * log_delta))
    if alpha_c is None:
        alpha_c = jnp.maximum(
            jnp.sqrt(as_float(link_bound)) / (m1**0.25 * d**0.25),
            jnp.sqrt(as_float(corruption)) * kappa**-0.25,
        )
    return GAdaOFULConstants(
        lam,
        as_float(reg_scale),
        as_float(link_bound),
        delta,
        sigma_min,
        kappa,
        as_float(tau0),
        as_float(m0),
        as_float(alpha_c),
    )


def gadaoful_theory_radius(t, *, dim, consts: GAdaOFULConstants, S):
    """β_t = (64/k)(2√(κ log(2t²/δ)) + √(d log(2t²/δ))) + 5√λS + 4√κ/k, at max(t, 1)."""
    t = jnp.maximum(as_float(t), 1.0)
    log_t = jnp.log(2.0 * t**2 / consts.delta)
    k = consts.reg_scale
    return (
        (64.0 / k) * (2.0 * jnp.sqrt(consts.kappa * log_t) + jnp.sqrt(as_float(dim) * log_t))
        + 5.0 * jnp.sqrt(consts.lam) * as_float(S)
        + 4.0 * jnp.sqrt(consts.kappa) / k
    )


def gadaoful(
    horizon: int,
    dim: int,
    *,
    nu: ArrayLike | str,
    corruption: ArrayLike,
    constants: str = "public",
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    lam: ArrayLike | None = None,
    reg_scale: ArrayLike | None = None,
    link_bound: ArrayLike | None = None,
    delta: ArrayLike | None = None,
    sigma_min: ArrayLike | None = None,
    tau0: ArrayLike | None = None,
    m0: ArrayLike | None = None,
    alpha_c: ArrayLike | None = None,
    beta: ArrayLike | None = None,
    beta_scale: ArrayLike = 1.0,
    tol: ArrayLike | None = None,
    max_newton_iters: int = 50,
    arm_rule: str | None = None,
) -> Algorithm:
    """GAdaOFUL for the identity link, ``constants="public"`` (default), ``"public_identity"`` or
    ``"theory"``.

    Args:
      horizon: T, rounds per run (static).
      dim: d, the context dimension (static).

      nu: the noise standard-deviation bound ν > 0 used in σ_t, or ``"revealed"`` for the environment's
        ν_t (with ε = 1 it is the standard-deviation bound).
      corruption: C ≥ 0 (or an upper bound), used only in α_C.
      constants: ``"public"``, ``"public_identity"`` or ``"theory"`` (static), see the module docstring.
      S: the bound ‖θ*‖ ≤ S, also the estimator's constraint (default 1).
      L: the bound ‖X_t‖ ≤ L (default 1).
      lam: overrides the preset's λ.
      reg_scale: overrides the preset's k.
      link_bound: overrides the preset's K.
      delta: overrides the preset's δ.
      sigma_min: overrides the preset's σ_min.
      tau0: overrides the preset's τ₀.
      m0: overrides the preset's m₀.
      alpha_c: overrides the preset's α_C.
      beta: a constant radius ≥ 0 replacing the preset's.
      beta_scale: multiplies the radius (default 1).
      arm_rule: ``"ellipsoid"``: argmax ⟨x, θ̂⟩ + β‖x‖_{H⁻¹}, the maximum of ⟨x, θ⟩ over the confidence
        ellipsoid; ``"ellipsoid_ball"``: the maximum over the ellipsoid intersected with the ball
        ‖θ‖ ≤ S, as the authors' code computes it (by SLSQP; here exactly,
        ``linalg.ellipsoid_ball_scores``). Default: ``"ellipsoid_ball"`` for the authors' presets,
        ``"ellipsoid"`` for ``"theory"``. Static.
      tol: the refit's stopping tolerance on the projected-Newton step (default 1e-10 in float64, 1e-5
        in float32).
      max_newton_iters: the refit's iteration cap (static, default 50).

    Every numeric argument may be a traced scalar. The per-round cost is O(t d²) per pass over the
    history, typically one pass per round (see ``robust_regression.solve``).
    """
    horizon = V.check_int("horizon", horizon)
    dim = V.check_int("dim", dim)
    revealed = robust.check_nu(nu)
    if constants not in PRESETS:
        raise ValueError(f"constants={constants!r} is invalid: it must be one of {PRESETS}")
    V.check_nonnegative("corruption", corruption)
    for name, value in (
        ("S", S),
        ("L", L),
        ("lam", lam),
        ("reg_scale", reg_scale),
        ("link_bound", link_bound),
        ("sigma_min", sigma_min),
        ("tau0", tau0),
        ("m0", m0),
        ("beta_scale", beta_scale),
        ("tol", tol),
    ):
        V.check_positive(name, value)
    V.check_nonnegative("alpha_c", alpha_c)
    V.check_nonnegative("beta", beta)
    V.check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    max_newton_iters = V.check_int("max_newton_iters", max_newton_iters)
    if arm_rule is None:
        arm_rule = "ellipsoid" if constants == "theory" else "ellipsoid_ball"
    if arm_rule not in ARM_RULES:
        raise ValueError(f"arm_rule={arm_rule!r} is invalid: it must be one of {ARM_RULES}")
    consts = gadaoful_constants(
        horizon=horizon,
        dim=dim,
        corruption=corruption,
        constants=constants,
        S=S,
        L=L,
        lam=lam,
        reg_scale=reg_scale,
        link_bound=link_bound,
        delta=delta,
        sigma_min=sigma_min,
        tau0=tau0,
        m0=m0,
        alpha_c=alpha_c,
    )
    nu_const = None if revealed else as_float(nu)
    S_ = as_float(S)
    reg = consts.lam * consts.reg_scale

    if constants in PUBLIC_CONSTANTS and beta is None:
        beta = PUBLIC_CONSTANTS[constants]["beta"]
    radius = robust.radius_schedule(
        lambda t: gadaoful_theory_radius(t, dim=dim, consts=consts, S=S), beta=beta, beta_scale=beta_scale
    )

    def init() -> GAdaOFULState:
        dtype = float_dtype()
        hist = rr.empty_history(horizon, dim, dtype)
        start = rr.initial_point(dim, reg, dtype)
        return GAdaOFULState(
            H_inv=(jnp.eye(dim, dtype=dtype) / consts.lam).astype(dtype),
            theta=jnp.zeros(dim, dtype),
            XT_hist=hist.XT,
            r_hist=hist.r,
            sigma_hist=hist.sigma,
            tau_hist=hist.tau,
            fit_theta=start.theta,
            fit_value=start.value,
            fit_grad=start.grad,
            fit_hess=start.hess,
            t=jnp.zeros((), jnp.int32),
        )

    def select(state: GAdaOFULState, contexts: Array) -> Array:
        beta_t = radius(state.t).astype(state.theta.dtype)
        if arm_rule == "ellipsoid":
            return select_ucb(contexts, state.theta, state.H_inv, beta_t)
        scores = ellipsoid_ball_scores(contexts, state.theta, state.H_inv, beta_t, S_)
        return argmax_lowest(scores, jnp.max(jnp.abs(scores)))

    def update(state: GAdaOFULState, x: Array, reward: Array, nu_t: Array) -> GAdaOFULState:
        dtype = state.theta.dtype
        x_norm = ellipsoid_norm(state.H_inv, x)  # ‖X_t‖_{H_{t−1}⁻¹}
        nu_used = as_float(nu_t) if nu_const is None else nu_const
        sigma = robust.adaptive_scale(
            nu_used, consts.sigma_min, x_norm / consts.m0, consts.alpha_c * jnp.sqrt(x_norm)
        )
        tau = robust.huber_threshold(consts.tau0, robust.weight(x_norm, sigma))
        reward = clamp_reward(reward, dtype)
        hist = rr.append(
            rr.History(state.XT_hist, state.r_hist, state.sigma_hist, state.tau_hist, state.t),
            x,
            reward,
            sigma,
            tau,
        )
        start = rr.add_row(
            rr.Point(state.fit_theta, state.fit_value, state.fit_grad, state.fit_hess),
            x,
            reward,
            sigma,
            tau,
            rr.pseudo_huber,
        )
        fit = rr.solve(start, hist, reg, S_, rr.pseudo_huber, tol=tol, max_iters=max_newton_iters)
        H_inv = sherman_morrison(state.H_inv, x, (1.0 / sigma**2).astype(dtype))
        # Last-resort guards, as in CR-Hvt-UCB: a round whose arithmetic overflowed leaves the estimate and
        # the refit's warm start as they were (H⁻¹'s update guards itself; the history itself holds only
        # finite values).
        fit_finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(a)) for a in (fit.theta, *fit.point)]))
        point = jax.tree_util.tree_map(
            lambda new, old: jnp.where(fit_finite, new, old),
            fit.point,
            rr.Point(state.fit_theta, state.fit_value, state.fit_grad, state.fit_hess),
        )
        return GAdaOFULState(
            H_inv=H_inv,
            theta=jnp.where(fit_finite, fit.theta.astype(dtype), state.theta),
            XT_hist=hist.XT,
            r_hist=hist.r,
            sigma_hist=hist.sigma,
            tau_hist=hist.tau,
            fit_theta=point.theta,
            fit_value=point.value,
            fit_grad=point.grad,
            fit_hess=point.hess,
            t=state.t + 1,
        )

    return Algorithm(
        init=init, select=select, update=update, dim=dim, horizon=horizon, uses_revealed_nu=revealed
    )


def _theory(p: registry.Problem) -> dict:
    """The theory preset's τ₀ and m₀ (they depend on T, d, S and L only), unscaled β."""
    # Evaluated eagerly even inside a trace, so that a jitted sweep uses the same bits as an eager call.
    with jax.ensure_compile_time_eval():
        c = gadaoful_constants(horizon=p.horizon, dim=p.dim, corruption=0.0, constants="theory", S=p.S, L=p.L)
    return {"beta_scale": 1.0, "tau0": c.tau0, "m0": c.m0}


registry.register(
    registry.AlgorithmSpec(
        name="gadaoful",
        label="GAdaOFUL",
        factory=gadaoful,
        build=lambda p, h: gadaoful(
            p.horizon,
            p.dim,
            nu=p.nu,
            corruption=p.corruption,
            constants="theory",
            S=p.S,
            L=p.L,
            beta_scale=h["beta_scale"],
            tau0=h["tau0"],
            m0=h["m0"],
        ),
        theory=_theory,
        grid={
            "beta_scale": (1e-7, 1e-6, 1e-5, 1e-4, 1e-3),
            "tau0": (0.01, 0.03, 0.1, 0.3, 1.0),
            "m0": (1.0,),
        },
        cost="O(t)",
        knowledge=("nu", "corruption", "S", "L"),
        source="Yu et al., GAdaOFUL for the identity link (theory constants of the authors' notebook)",
        color="#CC6677",
    )
)
