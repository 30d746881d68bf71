"""Time per run against the horizon T: GAdaOFUL (a refit over all past rounds every round) versus
CR-Hvt-UCB (O(1) per round) — the paper's Figure 1b.

GAdaOFUL twice: as Figure 1 runs it (the registry's build: theory constants, the UCB arm rule) and as
``jb.gadaoful`` defaults to (the authors' notebook constants and their arm rule, the maximum over the
ellipsoid intersected with the ball, solved per arm: ``arm_rule="ellipsoid_ball"``). All run
``--batch`` runs vmapped in one compiled call on the same streams (Student-t(3), flip C = 100); time per
run = best wall time / batch, compile excluded. Writes ``results/runtime_vs_T.json``.
Target (issue 5): GAdaOFUL's time per run at T = 5000 ≥ 1000× CR-Hvt-UCB's.

    python benchmarks/runtime_vs_T.py [--horizons 250 500 1000 2000 5000] [--batch 10]
"""

from __future__ import annotations

import argparse

import common

import jaxbandit as jb


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", type=int, nargs="+", default=[250, 500, 1000, 2000, 5000])
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    rows = []
    for T in args.horizons:
        env = common.paper_env()
        spec = jb.registry.algorithm("gadaoful")
        problem = jb.agents.registry.Problem(T, common.D, eps=1.0, nu=3**0.5, corruption=100.0)
        algs = {
            "cr_hvt_ucb": common.paper_alg(T),
            "gadaoful": spec.build(problem, spec.theory(problem)),
            "gadaoful_public": jb.gadaoful(T, common.D, nu=3**0.5, corruption=100.0),
        }
        fns = {name: common.batched_runner(alg, env, T, args.batch) for name, alg in algs.items()}
        best = common.interleaved_best(fns, args.repeats)
        row = {"T": T, **{f"{k}_s_per_run": v / args.batch for k, v in best.items()}}
        for name in ("gadaoful", "gadaoful_public"):
            row[f"{name}_ratio"] = row[f"{name}_s_per_run"] / row["cr_hvt_ucb_s_per_run"]
        rows.append(row)
        print(row, flush=True)
    columns = [(f"{name}_s_per_run", ".3g") for name in algs]
    ratios = [("gadaoful_ratio", ".1f"), ("gadaoful_public_ratio", ".1f")]
    common.print_table(rows, [("T", ""), *columns, *ratios])
    print(f"\nwrote {common.write_json('runtime_vs_T', {'batch': args.batch, 'rows': rows})}")


if __name__ == "__main__":
    main()
