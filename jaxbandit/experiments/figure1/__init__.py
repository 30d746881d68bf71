"""Figure 1 of Tani & Futami (Section 6): CR-Hvt-UCB against GAdaOFUL, and optionally the other baselines.

The paper's setting: d = 10, θ* uniform on the unit sphere, K = 20 random unit contexts per round
(S = L = 1), the θ-flipping adversary with an exact budget C ∈ {0, 100} (``jb.corruption.flip``), and

- **(a)** ε = 1: Student-t(3) noise, ν = √3;
- **(c)** ε = 0.4: Pareto(shape 1.5, x_min 1) noise, centred (it has mean 3), with the paper's
  ν = 15^{1/1.4} — the (1+ε)-moment bound of the *uncentred* variable
  (``jb.noise.raw_pareto_moment_bound``);
- **(b)** runtime: the wall-clock seconds one run (ε = 1) takes to reach round t, measured after
  compilation, chunk by chunk, on single (not batched) runs.

Every curve is run twice when ``constants="both"``: with each method's theory constants, and with
constants tuned by :func:`jaxbandit.tune` on seeds 1000+ (never the reported seeds 0..n−1), averaged
over C ∈ {0, 100}, per noise setting. The tuned constants ship in
``jaxbandit/experiments/data/figure1_tuned.json``, written by :func:`tune` (``python -m jaxbandit
tune-figure1 --out FILE``) with its grid, seeds, horizon, date and package versions. The methods are the
registered algorithms (``jb.registry``): the paper's two, and every other one with ``--baselines``.

Modules, by responsibility: ``settings`` (the environment, noise panels, provenance), ``methods`` (the
registry-driven factories the sweeps trace), ``runtime`` (panel (b)), ``drawing``, ``tuning`` (the tuned
constants and their file) and ``run``.

Each method's regret runs are one :func:`jaxbandit.sweep` — noise setting, C and constants are traced
grid axes of one compiled call (the noise setting through a selector between the two noise families,
which draws both from the same key and keeps one, so a run's stream is exactly that of
``jb.envs.linear`` with that family).

Command line::

    python -m jaxbandit figure1 [--horizon T] [--seeds N] [--out DIR] [--constants theory|tuned|both]
                                [--baselines]
    python -m jaxbandit tune-figure1 --out FILE [--horizon T] [--seeds N] [--baselines]

Writes ``DIR/figure1.png`` (panels (a), (b), (c); one row per constants setting), one
``DIR/figure1_<constants>.png`` per setting, ``DIR/results.npz`` with its ``results.json`` (and
``results.nc`` with xarray): a ``jb.SweepResult`` of cumulative regret over (constants, noise, algorithm,
C, seed, round) whose ``meta`` holds the settings and panel (b)'s runtimes — ``python -m jaxbandit plot``,
``jb.SweepResult.load`` and xarray read it — and ``DIR/figure1.json`` (settings, constants used,
tuned-file provenance, versions, device, wall times, summary).
"""

from __future__ import annotations

from .drawing import draw, format_summary
from .methods import MAIN_METHODS, all_methods, baseline_methods, constant_names, figure_factory, tune_factory
from .run import Figure1Result, figure_result, run
from .runtime import time_runs
from .settings import (
    C_VALUES,
    CONSTANTS,
    DIM,
    MIN_HORIZON,
    NOISES,
    NUM_ARMS,
    TUNE_SEEDS,
    NoiseSetting,
    environment,
    noise_settings,
    selected_noise,
)
from .tuning import DEFAULT_TUNED, TUNED_FORMAT, load_tuned, tune, tuned_values, tuning_table

__all__ = [
    "CONSTANTS",
    "C_VALUES",
    "DEFAULT_TUNED",
    "DIM",
    "MAIN_METHODS",
    "MIN_HORIZON",
    "NOISES",
    "NUM_ARMS",
    "TUNED_FORMAT",
    "TUNE_SEEDS",
    "Figure1Result",
    "NoiseSetting",
    "all_methods",
    "baseline_methods",
    "constant_names",
    "draw",
    "environment",
    "figure_factory",
    "figure_result",
    "format_summary",
    "load_tuned",
    "noise_settings",
    "run",
    "selected_noise",
    "time_runs",
    "tune",
    "tune_factory",
    "tuned_values",
    "tuning_table",
]
