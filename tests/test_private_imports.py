"""Experiments and benchmarks are written against the public API: no module of jaxbandit/experiments or
benchmarks/ imports a ``_private`` name, from a ``_private`` module, or reaches one through an imported
module (``jb.runner.sweep._cpu_workers``). Read from the source with ``ast``, nothing imported."""

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
