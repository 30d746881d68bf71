"""The library's per-program XLA options: result-neutral, opt-out, and harmless inside a user's jit."""

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.core.lowering import xla_options

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
    assert xla_options.library_options("cpu") == {"xla_cpu_use_fusion_emitters": False}
    monkeypatch.setenv("JAXBANDIT_CPU_CLASSIC_EMITTERS", "0")
    assert xla_options.library_options("cpu") == {}
    monkeypatch.delenv("JAXBANDIT_CPU_CLASSIC_EMITTERS")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    assert xla_options.library_options("cpu") == {}  # the user's flag wins


def test_a_program_compiled_beside_another_generates_its_code_on_one_thread(monkeypatch):
    monkeypatch.delenv("JAXBANDIT_CPU_CLASSIC_EMITTERS", raising=False)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    beside = xla_options.library_options("cpu", beside=True)
    assert beside == {"xla_cpu_use_fusion_emitters": False, "xla_cpu_parallel_codegen_split_count": 1}
    assert xla_options.library_options("gpu", beside=True) == xla_options.library_options("gpu")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_parallel_codegen_split_count=4")
    assert "xla_cpu_parallel_codegen_split_count" not in xla_options.library_options("cpu", beside=True)


def test_each_backend_gets_only_its_own_options(monkeypatch):
    for variable in ("JAXBANDIT_COMMAND_BUFFERS", "JAXBANDIT_CPU_CLASSIC_EMITTERS", "XLA_FLAGS"):
        monkeypatch.delenv(variable, raising=False)
    # A GPU compiler is never handed the CPU's option, nor a CPU compiler the GPU's (jax 0.11's GPU
    # compiler refused the CPU's option and every sweep failed on a GPU)
    assert xla_options.library_options("gpu") == {"xla_gpu_enable_command_buffer": xla_options.COMMAND_BUFFER}
    assert xla_options.library_options("cpu") == {"xla_cpu_use_fusion_emitters": False}
    assert xla_options.library_options("tpu") == {}
    assert xla_options.library_options() == xla_options.library_options(jax.default_backend())
    monkeypatch.setenv("JAXBANDIT_COMMAND_BUFFERS", "0")
    monkeypatch.setenv("JAXBANDIT_CPU_CLASSIC_EMITTERS", "0")
    assert xla_options.library_options("gpu") == {} and xla_options.library_options("cpu") == {}


def test_an_option_this_xla_does_not_have_is_left_out(monkeypatch):
    """An option XLA refuses as unknown (jax 0.11.2 on an H100 refused xla_cpu_use_fusion_emitters) is
    dropped, not fatal."""
    backend = jax.default_backend()
    unknown = f"xla_{backend}_jaxbandit_no_such_option"
    monkeypatch.setitem(xla_options.LIBRARY_OPTIONS, unknown, (True, "JAXBANDIT_TEST_UNKNOWN", backend))
    monkeypatch.setattr(xla_options, "UNKNOWN_OPTIONS", set())
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert unknown in xla_options.library_options()

    @xla_options.library_jit(static_argnums=())
    def f(x):
        return x * 3

    assert float(f(jnp.float32(2.0))) == 6.0
    assert xla_options.UNKNOWN_OPTIONS == {unknown}
    assert unknown not in xla_options.library_options()
    assert float(f(jnp.float32(1.0))) == 3.0


def test_an_option_unknown_to_xla_is_left_out_when_compiled_on_another_thread(monkeypatch):
    backend = jax.default_backend()
    unknown = f"xla_{backend}_jaxbandit_no_such_beside_option"
    monkeypatch.setitem(xla_options.BESIDE_OPTIONS, unknown, (1, None, backend))
    monkeypatch.setattr(xla_options, "UNKNOWN_OPTIONS", set())
    monkeypatch.delenv("XLA_FLAGS", raising=False)

    @xla_options.library_jit(static_argnums=(), beside=True)
    def f(x):
        return x * 5

    thread = threading.Thread(target=f.compile_later(jnp.float32(2.0)))
    thread.start()
    thread.join()
    assert xla_options.UNKNOWN_OPTIONS == {unknown}
    assert float(f(jnp.float32(2.0))) == 10.0


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


def test_the_public_options_are_the_librarys_for_a_users_own_jit(monkeypatch):
    """``jb.compiler_options()`` gives the options the library's programs compile with (not those of a
    program compiled beside another), as a new dict each call; a user's jit compiled with them runs the
    same bits as the plain jit and as the library's own program."""
    for variable in ("JAXBANDIT_COMMAND_BUFFERS", "JAXBANDIT_CPU_CLASSIC_EMITTERS", "XLA_FLAGS"):
        monkeypatch.delenv(variable, raising=False)
    assert jb.compiler_options("cpu") == {"xla_cpu_use_fusion_emitters": False}
    assert jb.compiler_options("gpu") == {"xla_gpu_enable_command_buffer": xla_options.COMMAND_BUFFER}
    assert jb.compiler_options("tpu") == {}
    assert jb.compiler_options() == jb.compiler_options(jax.default_backend())
    jb.compiler_options()["mine"] = 1
    assert "mine" not in jb.compiler_options()
    monkeypatch.setenv("JAXBANDIT_CPU_CLASSIC_EMITTERS", "0")
    assert jb.compiler_options("cpu") == {}
    monkeypatch.delenv("JAXBANDIT_CPU_CLASSIC_EMITTERS")

    alg, env = _setting()
    keys = jnp.stack([jax.random.key(3), jax.random.key(4)])
    run = jax.vmap(lambda k: jb.simulate(alg, env, k, horizon=T))
    tuned = jax.jit(run, compiler_options=jb.compiler_options())(keys)
    lowered = jax.jit(run).lower(keys).compile(compiler_options=jb.compiler_options())(keys)
    plain = jax.jit(run)(keys)
    library = [jb.simulate(alg, env, k, horizon=T) for k in (3, 4)]
    for field in plain._fields:
        a = np.asarray(getattr(plain, field))
        np.testing.assert_array_equal(np.asarray(getattr(tuned, field)), a)
        np.testing.assert_array_equal(np.asarray(getattr(lowered, field)), a)
        for i, one in enumerate(library):
            np.testing.assert_array_equal(np.asarray(getattr(one, field)), a[i])


@pytest.mark.parametrize("backend", ["cuda", "CPU", "", 0])
def test_the_public_options_refuse_an_unknown_backend(backend):
    with pytest.raises(ValueError, match=rf"backend={backend!r} is invalid: it must be one of cpu, gpu, tpu"):
        jb.compiler_options(backend)


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


_COMPILED: list = []
_LOWERED: list = []
_EVENTS = {"/jax/core/compile/backend_compile_duration": _COMPILED}
_EVENTS["/jax/core/compile/jaxpr_to_mlir_module_duration"] = _LOWERED
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **kw: _EVENTS[event].append(kw.get("fun_name", "")) if event in _EVENTS else None
)


def _compilations(fn, lowered: list | None = None):
    """``fn()`` and the names of the programs XLA compiled while it ran (those lowered added to
    ``lowered``)."""
    start, lowered_start = len(_COMPILED), len(_LOWERED)
    out = jax.block_until_ready(fn())
    if lowered is not None:
        lowered += _LOWERED[lowered_start:]
    return out, _COMPILED[start:]


def _cr(beta_scale):
    # settings no other test uses, so that no earlier test compiled these programs
    return jb.cr_hvt_ucb(37, 4, eps=1.0, nu=3**0.5, corruption=5.0, beta_scale=beta_scale)


def test_a_new_algorithm_with_the_same_settings_reuses_the_program():
    """``jb.simulate`` of a newly built algorithm (static to jit) compiled the same program again."""
    env = _setting()[1]
    first, _ = _compilations(lambda: jb.simulate(_cr(0.0371), env, 2, horizon=37))
    for _ in range(2):
        again, compiled = _compilations(lambda: jb.simulate(_cr(0.0371), env, 2, horizon=37))
        assert compiled == []
        for field in first._fields:
            np.testing.assert_array_equal(getattr(again, field), getattr(first, field))


def test_a_program_is_shared_only_with_an_equal_program():
    """Two algorithms differing only in a closed-over constant compile two programs: each run equals the
    same run in a user's own jit (the plain program, never shared), and the two runs differ."""
    env = _setting()[1]
    key = jax.random.key(5)
    runs = {}
    for scale in (0.0373, 0.0373 * 1.5):
        reference = jax.jit(lambda k, s=scale: jb.simulate(_cr(s), env, k, horizon=37))(key)
        run, compiled = _compilations(lambda s=scale: jb.simulate(_cr(s), env, key, horizon=37))
        assert any("_simulate" in name for name in compiled)
        for field in run._fields:
            np.testing.assert_array_equal(getattr(run, field), getattr(reference, field))
        runs[scale] = run
    a, b = runs.values()
    assert not np.array_equal(np.asarray(a.regret), np.asarray(b.regret))


def test_a_sweep_from_new_factories_reuses_its_programs():
    """A notebook cell run again defines its factories again: the same programs, nothing compiled."""

    def cell(df):
        def make_alg(p):
            return jb.cr_hvt_ucb(29, 4, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["b"])

        def make_env(p):
            return jb.envs.linear(4, 6, noise=jb.noise.student_t(df), corruption=jb.corruption.flip(p["C"]))

        grid = {"C": [0.0, 7.0], "b": [1e-2, 1e-1]}
        return _compilations(lambda: jb.sweep(make_alg, make_env, grid, horizon=29, seeds=2).regret)

    first, _ = cell(3.0)
    again, compiled = cell(3.0)
    assert compiled == []
    np.testing.assert_array_equal(again, first)
    other, compiled = cell(4.0)  # another noise: another program (its constants differ)
    assert any("run_chunk" in name for name in compiled)
    assert not np.array_equal(other, first)


def test_a_new_sweep_traces_its_round_once():
    """The first chunk is traced for the carry's shapes while the initial states compile on another
    thread; the real call then reuses that trace (an update traced twice would count 2), each program is
    lowered and compiled once, and the results are those of the same runs alone."""
    updates, lowered = [], []
    base = jb.cr_hvt_ucb(31, 4, eps=1.0, nu=3**0.5, corruption=5.0, beta_scale=0.031)

    def update(state, *args):
        updates.append(1)
        return base.update(state[0], *args), state[1] + 1.0

    # a state with a weakly typed leaf (a Python float): the carry's avals must say so
    alg = base._replace(
        init=lambda: (base.init(), 0.0), select=lambda s, x: base.select(s[0], x), update=update
    )
    env = _setting()[1]
    grid, kw = {"C": [5.0]}, dict(horizon=31, seeds=[4, 9], record="all")
    res, compiled = _compilations(lambda: jb.sweep(lambda p: alg, lambda p: env, grid, **kw), lowered)
    assert len(updates) == 1
    assert sorted(compiled) == sorted(lowered) == ["jit(init_streams)", "jit(run_chunk)"]
    for s, seed in enumerate((4, 9)):
        alone = jb.simulate(alg, env, jax.random.fold_in(jax.random.key(0), seed), horizon=31)
        np.testing.assert_array_equal(res.data["regret"][0, s], np.asarray(alone.regret))


def test_an_unhashable_static_argument_gets_jits_own_error():
    @xla_options.library_jit(static_argnums=(0,))
    def f(scale, x):
        return x * scale[0]

    with pytest.raises(ValueError, match="hashable"):
        f([2.0], jnp.float32(1.0))


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_paused_while_a_program_is_traced_and_left_as_it_was(enabled):
    """Tracing and lowering run with Python's cyclic collector disabled (it was 0.14–0.19 s of a small
    sweep's first call); afterwards it is as the caller had it, enabled or not."""
    import gc

    seen = []

    @xla_options.library_jit(static_argnums=(0,))
    def f(scale, x):
        seen.append(gc.isenabled())  # runs while the call is traced
        return x * scale

    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        np.testing.assert_array_equal(f(2.0, jnp.float32(3.0)), 6.0)
        assert seen == [False]
        assert gc.isenabled() == enabled
        jb.sweep(lambda p: _setting()[0], lambda p: _setting()[1], {"C": [5.0]}, horizon=T, seeds=2)
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_nested_and_concurrent_pauses_enable_the_collector_after_the_last():
    import gc

    assert gc.isenabled()
    inside, release = threading.Event(), threading.Event()

    def other_thread():
        with xla_options.collection_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other_thread)
    with xla_options.collection_paused():
        thread.start()
        inside.wait(10)
        with xla_options.collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's pause goes on
    release.set()
    thread.join()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), xla_options.collection_paused():
        raise RuntimeError("an error inside")
    assert gc.isenabled()
