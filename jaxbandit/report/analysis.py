"""Summaries of saved sweep results (NumPy only; nothing here re-runs a simulation).

- :func:`mean_and_stderr`: mean and standard error over seeds.
- :func:`final_regret_table`: mean ± s.e. of the final cumulative regret per grid point.
- :func:`loglog_slope`: the slope of log(mean cumulative regret) against log t over the late rounds —
  about 1 for linear regret, below 1 for sublinear (√T regret gives 0.5).
"""

from __future__ import annotations

import numpy as np

from ..core import validation as V
from .results import SweepResult


def mean_and_stderr(curves, axis: int = 0):
    """Mean and standard error of the mean along ``axis`` (ddof = 1; zero error for one sample)."""
    curves = np.asarray(curves, dtype=np.float64)
    if curves.ndim == 0:
        raise ValueError("curves is a scalar: it must be an array with at least one axis of samples")
    if not -curves.ndim <= axis < curves.ndim:
        raise ValueError(
            f"axis={axis} is invalid: curves has {curves.ndim} dimensions, valid range "
            f"[{-curves.ndim}, {curves.ndim - 1}]"
        )
    n = curves.shape[axis]
    if n == 0:
        raise ValueError(f"curves has no samples along axis={axis} (shape {curves.shape})")
    mean = curves.mean(axis=axis)
    se = curves.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(mean)
    return mean, se


def check_result(result, name: str = "result") -> SweepResult:
    """``result`` must be a :class:`SweepResult` with ``seed`` and ``round`` axes and cumulative
    regret whose shape follows its dims and coordinates."""
    if not isinstance(result, SweepResult):
        raise ValueError(
            f"{name}={type(result).__name__} is invalid: it must be a jb.SweepResult "
            "(from jb.sweep or jb.SweepResult.load)"
        )
    if "cumulative_regret" not in result.data:
        raise ValueError(
            f"{name} has no 'cumulative_regret' array (it has {sorted(result.data)}): "
            "not a jaxbandit sweep result"
        )
    for needed in ("seed", "round"):
        if needed not in result.dims:
            raise ValueError(f"{name} has axes {tuple(result.dims)}: a {needed!r} axis is required")
    shape = tuple(np.shape(result.data["cumulative_regret"]))
    expected = tuple(np.size(result.coords.get(d, ())) for d in result.dims)
    if shape != expected:
        raise ValueError(
            f"{name}: cumulative_regret has shape {shape} but its axes {tuple(result.dims)} "
            f"have coordinate lengths {expected}"
        )
    return result


def _seed_last(result: SweepResult, field: str = "cumulative_regret"):
    """The array with ``seed`` moved just before ``round``: `[*other, seed, round]`; and the other dims."""
    arr = np.asarray(result.data[field], dtype=np.float64)
    arr = np.moveaxis(arr, result.axis("seed"), -1)  # [..., round, seed] (round was last)
    arr = np.moveaxis(arr, -1, -2)  # [..., seed, round]
    other = tuple(d for d in result.dims if d not in ("seed", "round"))
    return arr, other


def final_regret_table(result) -> tuple[tuple, np.ndarray, np.ndarray]:
    """Mean and standard error over seeds of the final cumulative regret.

    Returns ``(dims, mean, stderr)``: ``dims`` are the result's axes other than ``seed`` and ``round``,
    and ``mean``/``stderr`` have one axis per name in ``dims``.
    """
    check_result(result)
    arr, other = _seed_last(result)
    mean, se = mean_and_stderr(arr[..., -1], axis=-1)
    return other, mean, se


def loglog_slope(result: SweepResult, *, start: float = 0.5, per_seed: bool = False) -> np.ndarray:
    """Least-squares slope of log(cumulative regret) against log t over the rounds t ≥ start·T.

    A slope near 1 means linear regret; a slope clearly below 1 means sublinear growth over the
    rounds recorded (√T regret gives 0.5). Fit over the second half by default, where the start-up
    transient no longer dominates.

    Args:
      result: a :class:`SweepResult`; T is its last recorded round.
      start: the fit window begins at ``start``·T, ``start`` in (0, 1); at least two recorded rounds
        must fall in the window.
      per_seed: ``False`` fits the mean curve over seeds; ``True`` fits each seed's curve.

    Returns:
      an array with one axis per dim other than ``seed`` and ``round`` (plus ``seed`` last when
      ``per_seed``); NaN where the regret in the window is not positive everywhere (log undefined).
    """
    check_result(result)
    if (
        isinstance(start, bool)
        or not isinstance(start, (int, float, np.integer, np.floating))
        or not 0.0 < float(start) < 1.0
    ):
        raise ValueError(f"start={start!r} is invalid: it must be a number in (0, 1)")
    V.check_flag("per_seed", per_seed)
    arr, _ = _seed_last(result)
    rounds = np.asarray(result.coords["round"], dtype=np.float64)
    window = rounds >= float(start) * rounds[-1]
    if np.count_nonzero(window) < 2:
        raise ValueError(
            f"start={start!r}: only {np.count_nonzero(window)} recorded round(s) lie in "
            f"[{start}·T, T] with T={rounds[-1]:g}; record more rounds or lower start "
            "(valid range (0, 1))"
        )
    curves = arr[..., window] if per_seed else arr[..., window].mean(axis=-2)
    return loglog_fit(rounds[window], curves)


def loglog_fit(x, y) -> np.ndarray:
    """Least-squares slope of log y against log x, over the last axis of ``y`` `[..., n]` (``x`` `[n]`,
    positive); NaN where some y is not positive and finite, or n < 2."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 1 or y.ndim < 1 or y.shape[-1] != x.size:
        raise ValueError(
            f"x has shape {x.shape} and y {y.shape}: x must be 1-D with as many entries as y's last axis"
        )
    if np.any(~(x > 0)):
        raise ValueError(
            f"x is invalid (its smallest entry is {np.nanmin(x)!r}, or NaN): every entry "
            "must be a number in (0, inf)"
        )
    x = np.log(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(y)
    if x.size < 2:
        return np.full(y.shape[:-1], np.nan)
    valid = np.all(np.isfinite(y), axis=-1)
    y = np.where(valid[..., None], y, 0.0)
    xc = x - x.mean()
    slope = (y - y.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)
    return np.where(valid, slope, np.nan)
