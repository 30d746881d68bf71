"""The scripts in examples/ run as written, each as a fresh process at a small size, and print what their
docstrings say; what they compute is checked against facts that do not come from the code under test
(a known θ*, an algorithm that ignores a grid axis, the options that change no number)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxbandit as jb

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str, *args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return proc


def test_every_example_is_documented_and_tested():
    """Each script opens with a docstring that shows how to run it, and has a test here."""
    tested = set(re.findall(r'run_example\(\s*"(\w+\.py)"', Path(__file__).read_text()))
    for path in sorted(EXAMPLES.glob("*.py")):
        doc = path.read_text().split('"""')[1]
        assert f"python examples/{path.name}" in doc, path.name
        assert path.name in tested, path.name


def test_cluster_sweep_runs_in_one_process_by_default(tmp_path):
    """No cluster, no option: one process (it used to call jax.distributed.initialize() and fail)."""
    proc = run_example("cluster_sweep.py", "--out", "out", "--horizon", "30", "--seeds", "2", cwd=tmp_path)
    assert "1 processes, 1 devices" in proc.stdout
    res = jb.SweepResult.load(tmp_path / "out" / "sweep.npz")
    assert res.coords["seed"].size == 2
    assert {res.coords[k].size for k in ("C", "eps", "beta_scale")} == {4, 2, 3}
    assert np.isfinite(res.final_regret).all() and (res.final_regret >= 0).all()
    assert (res.final_regret <= 2 * 30).all()  # unit vectors: a round's regret is at most 2


def test_examples_refuse_a_size_below_one(tmp_path):
    proc = run_example("own_jit_loop.py", "--seeds", "0", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "--seeds=0 is invalid: it must be an integer >= 1" in proc.stderr


def _regrets(stdout: str) -> dict[str, float]:
    return {b: float(r) for b, r in re.findall(r"beta_scale=(\S+): mean final regret (\S+)", stdout)}


@pytest.mark.slow
def test_own_jit_loop_runs_with_and_without_the_options_to_the_same_numbers(tmp_path):
    """The user's own jit + scan loop with ``jb.compiler_options()`` and with a plain ``jax.jit``: the
    options change how XLA compiles, not what the program computes."""
    tuned = run_example("own_jit_loop.py", "--horizon", "60", "--seeds", "2", cwd=tmp_path).stdout
    plain = run_example("own_jit_loop.py", "--horizon", "60", "--seeds", "2", "--plain", cwd=tmp_path).stdout
    assert "'xla_cpu_use_fusion_emitters': False" in tuned and "options {}" in plain
    assert "ran 8 runs of T = 60" in tuned
    regrets = _regrets(tuned)
    assert list(regrets) == ["1e-05", "0.0001", "0.001", "0.01"]
    assert regrets == _regrets(plain)
    assert all(0 < r <= 2 * 60 for r in regrets.values())


def test_own_jit_loop_runs_small(tmp_path):
    out = run_example("own_jit_loop.py", "--horizon", "40", "--seeds", "2", cwd=tmp_path).stdout
    regrets = _regrets(out)
    assert len(regrets) == 4 and all(0 < r <= 2 * 40 for r in regrets.values())


@pytest.mark.slow
def test_own_algorithm_is_checked_registered_and_swept_beside_oful(tmp_path):
    out = run_example("own_algorithm.py", "--horizon", "100", "--seeds", "2", cwd=tmp_path).stdout
    lines = out.splitlines()
    assert lines[0] == "eps_greedy passes jb.testing.check_algorithm"
    assert lines[1] == "mean final regret over 2 seeds, T = 100 (OFUL does not read c)"
    rows = {line.split()[0]: re.findall(r"c=\S+: +(\d+\.\d)", line) for line in lines[2:]}
    assert set(rows) == {"eps-greedy", "OFUL"} and all(len(v) == 4 for v in rows.values())
    assert len(set(rows["OFUL"])) == 1  # OFUL ignores c: the same runs at every grid point


def test_own_algorithm_registers_on_import_and_refuses_bad_constants(tmp_path):
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import own_algorithm, jaxbandit as jb\n"
        "spec = jb.registry.algorithm('eps_greedy')\n"
        "print(spec.label, spec.module, spec.make(jb.registry.Problem(horizon=5, dim=3)).policy)\n"
        "for kw in ({'c': -1.0}, {'lam': 0.0}):\n"
        "    try:\n"
        "        own_algorithm.eps_greedy(10, 3, **kw)\n"
        "    except ValueError as e:\n"
        "        print(e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(EXAMPLES)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == [
        "eps-greedy own_algorithm mixed",
        "c=-1.0 is invalid: the exploration constant must be >= 0.0",
        "lam=0.0 is invalid: the ridge parameter must be > 0.0",
    ]


@pytest.mark.slow
def test_own_stream_fits_your_table_and_runs_it(tmp_path):
    """A table whose rewards are a known linear function of the unit rows (plus small noise): the stream's
    θ* is that function, to the noise's error, and both algorithms run on it."""
    rng = np.random.default_rng(3)
    features = rng.normal(size=(2000, 5)) * np.array([1.0, 2.0, 0.5, 1.0, 3.0])
    w = np.array([0.6, -0.3, 0.2, 0.0, 0.5])
    unit = features / np.linalg.norm(features, axis=1, keepdims=True)
    rewards = unit @ w + 0.01 * rng.standard_t(3, size=2000)
    np.savez(tmp_path / "table.npz", features=features, rewards=rewards)
    out = run_example(
        "own_stream.py", "--data", "table.npz", "--arms", "6", "--horizon", "80", "--seeds", "2", cwd=tmp_path
    ).stdout
    match = re.search(r"passes jb.testing.check_environment; \|theta\*\| = (\S+), residuals' nu = (\S+)", out)
    assert match, out
    assert float(match.group(1)) == pytest.approx(np.linalg.norm(w), abs=2e-3)
    assert 0.005 < float(match.group(2)) < 0.03  # the t₃ noise's (1+ε)-moment at scale 0.01 (√3·0.01)
    rows = re.findall(r"^  (\S+) +mean +(\S+) +min +(\S+) +max +(\S+)$", out, re.MULTILINE)
    assert [r[0] for r in rows] == ["CR-Hvt-UCB", "OFUL"]
    assert all(0 <= float(r[2]) <= float(r[1]) <= float(r[3]) for r in rows)


def test_the_examples_page_s_own_loop_runs(capsys):
    """docs/examples.md's own jit loop, executed as printed: two beta_scale values' mean final regrets,
    each within what 200 rounds of unit vectors allow (a round's regret is at most 2)."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from test_docs import python_blocks
    finally:
        sys.path.pop(0)
    page = Path(__file__).resolve().parents[1] / "docs" / "examples.md"
    code = python_blocks(page.read_text())[0]
    exec(compile(code, "docs/examples.md: the own loop", "exec"), {"__name__": "examples_page"})
    values = [float(v) for v in re.findall(r"[\d.]+", capsys.readouterr().out)]
    assert len(values) == 2 and all(0 < v <= 2 * 200 for v in values)
