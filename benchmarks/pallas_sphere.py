"""A Pallas kernel for the contexts' draw (``envs.streams.uniform_sphere``), against XLA's, on a GPU.

For independent runs each run draws its own stream, and on the H200 the draw of a block of rounds'
contexts took about ten passes over them through memory (docs/performance.md, *Three more things for the
next lease*): XLA cannot make the normals, their norm and the division one kernel, as a point's norm
needs all its components. This kernel draws a block of streams' contexts for one round in one pass,
each thread one stream: per arm the d normals, from the stream's key as ``jax.random.normal`` draws them
(Threefry-2x32 in JAX's partitionable mode, ``runner.threefry.hash_unrolled``; the uniforms on
(−1, 1); ``√2·erf⁻¹`` written as XLA expands ``erf_inv`` for float32), their norm in the library's sum
order (``linalg.norm``), and the point ``radius·g/‖g‖``, stored `[K, d, S]` (the streams minor). It is
an experiment for a GPU lease, not part of the library: whether one kernel pays, and whether its points
are XLA's bit for bit. On a card both should hold: XLA's GPU code rounds every float32 multiply and add
on its own (``mul.rn``/``add.rn``, no FMA), divides with ``div.full.f32`` and takes ``sqrt.approx.f32``,
and a Pallas kernel compiled through XLA's Triton pipeline follows the same rules (read from the PTX of
``gpu_program.py --compile``; the arm selection of ``pallas_select.py`` was bitwise XLA's on the H200).

On a CPU it runs in Pallas' interpret mode and compares its points with XLA's (the random bits exactly;
the points within a few ulps, as the CPU contracts multiply–adds by how a program is fused) and the
Triton lowering is checked (``--lower-only``). On a GPU it also times, interleaved (best of
``--repeats``), XLA's draw in the library's layout (`[R, S, K, d]`), XLA's with the streams minor, and the
kernel, and counts points that differ.

    python benchmarks/pallas_sphere.py [--streams 100000] [--rounds 12] [--repeats 20] [--block 128]
"""

from __future__ import annotations

import argparse

import common
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl

from jaxbandit.envs import streams
from jaxbandit.runner.threefry import hash_unrolled

F32 = np.float32
#: ``jax.random.uniform(key, shape, float32, LOW, 1.0)``, as ``uniform_sphere`` draws its uniforms.
LOW = np.nextafter(F32(-1.0), F32(0.0))
#: XLA's float32 ``erf_inv``: Giles' polynomials in w − 2.5 (w = −log1p(−x²) < 5) and √w − 3, highest
#: power first (the constants of XLA's expansion, read from its optimised program).
ERF_INV_SMALL = tuple(
    map(
        F32,
        (
            2.81022636e-08,
            3.43273939e-07,
            -3.5233877e-06,
            -4.39150654e-06,
            0.00021858087,
            -0.00125372503,
            -0.00417768164,
            0.246640727,
            1.50140941,
        ),
    )
)
ERF_INV_LARGE = tuple(
    map(
        F32,
        (
            -0.000200214257,
            0.000100950558,
            0.00134934322,
            -0.00367342844,
            0.00573950773,
            -0.0076224613,
            0.00943887047,
            1.00167406,
            2.83297682,
        ),
    )
)


def erf_inv(x):
    """XLA's float32 ``erf_inv`` expansion, operation for operation (``x`` in (−1, 1) here)."""
    w = -lax.log1p(x * -x)
    small = w < F32(5.0)
    t = jnp.where(small, w + F32(-2.5), lax.sqrt(w) + F32(-3.0))
    p = jnp.where(small, ERF_INV_SMALL[0], ERF_INV_LARGE[0])
    for lo, hi in zip(ERF_INV_SMALL[1:], ERF_INV_LARGE[1:]):
        p = jnp.where(small, lo, hi) + p * t
    return jnp.where(jnp.abs(x) == F32(1.0), x * F32(np.inf), p * x)


def random_bits(k1, k2, counter):
    """The 32 random bits ``jax.random.bits`` draws at flat index ``counter`` (an int, or a traced int32;
    below 2³²) of a shape under a key with words ``k1``, ``k2`` (uint32 arrays of one shape): JAX's
    partitionable Threefry, the hash of the index's two words, its outputs xor-ed."""
    zero = jnp.zeros_like(k1)
    y1, y2 = hash_unrolled(k1, k2, zero, zero + jnp.asarray(counter, jnp.int32).astype(jnp.uint32))
    return y1 ^ y2


def normal(k1, k2, counter):
    """The float32 normal ``jax.random.normal`` draws at flat index ``counter`` (as :func:`random_bits`):
    its uniform on (−1, 1) as ``uniform_sphere`` draws it, times ``√2·erf⁻¹``."""
    mantissa = lax.shift_right_logical(random_bits(k1, k2, counter), np.uint32(32 - 23))
    bits = mantissa | np.array(1.0, F32).view(np.uint32)
    floats = lax.bitcast_convert_type(bits, jnp.float32) - F32(1.0)
    u = lax.max(LOW, floats * (F32(1.0) - LOW) + LOW)
    return F32(np.sqrt(2)) * erf_inv(u)


def _sphere_kernel(K: int, d: int):
    """The kernel body for blocks ``k1``, ``k2`` `[1, m]` (one round's contexts keys of m streams) and
    ``radius`` `[1]` -> ``out`` `[1, K, d, m]`: an arm a loop iteration, its d normals, their norm in
    ``linalg.norm``'s order and the point, each thread one stream."""

    def kernel(k1_ref, k2_ref, radius_ref, out_ref):
        k1, k2, radius = k1_ref[0], k2_ref[0], radius_ref[0]

        def arm(k, carry):
            g = [normal(k1, k2, k * d + i) for i in range(d)]
            total = g[0] * g[0]
            for i in range(1, d):
                total = total + g[i] * g[i]
            n = lax.sqrt(total)
            for i in range(d):
                out_ref[0, k, i] = (radius * g[i]) / n
            return carry

        lax.fori_loop(0, K, arm, 0)

    return kernel


def pallas_sphere(key_words, radius, K: int, d: int, *, block: int = 128, interpret: bool = False):
    """Contexts `[R, K, d, S]` for the keys' words ``key_words`` `[2, R, S]` uint32 (each stream-round's
    contexts key, ``jax.random.key_data`` moved first) on the sphere of ``radius`` (a float32 scalar).
    S must be a multiple of ``block``, a power of two (Triton's blocks)."""
    if jnp.ndim(key_words) != 3 or jnp.shape(key_words)[0] != 2 or jnp.result_type(key_words) != jnp.uint32:
        raise ValueError(
            f"key_words of shape {jnp.shape(key_words)} and dtype {jnp.result_type(key_words)} is invalid: "
            "it must be [2, R, S] uint32 (jax.random.key_data of [R, S] keys, its last axis moved first)"
        )
    _, R, S = key_words.shape
    if block < 1 or S % block or block & (block - 1):
        raise ValueError(f"block={block} is invalid: it must be a power of two dividing the streams {S}")
    keys = pl.BlockSpec((1, block), lambda r, s: (r, s))
    extra = {} if interpret else {"compiler_params": common.triton_params()}
    return pl.pallas_call(
        _sphere_kernel(K, d),
        out_shape=jax.ShapeDtypeStruct((R, K, d, S), jnp.float32),
        grid=(R, S // block),
        in_specs=[keys, keys, pl.BlockSpec((1,), lambda r, s: (0,))],
        out_specs=pl.BlockSpec((1, K, d, block), lambda r, s: (r, 0, 0, s)),
        interpret=interpret,
        **extra,
    )(key_words[0], key_words[1], jnp.reshape(radius, (1,)).astype(jnp.float32))


def xla_sphere(keys, radius, K: int, d: int):
    """The library's draw: ``uniform_sphere`` under a vmap over rounds of one over streams (``keys``
    `[R, S]`), `[R, S, K, d]`, drawn as on a GPU (the uniforms shaped, ``FLAT_SPHERE_BITS = False``)."""
    before = streams.FLAT_SPHERE_BITS
    streams.FLAT_SPHERE_BITS = False
    try:
        one = lambda key: streams.uniform_sphere(key, (K, d), radius)
        return jax.vmap(jax.vmap(one))(keys)
    finally:
        streams.FLAT_SPHERE_BITS = before


def inputs(rounds: int, num_streams: int, seed: int = 0):
    """Contexts keys `[R, S]` (typed) and their words `[2, R, S]` uint32."""
    keys = jax.random.split(jax.random.key(seed), (rounds, num_streams))
    words = jnp.moveaxis(jax.random.key_data(keys), -1, 0)
    return keys, words


def lowered_for_cuda(num_streams: int = 256, block: int = 128) -> str:
    """The kernel lowered for CUDA (Triton), on any machine: the MLIR text, whose Triton module is
    embedded; raises if Pallas cannot lower it."""
    _, words = inputs(2, num_streams)
    fn = jax.jit(lambda w, r: pallas_sphere(w, r, common.K, common.D, block=block))
    shapes = jax.ShapeDtypeStruct(words.shape, words.dtype), jax.ShapeDtypeStruct((), jnp.float32)
    return common.triton_lowering(fn, *shapes)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=None, help="default 10^5 on a GPU, 256 here")
    parser.add_argument("--rounds", type=int, default=12, help="a block of drawn rounds (10^5 streams: 12)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--block", type=int, default=128, help="streams a kernel instance")
    parser.add_argument("--lower-only", action="store_true", help="only lower the kernel for CUDA")
    args = parser.parse_args(argv)
    if args.lower_only:
        text = lowered_for_cuda(block=args.block)
        print(f"lowered for CUDA: {len(text)} characters of MLIR, Triton call: {'xla.gpu.triton' in text}")
        return
    gpu = jax.default_backend() == "gpu"
    S = args.streams or (100_000 // args.block * args.block if gpu else 256)
    K, d = common.K, common.D
    keys, words = inputs(args.rounds, S)
    radius = jnp.float32(1.0)
    xla = jax.jit(lambda k, r: xla_sphere(k, r, K, d))
    xla_minor = jax.jit(lambda k, r: jnp.moveaxis(xla_sphere(k, r, K, d), 1, -1))
    kernel = jax.jit(lambda w, r: pallas_sphere(w, r, K, d, block=args.block, interpret=not gpu))
    reference = np.moveaxis(np.asarray(xla(keys, radius)), 1, -1)  # [R, K, d, S]
    points = np.asarray(kernel(words, radius))
    unequal, ulps = common.bitwise_gap(reference, points)
    device = jax.devices()[0].device_kind
    print(
        f"{device}: {S} streams x {args.rounds} rounds x {K} arms x {d}; components not bitwise XLA's "
        f"{unequal} of {reference.size} (at most {ulps:.0f} ulps apart)"
    )
    row = dict(streams=S, rounds=args.rounds, unequal=unequal, max_ulps=ulps, device=device)
    if gpu:
        calls = {
            "xla": lambda: xla(keys, radius).block_until_ready(),
            "xla_streams_minor": lambda: xla_minor(keys, radius).block_until_ready(),
            "pallas": lambda: kernel(words, radius).block_until_ready(),
        }
        best = common.interleaved_best(calls, args.repeats)
        row.update({f"{k}_us": v * 1e6 for k, v in best.items()})
        row["speedup"] = best["xla"] / best["pallas"]
    common.print_table([row], [(k, None if isinstance(v, str) else ".3g") for k, v in row.items()])
    print(f"wrote {common.write_json('pallas_sphere', {'rows': [row], 'jax': jax.__version__})}")


if __name__ == "__main__":
    main()
