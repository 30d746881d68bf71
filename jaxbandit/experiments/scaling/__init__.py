"""Scaling laws against the theory (issue 14, part 2): how final regret grows with T, C and d.

Tani & Futami's bound for a known C and a constant ν (their corollary of the instance-dependent regret
theorem) is
Reg(T) = Õ(d·T^{1/(1+ε)} + d·T^{(1−ε)/(2(1+ε))}·(1 ∨ C)) — d·C at ε = 1. Measured here, for every
registered algorithm (``jb.registry``), each with its theory constants and with constants tuned for this
study (``tuning``: by the benchmark's protocol, per ε, at each of the plan's tuning horizons, on the
tuning seeds 1000–1009; each set is a constants variant ``tuned@T`` run at every horizon):

- **(a)** the exponent b of final regret in T, log R_T = a + b log T, over the late window of the T grid
  (``fit.window_fit``: the last 3 horizons, an interval covering seeds and the window's choice, the
  local slopes between neighbouring horizons beside it), for several ε, beside 1/(1+ε) — the exponent
  of the *worst-case upper bound*, not a prediction for this instance — and 1/2. Noise: centred
  Pareto(1 + ε + 0.1, 1) — its (1+ε)-moment exists and no moment of order ≥ 1.1 + ε does, so it is as
  heavy as the assumption allows (ε = 0.4 is Figure 1's panel (c)). Each T is its own run (T is static:
  one compiled sweep per algorithm and T, cached); C = 0. How β follows T: the theory constants are
  recomputed for each T (β_t depends on T through log(2T²/δ), δ = 1/(8T)); a tuned set holds the
  radius as a multiple of that theory radius, so at every T its radius grows with T as the theory one
  does, and constants tuned at a short horizon are seen at long ones beside those tuned there. The
  non-robust baselines (OFUL, LinTS, GLB-OMD, …) run under the same protocol.
- **(b)** final regret against the flip adversary's budget C (a traced grid axis: no recompilation):
  R = α + γC, the regret added per unit of C between neighbouring budgets, and the log–log slope of
  R(C) − R(0) against C, against linear. The flip adversary spends its budget from round 1 on, while
  the learner is still exploring.
- **(c)** final regret against d (static: one compiled sweep per d), log–log slope against 1.

Fits (``fit``): least squares on the seed means, 95 % percentile-bootstrap intervals resampling seeds
jointly across the grid (seed s faces the same stream at every T and C). Seeds 0..n−1; the tuned
constants were tuned on seeds 1000–1009. Only the final round is recorded (memory O(runs)).
Algorithms whose registry cost is O(t) (a refit over the whole history every round) run only the
horizons up to the plan's ``linear_cost_max_horizon``.

Modules: ``settings`` (environment, grids, factories), ``tuning`` (the study's tuned constants),
``fit``, ``run``, ``report`` (``scaling.md`` from the JSON, the figures).

Command line::

    python -m jaxbandit scaling [--quick] [--out DIR] [--algorithms A B ...] [--seeds N]
                                [--tune-horizons T ...] [--theory-only] [--progress/--no-progress]

Writes ``DIR/tuning.json`` (every setting each tuning evaluated; a rerun reuses it),
``DIR/scaling.json`` (every fit with its interval, settings, versions, device, timings),
``DIR/scaling.md``, the final regrets of each part as a ``jb.SweepResult`` — ``DIR/results_T.npz``
(dims algorithm, constants, eps, seed, round = the horizon T), ``results_C.npz`` (…, C, …) and
``results_d.npz`` (…, dim, …), each with, with xarray, a ``.nc`` beside it — and
``DIR/scaling_{T,C,d}.png``.
"""

from __future__ import annotations

from .fit import SlopeFit, WindowFit, excess_loglog_fit, linear_fit, local_slopes, loglog_fit, window_fit
from .report import arrays_from, draw, markdown, rewrite
from .run import (
    Job,
    ScalingResult,
    default_workers,
    identical_runs,
    plan_jobs,
    random_play_regret,
    results,
    run,
)
from .settings import (
    FULL,
    QUICK,
    Plan,
    algorithm_factory,
    check_algorithms,
    check_plan,
    environment,
    moment_bound,
    noise,
    tuned_constants,
    variant_names,
)
from .tuning import load as load_tuning
from .tuning import tune as tune_constants

__all__ = [
    "FULL",
    "QUICK",
    "Job",
    "Plan",
    "ScalingResult",
    "SlopeFit",
    "WindowFit",
    "algorithm_factory",
    "arrays_from",
    "check_algorithms",
    "check_plan",
    "default_workers",
    "draw",
    "environment",
    "excess_loglog_fit",
    "identical_runs",
    "linear_fit",
    "load_tuning",
    "local_slopes",
    "loglog_fit",
    "markdown",
    "moment_bound",
    "noise",
    "plan_jobs",
    "random_play_regret",
    "results",
    "rewrite",
    "run",
    "tune_constants",
    "tuned_constants",
    "variant_names",
    "window_fit",
]
