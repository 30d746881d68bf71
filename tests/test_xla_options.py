"""The library's per-program XLA options: result-neutral, opt-out, and harmless inside a user's jit."""

import jax
import jax.numpy as jnp
import numpy as np

import jaxbandit as jb
from jaxbandit.runner import xla_options

T = 40


def _setting():
    alg = jb.cr_hvt_ucb(T, 4, eps=1.0, nu=3**0.5, corruption=5.0, beta_scale=1e-2)
    env = jb.envs.linear(4, 6, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(5.0))
    return alg, env


def test_opt_out_and_user_flag(monkeypatch):
    monkeypatch.delenv("JAXBANDIT_COMMAND_BUFFERS", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert xla_options.command_buffers_enabled()
    monkeypatch.setenv("JAXBANDIT_COMMAND_BUFFERS", "0")
    assert not xla_options.command_buffers_enabled()
    monkeypatch.delenv("JAXBANDIT_COMMAND_BUFFERS")
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_enable_command_buffer=FUSION")
    assert not xla_options.command_buffers_enabled()  # the user's own flag wins


def test_cpu_classic_emitters_opt_out_and_user_flag(monkeypatch):
    monkeypatch.delenv("JAXBANDIT_CPU_CLASSIC_EMITTERS", raising=False)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert xla_options.compiler_options("cpu") == {"xla_cpu_use_fusion_emitters": False}
    monkeypatch.setenv("JAXBANDIT_CPU_CLASSIC_EMITTERS", "0")
    assert xla_options.compiler_options("cpu") == {}
    monkeypatch.delenv("JAXBANDIT_CPU_CLASSIC_EMITTERS")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    assert xla_options.compiler_options("cpu") == {}  # the user's flag wins


def test_each_backend_gets_only_its_own_options(monkeypatch):
    for variable in ("JAXBANDIT_COMMAND_BUFFERS", "JAXBANDIT_CPU_CLASSIC_EMITTERS", "XLA_FLAGS"):
        monkeypatch.delenv(variable, raising=False)
    # A GPU compiler is never handed the CPU's option, nor a CPU compiler the GPU's (jax 0.11's GPU
    # compiler refused the CPU's option and every sweep failed on a GPU)
    assert xla_options.compiler_options("gpu") == {
        "xla_gpu_enable_command_buffer": xla_options.COMMAND_BUFFER
    }
    assert xla_options.compiler_options("cpu") == {"xla_cpu_use_fusion_emitters": False}
    assert xla_options.compiler_options("tpu") == {}
    assert xla_options.compiler_options() == xla_options.compiler_options(jax.default_backend())
    monkeypatch.setenv("JAXBANDIT_COMMAND_BUFFERS", "0")
    monkeypatch.setenv("JAXBANDIT_CPU_CLASSIC_EMITTERS", "0")
    assert xla_options.compiler_options("gpu") == {} and xla_options.compiler_options("cpu") == {}


def test_an_option_this_xla_does_not_have_is_left_out(monkeypatch):
    """An option XLA refuses as unknown (jax 0.11.2 on an H100 refused xla_cpu_use_fusion_emitters) is
    dropped, not fatal."""
    backend = jax.default_backend()
    unknown = f"xla_{backend}_jaxbandit_no_such_option"
    monkeypatch.setitem(xla_options.LIBRARY_OPTIONS, unknown, (True, "JAXBANDIT_TEST_UNKNOWN", backend))
    monkeypatch.setattr(xla_options, "UNKNOWN_OPTIONS", set())
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert unknown in xla_options.compiler_options()

    @xla_options.library_jit(static_argnums=())
    def f(x):
        return x * 3

    assert float(f(jnp.float32(2.0))) == 6.0
    assert xla_options.UNKNOWN_OPTIONS == {unknown}
    assert unknown not in xla_options.compiler_options()
    assert float(f(jnp.float32(1.0))) == 3.0


def test_same_bits_with_and_without_options_and_inside_a_users_jit(monkeypatch):
    alg, env = _setting()
    for variable in ("JAXBANDIT_COMMAND_BUFFERS", "JAXBANDIT_CPU_CLASSIC_EMITTERS"):
        monkeypatch.delenv(variable, raising=False)
    with_options = jb.simulate(alg, env, 3, horizon=T)
    monkeypatch.setenv("JAXBANDIT_CPU_CLASSIC_EMITTERS", "0")  # XLA's default emitters on the CPU
    default_emitters = jb.simulate(alg, env, 3, horizon=T)
    monkeypatch.setenv("JAXBANDIT_COMMAND_BUFFERS", "0")
    plain = jb.simulate(alg, env, 3, horizon=T)
    monkeypatch.delenv("JAXBANDIT_COMMAND_BUFFERS")
    monkeypatch.delenv("JAXBANDIT_CPU_CLASSIC_EMITTERS")
    # Concrete arguments inside a user's jit: XLA takes options only at the top level, so none are set.
    nested = jax.jit(lambda: jb.simulate(alg, env, 3, horizon=T))()
    # A concrete key closed over by a user's jit: no traced argument, so the library first tries its
    # options, XLA refuses them below the top level, and the plain program runs.
    key = jax.random.key(3)
    closed_over = jax.jit(lambda: jb.simulate(alg, env, key, horizon=T))()
    # Traced arguments (vmap under jit).
    batched = jax.jit(jax.vmap(lambda k: jb.simulate(alg, env, k, horizon=T)))(jnp.stack([jax.random.key(3)]))
    for field in with_options._fields:
        a = np.asarray(getattr(with_options, field))
        np.testing.assert_array_equal(a, np.asarray(getattr(plain, field)))
        np.testing.assert_array_equal(a, np.asarray(getattr(default_emitters, field)))
        np.testing.assert_array_equal(a, np.asarray(getattr(nested, field)))
        np.testing.assert_array_equal(a, np.asarray(getattr(closed_over, field)))
        np.testing.assert_array_equal(a, np.asarray(getattr(batched, field))[0])


def test_invalid_option_value_is_not_swallowed():
    @xla_options.library_jit(static_argnums=())
    def f(x):
        return x + 1

    assert float(f(jnp.float32(1.0))) == 2.0
    bad = jax.jit(lambda x: x, compiler_options={"xla_gpu_enable_command_buffer": "NOT_A_COMMAND"})
    try:
        bad(1.0)
    except Exception as e:  # XLA rejects an unknown enum value: the library's value is a valid one
        assert "NOT_A_COMMAND" in str(e)
    else:
        raise AssertionError("XLA accepted an invalid command-buffer value")
