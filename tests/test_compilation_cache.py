"""The persistent compilation cache is written by one process and read by the next."""

import os
import subprocess
import sys

import pytest

SCRIPT = """
import sys, jax, jaxbandit as jb
from jaxbandit.runner.compilation_cache import enable_compilation_cache
enable_compilation_cache(sys.argv[1], min_compile_seconds=0)
hits = []
jax.monitoring.register_event_listener(lambda name, **kw: hits.append(name))
alg = jb.cr_hvt_ucb(20, 3, eps=1.0, nu=1.0, corruption=0.0)
env = jb.envs.linear(3, 4, noise=jb.noise.gaussian())
jax.jit(lambda k: jb.simulate(alg, env, k, horizon=20).regret.sum())(jax.random.key(0)).block_until_ready()
print("HIT" if any("cache_hits" in h for h in hits) else "MISS")
"""


def test_second_process_loads_from_the_cache(tmp_path):
    cache = tmp_path / "xla"
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # the test session's own shared cache (conftest)
    run = lambda: subprocess.run(
        [sys.executable, "-c", SCRIPT, str(cache)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout.strip()
    assert run() == "MISS"
    assert any(cache.iterdir())
    assert run() == "HIT"


def test_bad_threshold_is_rejected(tmp_path):
    from jaxbandit.runner.compilation_cache import enable_compilation_cache

    with pytest.raises(ValueError, match="min_compile_seconds"):
        enable_compilation_cache(tmp_path, min_compile_seconds=-1)
