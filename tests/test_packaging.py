"""What users install: the sdist and the wheel build, pass ``twine check --strict`` and carry every file of
the package (its datasets, the tuned constants, py.typed); the wheel, installed in a fresh virtual
environment outside the checkout, runs the demo and the quickstart notebook from the installed copy. The
version is written in one place."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import jaxbandit as jb

ROOT = Path(__file__).resolve().parents[1]
KERNEL = "jaxbandit-wheel-python"
# Run in the notebook's kernel after its cells (jb is imported): where jaxbandit came from, and the
# digests of its data files (DATA: paths from the repository root) as installed.
PROBE = """
import hashlib, importlib.resources, json
root = importlib.resources.files("jaxbandit")
digests = {n: hashlib.sha256(root.joinpath(n.split("/", 1)[1]).read_bytes()).hexdigest() for n in DATA}
found = {"file": jb.__file__, "version": jb.__version__, "digests": digests}
print("PROBE", json.dumps(dict(found, sp500=list(jb.datasets.sp500_returns().shape))))
"""


def run(command, **kwargs) -> str:
    """Run `command`; its stdout, or a failure showing what it printed."""
    done = subprocess.run(list(map(str, command)), capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def package_files() -> set[str]:
    """Every file of the package in the checkout, as a path from the repository root."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "jaxbandit").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and the wheel built from it (``python -m build``: isolated, as a release is built)."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, ROOT])
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return wheel, sdist


def test_the_version_is_written_once():
    toml = (ROOT / "pyproject.toml").read_text()
    project = re.search(r"(?ms)^\[project\]$(.*?)^\[", toml).group(1)
    assert not re.search(r"(?m)^version\s*=", project)
    assert re.search(r'(?m)^dynamic = \["version"\]', project)
    assert re.search(
        r'(?ms)^\[tool\.setuptools\.dynamic\]\nversion = \{ attr = "jaxbandit\.__version__" \}', toml
    )
    literal = f'"{jb.__version__}"'
    writers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "jaxbandit").rglob("*.py")
        if literal in path.read_text()
    )
    assert writers == ["jaxbandit/__init__.py"]


def _text_files():
    skip = {".git", ".venv", "site", "build", "dist", "out", "results"}
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if path.is_file() and not skip & set(parts) and not any(p.endswith("_cache") for p in parts):
            if path.suffix in {".py", ".md", ".toml", ".ipynb", ".yml", ".yaml", ".cfg", ".in", ".txt"}:
                yield path


def test_no_placeholder_urls_and_every_project_url_is_in_pyproject():
    """No file asks the user to fill in a repository URL; a URL naming jaxbandit (a badge, an install
    line) is one of ``[project.urls]`` or under one, so it is written in one place."""
    toml = (ROOT / "pyproject.toml").read_text()
    table = re.search(r"(?ms)^\[project\.urls\]$(.*?)(?=^\[|\Z)", toml)
    project_urls = re.findall(r'"(https?://[^"]+)"', table.group(1)) if table else []
    placeholder = re.compile("github\\.com/(OWNER|USER|YOUR|<)|REPO" + "_URL|OWNER/jaxbandit")
    url = re.compile(r"""https?://[^\s)"'>\]]*jaxbandit[^\s)"'>\]]*""")
    for path in _text_files():
        text = path.read_text(errors="replace")
        if path != Path(__file__):
            assert not placeholder.search(text), f"{path.relative_to(ROOT)}: {placeholder.search(text)[0]}"
        for found in url.findall(text):
            assert any(found.startswith(known) for known in project_urls), (
                f"{path.relative_to(ROOT)}: {found} is not under a [project.urls] entry"
            )


@pytest.mark.slow
def test_the_sdist_and_the_wheel_carry_the_whole_package(dist):
    wheel, sdist = dist
    assert wheel.name == f"jaxbandit-{jb.__version__}-py3-none-any.whl"
    assert sdist.name == f"jaxbandit-{jb.__version__}.tar.gz"
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {name for name in archive.namelist() if name.startswith("jaxbandit/")}
        metadata = archive.read(f"jaxbandit-{jb.__version__}.dist-info/METADATA").decode()
    assert in_wheel == package_files()
    assert f"\nVersion: {jb.__version__}\n" in metadata
    prefix = f"jaxbandit-{jb.__version__}/"
    with tarfile.open(sdist) as archive:
        in_sdist = {m.name.removeprefix(prefix) for m in archive.getmembers() if m.isfile()}
    assert {name for name in in_sdist if name.startswith("jaxbandit/")} == package_files()
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= in_sdist


@pytest.mark.slow
def test_twine_check_passes(dist):
    out = run([sys.executable, "-m", "twine", "check", "--strict", *dist])
    assert out.count("PASSED") == 2


def _kernelspec(root: Path, python: Path) -> None:
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"})
    )


@pytest.mark.slow
def test_the_wheel_runs_the_quickstart_and_the_demo_outside_the_checkout(dist, tmp_path, monkeypatch):
    wheel, _ = dist
    venv = tmp_path / "venv"
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    pip = [sys.executable, "-m", "pip", "--python", python]
    # the wheel's dependencies from the package index, pip (the install cell runs it) and a kernel
    run([*pip, "install", "-q", "--no-compile", wheel, "pip", "ipykernel"])
    # the notebook's install cell installs it again, from the wheel in its working directory
    run([*pip, "uninstall", "-q", "-y", "jaxbandit"])
    work = tmp_path / "work"  # outside the checkout, as in Colab
    work.mkdir()
    shutil.copy(wheel, work)
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS"), "--xla_backend_optimization_level=0"]))

    _kernelspec(tmp_path / "jupyter", python)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    nb = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    # then, in the same kernel: where jaxbandit was imported from, and its data files' digests
    data = [name for name in sorted(package_files()) if not name.endswith(".py")]
    nb.cells.append(nbformat.v4.new_code_cell(f"DATA = {data!r}\n{PROBE}"))
    client = NotebookClient(nb, timeout=300, kernel_name=KERNEL, resources={"metadata": {"path": str(work)}})
    out = tmp_path / "notebook"
    client.execute(
        env=dict(
            env,
            JAXBANDIT_NOTEBOOK_HORIZON="32",
            JAXBANDIT_NOTEBOOK_SEEDS="2",
            JAXBANDIT_NOTEBOOK_OUT=str(out),
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
    )
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert f"jaxbandit installed from {(work / wheel.name).resolve()}" in text
    res = jb.SweepResult.load(out / "quickstart.npz")
    assert res.coords["round"][-1] == 32 and res.coords["seed"].tolist() == [0, 1]
    found = json.loads(text.split("PROBE ", 1)[1].splitlines()[0])
    assert Path(found["file"]).resolve().is_relative_to(venv.resolve())  # not the checkout's
    assert found["version"] == jb.__version__
    assert found["sp500"] == list(jb.datasets.sp500_returns().shape)
    assert found["digests"] == {name: hashlib.sha256((ROOT / name).read_bytes()).hexdigest() for name in data}

    demo = tmp_path / "demo"
    run(
        [python, "-m", "jaxbandit", "demo", "--horizon", 50, "--seeds", 1, "--out", demo, "--no-progress"],
        cwd=work,
        env=env,
    )
    assert (demo / "regret.png").read_bytes()[:4] == b"\x89PNG"
    ran = jb.SweepResult.load(demo / "demo.npz")
    assert ran.coords["round"][-1] == 50 and ran.coords["seed"].tolist() == [0]
