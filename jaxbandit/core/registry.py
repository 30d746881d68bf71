"""The one registry mechanism: named specs of one kind (algorithms, adversaries, noise families, streams).

Each kind is a :class:`Registry` of a ``NamedTuple`` spec type with a ``name`` and a ``module`` field;
``register(spec)`` files a spec in the registry of its type. A name is registered once: registering a
name that another module registered raises ``ValueError`` naming that module, unless ``replace=True``
(a module may register its own names again: a reload, a re-run notebook cell). Every spec records the
module that registered it (``spec.module``, filled in by ``register``), which results record beside the
name.

Reading a registry (``names``, ``specs``, ``get``) first loads the installed plugins once
(:func:`jaxbandit.core.plugins.load_installed`), so a plugin's names are there whichever registry is
read first, and ``import jaxbandit`` loads none. :func:`transaction` undoes every registration made in
it when it raises: a plugin that fails at import leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

from . import plugins


class _Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def module(self) -> str: ...


S = TypeVar("S", bound=_Named)

_BY_TYPE: dict[type, Registry] = {}

#: The modules whose frames are the registry's own, skipped when finding who registered a spec.
_OWN = frozenset(
    {"jaxbandit.core.registry", "jaxbandit.agents.registry", "jaxbandit.envs.registry", "jaxbandit.registry"}
)


def caller_module() -> str:
    """The ``__name__`` of the module whose code called ``register`` (the first frame outside the
    registry's modules): ``"jaxbandit.agents.oful"``, a plugin's ``"mymod"``, ``"__main__"``."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if name not in _OWN:
            return name if isinstance(name, str) else "<unknown>"
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>"


class Registry(Generic[S]):
    """Specs of type ``spec_type`` by name, in registration order.

    ``kind``/``plural`` name them in messages (``"adversary"``, ``"adversaries"``); ``check(spec)``
    raises ``ValueError`` for a spec that the readers of this kind could not use.
    """

    def __init__(self, kind: str, plural: str, spec_type: type[S], check: Callable[[S], None]):
        self.kind, self.plural, self.spec_type, self._check = kind, plural, spec_type, check
        self._specs: dict[str, S] = {}
        _BY_TYPE[spec_type] = self

    def register(self, spec: S, *, replace: bool = False) -> S:
        """Add ``spec`` under a new name, or under a registered one with ``replace=True``; returns the
        spec filed, its ``module`` the registering module's name unless ``spec`` gave one."""
        if not isinstance(spec, self.spec_type):
            raise ValueError(f"spec={spec!r} is invalid: it must be a jb.registry.{self.spec_type.__name__}")
        if not isinstance(replace, bool):
            raise ValueError(f"replace={replace!r} is invalid: it must be True or False")
        name = spec.name
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(
                f"name={name!r} is invalid: it must be a Python identifier (e.g. 'my_{self.kind}')"
            )
        if not isinstance(spec.module, str):
            raise ValueError(f"module={spec.module!r} is invalid: it must be a str (a module's name)")
        self._check(spec)
        if not spec.module:
            spec = spec._replace(module=caller_module())  # type: ignore[attr-defined]  # a NamedTuple
        existing = self._specs.get(name)
        if existing is not None and not replace and existing.module != spec.module:
            raise ValueError(
                f"{self.kind}={name!r} is already registered, by the module {existing.module!r} (this one "
                f"is from {spec.module!r}): register yours under another name, or pass replace=True to "
                "jb.registry.register to replace it"
            )
        self._specs[name] = spec
        return spec

    def specs(self) -> dict[str, S]:
        """Every registered spec by name, in registration order (a copy)."""
        plugins.load_installed()
        return dict(self._specs)

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        plugins.load_installed()
        return tuple(self._specs)

    def get(self, name: str) -> S:
        """The spec registered as ``name``; the ``ValueError`` lists the valid names (and any plugin that
        failed to load)."""
        plugins.load_installed()
        if name not in self._specs:
            failed = plugins.failures()
            also = f"; plugins that failed to load: {', '.join(map(repr, failed))}" if failed else ""
            raise ValueError(
                f"{self.kind}={name!r} is invalid: registered {self.plural} are {tuple(self._specs)} (a "
                f"plugin's appear once its module is imported: --plugin MODULE on the command line{also})"
            )
        return self._specs[name]


def register(spec, *, replace: bool = False):
    """File ``spec`` in the registry of its type (``AlgorithmSpec``, ``AdversarySpec``, ``NoiseSpec``,
    ``StreamSpec``); returns the spec filed, its ``module`` the registering module's name.

    A name registered by another module is refused with a ``ValueError`` naming that module, unless
    ``replace=True``: a plugin never silently replaces a built-in."""
    registry = _BY_TYPE.get(type(spec))
    if registry is None:
        kinds = ", ".join(sorted(f"jb.registry.{t.__name__}" for t in _BY_TYPE))
        raise ValueError(f"spec={spec!r} is invalid: it must be one of {kinds}")
    return registry.register(spec, replace=replace)


@contextlib.contextmanager
def transaction() -> Iterator[None]:
    """Undo every registration made inside the block (new names and replacements) if it raises."""
    saved = [(registry, dict(registry._specs)) for registry in _BY_TYPE.values()]
    try:
        yield
    except BaseException:
        for registry, specs in saved:
            registry._specs = specs
        raise
