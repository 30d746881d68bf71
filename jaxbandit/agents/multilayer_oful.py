"""Multi-layer OFUL: corruption-agnostic OFUL with Lykouris, Mirrokni & Paes Leme's (2018) layers, as He,
Zhou, Zhang & Gu (2022) run it (the multi-level OFUL of Zhao, Zhou & Gu 2021 in their public code,
``M_OFUL`` in uclaml/CW-OFUL ``bandits.py``, unweighted: σ_t = 1). It does not need to know C.

There are L = ⌊log₂(2T)⌋ + 1 layers ℓ = 1..L; layer ℓ is drawn with probability 2^{−ℓ} (the remaining
2^{−L} goes to layer 1), so a corruption of total C reaches layer ℓ ≈ C·2^{−ℓ} times: layers with
2^ℓ ≥ C are nearly clean. A global ridge estimator (θ_g, Σ_g) learns from every round and layer ℓ's own
(θ_ℓ, Σ_ℓ) only from the rounds it was drawn in (Σ = λI + Σ xxᵀ, θ = Σ⁻¹Σ r x). In round t (1-based)
with layer ℓ the learner plays

    argmax_x min{⟨x, θ_g⟩ + c·β_{t,ℓ}‖x‖_{Σ_g⁻¹},  ⟨x, θ_ℓ⟩ + c·γ_{t,ℓ}‖x‖_{Σ_ℓ⁻¹}},
    a_t = √(log(1 + tL_x²/((R+1)²λ))),   l_1 = log(4t²/δ),   l_2 = log(4t²L/δ),
    β_{t,ℓ} = 8√(d·a_t·l_1) + 4√d·l_1 + √λS + 2^ℓ√d,
    γ_{t,ℓ} = 8√(d·a_t·l_2) + 4√d·l_2 + (log(2ℓ²/δ) + 3)√d + √λS,

the global set widened for a corruption of 2^ℓ, the layer's own for the O(log) it sees (a_t is the square
root of the log, as in the public code). Defaults are that code's — δ = 0.033, λ = 1, R = 0.5, L_x = 1,
S = 1 — except c = 1 (``beta_scale``; the code's 0.5 is a hand-tuned scale). Randomised
(``Algorithm(randomized=True)``): each update draws the next round's layer from its key; round 1 uses
layer 1 (``init`` has no key).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import argmax_lowest, clamp_reward, dot, ellipsoid_norm, matvec, sherman_morrison
from ..core.types import Algorithm
from . import registry

Array = jax.Array


class MultiLayerOFULState(NamedTuple):
    """State after t rounds: the global Σ_g⁻¹ `[d, d]` and b_g `[d]`, the layers' Σ_ℓ⁻¹ `[L, d, d]` and
    b_ℓ `[L, d]` (index ℓ − 1), the layer of the next round (int32, 1-based) and t (int32)."""

    Sigma_inv: Array
    b: Array
    layer_Sigma_inv: Array
    layer_b: Array
    layer: Array
    t: Array


def num_layers(horizon: int) -> int:
    """L = ⌊log₂(2T)⌋ + 1."""
    return int(math.log2(2 * horizon) + 1)


def layer_log_probabilities(horizon: int):
    """log P(ℓ) for ℓ = 1..L: 2^{−ℓ}, with the remaining 2^{−L} added to layer 1. `[L]`"""
    L = num_layers(horizon)
    probs = [2.0**-ell for ell in range(1, L + 1)]
    probs[0] += 2.0**-L
    return jnp.log(jnp.asarray(probs, float_dtype()))


def multilayer_radii(t, layer, *, dim, num_layers, lam, S, L, R, delta):
    """(β_{t,ℓ}, γ_{t,ℓ}) of round t (1-based) and layer ℓ (see the module docstring)."""
    t, ell = as_float(t), as_float(layer)
    lam, delta = as_float(lam), as_float(delta)
    sqrt_d = jnp.sqrt(as_float(dim))
    a = jnp.sqrt(jnp.log1p(t * as_float(L) ** 2 / ((as_float(R) + 1.0) ** 2 * lam)))
    l1 = jnp.log(4.0 * t**2 / delta)
    l2 = jnp.log(4.0 * t**2 * num_layers / delta)
    ridge = jnp.sqrt(lam) * as_float(S)
    beta = 8.0 * jnp.sqrt(as_float(dim) * a * l1) + 4.0 * sqrt_d * l1 + ridge + jnp.exp2(ell) * sqrt_d
    gamma = (
        8.0 * jnp.sqrt(as_float(dim) * a * l2)
        + 4.0 * sqrt_d * l2
        + (jnp.log(2.0 * ell**2 / delta) + 3.0) * sqrt_d
        + ridge
    )
    return beta, gamma


def multilayer_oful(
    horizon: int,
    dim: int,
    *,
    lam: ArrayLike = 1.0,
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    R: ArrayLike = 0.5,
    beta_scale: ArrayLike = 1.0,
    delta: ArrayLike = 0.033,
) -> Algorithm:
    """Multi-layer OFUL (see the module docstring for the equations).

    Args:
      horizon: T, rounds per run (static); it sets the number of layers.
      dim: d, the context dimension (static).
      lam: ridge λ > 0 (default 1).
      S: the bound ‖θ*‖ ≤ S (default 1).
      L: the bound ‖X_t‖ ≤ L (default 1).
      R: the noise range of the radius (default 0.5).
      beta_scale: c, multiplies both radii (default 1; the public code's is 0.5).
      delta: confidence δ ∈ (0, 1) (default 0.033, the public code's).

    Every numeric argument may be a traced scalar.
    """
    horizon = V.check_int("horizon", horizon)
    dim = V.check_int("dim", dim)
    for name, value in (("lam", lam), ("S", S), ("L", L), ("R", R), ("beta_scale", beta_scale)):
        V.check_positive(name, value, required=True)
    V.check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    layers = num_layers(horizon)
    lam_ = as_float(lam)

    def init() -> MultiLayerOFULState:
        dtype = float_dtype()
        eye = (jnp.eye(dim, dtype=dtype) / lam_).astype(dtype)
        return MultiLayerOFULState(
            Sigma_inv=eye,
            b=jnp.zeros(dim, dtype),
            layer_Sigma_inv=jnp.broadcast_to(eye, (layers, dim, dim)),
            layer_b=jnp.zeros((layers, dim), dtype),
            layer=jnp.ones((), jnp.int32),
            t=jnp.zeros((), jnp.int32),
        )

    def select(state: MultiLayerOFULState, contexts: Array, key: Array) -> Array:
        del key  # the layer was drawn by the previous update
        dtype = state.b.dtype
        beta, gamma = multilayer_radii(
            state.t + 1, state.layer, dim=dim, num_layers=layers, lam=lam_, S=S, L=L, R=R, delta=delta
        )
        c = as_float(beta_scale)
        i = state.layer - 1
        layer_inv, layer_b = state.layer_Sigma_inv[i], state.layer_b[i]
        mean_g = dot(contexts, matvec(state.Sigma_inv, state.b))
        bonus_g = (c * beta).astype(dtype) * ellipsoid_norm(state.Sigma_inv, contexts)
        mean_l = dot(contexts, matvec(layer_inv, layer_b))
        bonus_l = (c * gamma).astype(dtype) * ellipsoid_norm(layer_inv, contexts)
        scores = jnp.minimum(mean_g + bonus_g, mean_l + bonus_l)
        scale = jnp.max(jnp.abs(mean_g) + jnp.abs(bonus_g) + jnp.abs(mean_l) + jnp.abs(bonus_l))
        return argmax_lowest(scores, scale)

    def update(state: MultiLayerOFULState, x: Array, reward: Array, nu: Array, key: Array):
        dtype = state.b.dtype
        r = clamp_reward(reward, dtype)
        one = jnp.ones((), dtype)
        i = state.layer - 1
        rx = r * x
        # The layer's row as the same expression as the global b (a scatter-add rounds differently in a
        # vmap batch than alone).
        layer_inv = sherman_morrison(state.layer_Sigma_inv[i], x, one)
        return MultiLayerOFULState(
            Sigma_inv=sherman_morrison(state.Sigma_inv, x, one),
            b=state.b + rx,
            layer_Sigma_inv=state.layer_Sigma_inv.at[i].set(layer_inv),
            layer_b=state.layer_b.at[i].set(state.layer_b[i] + rx),
            layer=(jax.random.categorical(key, layer_log_probabilities(horizon)) + 1).astype(jnp.int32),
            t=state.t + 1,
        )

    return Algorithm(
        init=init,
        select=select,
        update=update,
        dim=dim,
        horizon=horizon,
        uses_revealed_nu=False,
        randomized=True,
    )


registry.register(
    registry.AlgorithmSpec(
        name="multilayer_oful",
        label="Multi-layer OFUL",
        factory=multilayer_oful,
        build=lambda p, h: multilayer_oful(
            p.horizon, p.dim, S=p.S, L=p.L, lam=h["lam"], beta_scale=h["beta_scale"]
        ),
        theory=lambda p: {"beta_scale": 1.0, "lam": 1.0},
        grid={
            "beta_scale": (1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.5, 1.0),
            "lam": registry.RIDGE_FACTORS,
        },
        cost="O(1)",
        knowledge=("S", "L"),
        source="Lykouris et al. 2018's layers, as M_OFUL in He et al. 2022's public code",
        color="#777777",
    )
)
