"""Progress bars: in a Jupyter kernel without ipywidgets they draw one line that updates in place, with no
TqdmWarning and no cursor-movement escapes; every bar in jaxbandit is made by jaxbandit.runner.progress."""

import importlib.machinery
import re
import sys
import types
from pathlib import Path

import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook
from test_notebooks import KERNEL, _kernelspec
from tqdm.std import tqdm as text_tqdm

from jaxbandit.runner import progress

ROOT = Path(__file__).resolve().parents[1]

# Two rounds of an outer bar over inner bars made as a sweep makes them (runner.driver.progress_bar).
# ipywidgets is hidden first, so the kernel is one without it wherever the test runs.
CELL = """
import sys, time
sys.modules["ipywidgets"] = None
from jaxbandit.runner import driver, progress
print("kind:", progress.display_kind())
outer = progress.bar(total=2, desc="outer", unit="algorithm")
for i in range(2):
    inner = driver.progress_bar(True, 40, 3, f"inner{i}")
    for t in range(40):
        time.sleep(0.03)
        inner.update(1)
    inner.close()
    outer.update(1)
outer.close()
"""


def rendered_lines(text: str) -> list[str]:
    """The lines a notebook shows for a stream's text: a carriage return starts its line over (what
    Jupyter's and Colab's output areas do), a newline ends it."""
    lines = []
    for line in text.split("\n"):
        shown = ""
        for part in line.split("\r"):
            shown = part + shown[len(part) :]  # overwrite from the line's start
        lines.append(shown)
    return [line for line in lines if line.strip()]


@pytest.fixture(scope="module")
def kernel_outputs(tmp_path_factory, monkeypatch_module):
    root = tmp_path_factory.mktemp("jupyter")
    _kernelspec(root)
    monkeypatch_module.setenv("JUPYTER_PATH", str(root))
    nb = new_notebook(cells=[new_code_cell(CELL)])
    NotebookClient(nb, timeout=120, kernel_name=KERNEL).execute()
    return nb.cells[0].outputs


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_a_notebook_without_ipywidgets_gets_one_updating_line(kernel_outputs):
    stdout = "".join(o.get("text", "") for o in kernel_outputs if o.get("name") == "stdout")
    stderr = "".join(o.get("text", "") for o in kernel_outputs if o.get("name") == "stderr")
    assert stdout == "kind: notebook-text\n"
    assert "Warning" not in stderr and "IProgress" not in stderr
    assert "\x1b" not in stderr  # no cursor movement, which notebooks print as text
    lines = rendered_lines(stderr)
    assert len(lines) == 1, lines
    assert re.match(r"outer: 100%\|.*\| 2/2 ", lines[0]), lines
    assert stderr.count("inner1") >= 1  # the inner bars were drawn, on the same line


def test_elsewhere_bars_are_tqdm_s_terminal_bars():
    assert progress.display_kind() == "terminal"  # pytest is not a Jupyter kernel
    bar = progress.bar(total=5, desc="x", unit="round")
    try:
        assert type(bar) is text_tqdm and bar.total == 5
    finally:
        bar.close()


def _fake_kernel(monkeypatch, widgets: bool) -> None:
    shell = type("ZMQInteractiveShell", (), {})()
    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", types.ModuleType("ipykernel.zmqshell"))
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    if widgets:
        module = types.ModuleType("ipywidgets")
        module.__spec__ = importlib.machinery.ModuleSpec("ipywidgets", None)
        monkeypatch.setitem(sys.modules, "ipywidgets", module)
    else:
        monkeypatch.setitem(sys.modules, "ipywidgets", None)
    for name in ("QT_API", "SPYDER_ARGS"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("widgets, kind", [(True, "widget"), (False, "notebook-text")])
def test_a_kernel_s_bar_kind_follows_ipywidgets(monkeypatch, widgets, kind):
    _fake_kernel(monkeypatch, widgets)
    assert progress.display_kind() == kind
    monkeypatch.setenv("QT_API", "pyqt5")  # Jupyter's qtconsole draws terminal bars
    assert progress.display_kind() == "terminal"


def test_every_bar_is_made_by_the_progress_module():
    makers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "jaxbandit").rglob("*.py")
        if re.search(r"^\s*(from|import) tqdm", path.read_text(), re.M)
    )
    assert makers == ["jaxbandit/runner/progress.py"]
