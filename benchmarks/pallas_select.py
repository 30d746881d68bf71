"""A Pallas kernel for CR-Hvt-UCB's arm selection (``jb.linalg.select_ucb``), against XLA's, on a GPU.

The round's kernels on an H100 are dominated by passes over the runs' V⁻¹ (docs/performance.md, *On one
H100*): XLA reads V⁻¹ twice for the selection alone (the doubled upper triangle stored, then the
scores). This kernel computes a block of runs' scores in one pass, with the runs on the minor axes
(``[d, d, S, G]``: S streams × G lanes, the layout the sweep's grid has), every sum in the library's
order (``dot``, ``ellipsoid_norm``, ``argmax_lowest``), and returns the chosen arms. It is an
experiment for a GPU lease, not part of the library: it tells whether one kernel for the round pays
before the round is written as one.

On a CPU it runs in Pallas' interpret mode and checks its arms against ``vmap(select_ucb)``; the Triton
lowering is checked there too (``--lower-only``: the kernel lowered for CUDA, not compiled). On a GPU it
also times, interleaved (best of ``--repeats``): XLA's ``vmap(vmap(select_ucb))`` on the library's
runs-major layout, the same on runs-minor inputs, and the kernel; and counts arms that differ.

    python benchmarks/pallas_select.py [--seeds 10000] [--lanes 16] [--repeats 20] [--block-streams 8]
"""

from __future__ import annotations

import argparse
import functools

import common
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

import jaxbandit as jb
from jaxbandit.core import linalg


def _scores_kernel(d: int, K: int):
    """The kernel body for blocks ``a`` `[d, d, m, G]`, ``theta`` `[d, m, G]`, ``beta`` `[m, G]`,
    ``x`` `[K, d, m]` (each stream's contexts, shared by its G lanes) -> ``arm`` `[m, G]` int32 and the
    best score `[m, G]`."""

    def kernel(a_ref, theta_ref, beta_ref, x_ref, arm_ref, best_ref):
        theta = [theta_ref[i] for i in range(d)]
        diag = [a_ref[i, i] for i in range(d)]
        twice = {(i, j): 2.0 * a_ref[i, j] for i in range(d) for j in range(i + 1, d)}
        beta = beta_ref[...]
        scores, scales = [], []
        for k in range(K):
            x = [x_ref[k, i][:, None] for i in range(d)]  # [m, 1]: the stream's context, every lane
            mean = x[0] * theta[0]
            for i in range(1, d):
                mean = mean + x[i] * theta[i]
            quad = None
            for i in range(d):
                inner = diag[i] * x[i]
                for j in range(i + 1, d):
                    inner = inner + twice[(i, j)] * x[j]
                term = x[i] * inner
                quad = term if quad is None else quad + term
            bonus = beta * jnp.sqrt(jnp.maximum(quad, 0.0))
            scores.append(mean + bonus)
            scales.append(jnp.abs(mean) + jnp.abs(bonus))
        best, scale = scores[0], scales[0]
        for k in range(1, K):
            best, scale = jnp.maximum(best, scores[k]), jnp.maximum(scale, scales[k])
        threshold = best - linalg.TIE_ULPS * jnp.finfo(best.dtype).eps * scale
        arm = jnp.full(best.shape, K - 1, jnp.int32)
        for k in range(K - 2, -1, -1):  # the lowest index within the tie tolerance of the best
            arm = jnp.where(scores[k] >= threshold, k, arm)
        arm_ref[...] = arm
        best_ref[...] = best

    return kernel


def pallas_select(a, theta, beta, x, *, block_streams: int = 8, interpret: bool = False):
    """Arms `[S, G]` and best scores `[S, G]` for ``a`` `[d, d, S, G]`, ``theta`` `[d, S, G]`, ``beta``
    `[S, G]`, ``x`` `[K, d, S]`. S must be a multiple of ``block_streams``; G and ``block_streams`` powers
    of two (Triton's blocks)."""
    d, _, S, G = a.shape
    K = x.shape[0]
    m = block_streams
    if m < 1 or S % m or m & (m - 1):
        raise ValueError(
            f"block_streams={m} is invalid: it must be a power of two dividing the number of streams {S}"
        )
    if G & (G - 1):
        raise ValueError(f"a.shape[-1]={G} (lanes) is invalid: it must be a power of two")
    runs = lambda *lead: pl.BlockSpec((*lead, m, G), lambda s: (*(0 for _ in lead), s, 0))
    extra = {} if interpret else {"compiler_params": common.triton_params()}
    return pl.pallas_call(
        _scores_kernel(d, K),
        out_shape=(jax.ShapeDtypeStruct((S, G), jnp.int32), jax.ShapeDtypeStruct((S, G), a.dtype)),
        grid=(S // m,),
        in_specs=[runs(d, d), runs(d), runs(), pl.BlockSpec((K, d, m), lambda s: (0, 0, s))],
        out_specs=(runs(), runs()),
        interpret=interpret,
        **extra,
    )(a, theta, beta, x)


def xla_select(a_major, theta_major, beta, x_streams):
    """The library's path: ``select_ucb`` under a vmap over streams of one over lanes (runs major:
    ``a_major`` `[S, G, d, d]`, ``theta_major`` `[S, G, d]`, ``x_streams`` `[S, K, d]`)."""
    per_lane = jax.vmap(linalg.select_ucb, in_axes=(None, 0, 0, 0))
    return jax.vmap(per_lane)(x_streams, theta_major, a_major, beta)


def xla_best_score(a_major, theta_major, beta, x_streams):
    """The best UCB score of each run as the library computes the scores (``select_ucb``'s sums)."""

    def one(contexts, theta, a, b):
        return jnp.max(linalg.dot(contexts, theta) + b * linalg.ellipsoid_norm(a, contexts))

    return jax.vmap(jax.vmap(one, in_axes=(None, 0, 0, 0)))(x_streams, theta_major, a_major, beta)


def inputs(seeds: int, lanes: int, d: int = common.D, K: int = common.K, seed: int = 0):
    """Random states as a sweep's would be: V⁻¹ = (λI + Σ x xᵀ/σ²)⁻¹ after some rounds, θ̂, β, and unit
    contexts; runs major (the library's layout) and runs minor (the kernel's)."""
    rng = np.random.default_rng(seed)
    n = seeds * lanes
    X = rng.standard_normal((n, 12, d))
    V = d * np.eye(d) + np.einsum("nti,ntj->nij", X, X) * rng.uniform(0.1, 30.0, (n, 1, 1))
    a = np.linalg.inv(V).astype(np.float32).reshape(seeds, lanes, d, d)
    theta = rng.standard_normal((seeds, lanes, d)).astype(np.float32) * 0.3
    beta = rng.uniform(0.01, 3.0, (seeds, lanes)).astype(np.float32)
    x = rng.standard_normal((seeds, K, d))
    x = (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)
    major = (jnp.asarray(a), jnp.asarray(theta), jnp.asarray(beta), jnp.asarray(x))
    minor = (
        jnp.asarray(np.moveaxis(a, (0, 1), (-2, -1))),
        jnp.asarray(np.moveaxis(theta, (0, 1), (-2, -1))),
        jnp.asarray(beta),
        jnp.asarray(np.moveaxis(x, 0, -1)),
    )
    return major, minor


def lowered_for_cuda(seeds: int = 64, lanes: int = 16, block_streams: int = 8) -> str:
    """The kernel lowered for CUDA (Triton), on any machine: the MLIR text, whose Triton module is
    embedded; raises if Pallas cannot lower it."""
    _, minor = inputs(seeds, lanes)
    fn = jax.jit(functools.partial(pallas_select, block_streams=block_streams))
    return common.triton_lowering(fn, *(jax.ShapeDtypeStruct(v.shape, v.dtype) for v in minor))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=None, help="streams (default 10^4 on a GPU, 64 here)")
    parser.add_argument("--lanes", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--block-streams", type=int, default=8)
    parser.add_argument("--lower-only", action="store_true", help="only lower the kernel for CUDA")
    args = parser.parse_args(argv)
    if args.lower_only:
        text = lowered_for_cuda(lanes=args.lanes, block_streams=args.block_streams)
        print(f"lowered for CUDA: {len(text)} characters of MLIR, Triton call: {'xla.gpu.triton' in text}")
        return
    gpu = jax.default_backend() == "gpu"
    seeds = args.seeds or (10_000 if gpu else 64)
    major, minor = inputs(seeds, args.lanes)
    xla = jax.jit(xla_select)
    xla_minor = jax.jit(
        lambda a, th, b, x: xla_select(
            jnp.moveaxis(a, (-2, -1), (0, 1)), jnp.moveaxis(th, (-2, -1), (0, 1)), b, jnp.moveaxis(x, -1, 0)
        )
    )
    kernel = jax.jit(functools.partial(pallas_select, block_streams=args.block_streams, interpret=not gpu))
    arms, best = (np.asarray(v) for v in kernel(*minor))
    differ = int((np.asarray(xla(*major)) != arms).sum())
    reference = np.asarray(jax.jit(xla_best_score)(*major))
    unequal, ulps = common.bitwise_gap(reference, best)
    device = jax.devices()[0].device_kind
    print(
        f"{device}: {seeds} streams x {args.lanes} lanes; arms differing {differ}; best scores not "
        f"bitwise equal {unequal} (at most {ulps:.0f} ulps apart)"
    )
    row = dict(runs=seeds * args.lanes, arms_differing=differ, scores_unequal=unequal, max_ulps=ulps)
    row["device"] = device
    if gpu:
        calls = {
            "xla": lambda: xla(*major).block_until_ready(),
            "xla_runs_minor": lambda: xla_minor(*minor).block_until_ready(),
            "pallas": lambda: jax.block_until_ready(kernel(*minor)),
        }
        best = common.interleaved_best(calls, args.repeats)
        row.update({f"{k}_us": v * 1e6 for k, v in best.items()})
        row["speedup"] = best["xla"] / best["pallas"]
    common.print_table([row], [(k, None if isinstance(v, str) else ".3g") for k, v in row.items()])
    path = common.write_json("pallas_select", {"rows": [row], "jax": jax.__version__, "jb": jb.__version__})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
