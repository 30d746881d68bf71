"""Hyperparameter tuning by grid search on tuning seeds: ``jb.tune``.

The theory constants of these algorithms make the confidence radius enormous (DESIGN: β ≈ 3·10⁴ for
T = 5000, d = 10), so results are usually shown twice: with theory constants, and with constants
*tuned on seeds that are not the reported ones*. ``tune`` runs :func:`jaxbandit.sweep` over a grid on
the tuning seeds and picks the grid point with the smallest mean final cumulative regret::

    tuned = jb.tune(make_alg, make_env, {"beta_scale": [1e-5, 1e-4, 1e-3, 1e-2], "C": [0, 100]},
                    horizon=T, seeds=range(1000, 1010), over=("C",))
    tuned.best            # {"beta_scale": 0.0001}: one setting for both C = 0 and C = 100
    print(tuned.format_table())
    tuned.check_report_seeds(range(10))          # raises if the report would reuse a tuning seed
    report = jb.sweep(..., seeds=range(10))      # report on seeds 0..9, never on 1000..1009
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ..core import validation as V
from ..core.types import Algorithm, Environment
from ..report.analysis import _seed_last, mean_and_stderr
from ..report.results import SweepResult
from .sweep import sweep

OBJECTIVES = ("final_regret",)


@dataclass(frozen=True)
class TuneResult:
    """What :func:`tune` found.

    - ``best``: ``{axis: value}`` for the tuned axes (grid axes not in ``over``), as floats.
    - ``axes``: the tuned axes in grid order; ``coords[axis]``: their values.
    - ``mean``, ``stderr``: the objective per tuned grid point, shape ``[len(coords[a]) for a in axes]``:
      the final cumulative regret averaged over the ``over`` axes for each seed, then mean ± standard
      error over seeds (seeds share θ*, contexts and noise across scenarios, so the per-seed average
      is the natural sample).
    - ``over``: the scenario axes averaged over; ``seeds``: the tuning seeds; ``objective``.
    - ``result``: the full :class:`SweepResult` of the tuning sweep (final round only).
    """

    best: dict
    axes: tuple
    coords: dict
    mean: np.ndarray
    stderr: np.ndarray
    over: tuple
    seeds: np.ndarray
    objective: str
    result: SweepResult

    @property
    def best_index(self) -> tuple:
        """Index of :attr:`best` into :attr:`mean`."""
        return tuple(int(np.flatnonzero(np.asarray(self.coords[a]) == self.best[a])[0]) for a in self.axes)

    @property
    def table(self) -> list[dict]:
        """One row per tuned grid point, in grid order: ``{axis: value, ..., "mean": m, "stderr": s}``."""
        rows = []
        for idx in np.ndindex(*self.mean.shape):
            row = {a: float(np.asarray(self.coords[a])[i]) for a, i in zip(self.axes, idx)}
            row.update(mean=float(self.mean[idx]), stderr=float(self.stderr[idx]))
            rows.append(row)
        return rows

    def format_table(self, sort: bool = True) -> str:
        """The table as text, best first when ``sort``; the chosen row is marked with ``*``."""
        rows = self.table
        if sort:
            rows = sorted(rows, key=lambda r: (np.isnan(r["mean"]), r["mean"]))
        what = "mean final regret ± s.e."
        scope = f"over {self.seeds.size} seeds" + (f" and {', '.join(self.over)}" if self.over else "")
        lines = ["  " + "".join(f"{a:>14}" for a in self.axes) + f"   {what} ({scope})"]
        for r in rows:
            mark = "* " if all(r[a] == self.best[a] for a in self.axes) else "  "
            lines.append(
                mark
                + "".join(f"{r[a]:>14.6g}" for a in self.axes)
                + f"   {r['mean']:12.4g} ± {r['stderr']:.3g}"
            )
        return "\n".join(lines)

    def check_report_seeds(self, seeds) -> None:
        """Raise ``ValueError`` if ``seeds`` (a count n meaning 0..n−1, or seed numbers) shares any seed
        with the tuning seeds: results reported on tuning seeds overstate the tuned setting."""
        report = _seed_ids(seeds, "seeds")
        shared = np.intersect1d(report, self.seeds)
        if shared.size:
            raise ValueError(
                f"seeds share {shared.size} seed(s) with the tuning seeds, e.g. {shared[:5].tolist()}: "
                "report on seeds disjoint from "
                f"[{self.seeds.min()}, {self.seeds.max()}] (e.g. tune on range(1000, 1010), "
                "report on range(10))"
            )

    def __repr__(self) -> str:
        return (
            f"TuneResult(best={self.best}, objective={self.objective!r}, over={self.over}, "
            f"seeds={self.seeds.size} seeds in [{self.seeds.min()}, {self.seeds.max()}])"
        )


def _seed_ids(seeds, name: str) -> np.ndarray:
    if seeds is None:
        raise ValueError(
            f"{name}=None is invalid: give the tuning seeds explicitly, a count n >= 1 "
            "(seeds 0..n-1) or seed numbers such as range(1000, 1010), disjoint from the "
            "seeds you report"
        )
    if np.ndim(seeds) == 0:
        return np.arange(V.check_int(name, seeds))
    ids = np.asarray(list(seeds))
    if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer) or np.any(ids < 0):
        raise ValueError(
            f"{name}={seeds!r} is invalid: give a count >= 1 or a non-empty list of "
            "non-negative integer seeds"
        )
    if np.unique(ids).size != ids.size:
        raise ValueError(f"{name}={seeds!r} is invalid: seeds must not repeat")
    return ids


def tune(
    algorithm: Algorithm | Callable[..., Algorithm],
    environment: Environment | Callable[..., Environment],
    grid: Mapping[str, Sequence[float]],
    *,
    horizon: int,
    seeds: int | Sequence[int] | np.ndarray,
    key: int | jax.Array = 0,
    objective: str = "final_regret",
    over: Sequence[str] = (),
    **sweep_options: Any,
) -> TuneResult:
    """Grid search: the grid point minimising the mean final cumulative regret on the tuning seeds.

    Report results on *other* seeds (tune on ``range(1000, 1010)``, report on ``range(10)``;
    :meth:`TuneResult.check_report_seeds` checks it): a setting picked on the seeds it is shown on
    looks better than it is.

    Args:
      algorithm: one algorithm — a factory ``params -> Algorithm`` or an ``Algorithm`` (as for
        :func:`jaxbandit.sweep`; tune several algorithms with one call each).
      environment: a factory ``params -> Environment`` or an ``Environment``.
      grid: ``{name: values}``, at least one axis; the sweep runs their Cartesian product.
      horizon: T, rounds per run.
      seeds: required — a count n (seeds 0..n−1) or explicit seed numbers.
      key: an int or a PRNG key, as for :func:`jaxbandit.sweep`.
      objective: ``"final_regret"``: the cumulative regret after T rounds.
      over: scenario axes of ``grid`` (e.g. ``("C",)``) that are averaged over rather than tuned, so
        that the chosen setting is the best single one across scenarios. The average is unweighted,
        so scenarios with larger regret weigh more.
      sweep_options: further keyword arguments of :func:`jaxbandit.sweep` (``chunk_size``,
        ``progress``, ...), except ``record``: tune keeps only the final round.

    Returns a :class:`TuneResult`; a grid point whose regret is NaN never wins, and ties go to the
    first point in grid order. Warns (``UserWarning``) when the best value of an axis with three or
    more values is its smallest or largest: the optimum may lie outside the grid.
    """
    if isinstance(algorithm, Mapping):
        raise ValueError(
            f"algorithm={type(algorithm).__name__} with {len(algorithm)} entries is invalid: "
            "tune takes one algorithm (a factory or a jb.Algorithm); call tune once per "
            "algorithm"
        )
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r} is invalid: valid objectives are {OBJECTIVES}")
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"grid={grid!r} is invalid: it must be a non-empty dict name -> values")
    if isinstance(over, str):
        over = (over,)
    over = tuple(over)
    for name in over:
        if name not in grid:
            raise ValueError(f"over contains {name!r}, which is not a grid axis; grid axes: {tuple(grid)}")
    if len(set(over)) != len(over):
        raise ValueError(f"over={over!r} is invalid: it names an axis twice")
    tuned_axes = tuple(n for n in grid if n not in over)
    if not tuned_axes:
        raise ValueError(
            f"over={over!r} covers every grid axis: leave at least one axis of {tuple(grid)} to tune"
        )
    if "record" in sweep_options:
        raise ValueError(
            f"record={sweep_options['record']!r} is invalid here: tune records only the final "
            "round; run jb.sweep with the chosen setting to record more"
        )
    horizon = V.check_int("horizon", horizon)
    seed_ids = _seed_ids(seeds, "seeds")

    res = sweep(
        algorithm,
        environment,
        grid,
        horizon=horizon,
        seeds=seed_ids,
        key=key,
        record=[horizon],
        **sweep_options,
    )
    return choose(res, over=over, objective=objective)


def choose(result: SweepResult, *, over: Sequence[str] = (), objective: str = "final_regret") -> TuneResult:
    """The best grid point of a finished sweep: what :func:`tune` returns after its own sweep.

    ``result``: a :class:`SweepResult` of one algorithm (no ``algorithm`` axis) over grid axes, ``seed``
    and ``round``, run on the tuning seeds; the objective is read at its last recorded round. ``over``:
    the scenario axes averaged over (see :func:`tune`); every other grid axis is tuned.
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective={objective!r} is invalid: valid objectives are {OBJECTIVES}")
    if not isinstance(result, SweepResult) or not {"seed", "round"} <= set(result.dims):
        raise ValueError(
            f"result={type(result).__name__} is invalid: it must be a jb.SweepResult with 'seed' and "
            "'round' axes (a jb.sweep of one algorithm)"
        )
    over = (over,) if isinstance(over, str) else tuple(over)
    if len(set(over)) != len(over):
        raise ValueError(f"over={over!r} is invalid: it names an axis twice")
    grid_axes = tuple(d for d in result.dims if d not in ("seed", "round"))
    if "algorithm" in grid_axes:
        raise ValueError("result has an 'algorithm' axis: choose a setting for one algorithm at a time")
    for name in over:
        if name not in grid_axes:
            raise ValueError(f"over contains {name!r}, which is not a grid axis; grid axes: {grid_axes}")
    tuned_axes = tuple(n for n in grid_axes if n not in over)
    if not tuned_axes:
        raise ValueError(
            f"over={over!r} covers every grid axis: leave at least one axis of {grid_axes} to tune"
        )
    result = dataclasses.replace(result, meta={**result.meta, "tuning": True, "objective": objective,
                                               "over": list(over)})  # fmt: skip
    final, dims = _seed_last(result)  # [*grid, seed, rounds]
    final = final[..., -1]
    scenario = tuple(dims.index(n) for n in over)
    per_seed = final.mean(axis=scenario) if scenario else final  # [*tuned, seed]
    mean, se = mean_and_stderr(per_seed, axis=-1)
    ranked = np.where(np.isnan(mean), np.inf, mean)
    if np.all(np.isnan(mean)):
        raise ValueError("every grid point gave NaN regret: nothing to choose; check the grid's ranges")
    idx = np.unravel_index(int(np.argmin(ranked)), mean.shape)
    coords = {a: np.asarray(result.coords[a]) for a in tuned_axes}
    best = {a: float(coords[a][i]) for a, i in zip(tuned_axes, idx)}
    for a, i in zip(tuned_axes, idx):
        values = coords[a]
        if values.size >= 3 and values[i] in (values.min(), values.max()):
            side = "smallest" if values[i] == values.min() else "largest"
            warnings.warn(
                f"tune: the best {a}={best[a]:g} is the {side} value in grid[{a!r}]; the "
                f"optimum may lie outside the grid — extend grid[{a!r}]",
                stacklevel=3,
            )
    return TuneResult(
        best=best,
        axes=tuned_axes,
        coords=coords,
        mean=mean,
        stderr=se,
        over=over,
        seeds=np.asarray(result.coords["seed"]),
        objective=objective,
        result=result,
    )
