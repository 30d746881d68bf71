"""The benchmark's tuning protocol: every algorithm gets the same radius grid and the same budget of
settings, searched on the tuning seeds, with a grid edge extended until the optimum is inside.

- **The radius multiplier** ``beta_scale`` — a multiple of the theory value of the first free constant
  of the registry's ``grid`` (the algorithm's own ``beta_scale``, whose theory value is 1; LinTS's
  ``v``) — is searched over the same grid for every algorithm: :data:`RADIUS_GRID`, 10⁻⁸ … 1 in half
  decades (17 settings; the quick benchmark: decades, 9). The registry's own values of this constant are
  not used: they differ in range and density from one algorithm to the next.
- **The second free constant** (CR-Hvt-UCB's and CW-OFUL's α, GAdaOFUL's τ₀, every other algorithm's
  ridge λ) is then searched over its registry values (5; quick: every other one and both ends, 3) at
  the radius chosen: a coordinate search of 17 + 5 − 1 = 21 distinct settings for every algorithm
  (quick 11), the second constant's start at the chosen radius evaluated once. A constant with one
  registry value is held at it; a plugin's further constants are searched the same way, in grid order.
- **Edges are extended.** When the best value of an axis is the smallest or largest one tried, the axis
  is extended beyond it by :data:`EXTEND` more steps of the grid's own ratio at that end, and so on until
  the best value has a tried neighbour on both sides — or the axis reaches its limit
  (:data:`RADIUS_LIMITS`; :data:`SECONDARY_STEPS` steps past a secondary grid's end), in which case the
  edge is reported (:attr:`Search.edges`). Extensions count in the budget.
- **Choosing.** The objective is the final regret averaged over every scenario, per tuning seed, then
  over seeds; between equal objectives (a plateau: e.g. radii so small that no arm changes) the value
  nearest the axis's start wins — the theory value for the radius, the grid's middle otherwise — so a
  plateau does not run an edge out to the limit.

:func:`search` is the protocol alone: it calls ``evaluate(axis, values, fixed)`` for the objective
(``jaxbandit.experiments.bench.run`` runs the sweeps).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np

import jaxbandit as jb

#: The radius axis: ``beta_scale``, the multiplier of the algorithm's theory radius — the algorithms' own
#: argument of that name (theory value 1); for LinTS a multiple of its theory ``v``.
RADIUS = "beta_scale"
#: 10⁻⁸ … 1 in half decades: the radius multiplier's grid, the same for every algorithm (theory = 1).
RADIUS_GRID = tuple(10.0 ** (k / 2) for k in range(-16, 1))
#: How far a radius edge may be extended: below 10⁻¹⁴ the bonus changes no arm, above 10³ nothing learns.
RADIUS_LIMITS = (1e-14, 1e3)
#: Settings evaluated per extension of an edge.
EXTEND = 2
#: How many steps of its grid's ratio a secondary constant may be extended past either end.
SECONDARY_STEPS = 4
#: Tuning seeds the protocol asks for (fewer run, for smoke tests, and the report says so).
MIN_TUNE_SEEDS = 10


class Axis(NamedTuple):
    """One free constant as the protocol searches it: ``values`` the grid first tried (ascending),
    ``start`` the value it is held at while earlier axes are searched (and the tie-breaker), ``low`` and
    ``high`` the limits extensions may reach."""

    name: str
    values: tuple[float, ...]
    start: float
    low: float
    high: float


class Search(NamedTuple):
    """What :func:`search` found: ``best`` ``{axis: value}``; ``rows`` every setting evaluated, in order
    (``{axis: value, ..., "axis": the axis searched, "mean", "stderr"}``); ``edges`` ``{axis: "low" |
    "high"}`` for each axis whose best value is the limit it could not be extended past; ``budget`` the
    number of distinct settings evaluated (a setting an earlier axis evaluated is reused, not re-run)."""

    best: dict
    rows: list
    edges: dict
    budget: int


def _coarse(values: tuple[float, ...]) -> tuple[float, ...]:
    """Every other value and both ends (the quick benchmark's grids)."""
    return tuple(sorted(set(values[::2]) | {values[-1]}))


def axes(method: str, coarse: bool = False) -> tuple[Axis, ...]:
    """The axes of ``method``'s search: the radius multiplier, then its other free constants with more than
    one registry value; a constant with one value is held at it (it is in :func:`fixed`)."""
    spec = jb.registry.algorithm(method)
    radius = RADIUS_GRID[::2] if coarse else RADIUS_GRID
    out = [Axis(RADIUS, radius, 1.0, *RADIUS_LIMITS)]
    for name in tuple(spec.grid)[1:]:
        values = tuple(sorted(float(v) for v in spec.grid[name]))
        if len(values) < 2:
            continue
        if coarse:
            values = _coarse(values)
        low = values[0] / (values[1] / values[0]) ** SECONDARY_STEPS
        high = values[-1] * (values[-1] / values[-2]) ** SECONDARY_STEPS
        out.append(Axis(name, values, values[len(values) // 2], low, high))
    return tuple(out)


def fixed(method: str) -> dict[str, float]:
    """The free constants of ``method`` with a single registry value: held at it."""
    spec = jb.registry.algorithm(method)
    return {n: float(v[0]) for n, v in tuple(spec.grid.items())[1:] if len(v) == 1}


def constant_axes(method: str) -> tuple[str, ...]:
    """The grid axes of ``method``'s constants, in grid order: the radius multiplier, then the others
    (a held constant is an axis of one value)."""
    return (RADIUS, *tuple(jb.registry.algorithm(method).grid)[1:])


def evaluation_grid(method: str, axis: str, values: Sequence[float], fixed: Mapping[str, float]) -> dict:
    """The constant axes of one evaluation, in :func:`constant_axes` order: ``axis`` over ``values``,
    every other one at its value in ``fixed``."""
    names = constant_axes(method)
    missing = [n for n in names if n != axis and n not in fixed]
    if axis not in names or missing:
        raise ValueError(
            f"axis={axis!r}, fixed={dict(fixed)!r} is invalid for {method!r}: the axis must be one of "
            f"{names} and fixed must hold the others (missing {missing})"
        )
    return {n: [float(v) for v in values] if n == axis else [float(fixed[n])] for n in names}


def constants(names: Sequence[str], theory_radius, point: Mapping) -> dict:
    """An algorithm's own constants (its registry grid's ``names``) at a point of the search: the radius
    constant ``names[0]`` as ``point[RADIUS]`` × its theory value ``theory_radius``, every other one as
    ``point[name]`` (numbers or traced grid values)."""
    return {names[0]: point[RADIUS] * theory_radius, **{n: point[n] for n in names[1:]}}


def flatness(mean: Sequence[float], stderr: Sequence[float]) -> dict:
    """How flat a curve of settings is: ``within`` of its ``values`` have a mean no more than their own
    standard error above the best one's; ``flat`` when that is more than half of them, for then the
    tuning seeds do not resolve the choice."""
    m, s = np.asarray(mean, float), np.asarray(stderr, float)
    if m.ndim != 1 or m.shape != s.shape or m.size == 0:
        raise ValueError(
            f"mean (shape {m.shape}) and stderr (shape {s.shape}) are invalid: give two 1-D sequences of "
            "the same length >= 1"
        )
    within = int(np.sum(m - np.nanmin(m) <= s))
    return dict(values=len(m), within=within, flat=bool(within > len(m) / 2))


def batch_width(coarse: bool = False) -> int:
    """Settings per tuning sweep: a third of the radius grid, so that every batch of a search (grid,
    secondary grid, extension; padded to this width) is one compiled program."""
    return math.ceil(len(RADIUS_GRID[::2] if coarse else RADIUS_GRID) / 3)


def batches(values: Sequence[float], width: int) -> list[tuple[list[float], list[float]]]:
    """``values`` in batches of ``width``: ``(part, padded)`` per batch, ``padded`` the part filled up
    to ``width`` with repeats of its last value, so that every batch of a search runs as one compiled
    program."""
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
        raise ValueError(f"width={width!r} is invalid: give an integer >= 1")
    values = [float(v) for v in values]
    parts = [values[i : i + width] for i in range(0, len(values), width)]
    return [(part, part + part[-1:] * (width - len(part))) for part in parts]


def base_budget(method: str, coarse: bool = False) -> int:
    """Settings :func:`search` evaluates before any extension: each axis's grid, less the one setting of
    every later axis (its start at the chosen radius) that an earlier axis evaluated."""
    searched = axes(method, coarse)
    return sum(len(a.values) for a in searched) - (len(searched) - 1)


def _pick(values: np.ndarray, mean: np.ndarray, start: float) -> float:
    """The value of least mean (NaN never wins); ties to the value nearest ``start`` on a log scale."""
    ranked = np.where(np.isnan(mean), np.inf, mean)
    if np.all(np.isinf(ranked)):
        raise ValueError("every setting tried gave NaN regret: nothing to choose")
    tied = np.flatnonzero(ranked == ranked.min())
    distance = np.abs(np.log(values[tied]) - math.log(start))
    return float(values[tied[int(np.argmin(distance))]])


def _extension(tried: Sequence[float], side: str, axis: Axis) -> list[float]:
    """Up to :data:`EXTEND` values past the ``side`` end of ``tried``, by the grid's ratio there, within
    the axis's limits."""
    tried = sorted(tried)
    if side == "low":
        ratio = tried[1] / tried[0]
        steps = [tried[0] / ratio**k for k in range(1, EXTEND + 1)]
        return [v for v in steps if v >= axis.low * (1 - 1e-9)]
    ratio = tried[-1] / tried[-2]
    steps = [tried[-1] * ratio**k for k in range(1, EXTEND + 1)]
    return [v for v in steps if v <= axis.high * (1 + 1e-9)]


Evaluate = Callable[[str, Sequence[float], Mapping[str, float]], tuple[np.ndarray, np.ndarray]]


def search(axes_: Sequence[Axis], evaluate: Evaluate, held: Mapping[str, float] | None = None) -> Search:
    """The protocol: each axis in turn, the others at their best (or ``start``) value, its grid and then
    its extensions evaluated by ``evaluate(axis, values, fixed) -> (mean [n], stderr [n])``, where
    ``fixed`` holds every other axis's value and the ``held`` constants."""
    current = {a.name: a.start for a in axes_}
    held = dict(held or {})
    rows: list[dict] = []
    seen: dict[tuple, float] = {}  # every setting evaluated → its mean: none is evaluated or counted twice
    edges: dict[str, str] = {}
    for axis in axes_:
        values: list[float] = []
        means: list[float] = []
        batch = list(axis.values)
        while batch:
            others = {**held, **{k: v for k, v in current.items() if k != axis.name}}

            def key(v, others=others, name=axis.name):
                return tuple(sorted({**others, name: float(v)}.items()))

            new = [v for v in batch if key(v) not in seen]
            if new:
                mean, stderr = evaluate(axis.name, new, others)
                for v, m, s in zip(new, np.asarray(mean, float), np.asarray(stderr, float)):
                    rows.append(
                        {
                            **others,
                            axis.name: float(v),
                            "axis": axis.name,
                            "mean": float(m),
                            "stderr": float(s),
                        }
                    )
                    seen[key(v)] = float(m)
            for v in batch:
                values.append(float(v))
                means.append(seen[key(v)])
            order = np.argsort(values)
            best = _pick(np.asarray(values)[order], np.asarray(means)[order], axis.start)
            side = "low" if best == min(values) else "high" if best == max(values) else None
            batch = _extension(values, side, axis) if side else []
            if side and not batch:
                edges[axis.name] = side
        current[axis.name] = best
    return Search(best={**held, **current}, rows=rows, edges=edges, budget=len(rows))
