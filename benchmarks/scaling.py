"""How CR-Hvt-UCB's cost scales with the dimension d and the number of arms K, and its compile time.

For each (d, K): compile time of the batched simulation, and agent-rounds per second of CR-Hvt-UCB and of
the environment alone (do-nothing agent), interleaved. d > 16 switches the projection from the unrolled
Cholesky to LAPACK (``jaxbandit.core.linalg.UNROLL_MAX_DIM``). Writes ``results/scaling.json``.

    python benchmarks/scaling.py [--batch 400] [--rounds 500]
"""

from __future__ import annotations

import argparse
import time

import common

import jaxbandit as jb


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--dims", type=int, nargs="+", default=[5, 10, 20, 40])
    parser.add_argument("--arms", type=int, nargs="+", default=[10, 20, 50, 100])
    args = parser.parse_args(argv)
    T, batch = args.rounds, args.batch
    configs = [(d, 20) for d in args.dims] + [(10, k) for k in args.arms if k != 20]
    rows = []
    for d, K in configs:
        env = jb.envs.linear(d, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(100.0))
        alg = jb.cr_hvt_ucb(T, d, eps=1.0, nu=3**0.5, corruption=100.0, beta_scale=1e-4)
        t = time.perf_counter()
        run_alg = common.batched_runner(alg, env, T, batch)
        compile_s = time.perf_counter() - t
        run_env = common.batched_runner(common.null_agent(), env, T, batch)
        best = common.interleaved_best({"alg": run_alg, "env": run_env})
        rows.append(
            dict(
                d=d,
                K=K,
                compile_s=compile_s,
                alg_rate=batch * T / best["alg"],
                env_rate=batch * T / best["env"],
                ratio=best["env"] / best["alg"],
            )
        )
        print(rows[-1], flush=True)
    common.print_table(
        rows,
        [
            ("d", ""),
            ("K", ""),
            ("compile_s", ".1f"),
            ("alg_rate", ".3g"),
            ("env_rate", ".3g"),
            ("ratio", ".2f"),
        ],
    )
    print(f"\nwrote {common.write_json('scaling', {'batch': batch, 'rounds': T, 'rows': rows})}")


if __name__ == "__main__":
    main()
