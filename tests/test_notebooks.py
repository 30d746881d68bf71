"""The notebooks run top to bottom (tiny horizon) in a kernel on this interpreter, and stay in step with
notebooks/make_notebooks.py, with no outputs stored."""

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from conftest import cli_env
from nbclient import NotebookClient

import jaxbandit as jb

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "jaxbandit-test-python"
HORIZON, SEEDS = 32, 2
NAMES = ("quickstart.ipynb", "figure1.ipynb", "benchmark.ipynb")


def _kernelspec(root: Path) -> None:
    """A kernelspec that starts *this* interpreter, so the kernel sees this environment's packages on
    any machine (the default 'python3' spec may resolve to another python on PATH)."""
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "jaxbandit tests",
                "language": "python",
            }
        )
    )


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Run the notebooks at T = 32, concurrently (each kernel is one process that spends its time
    compiling, so two of them use both cores). Returns {name: (stream text or exception, out dir)}."""
    root = tmp_path_factory.mktemp("jupyter")
    _kernelspec(root)
    runs = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", os.pathsep.join(filter(None, [str(root), os.environ.get("JUPYTER_PATH")])))
        clients = []
        for name in NAMES:
            out = tmp_path_factory.mktemp(name.split(".")[0])
            env = dict(
                cli_env(),
                JAXBANDIT_NOTEBOOK_HORIZON=str(HORIZON),
                JAXBANDIT_NOTEBOOK_SEEDS=str(SEEDS),
                JAXBANDIT_NOTEBOOK_OUT=str(out),
                JAXBANDIT_NOTEBOOK_ALGORITHMS="oful",
                JAXBANDIT_NOTEBOOK_NOISES="gaussian,empirical",
                PYDEVD_DISABLE_FILE_VALIDATION="1",
            )
            nb = nbformat.read(NOTEBOOKS / name, as_version=4)
            client = NotebookClient(
                nb, timeout=600, kernel_name=KERNEL, resources={"metadata": {"path": str(NOTEBOOKS)}}
            )
            clients.append((name, nb, out, client.async_execute(env=env)))

        async def run_all():
            return await asyncio.gather(*(c for *_, c in clients), return_exceptions=True)

        outcomes = asyncio.run(run_all())
    for (name, nb, out, _), outcome in zip(clients, outcomes):
        text = (
            outcome
            if isinstance(outcome, BaseException)
            else "\n".join(
                o.get("text", "")
                for c in nb.cells
                if c.cell_type == "code"
                for o in c.get("outputs", [])
                if o.get("output_type") == "stream"
            )
        )
        runs[name] = (text, out)
    return runs


def result_of(executed, name):
    text, out = executed[name]
    if isinstance(text, BaseException):
        raise text
    return text, out


@pytest.mark.slow
def test_quickstart_runs(executed):
    text, out = result_of(executed, "quickstart.ipynb")
    assert f"jaxbandit from the checkout {ROOT.resolve()}" in text  # found the repo, no pip
    assert "running on cpu" in text or "running on gpu" in text
    res = jb.SweepResult.load(out / "quickstart.npz")
    assert res.dims == ("C", "beta_scale", "seed", "round")
    assert res.coords["seed"].tolist() == list(range(SEEDS))
    assert res.coords["round"][-1] == HORIZON
    assert np.all(np.isfinite(res.cumulative_regret))


@pytest.mark.slow
def test_figure1_runs(executed):
    text, out = result_of(executed, "figure1.ipynb")
    out = out / "figure1"
    assert (out / "figure1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    meta = json.loads((out / "figure1.json").read_text())
    assert meta["horizon"] == HORIZON and meta["seeds"] == list(range(SEEDS))
    assert meta["constants"] == ["theory", "tuned"]
    saved = jb.SweepResult.load(out / "results.npz")
    # 2 constants x 2 noise settings x {CR-Hvt-UCB, GAdaOFUL} x 2 budgets
    assert saved.dims == ("constants", "noise", "algorithm", "C", "seed", "round")
    assert saved.cumulative_regret.shape == (2, 2, 2, 2, SEEDS, HORIZON)
    assert "gadaoful" in saved.coords["algorithm"].tolist()
    assert np.all(np.isfinite(saved.cumulative_regret)) and np.all(
        np.diff(saved.cumulative_regret, axis=-1) >= 0
    )
    tuning_seeds = set(meta["tuned_file"]["methods"]["gadaoful"]["seeds"])
    assert tuning_seeds and not tuning_seeds & set(meta["seeds"])  # tuned on other seeds
    assert "GAdaOFUL/CR =" in text and "ratio" in text  # the claims cell ran


@pytest.mark.slow
def test_benchmark_runs(executed):
    text, out = result_of(executed, "benchmark.ipynb")
    out = out / "benchmark"
    res = jb.SweepResult.load(out / "results.npz")
    assert res.dims == ("algorithm", "constants", "noise", "attack", "seed", "round")
    assert res.coords["algorithm"].tolist() == ["oful"]
    assert res.coords["seed"].tolist() == list(range(SEEDS)) and res.coords["round"][-1] == HORIZON
    assert np.all(np.isfinite(res.cumulative_regret))
    assert "## Ranking — tuned constants" in (out / "report.md").read_text()
    assert "tuned constants: {" in text and "flip" in text  # the xarray cell grouped by adversary


def _generator():
    spec = importlib.util.spec_from_file_location("make_notebooks", NOTEBOOKS / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_are_generated_and_carry_no_outputs(name):
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert code[0].source == _generator().INSTALL  # the first cell installs
    gen = _generator()
    assert path.read_text() == gen.render(gen.NOTEBOOKS[name]), (
        "run python notebooks/make_notebooks.py after editing it"
    )


def _run_install_cell(monkeypatch, folder, pip_succeeds=True) -> list:
    """Run the notebooks' install cell in `folder` (outside any checkout) with jaxbandit not installed;
    pip is not run: the commands it would run are returned."""
    commands = []

    def fake_run(command, *args, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, 0 if pip_succeeds else 1)

    monkeypatch.chdir(folder)
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    exec(_generator().INSTALL, {})
    return commands


def test_the_install_cell_outside_a_checkout_installs_an_uploaded_wheel(tmp_path, monkeypatch, capsys):
    (tmp_path / "jaxbandit-0.0.1-py3-none-any.whl").write_bytes(b"older")
    os.utime(tmp_path / "jaxbandit-0.0.1-py3-none-any.whl", (1, 1))
    (tmp_path / "jaxbandit-0.0.2-py3-none-any.whl").write_bytes(b"newer")
    commands = _run_install_cell(monkeypatch, tmp_path)
    wheel = tmp_path.resolve() / "jaxbandit-0.0.2-py3-none-any.whl"
    assert commands == [[sys.executable, "-m", "pip", "install", "-q", str(wheel)]]
    assert f"jaxbandit installed from {wheel}" in capsys.readouterr().out


def test_the_install_cell_outside_a_checkout_without_a_wheel_uses_the_index(tmp_path, monkeypatch, capsys):
    commands = _run_install_cell(monkeypatch, tmp_path)
    assert commands == [[sys.executable, "-m", "pip", "install", "-q", "jaxbandit"]]
    assert "jaxbandit installed from the package index" in capsys.readouterr().out


def test_the_install_cell_says_what_to_do_when_nothing_installs(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError) as info:
        _run_install_cell(monkeypatch, tmp_path, pip_succeeds=False)
    message = str(info.value)
    assert str(tmp_path.resolve()) in message or str(tmp_path) in message
    assert "jaxbandit-*.whl" in message and "python -m build --wheel" in message and "checkout" in message
