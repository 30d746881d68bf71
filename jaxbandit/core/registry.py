"""The one registry: its mechanism and the spec type of every kind of extension point, in one explicit
table (as gymnax's ``registration.py``): algorithms (:class:`AlgorithmSpec`, built for a
:class:`Problem`), adversaries (:class:`AdversarySpec`), noise families (:class:`NoiseSpec`) and streams
(:class:`StreamSpec`). ``jb.registry`` is its public face; ``jaxbandit.agents.registry`` and
``jaxbandit.envs.registry`` re-export the parts their modules register with.

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

Registering an algorithm (each library algorithm module does so at its end)::

    jb.registry.register(jb.registry.AlgorithmSpec(
        name="my_ucb", label="My-UCB", factory=my_ucb,
        build=lambda problem, h: my_ucb(problem.horizon, problem.dim, beta_scale=h["beta_scale"]),
        theory=lambda problem: {"beta_scale": 1.0}, grid={"beta_scale": (1e-3, 1e-2, 0.1, 1.0)},
        cost="O(1)", knowledge=(), source="me, 2026"))

A :class:`Problem` is what a setting may tell a learner (sizes, ε, ν, C, S, L); ``build(problem,
hyperparameters)`` reads only the fields named in ``knowledge`` and the hyperparameters named in
``grid``, every one of which may be a traced scalar (a ``jb.sweep`` grid axis).

Adversaries, noise families and streams say how to build the piece for one scenario of the benchmark
(``python -m jaxbandit bench``): an adversary at a corruption level C, a noise family at a moment order
ε, the stream that draws θ*, the contexts and η_t from that family (``--stream``)::

    jb.registry.register(jb.registry.AdversarySpec(
        name="optimal_arm", build=lambda C, dim: optimal_arm(budget=C),
        description="flips the reward of the optimal arm only, sum |c_t| <= C"))
    jb.registry.register(jb.registry.NoiseSpec(
        name="laplace", build=lambda eps: laplace(1.0), describe=lambda eps: "Laplace(0, 1)",
        heavy_tailed=False))
    jb.registry.register(jb.registry.StreamSpec(
        name="pool", build=lambda dim, num_arms, noise: pool_stream(POOL, num_arms, noise=noise),
        description="contexts drawn from a fixed pool"))
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Generic, NamedTuple, Protocol, TypeVar

from jax.typing import ArrayLike

from . import plugins
from .types import Adversary, Algorithm

if TYPE_CHECKING:
    from ..envs.noise import NoiseFamily
    from .types import Stream


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


# --------------------------------------------------------------------------------------------------------
# Algorithms

KNOWLEDGE = ("eps", "nu", "corruption", "S", "L")
COSTS = ("O(1)", "O(t)")
#: The default tuning grid of a confidence-radius multiplier ``beta_scale``.
BETA_SCALES = (1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1.0)
#: The tuning grid of a ridge λ whose default is 1 (× d = 10 where the default is d, at the paper's d): the
#: second free constant of every algorithm whose only other one is its radius multiplier, so that every
#: algorithm's search has two axes; the grid's middle is the default, where the search starts.
RIDGE_FACTORS = (0.1, 0.3, 1.0, 3.0, 10.0)


class Problem(NamedTuple):
    """A setting as a learner may know it: horizon T and dimension d (static), the moment order ε and
    bound ν of the noise (``nu="revealed"``: the environment reveals ν_t), the corruption level C (or an
    upper bound), and the norm bounds S ≥ ‖θ*‖ and L ≥ ‖x‖. Numbers may be traced."""

    horizon: int
    dim: int
    eps: ArrayLike = 1.0
    nu: ArrayLike | str = 1.0
    corruption: ArrayLike = 0.0
    S: ArrayLike = 1.0
    L: ArrayLike = 1.0


Hyperparameters = Mapping[str, ArrayLike]


class AlgorithmSpec(NamedTuple):
    """A registered algorithm.

    - ``name``: its registry key (``"cr_hvt_ucb"``); ``label``: its display name (``"CR-Hvt-UCB"``);
    - ``factory``: the public factory (``jb.cr_hvt_ucb``);
    - ``build(problem, hyperparameters) -> Algorithm``: the algorithm for a :class:`Problem`, with the
      free constants ``hyperparameters`` (the keys of ``grid``);
    - ``theory(problem) -> hyperparameters``: the values of the paper's theory constants;
    - ``grid``: the default tuning grid of the free constants;
    - ``cost``: ``"O(1)"`` or ``"O(t)"`` work per round; ``knowledge``: the :class:`Problem` fields
      ``build`` reads (from ``KNOWLEDGE``); ``source``: the paper; ``color``: for plots;
    - ``module``: the module that registered it (filled in by ``register``; results record it).
    """

    name: str
    label: str
    factory: Callable[..., Algorithm]
    build: Callable[[Problem, Hyperparameters], Algorithm]
    theory: Callable[[Problem], dict]
    grid: Mapping[str, tuple[float, ...]]
    cost: str
    knowledge: tuple[str, ...]
    source: str
    color: str = "tab:purple"
    module: str = ""

    def make(self, problem: Problem, **overrides: ArrayLike) -> Algorithm:
        """The algorithm with its theory constants, any of them overridden."""
        unknown = sorted(set(overrides) - set(self.grid))
        if unknown:
            raise ValueError(
                f"{unknown[0]}={overrides[unknown[0]]!r} is invalid for {self.name}: its free "
                f"constants are {tuple(self.grid)}"
            )
        return self.build(problem, {**self.theory(problem), **overrides})


def _check(spec: AlgorithmSpec) -> None:
    if spec.cost not in COSTS:
        raise ValueError(f"cost={spec.cost!r} is invalid: it must be one of {COSTS}")
    bad = [k for k in spec.knowledge if k not in KNOWLEDGE]
    if bad:
        raise ValueError(f"knowledge={spec.knowledge!r} is invalid: {bad[0]!r} is not one of {KNOWLEDGE}")
    if not spec.grid or any(len(v) == 0 for v in spec.grid.values()):
        raise ValueError(
            f"grid={dict(spec.grid)!r} is invalid: give at least one value for each free constant"
        )


ALGORITHMS: Registry[AlgorithmSpec] = Registry("algorithm", "algorithms", AlgorithmSpec, _check)


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every registered algorithm, in registration order (a copy)."""
    return ALGORITHMS.specs()


def names() -> tuple[str, ...]:
    """The registered names, in registration order."""
    return ALGORITHMS.names()


def algorithm(name: str) -> AlgorithmSpec:
    """The spec registered as ``name``; a ``ValueError`` lists the valid names."""
    return ALGORITHMS.get(name)


# --------------------------------------------------------------------------------------------------------
# Adversaries, noise families, streams


class AdversarySpec(NamedTuple):
    """A registered adversary.

    - ``name``: its registry key (``"flip"``), a Python identifier;
    - ``build(C, dim) -> Adversary``: the adversary at corruption level ``C`` for contexts of dimension
      ``dim`` (a static int). ``C`` arrives as a traced scalar (every C of the benchmark's grid is one
      compiled sweep), so use ``jnp`` on it, not Python control flow; the learners are told the same C;
    - ``description``: one line saying what C means for it (reports);
    - ``takes_level``: False for an adversary without a level (``"none"``): the benchmark runs it once,
      at C = 0, as every other one's uncorrupted baseline, instead of at every C of its grid;
    - ``in_benchmark``: False to leave it out of the benchmark's default attacks (still runnable with
      ``--adversaries NAME``): for an adversary whose scenarios measurably equal the uncorrupted
      baseline, which would count it twice;
    - ``module``: the module that registered it (filled in by ``register``; results record it).
    """

    name: str
    build: Callable[[ArrayLike, int], Adversary]
    description: str
    takes_level: bool = True
    in_benchmark: bool = True
    module: str = ""


class NoiseSpec(NamedTuple):
    """A registered noise family.

    - ``name``: its registry key (``"student_t"``), a Python identifier;
    - ``build(eps) -> NoiseFamily``: the family the benchmark runs at moment order ``eps`` (a Python
      float in (0, 1]; the learners are told ε and the family's ``moment_bound(eps)``), e.g. a tail as
      heavy as that ε allows. Each ε of the grid builds a family of its own, and the sweep picks one
      by a traced index (``jb.noise.select``): its ``sample`` must be traceable, its construction need
      not be;
    - ``describe(eps)``: one line naming the family built for ``eps`` (reports);
    - ``heavy_tailed``: False for a family with every moment finite: run at ε = 1 only (the variance
      case), instead of at every ε of the grid;
    - ``module``: the module that registered it (filled in by ``register``; results record it).
    """

    name: str
    build: Callable[[float], NoiseFamily]
    describe: Callable[[float], str]
    heavy_tailed: bool = True
    module: str = ""


class StreamSpec(NamedTuple):
    """A registered stream.

    - ``name``: its registry key (``"linear"``), a Python identifier;
    - ``build(dim, num_arms, noise) -> Stream``: the stream of the benchmark's problem (``dim``,
      ``num_arms`` static ints; the benchmark's d = 10, K = 20), drawing η_t from ``noise`` (the family
      of the grid point, picked by a traced index: pass it to the stream, call its ``sample``);
    - ``description``: one line saying what it draws (reports);
    - ``module``: the module that registered it (filled in by ``register``; results record it).
    """

    name: str
    build: Callable[[int, int, NoiseFamily], Stream]
    description: str
    module: str = ""


def _check_adversary(spec: AdversarySpec) -> None:
    if not callable(spec.build):
        raise ValueError(f"build={spec.build!r} is invalid: it must be a function (C, dim) -> jb.Adversary")
    if not isinstance(spec.description, str):
        raise ValueError(f"description={spec.description!r} is invalid: it must be a str")
    for field in ("takes_level", "in_benchmark"):
        if not isinstance(getattr(spec, field), bool):
            raise ValueError(f"{field}={getattr(spec, field)!r} is invalid: it must be a bool")


def _check_noise(spec: NoiseSpec) -> None:
    for field in ("build", "describe"):
        if not callable(getattr(spec, field)):
            raise ValueError(f"{field}={getattr(spec, field)!r} is invalid: it must be a function of eps")
    if not isinstance(spec.heavy_tailed, bool):
        raise ValueError(f"heavy_tailed={spec.heavy_tailed!r} is invalid: it must be a bool")


def _check_stream(spec: StreamSpec) -> None:
    if not callable(spec.build):
        raise ValueError(
            f"build={spec.build!r} is invalid: it must be a function (dim, num_arms, noise) -> jb.Stream"
        )
    if not isinstance(spec.description, str):
        raise ValueError(f"description={spec.description!r} is invalid: it must be a str")


ADVERSARIES: Registry[AdversarySpec] = Registry("adversary", "adversaries", AdversarySpec, _check_adversary)
NOISES: Registry[NoiseSpec] = Registry("noise", "noise families", NoiseSpec, _check_noise)
STREAMS: Registry[StreamSpec] = Registry("stream", "streams", StreamSpec, _check_stream)


def adversaries() -> dict[str, AdversarySpec]:
    """Every registered adversary, in registration order (a copy)."""
    return ADVERSARIES.specs()


def adversary(name: str) -> AdversarySpec:
    """The adversary registered as ``name``; a ``ValueError`` lists the valid names."""
    return ADVERSARIES.get(name)


def noises() -> dict[str, NoiseSpec]:
    """Every registered noise family, in registration order (a copy)."""
    return NOISES.specs()


def noise(name: str) -> NoiseSpec:
    """The noise family registered as ``name``; a ``ValueError`` lists the valid names."""
    return NOISES.get(name)


def streams() -> dict[str, StreamSpec]:
    """Every registered stream, in registration order (a copy)."""
    return STREAMS.specs()


def stream(name: str) -> StreamSpec:
    """The stream registered as ``name``; a ``ValueError`` lists the valid names."""
    return STREAMS.get(name)
