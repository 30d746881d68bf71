"""What makes CR-Hvt-UCB's local slope in T rise with tuned constants: the step size α or the radius.

Not a speed benchmark: the measurement behind the scaling study's explanation (docs/scaling.md). The
scaling study's setting (d = 10, K = 20, centred Pareto with shape 1.1 + ε, ν as the scaling study gives
it, C = 0) around α = 32 and β-scale 10⁻⁶ (an earlier Figure 1 Pareto optimum, under which the local
slope rises; labelled "the study's"), with the step size α, the radius and λ varied one at a time: if
the rise came from too little exploration, a larger radius would lower the late slopes; if it comes from
the OMD step, a smaller α would. Per variant and ε: the final regret at every horizon (per seed) and the
local log–log slopes between neighbouring horizons, with a seed-bootstrap interval for the last one.
Writes ``step_size.json``.

    python benchmarks/step_size.py [--horizons 2000 4000 ... 64000] [--seeds 30] [--eps 0.4 1.0]
"""

from __future__ import annotations

import argparse
import time

import common
import jax.numpy as jnp
import numpy as np

import jaxbandit as jb
from jaxbandit.experiments.scaling import fit
from jaxbandit.experiments.scaling.settings import environment, moment_bound

#: (label, α, β-scale, λ): the study's constants, then one change each.
VARIANTS = (
    ("α = 32 (the study's)", 32.0, 1e-6, None),
    ("α = 128", 128.0, 1e-6, None),
    ("α = 8 (the theory default)", 8.0, 1e-6, None),
    ("α = 2", 2.0, 1e-6, None),
    ("α = 32, λ = 100", 32.0, 1e-6, 100.0),
    ("α = 32, radius × 100", 32.0, 1e-4, None),
    ("α = 32, radius × 1000", 32.0, 1e-3, None),
)


def _factory(horizon: int, dim: int):
    alphas = jnp.asarray([v[1] for v in VARIANTS])
    scales = jnp.asarray([v[2] for v in VARIANTS])
    lams = jnp.asarray([float(dim) if v[3] is None else v[3] for v in VARIANTS])

    def make(p):
        i = jnp.asarray(p["variant"]).astype(jnp.int32)
        return jb.cr_hvt_ucb(
            horizon,
            dim,
            eps=p["eps"],
            nu=moment_bound(p["eps"]),
            corruption=0.0,
            alpha=alphas[i],
            beta_scale=scales[i],
            lam=lams[i],
        )

    return make


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", type=int, nargs="+", default=[2000, 4000, 8000, 16000, 32000, 64000])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.4, 1.0])
    args = parser.parse_args()
    horizons = np.asarray(sorted(args.horizons), np.float64)
    finals = []  # [horizon][variant, eps, seed]
    seconds = {}
    for T in horizons.astype(int):
        start = time.perf_counter()
        res = jb.sweep(
            _factory(int(T), common.D),
            environment(common.D),
            {"variant": list(range(len(VARIANTS))), "eps": list(args.eps), "C": [0.0]},
            horizon=int(T),
            seeds=args.seeds,
            record=("log", 2),
        )
        finals.append(np.asarray(res.final_regret, np.float64).reshape(len(VARIANTS), len(args.eps), -1))
        seconds[int(T)] = time.perf_counter() - start
        print(f"T = {T}: {seconds[int(T)]:.0f} s", flush=True)
    regret = np.stack(finals, axis=-1)  # [variant, eps, seed, horizon]
    regret = np.moveaxis(regret, -1, -2)  # [variant, eps, horizon, seed]
    slopes = np.asarray([[fit.local_slopes(horizons, r) for r in v] for v in regret])  # [variant, eps, n − 1]
    # the last local slope is the fit over the last two horizons: its seed-bootstrap interval
    last = [[fit.loglog_fit(horizons[-2:], r[-2:]) for r in v] for v in regret]
    low = np.asarray([[f.ci_low for f in v] for v in last])
    high = np.asarray([[f.ci_high for f in v] for v in last])
    rows = []
    for v, (label, *_rest) in enumerate(VARIANTS):
        for e, eps in enumerate(args.eps):
            rows.append(
                {
                    "variant": label,
                    "eps": eps,
                    "1/(1+eps)": f"{1 / (1 + eps):.2f}",
                    "local slopes": " ".join(f"{s:.2f}" for s in slopes[v, e]),
                    "last [95%]": f"{slopes[v, e, -1]:.2f} [{low[v, e]:.2f}, {high[v, e]:.2f}]",
                    "R(T_max)": f"{regret[v, e, -1].mean():.0f}",
                }
            )
    common.print_table(rows, [(k, "") for k in rows[0]])
    common.write_json(
        "step_size",
        {
            "horizons": horizons.astype(int).tolist(),
            "eps": list(args.eps),
            "seeds": args.seeds,
            "variants": [{"label": v[0], "alpha": v[1], "beta_scale": v[2], "lam": v[3]} for v in VARIANTS],
            "rows": rows,
            "local_slopes": slopes.tolist(),
            "last_slope_interval": [low.tolist(), high.tolist()],
            "final_regret": regret.tolist(),
            "seconds": seconds,
        },
    )


if __name__ == "__main__":
    main()
