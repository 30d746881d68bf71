"""Plugins: a user's module that registers algorithms, adversaries or noise families when imported.

Two routes, the ones Python users know:

- ``load("mymod")`` (the CLI's ``--plugin mymod``): import a module by name, searching the current
  directory first as ``python -m`` does, or a ``.py`` file by its path (``--plugin ./mymod.py``);
- the ``jaxbandit.plugins`` entry-point group of an installed distribution::

      [project.entry-points."jaxbandit.plugins"]
      mymod = "mymod"              # a module, imported
      other = "mypkg.bandits:setup"  # or a function, called once with no arguments

  loaded by :func:`load_installed`, which the registries call the first time any of them is read, so
  ``import jaxbandit`` imports no plugin and a process that never reads a registry pays nothing.

A plugin that fails to import raises ``ValueError`` naming it and the exception, in one line.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

#: The entry-point group whose modules register extensions.
GROUP = "jaxbandit.plugins"

_installed_loaded = False
_files: dict[Path, ModuleType] = {}


def _one_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return f"{type(err).__name__}: {lines[0]}" if lines else type(err).__name__


def load(plugin: str) -> ModuleType:
    """Import ``plugin`` — a module name (the current directory searched first) or a path ending in
    ``.py`` — once per process; returns the module. ``ValueError`` names the plugin and what went wrong."""
    if not isinstance(plugin, str) or not plugin.strip():
        raise ValueError(f"plugin={plugin!r} is invalid: give a module name (mymod) or a .py file's path")
    if plugin.endswith(".py") or os.sep in plugin or "/" in plugin:
        return _load_file(Path(plugin))
    cwd = os.getcwd()
    searched = cwd not in sys.path and "" not in sys.path
    if searched:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(plugin)
    except Exception as err:  # whatever the plugin's own code raises while it is imported
        if isinstance(err, ModuleNotFoundError) and err.name == plugin:
            raise ValueError(
                f"plugin={plugin!r} was not found: give an importable module name (the current directory "
                "is searched first) or the path of a .py file"
            ) from None
        raise ValueError(f"plugin={plugin!r} failed to import: {_one_line(err)}") from err
    finally:
        if searched:
            sys.path.remove(cwd)


def _load_file(path: Path) -> ModuleType:
    resolved = path.resolve()
    if resolved in _files:
        return _files[resolved]
    if not resolved.is_file() or resolved.suffix != ".py":
        raise ValueError(f"plugin={str(path)!r} is invalid: it is not a .py file")
    name = resolved.stem
    spec = importlib.util.spec_from_file_location(name, resolved)
    assert spec is not None and spec.loader is not None  # a .py file always has a source loader
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    sys.modules[name] = module  # as an import would: pickling and dataclasses look the module up
    try:
        spec.loader.exec_module(module)
    except Exception as err:  # whatever the plugin's own code raises
        if previous is None:
            del sys.modules[name]
        else:
            sys.modules[name] = previous
        raise ValueError(f"plugin={str(path)!r} failed to import: {_one_line(err)}") from err
    _files[resolved] = module
    return module


def installed() -> tuple[importlib.metadata.EntryPoint, ...]:
    """The entry points of the ``jaxbandit.plugins`` group, sorted by name."""
    return tuple(sorted(importlib.metadata.entry_points(group=GROUP), key=lambda ep: ep.name))


def load_installed() -> None:
    """Load every entry point of the ``jaxbandit.plugins`` group, once per process (a later call does
    nothing, also after a failure: the error is raised once, by the call that met it)."""
    global _installed_loaded
    if _installed_loaded:
        return
    _installed_loaded = True  # first, so that a plugin reading a registry while it loads does not recurse
    for ep in installed():
        try:
            loaded = ep.load()
            if not isinstance(loaded, ModuleType):
                loaded()
        except Exception as err:  # whatever the plugin's own code raises
            raise ValueError(
                f"plugin {ep.name!r} (entry point {ep.value!r} of group {GROUP!r}) failed to load: "
                f"{_one_line(err)}"
            ) from err
