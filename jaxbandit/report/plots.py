"""Plots of sweep results (matplotlib, headless-safe). Plotting never re-runs anything.

Every ``plot_*`` function but :func:`plot_panels` draws on ``ax`` (a new figure when ``None``) and returns
the Axes; means are over seeds with a ± one standard-error band or bar:

- :func:`plot_regret_curves`: cumulative regret against round t (``loglog=True`` for log–log axes);
- :func:`plot_final_vs`: final regret against one grid axis, e.g. C — a robustness frontier;
- :func:`plot_runtime`: wall-clock seconds against horizon T on log–log axes;
- :func:`plot_panels`: a figure of regret panels, a line per algorithm and a panel per combination of the
  other grid axes (:func:`facets`; what ``python -m jaxbandit plot FILE`` draws).

The figures they make use constrained layout, so a legend outside the axes stays inside the figure and a
plain ``fig.savefig`` keeps it; log axes label enough ticks to read values off (:func:`readable_log_ticks`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core import validation as V
from .analysis import _seed_last, check_result, loglog_fit, mean_and_stderr
from .results import SweepResult

__all__ = [
    "algorithm_style",
    "facets",
    "mean_and_stderr",
    "panel_axis",
    "plot_final_vs",
    "plot_panels",
    "plot_regret_curves",
    "plot_runtime",
    "pyplot",
    "readable_log_ticks",
    "save_figure",
]

_NON_GRID = ("algorithm", "seed", "round")
#: One marker per registered algorithm (registry order), so that lines of the same colour stay apart.
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">", "p")
#: The colours lines take in turn: Paul Tol's colour-blind-safe "muted" scheme, then black and grey.
PALETTE = (
    "#332288", "#CC6677", "#117733", "#88CCEE", "#DDCC77", "#882255", "#44AA99", "#999933", "#AA4499",
    "#000000", "#777777",
)  # fmt: skip


def _style(k: int) -> dict:
    """The colour and marker of the ``k``-th line of a plot."""
    return {"color": PALETTE[k % len(PALETTE)], "marker": MARKERS[k % len(MARKERS)]}


def algorithm_style(name: str) -> dict:
    """``{"color", "marker"}`` of a registered algorithm for ``plot``/``errorbar``: its registry colour (the
    registered algorithms use Paul Tol's colour-blind-safe "muted" palette, black and grey) and a marker
    of its own by registry position, so that 11 lines stay apart in greyscale too; an unknown name is
    grey with a dot."""
    from ..agents import registry

    names = registry.names()
    if name not in names:
        return {"color": "0.45", "marker": "."}
    return {"color": registry.algorithm(name).color, "marker": MARKERS[names.index(name) % len(MARKERS)]}


def pyplot():
    """``matplotlib.pyplot``, imported on first use, with the Agg backend where no display can be opened."""
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        try:
            import matplotlib.pyplot as plt
        except Exception:  # pragma: no cover - headless fallback
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def readable_log_ticks(ax, axes: str = "xy") -> None:
    """Label enough ticks on each log-scaled axis of ``ax`` to read values off it: matplotlib labels only
    powers of 10 by default, so a range within a decade (regret from 650 to 1800) shows one label or
    none. Over more than 3 decades the powers of 10 are kept; over 1 to 3, ticks at 1, 2 and 5 times
    them; within about a decade, at evenly spaced round values. Labels are plain numbers (``%g``), minor
    ticks unlabelled. ``axes``: which of them, ``"x"``, ``"y"`` or ``"xy"`` (an axis whose ticks were set
    at the grid's own values is left out). Call it once the data are drawn: it reads the axis limits."""
    from matplotlib import ticker

    if axes not in ("x", "y", "xy"):
        raise ValueError(f"axes={axes!r} is invalid: it must be 'x', 'y' or 'xy'")
    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        if scale != "log" or axis.axis_name not in axes:
            continue
        lo, hi = sorted(axis.get_view_interval())
        if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= lo:
            continue
        decades = math.log10(hi / lo)
        if decades > 3:
            continue
        locator: ticker.Locator
        if decades > 1:
            locator = ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0))
        else:
            values = np.asarray(ticker.MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi))
            values = values[(values >= lo) & (values <= hi) & (values > 0)]
            if values.size < 2:
                values = np.asarray(ticker.LogLocator(base=10, subs="all").tick_values(lo, hi))
                values = values[(values >= lo) & (values <= hi)]
            locator = ticker.FixedLocator(values)
        axis.set_major_locator(locator)
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(ticker.NullFormatter())


def _new_axes(ax, figsize=(6, 4)):
    if ax is None:  # constrained layout makes room for a legend outside the axes
        _, ax = pyplot().subplots(figsize=figsize, layout="constrained")
        return ax
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise ValueError(f"ax={ax!r} is invalid: it must be a matplotlib Axes or None")
    return ax


def _format_value(dim, value) -> str:
    """A legend or title entry: the algorithm's name alone, ``dim=value`` otherwise (numbers as ``%g``,
    string coordinates such as a benchmark's ``constants="tuned"`` as they are)."""
    if dim == "algorithm":
        return str(value)
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return f"{dim}={value.decode() if isinstance(value, bytes) else value}"
    return f"{dim}={float(value):g}"


def _labels(result: SweepResult, dims) -> list[str]:
    """One label per combination of ``dims`` (C order), e.g. ``"CR-Hvt-UCB, C=100"``."""
    if not dims:
        return [""]
    grids = np.meshgrid(*[np.asarray(result.coords[d]) for d in dims], indexing="ij")
    flat = [g.ravel() for g in grids]
    return [
        ", ".join(_format_value(d, values[i]) for d, values in zip(dims, flat)) for i in range(flat[0].size)
    ]


def _prefixed(label, labels: list[str]) -> list[str]:
    if label is None:
        return labels
    if not isinstance(label, str):
        raise ValueError(f"label={label!r} is invalid: it must be a string or None")
    return [f"{label}, {x}" if x else label for x in labels]


LEGENDS = ("right", "below", None)
SAME = "same runs as"


def _legend(ax, where) -> None:
    """The legend outside the data: to the right of the axes or below them (None: no legend)."""
    if where == "right":
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    elif where == "below":
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), borderaxespad=0.0)


def plot_regret_curves(
    result: SweepResult,
    *,
    ax=None,
    loglog: bool = False,
    title: str | None = None,
    label: str | None = None,
    legend: str | None = "right",
):
    """Mean cumulative regret against round t with a ± one standard-error band over seeds, one line
    per combination of the axes other than ``seed`` and ``round`` (select first with ``result.sel``
    to plot fewer). ``loglog=True``: log–log axes, where a slope-1 line is linear regret. ``label``
    prefixes every line's legend entry (e.g. the algorithm's name when the result has no
    ``algorithm`` axis); call again with the same ``ax`` to overlay another result. A line whose runs
    equal an earlier line's exactly would be hidden under it: it is drawn dashed and its legend entry
    says whose it is. ``legend``: ``"right"`` of the axes, ``"below"`` them, or None."""
    check_result(result)
    loglog = V.check_flag("loglog", loglog)
    if legend not in LEGENDS:
        raise ValueError(f"legend={legend!r} is invalid: it must be one of {LEGENDS}")
    ax = _new_axes(ax)
    rounds = np.asarray(result.coords["round"], dtype=np.float64)
    curves, other = _seed_last(result)
    flat = curves.reshape((-1,) + curves.shape[-2:])
    labels = _prefixed(label, _labels(result, other))
    for k, (name, c) in enumerate(zip(labels, flat)):
        mean, se = mean_and_stderr(c, axis=0)
        same = next((labels[j] for j in range(k) if np.array_equal(flat[j], c, equal_nan=True)), None)
        if same is not None:
            name = f"{name} ({SAME} {same})" if name else f"{SAME} {same}"
        (line,) = ax.plot(
            rounds,
            mean,
            label=name or None,
            marker="o" if rounds.size < 3 else None,  # e.g. a tuning result: final round only
            linestyle="--" if same is not None else "-",
            color=PALETTE[len(ax.get_lines()) % len(PALETTE)],
        )
        lower = mean - se
        if loglog:  # a band reaching 0 would be drawn to −∞; stop it at the curve's positive floor
            positive = mean[mean > 0]
            floor = positive.min() if positive.size else np.nan
            lower = np.where(lower > 0, lower, floor)
        ax.fill_between(rounds, lower, mean + se, color=line.get_color(), alpha=0.25, linewidth=0)
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel("cumulative regret (mean ± s.e. over seeds)")
    if title:
        ax.set_title(title)
    if any(labels) or ax.get_legend() is not None:
        _legend(ax, legend)
    ax.grid(alpha=0.3, which="both" if loglog else "major")
    if loglog:
        readable_log_ticks(ax)
    return ax


def plot_final_vs(
    result: SweepResult,
    axis: str = "C",
    *,
    ax=None,
    logx: bool = False,
    logy: bool = False,
    title: str | None = None,
    label: str | None = None,
):
    """Final cumulative regret (mean ± s.e. over seeds) against the grid axis ``axis``, one line per
    combination of the other axes (e.g. one per algorithm): the robustness frontier when ``axis`` is
    the corruption budget C.

    ``logx=True`` uses a log x axis, or a symmetric-log one (linear below the smallest non-zero
    |value|) when the values include 0 or negatives, as a C grid starting at 0 does. ``label``
    prefixes every legend entry.
    """
    check_result(result)
    logx = V.check_flag("logx", logx)
    logy = V.check_flag("logy", logy)
    grid_axes = [
        d for d in result.dims if d not in _NON_GRID and np.asarray(result.coords[d]).dtype.kind not in "USO"
    ]
    if axis not in grid_axes:
        raise ValueError(
            f"axis={axis!r} is invalid: it must be one of the result's numeric grid axes {tuple(grid_axes)}"
        )
    ax = _new_axes(ax)
    arr, other = _seed_last(result)
    final = arr[..., -1]  # [*other, seed]
    i = other.index(axis)
    final = np.moveaxis(final, i, -2)  # [*rest, axis, seed]
    rest = [d for d in other if d != axis]
    x = np.asarray(result.coords[axis], dtype=np.float64)
    order = np.argsort(x, kind="stable")
    flat = final.reshape((-1,) + final.shape[-2:])
    labels = _prefixed(label, _labels(result, rest))
    for k, (name, f) in enumerate(zip(labels, flat)):
        mean, se = mean_and_stderr(f, axis=-1)
        ax.errorbar(
            x[order],
            mean[order],
            yerr=se[order],
            markersize=4,
            capsize=3,
            label=name or None,
            **_style(k),
        )
    if logx:
        nonzero = np.abs(x[x != 0])
        if np.all(x > 0):
            ax.set_xscale("log")
        elif nonzero.size:
            ax.set_xscale("symlog", linthresh=float(nonzero.min()))
    ax.set_xticks(np.unique(x))  # ticks at the grid's own values
    ax.set_xticklabels([f"{v:g}" for v in np.unique(x)])
    ax.minorticks_off()
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(axis)
    ax.set_ylabel(f"final cumulative regret (T={int(np.asarray(result.coords['round'])[-1])})")
    if title:
        ax.set_title(title)
    if any(labels) or ax.get_legend() is not None:
        _legend(ax, "right")
    ax.grid(alpha=0.3)
    if logy:
        readable_log_ticks(ax)
    return ax


def plot_runtime(
    runtimes: Mapping[str, tuple], *, ax=None, title: str | None = None, show_slope: bool = True
):
    """Wall-clock seconds against horizon T on log–log axes, one line per name.

    Args:
      runtimes: ``{name: (T, seconds)}`` with ``T`` `[n]` positive horizons and ``seconds`` `[n]` or
        `[n, repeats]` positive timings; with repeats the line is the median and the bar spans
        min to max (timings are skewed by outliers, so no mean ± s.e. here).
      show_slope: append the fitted log–log slope to each label (1: time linear in T, 2: quadratic)
        when a name has at least two distinct horizons.
    """
    show_slope = V.check_flag("show_slope", show_slope)
    if not isinstance(runtimes, Mapping) or not runtimes:
        raise ValueError(
            f"runtimes={runtimes!r} is invalid: it must be a non-empty dict name -> (horizons T, seconds)"
        )
    series = []
    for name, value in runtimes.items():
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise ValueError(f"runtimes[{name!r}] is invalid: it must be a pair (horizons T, seconds)")
        T = np.asarray(value[0], dtype=np.float64)
        sec = np.asarray(value[1], dtype=np.float64)
        if T.ndim != 1 or T.size == 0:
            raise ValueError(
                f"runtimes[{name!r}] horizons have shape {T.shape}: expected a non-empty 1-D array"
            )
        if sec.ndim not in (1, 2) or sec.shape[0] != T.size or sec.size == 0:
            raise ValueError(
                f"runtimes[{name!r}] seconds have shape {sec.shape}: expected ({T.size},) or "
                f"({T.size}, repeats) to match the horizons"
            )
        for what, arr in (("horizons", T), ("seconds", sec)):
            if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
                raise ValueError(
                    f"runtimes[{name!r}] {what} must be finite numbers in (0, inf) for log "
                    f"axes, got {arr.ravel().tolist()}"
                )
        series.append((str(name), T, sec.reshape(T.size, -1)))
    ax = _new_axes(ax)
    for k, (name, T, sec) in enumerate(series):
        order = np.argsort(T, kind="stable")
        T, sec = T[order], sec[order]
        mid = np.median(sec, axis=1)
        label = name
        if show_slope and np.unique(T).size >= 2:
            label = f"{name} (slope {float(loglog_fit(T, mid)):.2f})"
        if sec.shape[1] > 1:
            yerr = np.stack([mid - sec.min(axis=1), sec.max(axis=1) - mid])
            ax.errorbar(T, mid, yerr=yerr, markersize=4, capsize=3, label=label, **_style(k))
        else:
            ax.plot(T, mid, markersize=4, label=label, **_style(k))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("horizon T")
    ax.set_ylabel("wall-clock seconds")
    if title:
        ax.set_title(title)
    _legend(ax, "right")
    ax.grid(alpha=0.3, which="both")
    readable_log_ticks(ax)
    return ax


def panel_axis(result: SweepResult) -> str | None:
    """The first grid axis other than ``algorithm`` with more than one value (None when there is none):
    an axis :func:`plot_panels` splits into panels."""
    check_result(result)
    panels = facets(result)[1]
    return panels[0] if panels else None


#: The most panels :func:`plot_panels` draws in one figure; a result with more is refused, naming them.
MAX_PANELS = 24
#: Line styles of the values of a second line axis (the first one's values take the colours).
LINESTYLES: tuple[Any, ...] = ("-", "--", "-.", ":", (0, (5, 1, 1, 1, 1, 1)), (0, (3, 1)))


def _sizes(result: SweepResult) -> dict[str, int]:
    shape = np.shape(result.data[next(iter(result.data))])
    return {d: int(n) for d, n in zip(result.dims, shape)}


def facets(result: SweepResult, by=None) -> tuple[list[str], list[str]]:
    """``(line axes, panel axes)``: how :func:`plot_panels` draws ``result`` (see :func:`_layout`)."""
    lines, panels, _ = _layout(result, by)
    return lines, panels


def final_axis(result: SweepResult, by=None) -> str | None:
    """The grid axis :func:`plot_panels` puts on the x axis of a result that recorded fewer than three
    rounds (final regret only: a scaling or tuning result), its numeric axis with the most values
    besides the line axes; None when it draws regret against t."""
    return _layout(result, by)[2]


def _layout(result: SweepResult, by=None) -> tuple[list[str], list[str], str | None]:
    """``(line axes, panel axes, x axis)``: how :func:`plot_panels` draws ``result``. Grid axes with one
    value are neither (the figure's title names them). By default the lines are one per algorithm (without an
    ``algorithm`` axis, one per value of the last grid axis) and the panels one per combination of the
    other axes; with more than two of them, the shortest (the last on a tie) is drawn as line styles,
    so that a benchmark result (constants × noise × attack) gets its constants as solid/dashed lines and
    one panel per noise × attack. A result with fewer than three recorded rounds has no curves: its
    numeric axis with the most values is the x axis (:func:`final_axis`). ``by`` (an axis or a tuple of
    axes, not ``algorithm``) names the panel axes instead; every other varying axis is then a line."""
    check_result(result)
    sizes = _sizes(result)
    grid = [d for d in result.dims if d not in ("seed", "round")]
    varying = [d for d in grid if sizes[d] > 1]
    if by is not None:
        chosen = (by,) if isinstance(by, str) else by
        valid = tuple(d for d in grid if d != "algorithm")
        if not isinstance(chosen, (tuple, list)) or not chosen or any(d not in valid for d in chosen):
            raise ValueError(
                f"by={by!r} is invalid: it must be None, one of the result's grid axes other than "
                f"'algorithm' {valid}, or a tuple of them"
            )
        panels = list(dict.fromkeys(chosen))
        return [d for d in varying if d not in panels], panels, None
    lines = [d for d in varying if d == "algorithm"] or varying[-1:]  # no algorithm axis: the last one
    panels = [d for d in varying if d not in lines]
    x = None
    if np.size(result.coords["round"]) < 3:  # no curves against t: final regret against a grid axis
        numeric = [d for d in panels if np.asarray(result.coords[d]).dtype.kind in "iuf"]
        if numeric:
            x = max(numeric, key=lambda d: sizes[d])
            panels.remove(x)
    if len(panels) > 2 and len(lines) < 2:
        shortest = min(reversed(panels), key=lambda d: sizes[d])
        panels.remove(shortest)
        lines.append(shortest)
    return lines, panels, x


def _display(dim: str, value) -> str:
    """A legend entry or title part: an algorithm by the label its tables print, others as
    :func:`_format_value`."""
    if dim == "algorithm":
        from ..agents import registry

        name = str(value)
        return registry.algorithm(name).label if name in registry.names() else name
    return _format_value(dim, value)


def _combos(result: SweepResult, dims) -> list[dict[str, int]]:
    """Every combination of positions along ``dims`` (C order), as ``{dim: index}``."""
    sizes = _sizes(result)
    return [dict(zip(dims, idx)) for idx in np.ndindex(*[sizes[d] for d in dims])]


def plot_panels(
    result: SweepResult,
    *,
    by=None,
    loglog: bool = False,
    ncols: int = 4,
    title: str | None = None,
    max_panels: int = MAX_PANELS,
):
    """A figure of mean cumulative regret against round t (± one standard-error band over seeds), one
    panel per combination of the panel axes and one line per combination of the line axes that
    :func:`facets` chooses (by default, one line per algorithm; ``by`` names the panel axes).
    Panels wrap after ``ncols`` columns and share the y axis, so that regret levels compare across
    them; the legend, one entry per line, is outside the panels, within the figure (constrained
    layout), so a plain ``fig.savefig`` keeps it. A line whose runs equal an earlier line's exactly in
    a panel would be hidden under it: it is dotted and the panel's title says so. More than
    ``max_panels`` panels is a ``ValueError`` naming the axes: select values first (``result.sel``;
    ``python -m jaxbandit plot --select``). Returns the Figure (its panels are ``fig.axes``)."""
    check_result(result)
    loglog = V.check_flag("loglog", loglog)
    for name, value in (("ncols", ncols), ("max_panels", max_panels)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name}={value!r} is invalid: it must be an integer >= 1")
    lines, panels, x_axis = _layout(result, by)
    sizes = _sizes(result)
    n_panels = math.prod(sizes[d] for d in panels)
    if n_panels > max_panels:
        shape = " × ".join(f"{d} ({sizes[d]})" for d in panels)
        raise ValueError(
            f"the result has {n_panels} panels ({shape}), more than max_panels={max_panels} readable in "
            "one figure: select values of an axis first (result.sel, or plot --select AXIS=VALUE)"
        )
    curves, other = _seed_last(result)
    rounds = np.asarray(result.coords["round"], dtype=np.float64)
    line_combos = _combos(result, lines)
    panel_combos = _combos(result, panels)
    cols = min(int(ncols), len(panel_combos))
    if len(panels) == 2 and sizes[panels[1]] <= ncols:  # a row per value of the first, a column per second
        cols = sizes[panels[1]]
    rows = math.ceil(len(panel_combos) / cols)
    plt = pyplot()
    fig, axes = plt.subplots(
        rows, cols, figsize=(3.6 * cols + 2.4, 2.9 * rows + 0.8), sharey=True, squeeze=False,
        layout="constrained",
    )  # fmt: skip
    first = lines[0] if lines else None
    styles: list[dict[str, Any]] = []
    for k, combo in enumerate(line_combos):
        style: dict[str, Any] = {"color": PALETTE[k % len(PALETTE)], "linestyle": "-"}
        if first is not None:
            name = str(np.asarray(result.coords[first])[combo[first]])
            if first == "algorithm" and name in _registered():
                style["color"] = algorithm_style(name)["color"]
            else:
                style["color"] = PALETTE[combo[first] % len(PALETTE)]
        if len(lines) > 1:
            rest = int(np.ravel_multi_index([combo[d] for d in lines[1:]], [sizes[d] for d in lines[1:]]))
            style["linestyle"] = LINESTYLES[rest % len(LINESTYLES)]
        styles.append(style)
    labels = [
        ", ".join(_display(d, np.asarray(result.coords[d])[i]) for d, i in combo.items())
        for combo in line_combos
    ]
    markers = [
        algorithm_style(str(np.asarray(result.coords[first])[c[first]]))["marker"]
        if first == "algorithm"
        else MARKERS[k % len(MARKERS)]
        for k, c in enumerate(line_combos)
    ]
    if x_axis is not None:
        xs = np.asarray(result.coords[x_axis], dtype=np.float64)
        order = np.argsort(xs, kind="stable")
    for k, (where, ax) in enumerate(zip(panel_combos, axes.ravel())):
        drawn: list[np.ndarray] = []
        twins = False
        for combo, style, label, marker in zip(line_combos, styles, labels, markers):
            at = {**where, **combo}
            index = tuple(slice(None) if d == x_axis else at.get(d, 0) for d in other)
            c = curves[index]
            twin = any(np.array_equal(d, c, equal_nan=True) for d in drawn)
            twins |= twin
            drawn.append(c)
            if x_axis is not None:  # c: [x, seed, round]; the final round against x
                mean, se = mean_and_stderr(c[..., -1], axis=1)
                ax.errorbar(
                    xs[order], mean[order], yerr=se[order], label=label or None, color=style["color"],
                    linestyle=":" if twin else style["linestyle"], marker=marker, markersize=4, capsize=2,
                )  # fmt: skip
                continue
            mean, se = mean_and_stderr(c, axis=0)
            ax.plot(
                rounds, mean, label=label or None, color=style["color"],
                linestyle=":" if twin else style["linestyle"], marker="o" if rounds.size < 3 else None,
            )  # fmt: skip
            lower = mean - se
            if loglog:  # a band reaching 0 would be drawn to −∞; stop it at the curve's positive floor
                positive = mean[mean > 0]
                lower = np.where(lower > 0, lower, positive.min() if positive.size else np.nan)
            ax.fill_between(rounds, lower, mean + se, color=style["color"], alpha=0.2, linewidth=0)
        name = ", ".join(_display(d, np.asarray(result.coords[d])[i]) for d, i in where.items())
        if twins:
            name = f"{name}\n(dotted: the same runs as an earlier line)".lstrip("\n")
        ax.set_title(name, fontsize=9)
        if x_axis is not None:
            _grid_ticks(ax, xs)
            if loglog:
                ax.set_yscale("log")
        elif loglog:
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.grid(alpha=0.3, which="both" if loglog else "major")
        ax.tick_params(labelsize=8)
        if k // cols == rows - 1 or k + cols >= len(panel_combos):
            ax.set_xlabel("round t" if x_axis is None else x_axis, fontsize=9)
        if k % cols == 0:
            what = "cumulative regret" if x_axis is None else f"final regret (T={int(rounds[-1])})"
            ax.set_ylabel(f"{what}\n(mean ± s.e. over seeds)", fontsize=9)
    for ax in axes.ravel()[len(panel_combos) :]:
        ax.set_visible(False)
    for ax in axes.ravel()[: len(panel_combos)]:
        if loglog:
            readable_log_ticks(ax)
    if any(labels):
        from matplotlib.lines import Line2D

        handles = [
            Line2D([], [], color=s["color"], linestyle=s["linestyle"], marker=m if x_axis else None)
            for s, m in zip(styles, markers)
        ]
        per_column = max(12, int(rows * 2.9 / 0.2))  # entries of fontsize 8 that fit the figure's height
        fig.legend(
            handles, labels, loc="outside right upper", fontsize=8, ncols=math.ceil(len(labels) / per_column)
        )
    fixed = [
        _display(d, np.asarray(result.coords[d])[0])
        for d in result.dims
        if d not in ("seed", "round") and sizes[d] == 1 and d in result.coords
    ]
    heading = "\n".join(x for x in (title, ", ".join(fixed)) if x)
    if heading:
        fig.suptitle(heading, fontsize=10)
    return fig


def _grid_ticks(ax, x: np.ndarray) -> None:
    """An x axis ticked at the grid's own values ``x``: log when they are positive and span a decade or
    more, symmetric-log (linear below the smallest non-zero |value|) when they hold 0 and span that."""
    nonzero = np.abs(x[x != 0])
    if nonzero.size and nonzero.max() >= 10 * nonzero.min():
        if np.all(x > 0):
            ax.set_xscale("log")
        else:
            ax.set_xscale("symlog", linthresh=float(nonzero.min()))
    ax.set_xticks(np.unique(x))
    ax.set_xticklabels([f"{v:g}" for v in np.unique(x)])
    ax.minorticks_off()


def _registered() -> tuple[str, ...]:
    from ..agents import registry

    return tuple(registry.names())


def save_figure(fig, path) -> None:
    """Save ``fig`` as PNG atomically."""
    from .results import atomic_write_bytes

    atomic_write_bytes(path, lambda f: fig.savefig(f, format="png", dpi=130, bbox_inches="tight"))
