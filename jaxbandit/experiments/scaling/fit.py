"""Least-squares slopes of mean regret with bootstrap confidence intervals over seeds.

Every fit takes ``x`` `[n]` (the grid: T, C or d) and ``Y`` `[n, seeds]` (final regret of each seed at each
grid point) and fits the *seed mean* ȳ_i = mean_s Y[i, s] — the expected regret the theory bounds:

- :func:`loglog_fit`: log ȳ = a + b log x (part (a): b against 1/(1+ε); part (c): b against 1);
- :func:`linear_fit`: ȳ = α + γ x (part (b): regret per unit of corruption budget);
- :func:`excess_loglog_fit`: log(ȳ(x) − ȳ(0)) = a + b log x over x > 0 (part (b): b against 1), on the
  per-seed differences Y[i, s] − Y[0, s].

Confidence intervals: percentile bootstrap over seeds — each resample draws seeds with replacement
*jointly for every grid point* (seed s faces the same θ*, contexts and noise at every T and C, so the grid
points of a seed are correlated and must be resampled together), recomputes the seed means and refits.

A power law fitted over a range where regret is not yet one (the local slope still moves with T) is
misspecified, and its bootstrap interval says nothing about that. :func:`window_fit` therefore fits the
exponent in T over a *late window* (the last :data:`LATE_POINTS` grid points), gives the *local slopes*
between neighbouring grid points beside it (the curvature), and an interval that covers the bootstrap
intervals of the late window and of its neighbours (one point earlier, one point longer): the seeds'
noise and the window's choice together.

NumPy only, deterministic for a given ``seed``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

DEFAULT_RESAMPLES = 2000
DEFAULT_LEVEL = 0.95
#: Grid points of the late window of :func:`window_fit`.
LATE_POINTS = 3
METHOD = (
    "least squares on the seed means; percentile bootstrap over seeds, resampled jointly across the "
    "grid points (seeds share streams); the exponent in T over the late window of the last 3 horizons, "
    "its interval covering the bootstrap intervals of that window and of its neighbours (one horizon "
    "earlier, one horizon longer)"
)


def _where(low: float, high: float, value: float) -> str:
    """``"below"``, ``"contains"`` or ``"above"``: where the interval [low, high] lies relative to
    ``value``."""
    if high < value:
        return "below"
    if low > value:
        return "above"
    return "contains"


class SlopeFit(NamedTuple):
    """A fitted line: ``slope`` with its bootstrap interval [``ci_low``, ``ci_high``] at ``level`` and
    bootstrap standard error ``stderr``; ``intercept`` (a on the log scale, α on the linear one); the
    grid points used (``x``) and their seed means (``mean``); ``valid_resamples`` out of ``resamples``
    (a resample is invalid when a logarithm it needs is of a non-positive mean)."""

    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    stderr: float
    level: float
    x: tuple[float, ...]
    mean: tuple[float, ...]
    seeds: int
    resamples: int
    valid_resamples: int

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self._asdict().items()}

    def contains(self, value: float) -> bool:
        return bool(self.ci_low <= value <= self.ci_high)

    def compare(self, value: float) -> str:
        """``"below"``, ``"contains"`` or ``"above"``: where the interval lies relative to ``value``."""
        return _where(self.ci_low, self.ci_high, value)


def _check(x, Y, name: str, *, positive_x: bool) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if x.ndim != 1 or Y.ndim != 2 or Y.shape[0] != x.size:
        raise ValueError(f"{name}: x has shape {x.shape} and Y {Y.shape}: x must be 1-D [n] and Y [n, seeds]")
    if np.unique(x).size < 2:
        raise ValueError(f"{name}: x={x.tolist()} is invalid: a slope needs at least 2 distinct grid points")
    if Y.shape[1] < 2:
        raise ValueError(f"{name}: Y has {Y.shape[1]} seed(s): a confidence interval needs at least 2")
    if not np.all(np.isfinite(x)) or not np.all(np.isfinite(Y)):
        raise ValueError(f"{name}: x and Y must be finite")
    if positive_x and np.any(x <= 0):
        raise ValueError(f"{name}: x={x.tolist()} is invalid: a log-log fit needs every x > 0")
    return x, Y


def _slopes(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slope and intercept of y `[..., n]` against x `[n]`."""
    xc = x - x.mean()
    slope = (y - y.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)
    return slope, y.mean(axis=-1) - slope * x.mean()


def _resampled_means(Y: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """`[resamples, n]` seed means, each resample one draw of seed indices shared by every grid point."""
    n_seeds = Y.shape[1]
    idx = np.random.default_rng(seed).integers(0, n_seeds, size=(resamples, n_seeds))
    return Y[:, idx].mean(axis=-1).T


def _fit(x, ybar, boot, *, level, log_y, seeds, resamples) -> SlopeFit:
    fx = np.log(x) if log_y else x
    with np.errstate(divide="ignore", invalid="ignore"):
        ty = np.log(ybar) if log_y else ybar
        tb = np.log(boot) if log_y else boot
    slope, intercept = _slopes(fx, ty)
    valid = np.all(np.isfinite(tb), axis=-1)
    bs, _ = _slopes(fx, tb[valid]) if valid.any() else (np.empty(0), None)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(bs, [alpha, 1.0 - alpha]) if bs.size else (np.nan, np.nan)
    return SlopeFit(
        float(slope),
        float(intercept),
        float(lo),
        float(hi),
        float(bs.std(ddof=1)) if bs.size > 1 else float("nan"),
        float(level),
        tuple(float(v) for v in x),
        tuple(float(v) for v in ybar),
        int(seeds),
        int(resamples),
        int(valid.sum()),
    )


def _check_options(resamples, level):
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 100:
        raise ValueError(f"resamples={resamples!r} is invalid: it must be an integer >= 100")
    if not (isinstance(level, (int, float)) and 0.0 < level < 1.0):
        raise ValueError(f"level={level!r} is invalid: it must be a number in (0, 1)")


def loglog_fit(
    x, Y, *, resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL, seed: int = 0
) -> SlopeFit:
    """log ȳ = a + b log x over the grid ``x`` `[n]` (> 0); ``Y`` `[n, seeds]`, every seed mean > 0."""
    _check_options(resamples, level)
    x, Y = _check(x, Y, "loglog_fit", positive_x=True)
    ybar = Y.mean(axis=1)
    if np.any(ybar <= 0):
        raise ValueError(
            f"loglog_fit: the seed means {ybar.tolist()} must all be > 0 to take their logarithm"
        )
    boot = _resampled_means(Y, resamples, seed)
    return _fit(x, ybar, boot, level=level, log_y=True, seeds=Y.shape[1], resamples=resamples)


def linear_fit(
    x, Y, *, resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL, seed: int = 0
) -> SlopeFit:
    """ȳ = α + γ x over the grid ``x`` `[n]`; ``Y`` `[n, seeds]`."""
    _check_options(resamples, level)
    x, Y = _check(x, Y, "linear_fit", positive_x=False)
    boot = _resampled_means(Y, resamples, seed)
    return _fit(x, Y.mean(axis=1), boot, level=level, log_y=False, seeds=Y.shape[1], resamples=resamples)


def excess_loglog_fit(
    x, Y, *, resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL, seed: int = 0
) -> SlopeFit:
    """log(ȳ(x) − ȳ(0)) = a + b log x over the points x > 0 whose mean excess is positive (the others are
    left out: they are not in ``SlopeFit.x``). ``x`` must hold 0; ``Y`` `[n, seeds]`. The excess is taken
    per seed (Y[i, s] − Y[x=0, s]: the same stream), then averaged."""
    _check_options(resamples, level)
    x, Y = _check(x, Y, "excess_loglog_fit", positive_x=False)
    zero = np.flatnonzero(x == 0)
    if zero.size != 1 or np.any(x < 0):
        raise ValueError(f"excess_loglog_fit: x={x.tolist()} is invalid: it must hold 0 once and be >= 0")
    D = Y - Y[zero[0]]
    keep = (x > 0) & (D.mean(axis=1) > 0)
    if keep.sum() < 2:
        raise ValueError(
            f"excess_loglog_fit: only {int(keep.sum())} grid point(s) x > 0 have a positive mean excess "
            f"over x = 0 (means {D.mean(axis=1).tolist()}): a slope needs 2"
        )
    D = D[keep]
    boot = _resampled_means(D, resamples, seed)
    return _fit(x[keep], D.mean(axis=1), boot, level=level, log_y=True, seeds=D.shape[1], resamples=resamples)


class WindowFit(NamedTuple):
    """The exponent over a late window: ``late`` the fit over the last :data:`LATE_POINTS` points;
    ``windows`` the fits over it and its neighbours (one point earlier; one point longer) that the
    interval covers; [``ci_low``, ``ci_high``] the smallest interval holding every one of their bootstrap
    intervals (seeds and window together); ``local`` the slopes of the log seed mean between neighbouring
    grid points, `[n − 1]`; ``whole`` the fit over every point (for comparison: misspecified where the
    local slopes move)."""

    late: SlopeFit
    windows: tuple[SlopeFit, ...]
    ci_low: float
    ci_high: float
    local: tuple[float, ...]
    whole: SlopeFit

    @property
    def slope(self) -> float:
        return self.late.slope

    def compare(self, value: float) -> str:
        """``"below"``, ``"contains"`` or ``"above"``: the combined interval relative to ``value``."""
        return _where(self.ci_low, self.ci_high, value)

    def as_dict(self) -> dict:
        return {
            "slope": self.slope,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "late": self.late.as_dict(),
            "windows": [w.as_dict() for w in self.windows],
            "local": list(self.local),
            "whole": self.whole.as_dict(),
            "x": list(self.whole.x),
            "mean": list(self.whole.mean),
            "seeds": self.late.seeds,
        }


def local_slopes(x, Y) -> np.ndarray:
    """Slopes of log(seed mean) against log x between neighbouring grid points, `[n − 1]`."""
    x, Y = _check(x, Y, "local_slopes", positive_x=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.diff(np.log(Y.mean(axis=1))) / np.diff(np.log(x))


def window_fit(
    x, Y, *, resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL, seed: int = 0
) -> WindowFit:
    """The exponent b of ȳ ∝ x^b over the late window, with an interval covering seeds and window (see
    :class:`WindowFit`); ``x`` `[n]` sorted ascending, n ≥ 2 (with fewer than :data:`LATE_POINTS` + 1
    points the late window is every point and has no neighbours)."""
    _check_options(resamples, level)
    x, Y = _check(x, Y, "window_fit", positive_x=True)
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"window_fit: x={x.tolist()} is invalid: give the grid in ascending order")
    n = x.size
    w = min(LATE_POINTS, n)
    spans = [(n - w, n)] + ([(n - w - 1, n - 1), (n - w - 1, n)] if n > w else [])
    windows = tuple(loglog_fit(x[a:b], Y[a:b], resamples=resamples, level=level, seed=seed) for a, b in spans)
    return WindowFit(
        late=windows[0],
        windows=windows,
        ci_low=float(min(f.ci_low for f in windows)),
        ci_high=float(max(f.ci_high for f in windows)),
        local=tuple(float(v) for v in local_slopes(x, Y)),
        whole=loglog_fit(x, Y, resamples=resamples, level=level, seed=seed),
    )
