"""The benchmark's report: a ranking with mean ± s.e. over seeds, paired comparisons across seeds, the
robustness frontier (final regret against C for each adversary), regret against ε, and log–log slopes
of regret in t; as Markdown (``report.md``) and figures (``frontier.png``, ``epsilon.png``).

Every statistic treats the seed as the unit: each seed's runs share θ*, contexts and noise across
algorithms and scenarios (common random numbers), so per-seed averages over scenarios are independent
samples and differences between algorithms are paired.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import jaxbandit as jb

from ...report.analysis import mean_and_stderr
from ...report.results import SweepResult, atomic_write_bytes


def _final(result: SweepResult) -> np.ndarray:
    """Final cumulative regret `[algorithm, constants, noise, attack, seed]` (float64)."""
    return np.asarray(result.data["cumulative_regret"][..., -1], np.float64)


def _labels(result: SweepResult) -> list[str]:
    return [jb.registry.algorithm(str(a)).label for a in result.coords["algorithm"]]


def ranking(result: SweepResult, constants: int) -> list[dict]:
    """Algorithms by their final regret averaged over every scenario (per seed, then mean ± s.e. over
    seeds), best first; with the mean rank over scenarios and the scenarios won."""
    final = _final(result)[:, constants]  # [alg, noise, attack, seed]
    per_seed = final.mean(axis=(1, 2))
    mean, se = mean_and_stderr(per_seed, axis=-1)
    cell = final.mean(axis=-1).reshape(final.shape[0], -1)  # [alg, scenarios]
    ranks = np.argsort(np.argsort(cell, axis=0), axis=0) + 1.0
    wins = (ranks == 1).sum(axis=1)
    rows = []
    for i, label in enumerate(_labels(result)):
        rows.append(
            dict(
                algorithm=str(result.coords["algorithm"][i]),
                label=label,
                mean=float(mean[i]),
                stderr=float(se[i]),
                mean_rank=float(ranks[i].mean()),
                wins=int(wins[i]),
                scenarios=int(cell.shape[1]),
            )
        )
    return sorted(rows, key=lambda r: (np.isnan(r["mean"]), r["mean"]))


def paired(result: SweepResult, constants: int, reference: str) -> list[dict]:
    """``reference`` against every other algorithm: the per-seed difference of scenario-averaged final
    regret (other − reference; positive: the reference is better), mean ± s.e., its t statistic, the
    seeds on which the reference is better, and the scenarios in which it is better by more than two
    standard errors of the paired difference (and worse by as much)."""
    names = [str(a) for a in result.coords["algorithm"]]
    final = _final(result)[:, constants]
    ref = final[names.index(reference)]
    rows = []
    for i, name in enumerate(names):
        if name == reference:
            continue
        diff = final[i] - ref  # [noise, attack, seed]
        per_seed = diff.mean(axis=(0, 1))
        m, s = mean_and_stderr(per_seed, axis=-1)
        cell_m, cell_s = mean_and_stderr(diff, axis=-1)
        rows.append(
            dict(
                algorithm=name,
                label=jb.registry.algorithm(name).label,
                mean_difference=float(m),
                stderr=float(s),
                t=float(m / s) if s > 0 else float("nan"),
                seeds_better=int((per_seed > 0).sum()),
                seeds=int(per_seed.size),
                scenarios_better=int((cell_m > 2 * cell_s).sum()),
                scenarios_worse=int((cell_m < -2 * cell_s).sum()),
                scenarios=int(cell_m.size),
            )
        )
    return rows


def _attack_table(info: dict):
    attacks = info["attacks"]
    return [a["adversary"] for a in attacks], np.array([a["C"] for a in attacks], np.float64)


def _without_corruption(values: np.ndarray, info: dict) -> np.ndarray:
    """``values`` `[alg, noise, attack, ...]` at the ``none`` attack (averaged over the attacks when it
    was not run): `[alg, noise, ...]`."""
    kinds, _ = _attack_table(info)
    none = [i for i, k in enumerate(kinds) if k == "none"]
    return values[:, :, none or slice(None)].mean(axis=2)


def frontier(result: SweepResult, info: dict, constants: int) -> dict:
    """``{adversary: (C values, mean [alg, C], s.e. [alg, C])}``: final regret averaged over noise settings
    per seed, against C; C = 0 is the no-corruption scenario (shared by every adversary)."""
    kinds, levels = _attack_table(info)
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
    noises = info["noises"]
    clean = _without_corruption(_final(result)[:, constants], info)  # [alg, noise, seed]
    out = {}
    for fam in dict.fromkeys(n["family"] for n in noises):
        idx = [i for i, n in enumerate(noises) if n["family"] == fam]
        if len(idx) < 2:
            continue
        mean, se = mean_and_stderr(clean[:, idx], axis=-1)
        out[fam] = (np.array([noises[i]["eps"] for i in idx]), mean, se)
    return out


def loglog_slopes(result: SweepResult, info: dict, constants: int, start: float = 0.1) -> dict:
    """The slope of log R_t against log t over the recorded rounds t ≥ ``start``·T, per seed, then
    mean ± s.e. over seeds: ``{noise name: (eps, mean [alg], s.e. [alg])}``, without corruption."""
    rounds = np.asarray(result.coords["round"], np.float64)
    keep = rounds >= start * rounds[-1]
    curve = np.asarray(result.data["cumulative_regret"], np.float64)[:, constants]
    clean = _without_corruption(curve, info)  # [alg, noise, seed, round]
    x = np.log(rounds[keep])
    y = np.log(np.maximum(clean[..., keep], 1e-12))  # [alg, noise, seed, r]
    xc = x - x.mean()
    slope = ((y - y.mean(axis=-1, keepdims=True)) * xc).sum(axis=-1) / (xc**2).sum()
    out = {}
    for j, n in enumerate(info["noises"]):
        mean, se = mean_and_stderr(slope[:, j], axis=-1)
        out[n["name"]] = (float(n["eps"]), mean, se)
    return out


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


def markdown(result: SweepResult, info: dict) -> str:
    """The report as Markdown."""
    st = info["settings"]
    labels = _labels(result)
    names = [str(a) for a in result.coords["algorithm"]]
    reference = "cr_hvt_ucb" if "cr_hvt_ucb" in names else None
    lines = [
        "# jaxbandit robustness benchmark",
        "",
        f"T = {st['horizon']}, d = 10, K = 20 unit contexts, ‖θ*‖ = 1; {len(st['seeds'])} reported seeds "
        f"({st['seeds'][0]}–{st['seeds'][-1]}); constants tuned on seeds {st['tune_seeds'][0]}–"
        f"{st['tune_seeds'][-1]} over all {len(info['noises']) * len(info['attacks'])} scenarios together "
        "(one setting per algorithm: the least final regret averaged over every scenario).",
        "",
        "Noise settings: "
        + "; ".join(f"{n['name']}: {n['description']}, ν = {n['nu']:.4g}" for n in info["noises"]),
        "",
        "Attacks: "
        + ", ".join(a["name"] for a in info["attacks"])
        + " (flip_rounds C: C rounds flipped, the 'C' of public baseline code; the others: a budget "
        "Σ|c_t| ≤ C; targeted steers toward a fixed unit θ†). The learners are told ε, ν and C.",
        "",
    ]
    device = info.get("device", {})
    timings = info.get("timings", {})
    if device:
        per_alg = ", ".join(f"{jb.registry.algorithm(k).label} {v}" for k, v in timings.items())
        lines += [
            f"Device: {device.get('device_kind')} ({device.get('backend')}), {device.get('dtype')}; "
            f"seconds per algorithm (one compiled sweep each, compilation included): {per_alg}",
            "",
        ]
    for c, cname in enumerate(result.coords["constants"]):
        lines += [f"## Ranking — {cname} constants", ""]
        lines += ["| rank | algorithm | final regret, mean over scenarios (± s.e. over seeds) | mean rank | "
                  "scenarios won |", "|---:|---|---:|---:|---:|"]  # fmt: skip
        for k, r in enumerate(ranking(result, c), 1):
            lines.append(
                f"| {k} | {r['label']} | {_fmt(r['mean'], r['stderr'])} | {r['mean_rank']:.2f} | "
                f"{r['wins']}/{r['scenarios']} |"
            )
        lines.append("")
        if reference is not None:
            lines += [
                f"Paired against CR-Hvt-UCB ({cname}): other − CR-Hvt-UCB per seed (positive: CR-Hvt-UCB "
                "better); scenarios where the paired difference exceeds two standard errors.",
                "",
                "| algorithm | difference ± s.e. | t | seeds CR better | scenarios CR better / worse |",
                "|---|---:|---:|---:|---:|",
            ]
            for r in paired(result, c, reference):
                lines.append(
                    f"| {r['label']} | {_fmt(r['mean_difference'], r['stderr'])} | {r['t']:.1f} | "
                    f"{r['seeds_better']}/{r['seeds']} | {r['scenarios_better']} / {r['scenarios_worse']} "
                    f"(of {r['scenarios']}) |"
                )
            lines.append("")
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
    slopes = loglog_slopes(result, info, tuned_c)
    lines += [
        "## Log–log slopes of R_t in t (tuned constants, no corruption)",
        "",
        "Least-squares slope of log R_t on log t over the recorded rounds t ≥ T/10, per seed, mean ± s.e.; "
        "the theory's worst-case rate is 1/(1+ε) (a slope above it means regret still grows faster than the "
        "bound's shape at this horizon; below it, the instance is easier than the worst case).",
        "",
        "| noise | 1/(1+ε) | " + " | ".join(labels) + " |",
        "|---|---:|" + "---:|" * len(labels),
    ]
    for name, (eps, mean, se) in slopes.items():
        lines.append(
            f"| {name} | {1 / (1 + eps):.2f} | "
            + " | ".join(f"{m:.2f} ± {s:.2f}" for m, s in zip(mean, se))
            + " |"
        )
    lines += [
        "",
        "Figures: `frontier.png` (final regret against C per adversary), `epsilon.png` (against ε).",
        "",
    ]
    return "\n".join(lines)


# --- figures ----------------------------------------------------------------------------------------


def _colors(result: SweepResult) -> list[str]:
    return [jb.registry.algorithm(str(a)).color for a in result.coords["algorithm"]]


def _panels(tables: dict, result: SweepResult, xlabel: str, path: Path, title: str, logx: bool) -> Path:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    labels, colors = _labels(result), _colors(result)
    n = max(len(tables), 1)
    fig, axes = plt.subplots(1, n, figsize=(4.2 * n, 3.6), squeeze=False)
    for ax, (name, (x, mean, se)) in zip(axes[0], tables.items()):
        for i, label in enumerate(labels):
            ax.errorbar(x, mean[i], yerr=se[i], label=label, color=colors[i], marker="o", ms=3, capsize=2)
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        if logx:
            ax.set_xscale("symlog", linthresh=max(float(np.min(x[x > 0])) if np.any(x > 0) else 1.0, 1e-9))
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("final cumulative regret")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.suptitle(title)
    fig.tight_layout()

    def write(f):
        fig.savefig(f, format="png", dpi=120)

    atomic_write_bytes(path, write)
    plt.close(fig)
    return path


def figures(result: SweepResult, info: dict, out) -> list[Path]:
    """``frontier.png`` and (when some family runs at several ε) ``epsilon.png`` in ``out``."""
    out = Path(out)
    tuned = len(result.coords["constants"]) - 1
    paths = [
        _panels(
            frontier(result, info, tuned),
            result,
            "C",
            out / "frontier.png",
            "Robustness frontier (tuned constants)",
            logx=True,
        )
    ]
    eps_tables = versus_eps(result, info, tuned)
    if eps_tables:
        paths.append(
            _panels(
                eps_tables, result, "ε", out / "epsilon.png", "Regret against ε (tuned, no corruption)", False
            )
        )
    return paths


def write_report(result: SweepResult, info: dict, out) -> list[Path]:
    """``report.md`` and the figures in ``out``."""
    out = Path(out)
    path = out / "report.md"
    text = markdown(result, info).encode()
    atomic_write_bytes(path, lambda f: f.write(text))
    return [path, *figures(result, info, out)]
