"""The one registry mechanism: named specs of one kind (algorithms, adversaries, noise families, streams).

Each kind is a :class:`Registry` of a ``NamedTuple`` spec type with a ``name`` field; ``register(spec)``
files a spec in the registry of its type. Reading a registry (``names``, ``specs``, ``get``) first loads
the installed plugins once (:func:`jaxbandit.core.plugins.load_installed`), so a plugin's names are
there whichever registry is read first, and ``import jaxbandit`` loads none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from . import plugins


class _Named(Protocol):
    @property
    def name(self) -> str: ...


S = TypeVar("S", bound=_Named)

_BY_TYPE: dict[type, Registry] = {}


class Registry(Generic[S]):
    """Specs of type ``spec_type`` by name, in registration order.

    ``kind``/``plural`` name them in messages (``"adversary"``, ``"adversaries"``); ``check(spec)``
    raises ``ValueError`` for a spec that the readers of this kind could not use.
    """

    def __init__(self, kind: str, plural: str, spec_type: type[S], check: Callable[[S], None]):
        self.kind, self.plural, self.spec_type, self._check = kind, plural, spec_type, check
        self._specs: dict[str, S] = {}
        _BY_TYPE[spec_type] = self

    def register(self, spec: S) -> S:
        """Add ``spec`` (a new name, or replacing the spec of that name); returns it."""
        if not isinstance(spec, self.spec_type):
            raise ValueError(f"spec={spec!r} is invalid: it must be a jb.registry.{self.spec_type.__name__}")
        name = spec.name
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(
                f"name={name!r} is invalid: it must be a Python identifier (e.g. 'my_{self.kind}')"
            )
        self._check(spec)
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
        """The spec registered as ``name``; the ``ValueError`` lists the valid names."""
        plugins.load_installed()
        if name not in self._specs:
            raise ValueError(
                f"{self.kind}={name!r} is invalid: registered {self.plural} are {tuple(self._specs)} (a "
                "plugin's appear once its module is imported: --plugin MODULE on the command line)"
            )
        return self._specs[name]


def register(spec):
    """File ``spec`` in the registry of its type (``AlgorithmSpec``, ``AdversarySpec``, ``NoiseSpec``,
    ``StreamSpec``); returns it."""
    registry = _BY_TYPE.get(type(spec))
    if registry is None:
        kinds = ", ".join(sorted(f"jb.registry.{t.__name__}" for t in _BY_TYPE))
        raise ValueError(f"spec={spec!r} is invalid: it must be one of {kinds}")
    return registry.register(spec)
