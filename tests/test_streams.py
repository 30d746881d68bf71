"""The exogenous streams' draws against JAX's own samplers."""

import jax
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.core.linalg import norm
from jaxbandit.core.lowering import options
from jaxbandit.envs.streams import uniform_sphere


def _reference_sphere(key, shape, radius):
    """``radius`` · g/‖g‖ for g = ``jax.random.normal(key, shape)``: the sphere as the paper defines it."""
    g = jax.random.normal(key, shape, dtype=jax.dtypes.canonicalize_dtype(np.float64))
    return radius * g / norm(g)[..., None]


@pytest.mark.parametrize("flat", [True, False, None])
@pytest.mark.parametrize("shape", [(20, 10), (3, 4, 5)])
@pytest.mark.parametrize(("precision", "partitionable"), [("float32", True), ("float64", False)])
def test_uniform_sphere_is_jax_normal_normalised_bitwise(flat, shape, precision, partitionable):
    """The uniforms under the normals drawn flat (a CPU's default) or shaped (the others') give
    jax.random.normal's numbers, op by op and in a jitted vmap (where the transform's fusion decides the
    rounding of the sphere's points), in both threefry modes."""
    chosen = {} if flat is None else {"flat_sphere_bits": flat}
    with (
        options.tracing(**chosen),
        jax.enable_x64(precision == "float64"),
        jax.threefry_partitionable(partitionable),
    ):
        keys = jax.random.split(jax.random.key(7), 3)
        got = jax.jit(jax.vmap(lambda k: uniform_sphere(k, shape, 2.0)))(keys)
        want = jax.jit(jax.vmap(lambda k: _reference_sphere(k, shape, 2.0)))(keys)
        assert got.dtype == np.dtype(precision)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        np.testing.assert_array_equal(
            np.asarray(uniform_sphere(keys[0], shape, 2.0)),
            np.asarray(_reference_sphere(keys[0], shape, 2.0)),
        )


def test_flat_sphere_bits_default_and_bad_value(monkeypatch):
    """The default draws flat on a CPU only (outside a sweep's trace, and in one); a value that is not a
    bool is named in a ValueError."""
    flat = lambda: jax.make_jaxpr(lambda k: uniform_sphere(k, (2, 3), 1.0))(jax.random.key(0))
    assert "shape=(6,)" in str(flat())  # the bits of 6 uniforms, drawn flat
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not options.current().flat_sphere_bits and "shape=(6,)" not in str(flat())
    sweep_options = options.TraceOptions.resolve(jb.ExecutionOptions())
    assert not sweep_options.flat_sphere_bits
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert options.current().flat_sphere_bits
    assert options.TraceOptions.resolve(jb.ExecutionOptions(flat_sphere_bits=False)).flat_sphere_bits is False
    with pytest.raises(ValueError, match=r"options\.flat_sphere_bits='yes' is invalid"):
        jb.ExecutionOptions(flat_sphere_bits="yes").validated()
