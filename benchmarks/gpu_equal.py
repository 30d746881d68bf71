"""Are the library's GPU compiler options (command buffers) result-neutral, and does a change keep the
previous code's results? One process: a CR-Hvt-UCB grid sweep and a single run, compiled with the
library's options and again with them off (``JAXBANDIT_COMMAND_BUFFERS=0``), and with ``--previous REV``
(a git revision, or a folder holding one's ``jaxbandit``) the previous code's too; prints whether every
output array is bitwise equal. ``--set MODULE.NAME=VALUE`` sets a constant of this code (not the
previous code's) first, e.g. ``jaxbandit.core.linalg.PEELED_NEWTON_STEPS=1``.

    python benchmarks/gpu_equal.py [--seeds 256] [--horizon 300] [--previous REV] [--set MODULE.NAME=VALUE]
"""

from __future__ import annotations

import argparse
import os

import common
import jax
import numpy as np

import jaxbandit as jb


def outputs(seeds: int, T: int, lib=jb) -> dict:
    """Every recorded array of the sweep and the single run, as NumPy, made with the library ``lib``."""

    def make_env(p):
        return lib.envs.linear(
            common.D, common.K, noise=lib.noise.student_t(3.0), corruption=lib.corruption.flip(p["C"])
        )

    def make_alg(p):
        return lib.cr_hvt_ucb(T, common.D, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["beta_scale"])

    grid = {"C": [0.0, 100.0], "beta_scale": [1e-4, 1e-2]}
    res = lib.sweep(make_alg, make_env, grid, horizon=T, seeds=seeds, record="all")
    # one grid point: streams of one lane (independent runs), which draw differently on a GPU
    point = {"C": 100.0, "beta_scale": 1e-4}
    lone = lib.sweep(make_alg, make_env, {k: [v] for k, v in point.items()}, horizon=T, seeds=8, record="all")
    one = lib.simulate(make_alg(point), make_env(point), jax.random.fold_in(jax.random.key(0), 7), horizon=T)
    out = {f"sweep_{k}": np.asarray(v) for k, v in res.data.items()}
    out.update({f"lone_{k}": np.asarray(v) for k, v in lone.data.items()})
    out.update({f"simulate_{k}": np.asarray(v) for k, v in one._asdict().items()})
    alone = all(np.array_equal(out[f"lone_{k}"][0, 0, 7], out[f"simulate_{k}"]) for k in ("regret", "action"))
    print(f"{lib.__name__}: seed 7 of the one-point sweep bitwise its run alone (jb.simulate):", alone)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=256)
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--previous", default=None, help="git revision or folder of the previous code")
    parser.add_argument("--set", nargs="*", default=[], help="this code's constants: MODULE.NAME=VALUE")
    args = parser.parse_args(argv)
    common.apply_settings(args.set)
    print(
        "backend",
        jax.default_backend(),
        "library options on:",
        jb.runner.xla_options.command_buffers_enabled(),
    )
    on = outputs(args.seeds, args.horizon)
    if args.previous:
        previous = outputs(args.seeds, args.horizon, common.load_previous(args.previous))
        bad = [k for k in on if not np.array_equal(on[k], previous[k])]
        print(f"equal to the previous code ({args.previous}):", not bad, *bad)
    os.environ["JAXBANDIT_COMMAND_BUFFERS"] = "0"
    off = outputs(args.seeds, args.horizon)
    bad = [k for k in on if not np.array_equal(on[k], off[k])]
    for k in on:
        print(f"{k}: shape {on[k].shape} {'EQUAL' if k not in bad else 'DIFFERENT'}")
    print("command buffers result-neutral:", not bad)


if __name__ == "__main__":
    main()
