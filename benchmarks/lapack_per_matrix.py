"""What calling LAPACK one matrix at a time costs (``jaxbandit.core.batching.lapack``), in one process.

``jb.sweep`` traces the algorithms' LAPACK calls one matrix per call where several batched calls could
run at once on a CPU (several CPU devices, or several algorithms in lockstep): jaxlib 0.10's batched
kernels could then take every thread of the pool and hang (docs/sweeps.md, "Every device"). Here each
algorithm that calls LAPACK every round runs ``--lanes`` runs of ``--horizon`` rounds (``vmap`` over
seeds, one compiled program) traced both ways, timed interleaved (best of ``--repeats``) and compared
bitwise.

    python benchmarks/lapack_per_matrix.py [--lanes 128] [--horizon 300] [--repeats 3]
"""

from __future__ import annotations

import argparse

import common
import numpy as np

import jaxbandit as jb
from jaxbandit.core import batching


def algorithms(T: int) -> dict:
    """Figure 1's builds (theory constants) of the algorithms with an eigendecomposition every round, and
    ``jb.gadaoful``'s default (the authors' preset and arm rule: one more eigendecomposition, in select)."""
    prob = jb.agents.registry.Problem(T, common.D, eps=1.0, nu=3**0.5, corruption=100.0)
    built = {}
    for name in ("gadaoful", "heavy_oful", "tofu"):
        spec = jb.registry.algorithm(name)
        built[name] = spec.build(prob, spec.theory(prob))
    built["gadaoful (ellipsoid_ball)"] = jb.gadaoful(T, common.D, nu=3**0.5, corruption=100.0)
    return built


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=128)
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    env = common.paper_env()
    rows = []
    for name, alg in algorithms(args.horizon).items():
        batched = common.batched_runner(alg, env, args.horizon, args.lanes)
        with batching.lapack_per_matrix():
            per_matrix = common.batched_runner(alg, env, args.horizon, args.lanes)
        best = common.interleaved_best({"batched": batched, "per_matrix": per_matrix}, args.repeats)
        rows.append(
            dict(
                algorithm=name,
                batched_s=best["batched"],
                per_matrix_s=best["per_matrix"],
                ratio=best["per_matrix"] / best["batched"],
                bitwise=bool(np.array_equal(np.asarray(batched()), np.asarray(per_matrix()))),
            )
        )
    print(f"\n{args.lanes} runs x T = {args.horizon}, best of {args.repeats} interleaved\n")
    common.print_table(
        rows,
        [("algorithm", ""), ("batched_s", ".3f"), ("per_matrix_s", ".3f"), ("ratio", ".2f"), ("bitwise", "")],
    )
    print(f"\nwrote {common.write_json('lapack_per_matrix', {'rows': rows, 'args': vars(args)})}")


if __name__ == "__main__":
    main()
