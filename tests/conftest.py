import os
import shutil
import tempfile
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import settings

# Property tests draw the same examples in every run (a failure found once is found again, and CI does
# not meet examples nobody ran before); a new property is explored by running it with more examples.
settings.register_profile("jaxbandit", derandomize=True, print_blob=True)
settings.load_profile("jaxbandit")


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help="also run the tests marked slow (the README's test command and CI do)",
    )


def pytest_configure(config):
    """One persistent XLA compilation cache for the whole test run: both xdist workers and every
    subprocess a test starts (CLI, notebooks, README) compile many of the same programs, and a cached
    executable is the one the compiler would have produced (the cache is keyed by the program, the
    compile options and the versions). A fresh directory per run, so no run reuses an earlier one's."""
    if not hasattr(config, "workerinput"):  # the controller; workers and subprocesses inherit the variable
        os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxbandit-tests-xla-")
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ.get("JAX_COMPILATION_CACHE_DIR", ""), ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """Tests marked slow are skipped without ``--run-slow``. (The order is left as collected:
    pytest-xdist hands the files to its workers by their number of tests, most first.)"""
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (the README's test command does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def cli_env(*paths, fast_compile: bool = True) -> dict:
    """The environment of a command-line subprocess: this checkout and ``paths`` on ``PYTHONPATH``, and,
    for a test that checks what it writes and prints, not bits (``fast_compile``), XLA's optimisation
    level 0 (a tiny run is all compilation; this level compiles ~3x faster, and rounds some fused
    arithmetic differently)."""
    root = Path(__file__).resolve().parents[1]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(root), *map(str, paths), os.environ.get("PYTHONPATH")])),
    )
    if fast_compile:
        env["XLA_FLAGS"] = " ".join(
            filter(None, [env.get("XLA_FLAGS"), "--xla_backend_optimization_level=0"])
        )
    return env


@pytest.fixture
def x64():
    """Run the test body with float64 enabled."""
    with jax.enable_x64(True):
        yield


def record_programs(monkeypatch) -> list:
    """The ``ProgramOptions`` each chunk program of the sweeps run next is traced with (``Plan.program``'s
    answers), appended to the returned list as the sweeps resolve them."""
    from jaxbandit.runner.plan import Plan

    chosen = []
    real = Plan.program

    def spy(plan, *args, **kwargs):
        chosen.append(real(plan, *args, **kwargs))
        return chosen[-1]

    monkeypatch.setattr(Plan, "program", spy)
    return chosen


def random_stream(seed, T, K, d, noise="t3"):
    """θ* and contexts on unit spheres, and a noise vector, from NumPy (independent of jaxbandit)."""
    rng = np.random.default_rng(seed)
    th = rng.normal(size=d)
    th /= np.linalg.norm(th)
    X = rng.normal(size=(T, K, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    if noise == "t3":
        eta = rng.standard_t(3.0, size=T)
    elif noise == "pareto":
        eta = (rng.pareto(1.5, size=T) + 1.0) - 3.0
    else:
        eta = rng.normal(size=T)
    return th, X, eta


def replay_run(alg, th, X, eta, budget, nus=None, key=0):
    """(actions, per-round regrets) of ``alg`` on the given stream, replayed under the flip adversary
    with budget ``budget`` — the run a float64 reference loop is compared with."""
    import jaxbandit as jb

    env = jb.envs.replay(theta_star=th, contexts=X, noise=eta, corruption=jb.corruption.flip(budget), nu=nus)
    out = jb.simulate(alg, env, jax.random.key(key), horizon=X.shape[0])
    return out.action, out.regret


def assert_same_arms(got, want):
    """The same arm in every round as the reference, and the same per-round regret to 1e-9."""
    actions, regrets = got
    np.testing.assert_array_equal(np.asarray(actions), want[0])
    np.testing.assert_allclose(np.asarray(regrets), want[1], rtol=0, atol=1e-9)
