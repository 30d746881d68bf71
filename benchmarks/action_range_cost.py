"""The run-time cost of refusing an arm outside [0, K): each round's regret and reward are NaN for such an
arm (a ``jnp.where``) instead of a silently clamped arm's.

The same vmapped ``simulate`` with the current package and with a revision before the check
(``--previous``, default 5ababf5), compiled alike and timed interleaved in one process, so that both meet
the same load; prints the best of ``--repeats`` for each and their ratio (current / previous). Two
agents: the null agent (pulls arm 0: a round costs the environment alone, where the check weighs most)
and OFUL.

    python benchmarks/action_range_cost.py [--previous 5ababf5] [--horizon 1000] [--batch 256]
"""

from __future__ import annotations

import argparse

import common
import jax

import jaxbandit as jb


def runner(lib, alg, env, horizon: int, batch: int):
    keys = jax.random.split(jax.random.key(0), batch)

    def run(keys):
        out = jax.vmap(lambda k: lib.simulate(alg, env, k, horizon=horizon))(keys)
        return out.regret.sum() + out.reward.sum()

    compiled = jax.jit(run).lower(keys).compile()
    return lambda: compiled(keys).block_until_ready()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--previous", default="5ababf5", metavar="REV")
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    previous = common.load_previous(args.previous)
    rows = []
    for agent in ("null", "oful"):
        fns = {}
        for version, lib in (("current", jb), ("previous", previous)):
            alg = common.null_agent(lib) if agent == "null" else lib.oful(args.horizon, common.D)
            env = lib.envs.linear(
                common.D, common.K, noise=lib.noise.student_t(3.0), corruption=lib.corruption.flip(100.0)
            )
            fns[version] = runner(lib, alg, env, args.horizon, args.batch)
        best = common.interleaved_best(fns, args.repeats)
        ratio = best["current"] / best["previous"]
        rows.append({"agent": agent, **best, "ratio": ratio})
        print(
            f"{agent:<5} current {best['current']:.4f} s  previous {best['previous']:.4f} s  "
            f"ratio {ratio:.3f}",
            flush=True,
        )
    path = common.write_json(
        "action_range_cost",
        {
            "what": __doc__.split("\n\n")[0],
            "previous": args.previous,
            "horizon": args.horizon,
            "batch": args.batch,
            "rows": rows,
        },
    )
    common.print_table(rows, [("agent", ""), ("current", ".4f"), ("previous", ".4f"), ("ratio", ".3f")])
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
