"""The package's floors, read from the source with ``ast`` (every import, those inside functions
included): persistence (``jaxbandit/persist``) imports nothing of jaxbandit above it, the report imports
nothing of the runner, and no files of the persistence, the runner, the report or an experiment import
each other in a circle (the scaling experiment's run.py and report.py did, hidden by a local import)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jaxbandit"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The jaxbandit modules (or packages) the module ``name`` imports, anywhere in it."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rsplit(".", 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                found.add(whole if whole in MODULES else base)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in MODULES or m == "jaxbandit"} - {name}


def test_imports_are_read_correctly():
    """The reader finds what it must, so that the tests below can fail."""
    assert "jaxbandit.persist.lock" in imports("jaxbandit.persist.atomic")
    assert "jaxbandit.report.results" in imports("jaxbandit.runner.store")
    assert "jaxbandit.experiments.scaling.report" in imports("jaxbandit.experiments.scaling.run")


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("jaxbandit.persist")))
def test_persistence_imports_nothing_above_it(name):
    above = sorted(m for m in imports(name) if not m.startswith("jaxbandit.persist"))
    assert not above, f"{name} imports {above}"


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith("jaxbandit.report")))
def test_the_report_imports_nothing_of_the_runner(name):
    runner = sorted(m for m in imports(name) if m.startswith("jaxbandit.runner") or m == "jaxbandit")
    assert not runner, f"{name} imports {runner}"


def test_no_circle_of_files():
    """Modules (not packages: a package's __init__ re-exports) of persist, runner, report and the
    experiments: no circle of imports among them."""
    floors = ("jaxbandit.persist", "jaxbandit.runner", "jaxbandit.report", "jaxbandit.experiments")
    names = {m for m, p in MODULES.items() if m.startswith(floors) and p.name != "__init__.py"}
    graph = {m: imports(m) & names for m in names}
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(m, path):
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                pytest.fail("a circle of imports: " + " -> ".join([*path[path.index(n) :], n]))
            if n not in state:
                walk(n, [*path, n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m, [m])
