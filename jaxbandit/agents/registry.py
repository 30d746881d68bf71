"""The one registry of algorithms: name → how to build it for a problem, its display name, theory
constants, default tuning grid, per-round cost and the knowledge it needs.

The CLI, Figure 1, the notebook generator, the benchmark and the tests read it; nothing else keeps a list
of algorithms. Each algorithm module registers itself (``register(AlgorithmSpec(...))`` at its end), and
you can register your own the same way::

    jb.registry.register(jb.registry.AlgorithmSpec(
        name="my_ucb", label="My-UCB", factory=my_ucb,
        build=lambda problem, h: my_ucb(problem.horizon, problem.dim, beta_scale=h["beta_scale"]),
        theory=lambda problem: {"beta_scale": 1.0}, grid={"beta_scale": (1e-3, 1e-2, 0.1, 1.0)},
        cost="O(1)", knowledge=(), source="me, 2026"))

A :class:`Problem` is what a setting may tell a learner (sizes, ε, ν, C, S, L); ``build(problem,
hyperparameters)`` reads only the fields named in ``knowledge`` and the hyperparameters named in
``grid``, every one of which may be a traced scalar (a ``jb.sweep`` grid axis).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from jax.typing import ArrayLike

from ..core.registry import Registry
from ..core.types import Algorithm

KNOWLEDGE = ("eps", "nu", "corruption", "S", "L")
COSTS = ("O(1)", "O(t)")
#: The default tuning grid of a confidence-radius scale, for algorithms whose only free constant it is.
BETA_SCALES = (1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 1.0)


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


def register(spec: AlgorithmSpec, *, replace: bool = False) -> AlgorithmSpec:
    """Add ``spec`` under a new name (another module's name only with ``replace=True``); returns the
    spec filed, with its ``module``."""
    return ALGORITHMS.register(spec, replace=replace)


def algorithms() -> dict[str, AlgorithmSpec]:
    """Every registered algorithm, in registration order (a copy)."""
    return ALGORITHMS.specs()


def names() -> tuple[str, ...]:
    """The registered names, in registration order."""
    return ALGORITHMS.names()


def algorithm(name: str) -> AlgorithmSpec:
    """The spec registered as ``name``; a ``ValueError`` lists the valid names."""
    return ALGORITHMS.get(name)
