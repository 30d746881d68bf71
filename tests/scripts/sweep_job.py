"""A small sweep used by the distributed and checkpoint tests: run with
``python sweep_job.py OUT.npz [--checkpoint DIR] [--chunk N] [--die-after-saves N] [--gpu-layout]``; writes
the result to OUT.npz. ``--die-after-saves N`` kills the process (SIGKILL, as a dying Colab runtime
would) right after its N-th checkpoint is written: a kill at a chosen chunk, with no race against wall
time."""

import argparse
import os
import signal

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
    parser.add_argument("--die-after-saves", type=int, default=None)
    # one program per algorithm unless --lockstep: the kill test stops the job inside each algorithm
    parser.add_argument("--lockstep", action="store_true")
    # a GPU's chunk layout, forced here: rounds drawn ahead (blocks of 4), the runs on the minor axes
    parser.add_argument("--gpu-layout", action="store_true")
    args = parser.parse_args()
    options = jb.ExecutionOptions(draw_ahead=4, runs_minor=True) if args.gpu_layout else None
    if args.die_after_saves is not None:
        _die_after(args.die_after_saves)
    res = jb.sweep(
        {"cr": make_alg, "hvt": lambda p: jb.hvt_ucb(T, D, eps=p["eps"], nu=1.5)},
        make_env,
        {"C": [0.0, 5.0, 30.0], "eps": [0.6, 1.0]},
        horizon=T,
        seeds=3,
        record=10,
        chunk_size=args.chunk,
        checkpoint=args.checkpoint,
        lockstep=args.lockstep,
        options=options,
    )
    res.save(args.out)


def _die_after(saves: int) -> None:
    from jaxbandit.runner import checkpoint

    save, count = checkpoint.save, [0]

    def save_then_maybe_die(*args, **kwargs):
        save(*args, **kwargs)
        count[0] += 1
        if count[0] == saves:
            os.kill(os.getpid(), signal.SIGKILL)

    checkpoint.save = save_then_maybe_die


if __name__ == "__main__":
    main()
