"""The library's lowering of the Threefry hash: Random123's answers, JAX's bits and numbers bitwise, and
only in the library's own programs. (That a sweep, lowered so, equals the same runs in a user's own
``jit(jb.simulate)``, lowered by JAX, is test_determinism's
``test_sweep_is_deterministic_and_batch_invariant``.)"""

import re
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.core.lowering import threefry, xla_options

# Random123's known-answer vectors for Threefry-2x32 with 20 rounds (kat_vectors): key, counter, result.
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
]


def _u32(*values):
    return [jnp.asarray(np.uint32(v)) for v in values]


@pytest.mark.parametrize(("key", "counter", "expected"), KNOWN_ANSWERS)
def test_the_unrolled_hash_gives_random123s_known_answers(key, counter, expected):
    out = jax.jit(threefry.hash_unrolled)(*_u32(*key), *_u32(*counter))
    assert [int(v) for v in out] == list(expected)


def test_the_unrolled_hash_is_jaxs_on_random_words():
    words = np.random.default_rng(0).integers(0, 2**32, size=(4, 1000), dtype=np.uint64).astype(np.uint32)
    k1, k2, x1, x2 = (jnp.asarray(w) for w in words)
    ours = jax.jit(threefry.hash_unrolled)(k1, k2, x1, x2)
    theirs = jax.vmap(lambda a, b, c, d: jax.extend.random.threefry_2x32((a, b), jnp.stack([c, d])))(
        k1, k2, x1, x2
    )
    np.testing.assert_array_equal(np.stack(ours, 1), np.asarray(theirs))


def _draws(key):
    """Draws of every kind a bandit program makes, from one key: keys, bits, uniforms, normals (the
    arithmetic after the hash is what must round the same), of several shapes, under vmap."""
    a, b = jax.random.split(jax.random.fold_in(key, 7))
    keys = jax.random.split(b, 5)
    return dict(
        bits=jax.random.bits(a, (3, 5)),
        uniform=jax.random.uniform(a, (7,), minval=-1.0, maxval=2.0),
        scalar=jax.random.uniform(b, ()),
        empty=jax.random.normal(a, (0, 3)),
        normal=jax.random.normal(b, (4, 10)),
        sphere=jb.envs.streams.uniform_sphere(a, (20, 10), 1.0),
        vmapped=jax.vmap(lambda k: jax.random.normal(k, (3,)) * 0.5 + 1.0)(keys),
        student_t=jax.vmap(lambda k: jb.noise.student_t(3.0).sample(k, 0)[0])(keys),
        key_data=jax.random.key_data(jax.random.split(a, 3)),
    )


def _shift_lefts(lowered) -> int:
    return len(re.findall(r"stablehlo\.shift_left", lowered.as_text()))


@pytest.mark.parametrize("partitionable", [True, False])
def test_library_programs_draw_bitwise_what_jax_lowering_draws(partitionable):
    key = jax.random.key(11)
    with jax.threefry_partitionable(partitionable):
        # two programs: JAX keeps a program's lowering and gives it again, whatever the context
        with xla_options.lowering():
            ours = jax.jit(lambda k: _draws(k)).lower(key)
        theirs = jax.jit(lambda k: _draws(k)).lower(key)
    # the library's lowering writes the 20 rounds out (a rotation each); JAX's rolls them into a loop of 4
    assert _shift_lefts(ours) >= 20 * _shift_lefts(theirs) / 4 > 0
    got, want = ours.compile()(key), theirs.compile()(key)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_library_programs_draw_bitwise_what_jax_lowering_draws_in_float64():
    with jax.enable_x64(True):
        key = jax.random.key(5)
        with xla_options.lowering():
            got = jax.jit(lambda k: _draws(k)).lower(key).compile()(key)
        want = jax.jit(lambda k: _draws(k)).lower(key).compile()(key)
        assert got["normal"].dtype == jnp.float64
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_only_the_library_lowering_uses_the_unrolled_hash():
    """A user's program lowered after (or beside, on another thread) a library program keeps JAX's."""
    key = jax.random.key(0)

    def lowered():
        return _shift_lefts(jax.jit(lambda k: jax.random.normal(k, (9,))).lower(key))

    plain = lowered()
    with threefry.library_lowering():
        unrolled = lowered()
        beside = []
        thread = threading.Thread(target=lambda: beside.append(lowered()))
        thread.start()
        thread.join()
    assert unrolled > plain == beside[0] == lowered() > 0


def test_without_jaxs_private_table_nothing_is_registered(monkeypatch):
    """A JAX without the table of platform rules leaves the hash as JAX lowers it (no error at import)."""
    from jax.interpreters import mlir

    table = mlir._platform_specific_lowerings
    before = table["cpu"][jax.extend.random.threefry2x32_p]
    monkeypatch.delattr(mlir, "_platform_specific_lowerings")
    threefry._register()
    assert table["cpu"][jax.extend.random.threefry2x32_p] is before


def test_the_hash_takes_uint32_words_only():
    k = jnp.zeros(3, jnp.uint32)
    with pytest.raises(ValueError, match="x2 of dtype int32 is invalid"):
        threefry.hash_unrolled(k, k, k, jnp.zeros(3, jnp.int32))
    with pytest.raises(ValueError, match="k1 of dtype int is invalid"):
        threefry.hash_unrolled(7, k, k, k)
