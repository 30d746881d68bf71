"""The benchmark's report, computed from the compact per-seed results (``per_seed.npz``, :func:`compact`)
and the manifest alone, so that the committed files reproduce every number: rankings by mean rank and by
mean regret, paired comparisons across seeds, which scenarios and which algorithms gave identical runs,
the tuned constants with their search, the robustness frontier (final regret against C per adversary),
regret against ε and log–log slopes of regret in t; as Markdown (``report.md``) and figures
(``frontier.png``, ``epsilon.png``).

Every statistic treats the seed as the unit: each seed's runs share θ*, contexts and noise across
algorithms and scenarios (common random numbers), so per-seed averages over scenarios are independent
samples and differences between algorithms are paired. Scenarios whose runs are bitwise identical to an
earlier scenario's for every algorithm (:func:`duplicate_scenarios`) are counted once.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from jax.scipy.special import betainc

import jaxbandit as jb

from ...core import validation as V
from ...persist.atomic import atomic_write_bytes
from ...report.analysis import mean_and_stderr
from ...report.plots import algorithm_style, pyplot, readable_log_ticks, save_figure
from ...report.results import SweepResult
from . import protocol

#: The rounds the compact results keep: t ≥ this fraction of T (the log–log slopes' window).
LATE = 0.1
#: The reference algorithm of the paired comparisons (when it ran).
REFERENCE = "cr_hvt_ucb"
RANK_RESAMPLES = 1000


def compact(result: SweepResult) -> SweepResult:
    """The per-seed results the report needs: every run's cumulative regret and corruption spent at the
    recorded rounds t ≥ ``LATE``·T (float32), dims as ``result``'s."""
    rounds = np.asarray(result.coords["round"])
    keep = rounds >= LATE * rounds[-1]
    data = {k: np.asarray(v)[..., keep].astype(np.float32) for k, v in result.data.items()}
    coords = {**result.coords, "round": rounds[keep]}
    return SweepResult(result.dims, coords, data, dict(result.meta))


def _final(result: SweepResult) -> np.ndarray:
    """Final cumulative regret `[algorithm, constants, noise, attack, seed]` (float64)."""
    return np.asarray(result.data["cumulative_regret"][..., -1], np.float64)


def _names(result: SweepResult) -> list[str]:
    return [str(a) for a in result.coords["algorithm"]]


def _label(name: str) -> str:
    try:
        return jb.registry.algorithm(name).label
    except ValueError:  # a result written with an algorithm no longer registered
        return name


# --- what the runs say about themselves --------------------------------------------------------------


def duplicate_scenarios(result: SweepResult) -> dict[str, list[tuple[str, str]]]:
    """``{"attack": [(earlier, later), ...], "noise": [...]}``: scenarios whose runs (cumulative regret and
    corruption spent at every kept round, every algorithm, constants and seed) are bitwise those of an
    earlier scenario on the same axis — e.g. an adversary that degenerates into another."""
    out: dict[str, list[tuple[str, str]]] = {"attack": [], "noise": []}
    for axis in out:
        ax = result.dims.index(axis)
        labels = [str(v) for v in result.coords[axis]]
        fields = [np.moveaxis(np.asarray(v), ax, 0) for v in result.data.values()]
        for j in range(len(labels)):
            for i in range(j):
                if all(np.array_equal(f[i], f[j], equal_nan=True) for f in fields):
                    out[axis].append((labels[i], labels[j]))
                    break
    return out


def distinct(result: SweepResult) -> SweepResult:
    """``result`` without the later scenario of each pair :func:`duplicate_scenarios` finds."""
    dropped = duplicate_scenarios(result)
    for axis, pairs in dropped.items():
        later = {b for _, b in pairs}
        keep = [i for i, v in enumerate(result.coords[axis]) if str(v) not in later]
        ax = result.dims.index(axis)
        data = {k: np.take(np.asarray(v), keep, axis=ax) for k, v in result.data.items()}
        coords = {**result.coords, axis: np.asarray(result.coords[axis])[keep]}
        result = SweepResult(result.dims, coords, data, dict(result.meta))
    return result


def identical_algorithms(result: SweepResult, constants: int) -> list[dict]:
    """Pairs of algorithms whose runs are bitwise identical (cumulative regret at every kept round, every
    seed) in at least one scenario, with ``constants``: ``{"pair": (a, b), "scenarios": k, "of": n}``."""
    curves = np.asarray(result.data["cumulative_regret"])[:, constants]  # [alg, noise, attack, seed, round]
    names = _names(result)
    cells = curves.reshape(len(names), -1, curves.shape[-2] * curves.shape[-1])
    rows = []
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            same = np.all(cells[i] == cells[j], axis=-1)
            if same.any():
                rows.append({"pair": (a, names[j]), "scenarios": int(same.sum()), "of": int(same.size)})
    return rows


# --- rankings and comparisons ------------------------------------------------------------------------


def _ranks(cell: np.ndarray) -> np.ndarray:
    """Ranks along axis 0 (1 = least regret), ties sharing the mean of their ranks."""
    below = (cell[None, :] < cell[:, None]).sum(axis=1)
    tied = (cell[None, :] == cell[:, None]).sum(axis=1)
    return below + (tied + 1) / 2.0


def ranking(result: SweepResult, constants: int, resamples: int = RANK_RESAMPLES) -> list[dict]:
    """Every algorithm's mean rank over the scenarios (rank of its seed-mean final regret in each
    scenario, ties sharing ranks), its final regret averaged over every scenario (per seed, then mean ±
    s.e. over seeds) and the rank that gives, and the scenarios won (a k-way tie for the least regret
    counts 1/k each); sorted by mean rank.

    Comparisons are paired: ``behind`` is the mean rank's difference from the leader's (the first row),
    with a 95 % basic bootstrap interval (``behind_low``, ``behind_high``; seeds resampled jointly, the
    same resample for both algorithms, the interval 2·d̂ − the resamples' quantiles). A marginal
    percentile interval of each mean rank is biased — a resampled set of seeds has noisier seed-means,
    which pulls every rank toward the middle — and says nothing about a difference."""
    final = _final(result)[:, constants]  # [alg, noise, attack, seed]
    n_alg, n_seed = final.shape[0], final.shape[-1]
    per_seed = final.mean(axis=(1, 2))
    mean, se = mean_and_stderr(per_seed, axis=-1)
    cells = final.reshape(n_alg, -1, n_seed)  # [alg, scenario, seed]
    ranks = _ranks(cells.mean(axis=-1)).mean(axis=-1)
    best = cells.mean(axis=-1) == cells.mean(axis=-1).min(axis=0)
    wins = (best / best.sum(axis=0)).sum(axis=1)
    idx = np.random.default_rng(0).integers(0, n_seed, size=(resamples, n_seed))
    boot = np.stack([_ranks(cells[:, :, i].mean(axis=-1)).mean(axis=-1) for i in idx])  # [resample, alg]
    by_regret = _ranks(np.where(np.isnan(mean), np.inf, mean))
    order = sorted(range(n_alg), key=lambda i: (ranks[i], mean[i]))
    leader = order[0]
    behind = ranks - ranks[leader]
    q_low, q_high = np.quantile(boot - boot[:, [leader]], [0.025, 0.975], axis=0)
    rows = []
    for i in order:
        rows.append(
            dict(
                algorithm=_names(result)[i],
                label=_label(_names(result)[i]),
                mean_rank=float(ranks[i]),
                behind=float(behind[i]),
                behind_low=float(2 * behind[i] - q_high[i]),
                behind_high=float(2 * behind[i] - q_low[i]),
                mean=float(mean[i]),
                stderr=float(se[i]),
                regret_rank=float(by_regret[i]),
                wins=float(wins[i]),
                scenarios=int(cells.shape[1]),
            )
        )
    return rows


def subset_ranks(result: SweepResult, info: dict, constants: int) -> dict[str, np.ndarray]:
    """Each algorithm's mean rank `[alg]` over every scenario (``"all"``), and over the scenarios of each
    noise family and of each corruption level C (every adversary at that C): the headline's dependence on
    the scenario set."""
    final = _final(result)[:, constants].mean(axis=-1)  # [alg, noise, attack]: seed means
    ranks = _ranks(final.reshape(final.shape[0], -1)).reshape(final.shape)
    families = np.array([n["family"] for n in _noise_table(info, result)])
    _, levels = _attack_table(info, result)
    out = {"all": ranks.mean(axis=(1, 2))}
    for fam in dict.fromkeys(families):
        out[str(fam)] = ranks[:, families == fam].mean(axis=(1, 2))
    for c in sorted(set(levels.tolist())):
        out[f"C = {c:g}"] = ranks[:, :, levels == c].mean(axis=(1, 2))
    return out


def spent(result: SweepResult, info: dict) -> list[dict]:
    """Per attack: its adversary, C, and the corruption Σ|c_t| spent by the last recorded round, mean and
    largest over every algorithm, constants, noise and seed (NaN when the result keeps no
    ``corruption_spent``): what an attack's label rests on, computed instead of read from its name."""
    kinds, levels = _attack_table(info, result)
    data = result.data.get("corruption_spent")
    total = (
        None if data is None else np.asarray(data, np.float64)[..., -1]
    )  # [alg, const, noise, attack, seed]
    rows = []
    for k, (attack, kind, c) in enumerate(zip(result.coords["attack"], kinds, levels)):
        values = np.array([np.nan]) if total is None else total[:, :, :, k]
        rows.append(
            dict(
                attack=str(attack),
                adversary=kind,
                C=float(c),
                mean=float(values.mean()),
                max=float(values.max()),
            )
        )
    return rows


def _spent_text(row: dict) -> str:
    if not np.isfinite(row["mean"]):
        return row["attack"]
    return f"{row['attack']} ({row['mean']:.3g}, {row['max']:.3g})"


def chance_beyond_two_se(seeds: int) -> float:
    """P(T > 2) for Student's t with ``seeds − 1`` degrees of freedom: the chance that a paired difference
    with no true effect exceeds two of its standard errors on one side (each side of the paired
    table's "scenarios better / worse" counts expects this fraction of the scenarios)."""
    df = V.check_int("seeds", seeds, 2) - 1.0
    return 0.5 * float(betainc(df / 2.0, 0.5, df / (df + 4.0)))


def paired(result: SweepResult, constants: int, reference: str) -> list[dict]:
    """``reference`` against every other algorithm: the per-seed difference of scenario-averaged final
    regret (other − reference; positive: the reference is better), mean ± s.e., its t statistic (NaN when
    the s.e. is 0), the seeds on which the reference is better, the scenarios in which it is better by
    more than two standard errors of the paired difference (and worse by as much), and the scenarios in
    which the two are identical in every seed's run."""
    names = _names(result)
    final = _final(result)[:, constants]
    curves = np.asarray(result.data["cumulative_regret"])[:, constants]
    r = names.index(reference)
    rows = []
    for i, name in enumerate(names):
        if name == reference:
            continue
        diff = final[i] - final[r]  # [noise, attack, seed]
        per_seed = diff.mean(axis=(0, 1))
        m, s = mean_and_stderr(per_seed, axis=-1)
        cell_m, cell_s = mean_and_stderr(diff, axis=-1)
        same = np.all(curves[i] == curves[r], axis=(-2, -1))  # [noise, attack]
        rows.append(
            dict(
                algorithm=name,
                label=_label(name),
                mean_difference=float(m),
                stderr=float(s),
                t=float(m / s) if s > 0 else float("nan"),
                seeds_better=int((per_seed > 0).sum()),
                seeds=int(per_seed.size),
                scenarios_better=int((cell_m > 2 * cell_s).sum()),
                scenarios_worse=int((cell_m < -2 * cell_s).sum()),
                scenarios_identical=int(same.sum()),
                scenarios=int(cell_m.size),
            )
        )
    return rows


def _attack_table(info: dict, result: SweepResult):
    """Adversary and C of each attack of ``result`` (which may hold fewer attacks than the manifest)."""
    by_name = {a["name"]: a for a in info["attacks"]}
    attacks = [by_name[str(a)] for a in result.coords["attack"]]
    return [a["adversary"] for a in attacks], np.array([a["C"] for a in attacks], np.float64)


def _noise_table(info: dict, result: SweepResult) -> list[dict]:
    by_name = {n["name"]: n for n in info["noises"]}
    return [by_name[str(n)] for n in result.coords["noise"]]


def _without_corruption(values: np.ndarray, info: dict, result: SweepResult) -> np.ndarray:
    """``values`` `[alg, noise, attack, ...]` at the ``none`` attack (averaged over the attacks when it
    was not run): `[alg, noise, ...]`."""
    kinds, _ = _attack_table(info, result)
    none = [i for i, k in enumerate(kinds) if k == "none"]
    return values[:, :, none or slice(None)].mean(axis=2)


def frontier(result: SweepResult, info: dict, constants: int) -> dict:
    """``{adversary: (C values, mean [alg, C], s.e. [alg, C])}``: final regret averaged over noise settings
    per seed, against C; C = 0 is the no-corruption scenario (shared by every adversary)."""
    kinds, levels = _attack_table(info, result)
    final = _final(result)[:, constants].mean(axis=1)  # [alg, attack, seed]
    none = [i for i, k in enumerate(kinds) if k == "none"]
    out = {}
    for adv in dict.fromkeys(k for k in kinds if k != "none"):
        idx = none + [i for i, k in enumerate(kinds) if k == adv]
        mean, se = mean_and_stderr(final[:, idx], axis=-1)
        out[adv] = (levels[idx], mean, se)
    return out


def versus_eps(result: SweepResult, info: dict, constants: int) -> dict:
    """``{family: (ε values, mean [alg, ε], s.e. [alg, ε])}`` for families run at several ε: final regret
    without corruption (the ``none`` attack; averaged over attacks when it was not run)."""
    noises = _noise_table(info, result)
    clean = _without_corruption(_final(result)[:, constants], info, result)  # [alg, noise, seed]
    out = {}
    for fam in dict.fromkeys(n["family"] for n in noises):
        idx = [i for i, n in enumerate(noises) if n["family"] == fam]
        if len(idx) < 2:
            continue
        mean, se = mean_and_stderr(clean[:, idx], axis=-1)
        out[fam] = (np.array([noises[i]["eps"] for i in idx]), mean, se)
    return out


def loglog_slopes(result: SweepResult, info: dict, constants: int, start: float = LATE) -> dict:
    """The slope of log R_t against log t over the recorded rounds t ≥ ``start``·T, per seed, then
    mean ± s.e. over seeds: ``{noise name: (eps, mean [alg], s.e. [alg])}``, without corruption."""
    rounds = np.asarray(result.coords["round"], np.float64)
    keep = rounds >= start * rounds[-1]
    curve = np.asarray(result.data["cumulative_regret"], np.float64)[:, constants]
    clean = _without_corruption(curve, info, result)  # [alg, noise, seed, round]
    x = np.log(rounds[keep])
    y = np.log(np.maximum(clean[..., keep], 1e-12))  # [alg, noise, seed, r]
    xc = x - x.mean()
    slope = ((y - y.mean(axis=-1, keepdims=True)) * xc).sum(axis=-1) / (xc**2).sum()
    out = {}
    for j, n in enumerate(_noise_table(info, result)):
        mean, se = mean_and_stderr(slope[:, j], axis=-1)
        out[n["name"]] = (float(n["eps"]), mean, se)
    return out


def searches(result: SweepResult, info: dict) -> list[dict]:
    """Per algorithm: the tuned constants, the settings its search evaluated (``budget``) against the
    protocol's base budget, and the axes whose best value is a limit the search could not pass."""
    coarse = bool(info["settings"].get("coarse_tuning", False))
    rows = []
    for name in _names(result):
        found = info.get("search", {}).get(name, {})
        rows.append(
            dict(
                algorithm=name,
                label=_label(name),
                tuned=info.get("tuned", {}).get(name, {}),
                budget=found.get("budget"),
                base_budget=protocol.base_budget(name, coarse) if name in jb.registry.names() else None,
                edges=found.get("edges", {}),
            )
        )
    return rows


# --- Markdown ---------------------------------------------------------------------------------------


def _fmt(m, s) -> str:
    return f"{m:.1f} ± {s:.1f}"


def _table(title: str, columns: list[str], labels: list[str], mean, se) -> list[str]:
    """A titled Markdown table, one row per algorithm, one ``mean ± s.e.`` cell per column."""
    lines = [
        f"**{title}**",
        "",
        "| algorithm | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for i, label in enumerate(labels):
        lines.append(f"| {label} | " + " | ".join(_fmt(m, s) for m, s in zip(mean[i], se[i])) + " |")
    return [*lines, ""]


def _wins(w: float) -> str:
    return f"{w:.0f}" if float(w).is_integer() else f"{w:.1f}"


def _constants_text(tuned: dict) -> str:
    """The tuned constants, the radius multiplier first (a JSON manifest holds them sorted by name)."""
    order = sorted(tuned, key=lambda k: (k != protocol.RADIUS, k))
    return ", ".join(f"{k} = {tuned[k]:.3g}" for k in order) or "—"


def _ranking_lines(result: SweepResult, info: dict, c: int, cname: str) -> list[str]:
    lines = [
        f"## Ranking — {cname} constants",
        "",
        "| rank | algorithm | mean rank | behind the first [95% CI] | final regret, mean over scenarios ± "
        "s.e. | rank by it | scenarios won |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    rows = ranking(result, c)
    for k, r in enumerate(rows, 1):
        behind = "—" if k == 1 else f"{r['behind']:.2f} [{r['behind_low']:.2f}, {r['behind_high']:.2f}]"
        lines.append(
            f"| {k} | {r['label']} | {r['mean_rank']:.2f} | {behind} | {_fmt(r['mean'], r['stderr'])} | "
            f"{r['regret_rank']:g} | {_wins(r['wins'])}/{r['scenarios']} |"
        )
    lines += [
        "",
        "Behind the first: the difference of mean ranks, with a paired bootstrap interval over seeds; an "
        "interval that excludes 0 separates the two.",
    ]
    by_rank = [r["algorithm"] for r in rows]
    by_regret = [r["algorithm"] for r in sorted(rows, key=lambda r: (r["regret_rank"], r["mean_rank"]))]
    differ = [r["label"] for r in rows if by_rank.index(r["algorithm"]) != by_regret.index(r["algorithm"])]
    lines += [
        "",
        "The two orders agree."
        if not differ
        else f"The two orders differ for {', '.join(differ)}: by mean regret the order is "
        + ", ".join(_label(a) for a in by_regret)
        + ".",
        "",
    ]
    columns = subset_ranks(result, info, c)
    names = _names(result)
    lines += [
        f"Mean rank by scenario set ({cname}): every scenario, each noise family's, each corruption level's "
        "(every adversary at that C); the first of each column in bold.",
        "",
        "| algorithm | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for r in rows:
        i = names.index(r["algorithm"])
        ranked = [f"**{v[i]:.2f}**" if v[i] == v.min() else f"{v[i]:.2f}" for v in columns.values()]
        lines.append(f"| {r['label']} | " + " | ".join(ranked) + " |")
    lines.append("")
    if REFERENCE in names:
        n_scen = int(np.prod(_final(result).shape[2:4]))
        chance = chance_beyond_two_se(_final(result).shape[-1])
        lines += [
            f"Paired against CR-Hvt-UCB ({cname}): other − CR-Hvt-UCB per seed (positive: CR-Hvt-UCB "
            "better); scenarios where the paired difference exceeds two standard errors (with no true "
            f"difference anywhere, chance alone gives about {chance * n_scen:.1f} of the {n_scen} each way: "
            f"P(t > 2) = {chance:.3f} with {_final(result).shape[-1] - 1} degrees of freedom); scenarios "
            "where every seed's run is identical.",
            "",
            "| algorithm | difference ± s.e. | t | seeds CR better | scenarios CR better / worse | "
            "identical |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in paired(result, c, REFERENCE):
            if r["scenarios_identical"] == r["scenarios"]:
                cells = "identical runs in every scenario | — | — | — "
            else:
                t = f"{r['t']:.1f}" if np.isfinite(r["t"]) else "—"
                cells = (
                    f"{_fmt(r['mean_difference'], r['stderr'])} | {t} | {r['seeds_better']}/{r['seeds']} | "
                    f"{r['scenarios_better']} / {r['scenarios_worse']} "
                )
            lines.append(f"| {r['label']} | {cells}| {r['scenarios_identical']}/{r['scenarios']} |")
        lines.append("")
    return lines


def _slope_lines(result: SweepResult, info: dict, c: int, labels: list[str]) -> list[str]:
    rounds = np.asarray(result.coords["round"], np.float64)
    if np.count_nonzero(rounds >= LATE * rounds[-1]) < 2:
        return [f"Not computed: fewer than 2 recorded rounds t ≥ {LATE:g}·T."]
    lines = [
        f"Least-squares slope of log R_t on log t over the recorded rounds t ≥ {LATE:g}·T, per seed, "
        "mean ± s.e.; 1/(1+ε) is the exponent of the worst-case upper bound, not a prediction for this "
        "instance: a slope above it says regret still grows faster than the bound's shape at this "
        "horizon, one below it that the instance is easier than the worst case.",
        "",
        "| noise | 1/(1+ε) | " + " | ".join(labels) + " |",
        "|---|---:|" + "---:|" * len(labels),
    ]
    for name, (eps, mean, se) in loglog_slopes(result, info, c).items():
        cells = " | ".join(f"{m:.2f} ± {s:.2f}" for m, s in zip(mean, se))
        lines.append(f"| {name} | {1 / (1 + eps):.2f} | {cells} |")
    return lines


def markdown(result: SweepResult, info: dict) -> str:
    """The report as Markdown, from the compact results (:func:`compact`) and the manifest."""
    st = info["settings"]
    dropped = duplicate_scenarios(result)
    result = distinct(result)
    labels = [_label(a) for a in _names(result)]
    n_scen = len(result.coords["noise"]) * len(result.coords["attack"])
    coarse = bool(st.get("coarse_tuning", False))
    radius = protocol.RADIUS_GRID[::2] if coarse else protocol.RADIUS_GRID
    tune_seeds = st["tune_seeds"]
    few = (
        f" (fewer than the protocol's {protocol.MIN_TUNE_SEEDS}: a smoke test, not a result)"
        if len(tune_seeds) < protocol.MIN_TUNE_SEEDS
        else ""
    )
    stream = info.get("stream") or {"name": "linear"}
    problem = (
        "d = 10, K = 20 unit contexts, ‖θ*‖ = 1"
        if stream["name"] == "linear"
        else f"d = 10, K = 20, the stream `{stream['name']}` ({stream['description']})"
    )
    attacks_spent = spent(result, info)
    lines = [
        "# jaxbandit robustness benchmark",
        "",
        f"T = {st['horizon']}, {problem}; {len(st['seeds'])} reported seeds "
        f"({st['seeds'][0]}–{st['seeds'][-1]}); constants tuned on {len(tune_seeds)} seeds "
        f"({tune_seeds[0]}–{tune_seeds[-1]}){few} over all {n_scen} distinct scenarios together (one "
        "setting per algorithm: the least final regret averaged over every scenario).",
        "",
        "Tuning protocol (`jaxbandit.experiments.bench.protocol`): the radius multiplier "
        f"`{protocol.RADIUS}` of each algorithm's theory radius, over the same {len(radius)} values for "
        f"every algorithm ({radius[0]:g} … {radius[-1]:g}, {'decades' if coarse else 'half decades'}), "
        "then each other free constant over its registry values at the radius chosen; an optimum at the "
        "edge of what was tried is extended until it has a neighbour on both sides or reaches its limit "
        "(then reported below).",
        "",
        "Noise settings: "
        + "; ".join(
            f"{n['name']}: {n['description']}, ν = {n['nu']:.4g}" for n in _noise_table(info, result)
        ),
        "",
        "Attacks, with the corruption Σ|c_t| they actually spent by T (mean and largest over every run): "
        + "; ".join(_spent_text(a) for a in attacks_spent)
        + ". The learners are told ε, ν and C.",
        "",
    ]
    over = [a["attack"] for a in attacks_spent if a["max"] > a["C"] * (1 + 1e-5)]
    if over:
        lines += [f"**Spent more than their C** (computed): {', '.join(over)}.", ""]
    pairs = [(axis, a, b) for axis, found in dropped.items() for a, b in found]
    lines += (
        [
            "**Duplicate scenarios** (computed): "
            + "; ".join(f"{axis} `{b}` gave runs bitwise identical to `{a}`" for axis, a, b in pairs)
            + " for every algorithm, constants and seed; each is counted once (the later one is left out "
            "of every table).",
            "",
        ]
        if pairs
        else ["No two scenarios gave identical runs (computed over every algorithm, constants and seed).", ""]
    )
    device, timings = info.get("device", {}), info.get("timings", {})
    if device:
        per_alg = ", ".join(f"{_label(k)} {timings[k]}" for k in _names(result) if k in timings)
        lines += [
            f"Device: {device.get('device_kind')} ({device.get('backend')}, {device.get('cpu_count')} CPUs), "
            f"{device.get('dtype')}; seconds per algorithm (tuning and report sweeps, compilation "
            f"included): {per_alg}",
            "",
        ]
    scale = _final(result)[:, -1].mean(axis=(0, 3))  # [noise, attack]: tuned, over algorithms and seeds
    lines += [
        "**Which ranking is the headline.** The mean rank. Scenario regrets differ in scale (here the "
        f"mean final regret of a scenario, tuned constants, ranges from {scale.min():.0f} to "
        f"{scale.max():.0f}), so the mean regret over scenarios weighs the hardest ones most, while the "
        "mean rank counts every scenario once and does not depend on its scale. Both are given; the "
        "algorithms were tuned for the mean regret.",
        "",
    ]
    for c, cname in enumerate(result.coords["constants"]):
        lines += _ranking_lines(result, info, c, str(cname))
        same = identical_algorithms(result, c)
        if same:
            lines += [
                f"Identical runs ({cname}, computed): "
                + "; ".join(
                    f"{_label(r['pair'][0])} and {_label(r['pair'][1])} in {r['scenarios']} of {r['of']} "
                    "scenarios"
                    for r in same
                )
                + ".",
                "",
            ]
    lines += [
        "## Tuned constants and their search",
        "",
        "| algorithm | tuned | settings evaluated (protocol base) | at a limit | radius curve |",
        "|---|---|---:|---|---|",
    ]
    curves = info.get("radius_curves", {})
    for r in searches(result, info):
        edges = ", ".join(f"{k} at its {v} limit" for k, v in r["edges"].items()) or "none"
        c = curves.get(r["algorithm"])
        shape = (
            "—"
            if c is None
            else f"{'**flat**' if c['flat'] else 'resolved'} ({c['within']} of {c['values']})"
        )
        budget = f"{r['budget']} ({r['base_budget']})"
        lines.append(f"| {r['label']} | {_constants_text(r['tuned'])} | {budget} | {edges} | {shape} |")
    lines += [
        "",
        f"`{protocol.RADIUS}` multiplies the algorithm's theory radius (LinTS: its theory v). Radius curve: "
        "of the radius "
        "values its search evaluated, how many have a tuning-seed mean within their own standard error of "
        "the best one's; **flat** when more than half do (the tuning seeds do not resolve the radius).",
        "",
    ]
    tuned_c = len(result.coords["constants"]) - 1
    lines += [
        "## Robustness frontier (tuned constants)",
        "",
        "Final regret averaged over the noise settings, against C (C = 0: no corruption).",
        "",
    ]
    for adv, (levels, mean, se) in frontier(result, info, tuned_c).items():
        lines += _table(adv, [f"C = {c:g}" for c in levels], labels, mean, se)
    eps_tables = versus_eps(result, info, tuned_c)
    if eps_tables:
        lines += ["## Regret against ε (tuned constants, no corruption)", ""]
        for fam, (eps, mean, se) in eps_tables.items():
            lines += _table(fam, [f"ε = {e:g}" for e in eps], labels, mean, se)
    lines += ["## Log–log slopes of R_t in t (tuned constants, no corruption)", ""]
    lines += _slope_lines(result, info, tuned_c, labels)
    lines += [
        "",
        "Figures: `frontier.png` (final regret against C per adversary), `epsilon.png` (against ε). "
        "Per-seed results: `per_seed.npz` (a `jb.SweepResult`; every number here is computed from it and "
        "`bench.json`).",
        "",
    ]
    return "\n".join(lines)


# --- figures ----------------------------------------------------------------------------------------


def _panels(tables: dict, result: SweepResult, xlabel: str, path: Path, title: str, logx: bool) -> Path:
    """One panel per table, one line per algorithm; an algorithm whose every point equals an earlier
    one's would be hidden under it, so it is dashed and its legend entry says so."""
    plt = pyplot()
    names = _names(result)
    points = [np.concatenate([np.ravel(t[1][i]) for t in tables.values()]) for i in range(len(names))]
    labels, dashed = [], []
    for i, alg in enumerate(names):
        same = next((j for j in range(i) if np.array_equal(points[j], points[i], equal_nan=True)), None)
        dashed.append(same is not None)
        labels.append(_label(alg) + ("" if same is None else f" (dashed: same as {_label(names[same])})"))
    n = max(len(tables), 1)
    fig, axes = plt.subplots(1, n, figsize=(3.8 * n + 2.2, 3.8), squeeze=False, layout="constrained")
    for ax, (name, (x, mean, se)) in zip(axes[0], tables.items()):
        for i, alg in enumerate(names):
            ax.errorbar(
                x, mean[i], yerr=se[i], label=labels[i], ms=4, capsize=2, lw=1.2,
                ls="--" if dashed[i] else "-", **algorithm_style(alg),
            )  # fmt: skip
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        if logx:
            positive = x[x > 0]
            ax.set_xscale("symlog", linthresh=float(positive.min()) if positive.size else 1.0)
        ax.set_xticks(x)
        ax.set_xticklabels([f"{v:g}" for v in x])
        ax.minorticks_off()
        ax.set_yscale("log")
        readable_log_ticks(ax, "y")  # the x ticks are the grid's own values
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("final cumulative regret (mean ± s.e. over seeds)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=8)
    fig.suptitle(title)
    save_figure(fig, path)
    plt.close(fig)
    return path


def figures(result: SweepResult, info: dict, out) -> list[Path]:
    """``frontier.png`` and (when some family runs at several ε) ``epsilon.png`` in ``out``."""
    out = Path(out)
    result = distinct(result)
    tuned = len(result.coords["constants"]) - 1
    st = info["settings"]
    what = f"T = {st['horizon']}, {len(st['seeds'])} seeds, tuned constants"
    paths = [
        _panels(
            frontier(result, info, tuned),
            result,
            "corruption level C",
            out / "frontier.png",
            f"Final regret against C, averaged over the noise settings ({what})",
            logx=True,
        )
    ]
    eps_tables = versus_eps(result, info, tuned)
    if eps_tables:
        paths.append(
            _panels(
                eps_tables,
                result,
                "moment order ε",
                out / "epsilon.png",
                f"Final regret against ε without corruption ({what})",
                False,
            )
        )
    return paths


def radius_curves(out, info: dict) -> dict[str, dict]:
    """Per algorithm with a ``tuning/<algorithm>.json`` in ``out``: its radius curve — the settings the
    radius search evaluated (every other constant at the value the search held it at) — and how flat it
    is: ``within`` of its ``values`` have a mean no more than their own standard error above the best
    one's; ``flat`` when that is more than half of them, for then the choice of radius is not resolved
    by the tuning seeds."""
    curves = {}
    for name in info.get("tuned", {}):
        path = Path(out) / "tuning" / f"{name}.json"
        if not path.is_file():
            continue
        held = {}
        if name in jb.registry.names():  # the constants the radius search held: fixed ones, and starts
            held = {**protocol.fixed(name), **{a.name: a.start for a in protocol.axes(name)[1:]}}
        rows = []
        for key, (mean, stderr) in json.loads(path.read_text()).items():
            setting = json.loads(key)
            if all(abs(setting.get(k, v) - v) <= 1e-12 * max(abs(v), 1.0) for k, v in held.items()):
                rows.append((setting[protocol.RADIUS], mean, stderr))
        if not rows:
            continue
        curves[name] = protocol.flatness([m for _, m, _ in rows], [s for _, _, s in rows])
    return curves


def write_report(result: SweepResult, info: dict, out) -> list[Path]:
    """``report.md`` and the figures in ``out`` from the compact results ``result`` (:func:`compact`)
    and the tuning files beside them."""
    out = Path(out)
    path = out / "report.md"
    info = {**info, "radius_curves": radius_curves(out, info)}
    text = markdown(result, info).encode()
    atomic_write_bytes(path, lambda f: f.write(text))
    return [path, *figures(result, info, out)]


def rewrite(out) -> list[Path]:
    """Redraw ``report.md`` and the figures in ``out`` from its ``per_seed.npz`` and ``bench.json``
    (nothing re-run)."""
    out = Path(out)
    info = json.loads((out / "bench.json").read_text())
    return write_report(SweepResult.load(out / "per_seed.npz"), info, out)
