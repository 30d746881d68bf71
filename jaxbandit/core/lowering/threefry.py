"""The Threefry-2x32 hash under every ``jax.random`` draw (JAX's ``threefry2x32_p``), as the library's own
CPU programs lower it: its 20 rounds unrolled, run as a loop of one trip.

JAX lowers the hash on a CPU to a loop of five trips that rotates the key schedule and the rotation
constants through the loop's carry, and XLA's CPU runtime runs each rotated value as a copy, a step of
its own: 13 a trip, 65 a hash. In a round of the 16-point grid's environment (the contexts, the noise's
rejection loop, the keys: about nine hashes) 607 of its 885 steps were such copies. Unrolled, a hash is
one fused kernel. Run as a loop of one trip that XLA cannot count, its output leaves a loop as it leaves
JAX's, so the arithmetic that turns the bits into numbers (uniforms, normals, the sphere) fuses and
rounds exactly as in a program lowered by JAX: a library program draws bitwise what the same code draws
in a user's own ``jit`` (tested, and checked against Random123's known-answer vectors).

Only while :func:`library_lowering` is active — ``xla_options.library_jit`` lowering one of the library's
programs — and only on a CPU; every other program, a user's ``jit`` of library code included, keeps
JAX's lowering. If the installed JAX has no CPU rule to fall back to, nothing is registered.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import numpy as np
from jax import lax
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

#: Rotation constants of the even and odd groups of four rounds (Salmon et al. 2011, Threefry-2x32).
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
#: The key schedule's parity word.
KEY_PARITY = np.uint32(0x1BD11BDA)

_LIBRARY_LOWERING = contextvars.ContextVar("jaxbandit_threefry_unrolled", default=False)


@contextlib.contextmanager
def library_lowering() -> Iterator[None]:
    """Programs lowered inside (on this thread) lower Threefry with :func:`hash_unrolled`, one loop trip."""
    token = _LIBRARY_LOWERING.set(True)
    try:
        yield
    finally:
        _LIBRARY_LOWERING.reset(token)


def hash_unrolled(k1, k2, x1, x2) -> tuple:
    """Threefry-2x32, 20 rounds, of the counters (x1, x2) under the key (k1, k2): uint32 arrays of one
    shape, elementwise; the five groups of four rounds written out, each followed by its key injection."""
    u32 = np.uint32
    for name, word in (("k1", k1), ("k2", k2), ("x1", x1), ("x2", x2)):
        if getattr(word, "dtype", None) != u32:
            kind = getattr(word, "dtype", type(word).__name__)
            raise ValueError(f"{name} of dtype {kind} is invalid: the hash's words must be uint32 arrays")
    keys = (k1, k2, k1 ^ k2 ^ KEY_PARITY)
    x1, x2 = x1 + keys[0], x2 + keys[1]
    for group in range(5):
        for r in ROTATIONS[group % 2]:
            x1 = x1 + x2
            x2 = x1 ^ (lax.shift_left(x2, u32(r)) | lax.shift_right_logical(x2, u32(32 - r)))
        x1 = x1 + keys[(group + 1) % 3]
        x2 = x2 + keys[(group + 2) % 3] + u32(group + 1)
    return x1, x2


def _hash_one_trip(k1, k2, x1, x2) -> tuple:
    """:func:`hash_unrolled` of the operands broadcast to one shape, inside a loop of one trip whose count
    XLA cannot compute (min(min(k1) | 1, 1) is 1 for any key, also for no elements), so that XLA neither
    removes the loop nor fuses the bits' consumers into the hash."""
    shape = lax.broadcast_shapes(*(np.shape(a) for a in (k1, k2, x1, x2)))
    trips = lax.min(lax.reduce_min(k1, tuple(range(np.ndim(k1)))) | np.uint32(1), np.uint32(1))
    k1, k2, x1, x2 = (
        lax.broadcast_in_dim(a, shape, tuple(range(len(shape) - np.ndim(a), len(shape))))
        for a in (k1, k2, x1, x2)
    )

    def trip(carry):
        i, _, _ = carry
        return (i + np.uint32(1), *hash_unrolled(k1, k2, x1, x2))

    _, y1, y2 = lax.while_loop(lambda c: c[0] < trips, trip, (np.uint32(0), x1, x2))
    return y1, y2


def _register() -> None:
    # JAX's own CPU rule, to fall back to (a private table: absent, the library keeps JAX's lowering)
    jax_rule = getattr(mlir, "_platform_specific_lowerings", {}).get("cpu", {}).get(threefry2x32_p)
    if jax_rule is None:
        return
    one_trip = mlir.lower_fun(_hash_one_trip, multiple_results=True)

    def rule(ctx, *args):
        return (one_trip if _LIBRARY_LOWERING.get() else jax_rule.rule)(ctx, *args)

    mlir.register_lowering(threefry2x32_p, rule, platform="cpu", inline=jax_rule.inline)


_register()
