"""``benchmarks/pallas_sphere.py`` (a GPU experiment: the contexts' draw as one Pallas kernel, each thread
one stream) checked on the CPU, so that a GPU lease only has to time it and count differing bits: its
random bits are ``jax.random``'s exactly, its points the library's to rounding in Pallas' interpret mode,
and it lowers to a Triton kernel for CUDA."""

import importlib
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
pallas_sphere = importlib.import_module("pallas_sphere")
K, D = 7, 3


def test_the_random_bits_are_jax_randoms_for_every_index():
    keys = jax.random.split(jax.random.key(5), 4)
    words = jax.random.key_data(keys)  # [4, 2]
    expected = np.asarray(jax.vmap(lambda k: jax.random.bits(k, (K, D)))(keys)).reshape(4, K * D)
    got = np.stack(
        [np.asarray(pallas_sphere.random_bits(words[:, 0], words[:, 1], c)) for c in range(K * D)], axis=1
    )
    np.testing.assert_array_equal(got, expected)


def test_interpret_mode_draws_the_librarys_points():
    keys, words = pallas_sphere.inputs(2, 128, seed=3)
    radius = jnp.float32(0.5)
    points = np.asarray(pallas_sphere.pallas_sphere(words, radius, K, D, block=128, interpret=True))
    reference = np.moveaxis(np.asarray(pallas_sphere.xla_sphere(keys, radius, K, D)), 1, -1)
    assert points.shape == reference.shape == (2, K, D, 128)
    # the same operations in the same order; the CPU's XLA contracts multiply-adds as a program fuses
    assert np.all(np.abs(reference - points) <= 4 * np.spacing(np.abs(reference)))
    np.testing.assert_allclose(np.linalg.norm(points, axis=2), 0.5, rtol=1e-6)


def test_the_kernel_lowers_to_triton_for_cuda():
    assert "xla.gpu.triton" in pallas_sphere.lowered_for_cuda(num_streams=256, block=128)


def test_bad_keys_or_blocks_are_named():
    _, words = pallas_sphere.inputs(1, 128)
    with pytest.raises(ValueError, match="key_words of shape"):
        pallas_sphere.pallas_sphere(words.astype(jnp.int32), 1.0, K, D, interpret=True)
    with pytest.raises(ValueError, match=r"key_words of shape \(1, 128\)"):
        pallas_sphere.pallas_sphere(words[0], 1.0, K, D, interpret=True)
    with pytest.raises(ValueError, match="block=96 is invalid"):
        pallas_sphere.pallas_sphere(words, 1.0, K, D, block=96, interpret=True)
