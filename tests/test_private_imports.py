"""Experiments, benchmarks and examples are written against the public API: no module of
jaxbandit/experiments, benchmarks/ or examples/ imports a ``_private`` name, from a ``_private``
module, or reaches one through an imported module (``jb.runner.sweep._cpu_workers``). Read from the
source with ``ast``, nothing imported."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A NamedTuple's public methods and attributes, spelled with an underscore so as not to clash with fields.
NAMEDTUPLE_API = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str) -> list[str]:
    """Every private name ``source`` imports or reaches through a name bound by an import, as
    ``"line: what"``."""
    tree = ast.parse(source)
    imported: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if any(_private(part) for part in alias.name.split(".")):
                    found.append(f"{node.lineno}: import {alias.name}")
                imported.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            module = "." * node.level + (node.module or "")
            if any(_private(part) for part in (node.module or "").split(".")):
                found.append(f"{node.lineno}: from {module} import ...")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{node.lineno}: from {module} import {alias.name}")
                imported.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in NAMEDTUPLE_API:
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in imported:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return sorted(found)


def _offenders(folder: str) -> dict[str, list[str]]:
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files, f"no Python files under {folder}"
    out = {}
    for path in files:
        uses = private_uses(path.read_text())
        if uses:
            out[str(path.relative_to(ROOT))] = uses
    return out


def test_the_checker_finds_each_kind_of_private_use():
    source = """
from __future__ import annotations
import jax._src.lib
import numpy as np
import jaxbandit as jb
from ..report.plots import _pyplot, save_figure
from ._helpers import public
from .settings import Plan
x = jb.runner.sweep._cpu_workers(1, None)
y = Plan._fields + (np.__version__,)
z = self._cache
w = plan._replace(seeds=1)._asdict()
"""
    assert private_uses(source) == sorted(
        [
            "3: import jax._src.lib",
            "6: from ..report.plots import _pyplot",
            "7: from ._helpers import ...",
            "9: jb.runner.sweep._cpu_workers",
        ]
    )


def test_experiments_use_no_private_name():
    assert _offenders("jaxbandit/experiments") == {}


def test_benchmarks_use_no_private_name():
    assert _offenders("benchmarks") == {}


def _top_level_names(source: str) -> set[str]:
    """The names a module's top level binds: functions, classes, assignments and imports."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def test_every_name_a_benchmark_takes_from_common_is_defined_there():
    """``common.NAME`` in a script that ``common.py`` does not define fails only when that script runs:
    read from the sources instead, so that a renamed or lost helper fails here."""
    defined = _top_level_names((ROOT / "benchmarks" / "common.py").read_text())
    missing = {}
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(path.read_text())
        used = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            if node.value.id == "common"
        }
        if used - defined:
            missing[path.name] = sorted(used - defined)
    assert missing == {}


def test_examples_use_no_private_name():
    """The examples are what a user copies: public API only."""
    assert _offenders("examples") == {}
