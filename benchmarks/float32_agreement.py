"""float32 against x64: every registered algorithm's final regret in both precisions, on the same seeds.

Not a speed benchmark: a fidelity check at a size the test suite cannot afford (``tests/test_float32.py``
is the small one). Two regimes: the theory constants (``spec.theory``: radii ~10⁴ for CR-Hvt-UCB) and
tuned-size constants (the middle of each free constant's tuning grid). The paper's setting at C = 0
(d = 10, K = 20, Student-t(3) noise, ν = √3, ε = 1) and, with ``--noise pareto``, centred Pareto(1.5)
at ε = 0.4. Prints, per algorithm and regime, both means, their ratio and
z = (mean₃₂ − mean₆₄)/√(se₃₂² + se₆₄²); float32 agrees when |z| ≤ 3. Writes
``float32_agreement[_pareto].json`` with the per-seed final regrets.

    python benchmarks/float32_agreement.py [--horizon 3000] [--seeds 64] [--first-seed 0]
        [--noise student_t|pareto] [--algorithms oful crt ...] [--tie-ulps 16]
"""

from __future__ import annotations

import argparse
import time

import common
import jax
import jax.numpy as jnp
import numpy as np

import jaxbandit as jb
from jaxbandit.core import linalg

NOISES = {
    "student_t": (lambda: jb.noise.student_t(3.0), 1.0, 3**0.5),
    "pareto": (lambda: jb.noise.pareto(1.5), 0.4, 15 ** (1 / 1.4)),
}


def tuned_constants(spec) -> dict:
    """The middle of each free constant's tuning grid."""
    return {name: values[len(values) // 2] for name, values in spec.grid.items()}


def both_regimes(spec, problem):
    """The algorithm as a function of ``p["regime"]`` (0: theory constants, 1: tuned): one program."""
    theory, tuned = spec.theory(problem), tuned_constants(spec)

    def make(p):
        pick = {k: jnp.where(p["regime"] == 0, jnp.asarray(theory[k], float), tuned[k]) for k in spec.grid}
        return spec.build(problem, pick)

    return make


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=64)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds FIRST..FIRST+SEEDS-1")
    parser.add_argument("--noise", choices=sorted(NOISES), default="student_t")
    parser.add_argument("--algorithms", nargs="*", default=None, help="registered names (default: all)")
    parser.add_argument(
        "--tie-ulps",
        type=float,
        default=None,
        help="the arm choice's tie window in ulps instead of the library's TIE_ULPS (what a window costs)",
    )
    args = parser.parse_args()
    if args.tie_ulps is not None:
        linalg.TIE_ULPS = args.tie_ulps  # read when the programs are traced, all after this line
    names = args.algorithms or jb.registry.names()
    noise, eps, nu = NOISES[args.noise]
    problem = jb.registry.Problem(horizon=args.horizon, dim=common.D, eps=eps, nu=nu, corruption=0.0)
    env = jb.envs.linear(common.D, common.K, noise=noise())
    finals: dict[str, dict] = {}
    seconds: dict[str, float] = {}
    for name in names:
        spec = jb.registry.algorithm(name)
        for x64 in (False, True):
            with jax.enable_x64(x64):
                start = time.perf_counter()
                res = jb.sweep(
                    both_regimes(spec, problem),
                    env,
                    {"regime": [0.0, 1.0]},
                    horizon=args.horizon,
                    seeds=list(range(args.first_seed, args.first_seed + args.seeds)),
                    record=("log", 2),
                )
                precision = "x64" if x64 else "float32"
                seconds[f"{name}/{precision}"] = time.perf_counter() - start
                finals.setdefault(name, {})[precision] = np.asarray(res.final_regret, np.float64)
        print(f"{name}: {sum(v for k, v in seconds.items() if k.startswith(name + '/')):.0f} s", flush=True)
    rows, per_seed = [], {}
    for name in names:
        for r, regime in enumerate(("theory", "tuned")):
            f32 = finals[name]["float32"][r].reshape(-1)
            f64 = finals[name]["x64"][r].reshape(-1)
            se32, se64 = f32.std(ddof=1) / np.sqrt(f32.size), f64.std(ddof=1) / np.sqrt(f64.size)
            z = (f32.mean() - f64.mean()) / np.hypot(se32, se64)
            rows.append(
                {
                    "algorithm": name,
                    "regime": regime,
                    "float32": f"{f32.mean():.1f} ± {se32:.1f}",
                    "x64": f"{f64.mean():.1f} ± {se64:.1f}",
                    "ratio": f"{f32.mean() / f64.mean():.3f}",
                    "z": f"{z:+.2f}",
                    "agrees": "yes" if abs(z) <= 3 else "NO",
                }
            )
            per_seed[f"{name}/{regime}"] = {"float32": f32.tolist(), "x64": f64.tolist()}
    common.print_table(
        rows,
        [(key, "") for key in ("algorithm", "regime", "float32", "x64", "ratio", "z", "agrees")],
    )
    suffix = ("" if args.noise == "student_t" else f"_{args.noise}") + (
        "" if args.tie_ulps is None else f"_tie{args.tie_ulps:g}"
    )
    common.write_json(
        f"float32_agreement{suffix}",
        {
            "horizon": args.horizon,
            "tie_ulps": linalg.TIE_ULPS,
            "seeds": [args.first_seed, args.first_seed + args.seeds - 1],
            "dim": common.D,
            "num_arms": common.K,
            "noise": args.noise,
            "eps": eps,
            "nu": nu,
            "tuned": {name: tuned_constants(jb.registry.algorithm(name)) for name in names},
            "rows": rows,
            "per_seed": per_seed,
            "seconds": seconds,
        },
    )


if __name__ == "__main__":
    main()
