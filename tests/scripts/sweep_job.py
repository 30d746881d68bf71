"""A small sweep used by the distributed and checkpoint tests: run with
``python sweep_job.py OUT.npz [--checkpoint DIR] [--chunk N]``; writes the result to OUT.npz."""
import argparse

import jaxbandit as jb

T, D, K = 240, 5, 6


def make_alg(p):
    return jb.cr_hvt_ucb(T, D, eps=p["eps"], nu=1.5, corruption=p["C"], beta_scale=0.01)


def make_env(p):
    return jb.envs.linear(D, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--checkpoint")
    parser.add_argument("--chunk", type=int, default=40)
    args = parser.parse_args()
    res = jb.sweep({"cr": make_alg, "hvt": lambda p: jb.hvt_ucb(T, D, eps=p["eps"], nu=1.5)}, make_env,
                   {"C": [0.0, 5.0, 30.0], "eps": [0.6, 1.0]}, horizon=T, seeds=3, record=10,
                   chunk_size=args.chunk, checkpoint=args.checkpoint)
    res.save(args.out)


if __name__ == "__main__":
    main()
