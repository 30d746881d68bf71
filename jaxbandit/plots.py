"""Plots of sweep results (matplotlib, headless-safe). Plotting never re-runs anything."""
from __future__ import annotations

import numpy as np

from .results import SweepResult


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        try:
            import matplotlib.pyplot as plt  # noqa: F401 — a notebook may already have a backend
        except Exception:  # pragma: no cover - headless fallback
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def mean_and_stderr(curves: np.ndarray, axis: int = 0):
    """Mean and standard error of the mean along ``axis`` (ddof = 1; zero error for one curve)."""
    curves = np.asarray(curves, dtype=np.float64)
    n = curves.shape[axis]
    mean = curves.mean(axis=axis)
    se = curves.std(axis=axis, ddof=1) / np.sqrt(n) if n > 1 else np.zeros_like(mean)
    return mean, se


def plot_regret_curves(result: SweepResult, *, ax=None, loglog: bool = False, title: str | None = None):
    """Mean cumulative regret against round with a standard-error band, one line per combination of
    the axes other than ``seed`` and ``round``."""
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    rounds = np.asarray(result.coords["round"])
    seed_ax = result.axis("seed")
    curves = np.moveaxis(np.asarray(result.cumulative_regret), seed_ax, -2)
    other = [d for d in result.dims if d not in ("seed", "round")]
    flat = curves.reshape((-1,) + curves.shape[-2:])
    labels = _labels(result, other)
    for label, c in zip(labels, flat):
        mean, se = mean_and_stderr(c, axis=0)
        line, = ax.plot(rounds, mean, label=label)
        ax.fill_between(rounds, mean - se, mean + se, color=line.get_color(), alpha=0.25, linewidth=0)
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret")
    if title:
        ax.set_title(title)
    if any(labels):
        ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return ax


def _labels(result: SweepResult, dims) -> list[str]:
    if not dims:
        return [""]
    grids = np.meshgrid(*[np.asarray(result.coords[d]) for d in dims], indexing="ij")
    flat = [g.ravel() for g in grids]
    out = []
    for i in range(flat[0].size):
        parts = []
        for d, values in zip(dims, flat):
            v = values[i]
            parts.append(str(v) if d == "algorithm" else f"{d}={float(v):g}")
        out.append(", ".join(parts))
    return out


def save_figure(fig, path) -> None:
    """Save ``fig`` as PNG atomically."""
    from .results import atomic_write_bytes

    atomic_write_bytes(path, lambda f: fig.savefig(f, format="png", dpi=130, bbox_inches="tight"))
