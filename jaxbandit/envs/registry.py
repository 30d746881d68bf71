"""The registries of adversaries, noise families and streams: what the benchmark's axes and the CLI's
choices read.

Each entry says how to build the piece for one scenario of the benchmark (``python -m jaxbandit
bench``): an adversary at a corruption level C, a noise family at a moment order ε, the stream that
draws θ*, the contexts and η_t from that family (``--stream``). ``jb.corruption``, ``jb.noise`` and
``jb.envs`` register their own at their end; register yours the same way (or from a plugin,
``--plugin MODULE``)::

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

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from jax.typing import ArrayLike

from ..core.registry import Registry
from ..core.types import Adversary

if TYPE_CHECKING:
    from ..core.types import Stream
    from .noise import NoiseFamily


class AdversarySpec(NamedTuple):
    """A registered adversary.

    - ``name``: its registry key (``"flip"``), a Python identifier;
    - ``build(C, dim) -> Adversary``: the adversary at corruption level ``C`` for contexts of dimension
      ``dim`` (a static int). ``C`` arrives as a traced scalar (every C of the benchmark's grid is one
      compiled sweep), so use ``jnp`` on it, not Python control flow; the learners are told the same C;
    - ``description``: one line saying what C means for it (reports);
    - ``takes_level``: False for an adversary without a level (``"none"``): the benchmark runs it once,
      at C = 0, as every other one's uncorrupted baseline, instead of at every C of its grid;
    - ``module``: the module that registered it (filled in by ``register``; results record it).
    """

    name: str
    build: Callable[[ArrayLike, int], Adversary]
    description: str
    takes_level: bool = True
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
    if not isinstance(spec.takes_level, bool):
        raise ValueError(f"takes_level={spec.takes_level!r} is invalid: it must be a bool")


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
