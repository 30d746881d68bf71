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
  Setting the environment variable ``JAXBANDIT_NO_PLUGINS=1`` loads none of them (``--plugin`` still
  loads the modules it names).

A plugin that fails to import leaves no registration behind (those it made before failing are undone).
One named by ``load`` (``--plugin``) raises ``ValueError`` naming it and the exception, in one line; an
installed one is skipped with a :class:`PluginWarning` naming it, the other installed plugins still
load, and :func:`failures` lists it (a registry's "unknown name" error names it too).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType

#: The entry-point group whose modules register extensions.
GROUP = "jaxbandit.plugins"
#: The environment variable that, set to ``1``, keeps :func:`load_installed` from loading any plugin.
DISABLE = "JAXBANDIT_NO_PLUGINS"

_installed_loaded = False
_files: dict[Path, ModuleType] = {}
_failures: dict[str, str] = {}


class PluginWarning(UserWarning):
    """An installed plugin failed to load and was skipped."""


def _transaction():
    from . import registry  # the registry reads this module when it is first read: imported late

    return registry.transaction()


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
        with _transaction():
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
        with _transaction():
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


def disabled() -> bool:
    """Whether ``JAXBANDIT_NO_PLUGINS`` is set to ``1`` (``0`` or unset: installed plugins load)."""
    value = os.environ.get(DISABLE, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(
            f"{DISABLE}={value!r} is invalid: set it to 1 (load no installed plugin) or 0 (load them), "
            "or leave it unset"
        )
    return value == "1"


def failures() -> dict[str, str]:
    """The installed plugins that failed to load, by entry-point name: what went wrong, in one line."""
    return dict(_failures)


def load_installed() -> None:
    """Load every entry point of the ``jaxbandit.plugins`` group, once per process (a later call does
    nothing), unless ``JAXBANDIT_NO_PLUGINS=1``. One that fails is skipped with a
    :class:`PluginWarning` naming it, its registrations undone; the others still load."""
    global _installed_loaded
    if _installed_loaded:
        return
    off = disabled()
    _installed_loaded = True  # first, so that a plugin reading a registry while it loads does not recurse
    if off:
        return
    for ep in installed():
        try:
            with _transaction():
                loaded = ep.load()
                if not isinstance(loaded, ModuleType):
                    loaded()
        except Exception as err:  # whatever the plugin's own code raises
            message = (
                f"plugin {ep.name!r} (entry point {ep.value!r} of group {GROUP!r}) failed to load and was "
                f"skipped, its registrations undone: {_one_line(err)} (set {DISABLE}=1 to load no "
                "installed plugin)"
            )
            _failures[ep.name] = message
            warnings.warn(message, PluginWarning, stacklevel=2)
