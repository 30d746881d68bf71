"""Throughput of CR-Hvt-UCB (agent-rounds per second) in the paper's setting, d = 10, K = 20.

For each batch size it measures, in one process and interleaved:
  - the environment bound: the same context, noise and adversary sampling with a do-nothing agent;
  - CR-Hvt-UCB (β × 1e-4, Student-t(3), flip C = 100);
and once, the plain NumPy per-run loop of ``numpy_baseline.py``. Prints a Markdown table and writes
``results/throughput.json``. Target (issue 5): ratio ≥ 0.7 at 400 runs × 2000 rounds on a 2-core CPU.

    python benchmarks/throughput.py [--batches 1 10 100 400 1000 10000] [--quick]
"""

from __future__ import annotations

import argparse
import time

import common
import numpy_baseline


def rounds_for(batch: int, budget: float) -> int:
    """Rounds per measurement: about ``budget`` agent-rounds, between 100 and 2000 rounds."""
    return int(min(2000, max(100, budget // batch)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 10, 100, 400, 1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="agent-rounds per measurement (default 4e6, 2e5 with --quick; raise it on a GPU)",
    )
    args = parser.parse_args(argv)
    budget = args.budget or (2e5 if args.quick else 4e6)

    t0 = time.perf_counter()
    np_T = 400 if args.quick else 2000
    np_runs = 1 if args.quick else 3
    t = time.perf_counter()
    for seed in range(np_runs):
        numpy_baseline.run(np_T, seed=seed)
    numpy_rate = np_runs * np_T / (time.perf_counter() - t)

    rows = []
    for batch in args.batches:
        T = rounds_for(batch, budget)
        env = common.paper_env()
        t = time.perf_counter()
        fns = {
            "env": common.batched_runner(common.null_agent(), env, T, batch),
            "alg": common.batched_runner(common.paper_alg(T), env, T, batch),
        }
        compile_s = time.perf_counter() - t
        best = common.interleaved_best(fns, args.repeats)
        env_rate = batch * T / best["env"]
        alg_rate = batch * T / best["alg"]
        rows.append(
            dict(
                batch=batch,
                rounds=T,
                env_rate=env_rate,
                alg_rate=alg_rate,
                ratio=alg_rate / env_rate,
                vs_numpy=alg_rate / numpy_rate,
                compile_s=compile_s,
            )
        )
        print(
            f"batch {batch:>6} × T {T:>5}: env {env_rate:.3g}/s, CR-Hvt-UCB {alg_rate:.3g}/s, "
            f"ratio {alg_rate / env_rate:.2f}",
            flush=True,
        )
    print(f"\nNumPy per-run loop: {numpy_rate:.3g} agent-rounds/s (T = {np_T}, {np_runs} runs)\n")
    common.print_table(
        rows,
        [
            ("batch", ""),
            ("rounds", ""),
            ("env_rate", ".3g"),
            ("alg_rate", ".3g"),
            ("ratio", ".2f"),
            ("vs_numpy", ".1f"),
            ("compile_s", ".1f"),
        ],
    )
    path = common.write_json(
        "throughput", {"rows": rows, "numpy_rate": numpy_rate, "seconds": time.perf_counter() - t0}
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
