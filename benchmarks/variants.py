"""Implementation variants of CR-Hvt-UCB's small linear algebra, timed against each other in one process.

The library unrolls sums over d (``jb.linalg.DOT_UNROLL_MAX_DIM``) and the Cholesky factor of the
projection (``jb.linalg.UNROLL_MAX_DIM``) into scalar operations, which is what makes it fast and
batch-invariant under ``vmap`` on CPU. This script times, interleaved, the environment alone and
CR-Hvt-UCB with each of these choices flipped, so they can be checked on any backend without editing the
library.

    python benchmarks/variants.py [--batch 100000] [--rounds 200]
"""

from __future__ import annotations

import argparse

import common
import jax

import jaxbandit.core.linalg as la

VARIANTS = {  # name: overrides of jaxbandit.linalg's module constants (read at trace time)
    "default for this backend": {},
    "XLA sums": {"DOT_UNROLL_MAX_DIM": 0},
    "library Cholesky": {"UNROLL_MAX_DIM": 0},
    "XLA sums, library Cholesky": {"DOT_UNROLL_MAX_DIM": 0, "UNROLL_MAX_DIM": 0},
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    B, T = args.batch, args.rounds
    env = common.paper_env()
    fns = {"environment only": common.batched_runner(common.null_agent(), env, T, B)}
    for name, overrides in VARIANTS.items():
        saved = {k: getattr(la, k) for k in overrides}
        for k, v in overrides.items():
            setattr(la, k, v)
        jax.clear_caches()  # the projection is jitted: retrace it under the new constants
        fns[name] = common.batched_runner(common.paper_alg(T), env, T, B)
        for k, v in saved.items():
            setattr(la, k, v)
    best = common.interleaved_best(fns, args.repeats)
    rows = [{"variant": k, "rate": B * T / v, "ratio": best["environment only"] / v} for k, v in best.items()]
    common.print_table(rows, [("variant", ""), ("rate", ".3g"), ("ratio", ".2f")])
    print(f"\nwrote {common.write_json('variants', {'batch': B, 'rounds': T, 'rows': rows})}")


if __name__ == "__main__":
    main()
