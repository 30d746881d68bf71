"""A sweep's programs as the library builds them for a GPU lower for CUDA: checked on a CPU.

A sweep that fails to build for a GPU would otherwise be found only on a GPU; lowering needs none. The
library is told it runs on one (``jax.default_backend``: its GPU defaults — runs minor, rounds drawn
ahead, no worker groups, no stragglers one by one), and each program ``jb.sweep`` lowers is lowered for
CUDA too (``jax.stages.Traced.lower``'s ``lowering_platforms``); the sweep stops there, before compiling.
"""

import re

import jax
import pytest

import jaxbandit as jb

PROGRAMS = ("init_streams", "run_chunk")


class _Lowered(Exception):
    """Every program wanted is lowered: nothing needs compiling."""


def cuda_programs(monkeypatch, call, programs=PROGRAMS) -> dict[str, str]:
    """name -> StableHLO for CUDA of each of the library's ``programs`` that ``call()`` lowers, the library
    believing it runs on a GPU."""
    texts: dict[str, str] = {}
    lower = jax.stages.Traced.lower

    def hooked(traced, *args, **kwargs):
        if traced.fun_name in programs:
            texts[traced.fun_name] = lower(traced, lowering_platforms=("cuda",)).as_text()
            if len(texts) == len(programs):
                raise _Lowered
        return lower(traced, *args, **kwargs)

    monkeypatch.setattr(jax.stages.Traced, "lower", hooked)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    with pytest.raises(_Lowered):
        call()
    return texts


@pytest.mark.parametrize(
    "name, dim, peeled",
    [*((name, 4, False) for name in jb.registry.names()), ("cr_hvt_ucb", 20, False), ("cr_hvt_ucb", 4, True)],
)
def test_every_algorithms_sweep_lowers_for_cuda(monkeypatch, name, dim, peeled):
    """Every registered algorithm (CR-Hvt-UCB also above the unrolled solvers' dimension, and with the
    loops' first iterations peeled): both programs lower for CUDA, and every library call in them is a
    CUDA one (cuSOLVER), none of the CPU's LAPACK."""
    spec = jb.registry.algorithm(name)
    peels = dict(peeled_newton_steps=1, peeled_rejection_steps=12) if peeled else {}

    def make_alg(p):
        return spec.make(jb.registry.Problem(20, dim, eps=1.0, nu=3**0.5, corruption=p["C"]))

    def make_env(p):
        return jb.envs.linear(dim, 5, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))

    texts = cuda_programs(
        monkeypatch,
        lambda: jb.sweep(
            make_alg, make_env, {"C": [0.0, 2.0]}, horizon=20, seeds=2, options=jb.ExecutionOptions(**peels)
        ),
    )
    assert sorted(texts) == sorted(PROGRAMS)
    assert "stablehlo.while" in texts["run_chunk"]  # the scan over the chunk's rounds
    targets = set(re.findall(r"custom_call @(\w+)", "".join(texts.values())))
    assert all(t.startswith("cusolver_") for t in targets), targets
    if name in ("gadaoful", "heavy_oful", "tofu") or dim > 16:
        assert targets  # their factorisations are library calls: cuSOLVER's on a GPU


@pytest.mark.parametrize("name", ["cr_hvt_ucb", "gadaoful"])
def test_simulate_lowers_for_cuda(monkeypatch, name):
    """``jb.simulate`` (one run: its loops unbatched) lowers for CUDA too, GAdaOFUL's library calls
    cuSOLVER's."""
    env = jb.envs.linear(4, 5, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(2.0))
    alg = jb.registry.algorithm(name).make(jb.registry.Problem(20, 4, eps=1.0, nu=3**0.5, corruption=2.0))
    call = lambda: jb.simulate(alg, env, jax.random.key(0), horizon=20)
    (text,) = cuda_programs(monkeypatch, call, ("_simulate",)).values()
    assert "stablehlo.while" in text
    targets = re.findall(r"custom_call @(\w+)", text)
    assert all(t.startswith("cusolver_") for t in targets) and (name == "cr_hvt_ucb" or targets)
