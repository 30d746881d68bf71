"""A sweep over every device of this machine, or of every host of a cluster.

On a laptop or one machine, one process (the default):

    python examples/cluster_sweep.py                          # writes results/cluster/sweep.npz
    python examples/cluster_sweep.py --horizon 30 --seeds 2   # small: what the tests run

On a cluster (one process per host, or per GPU), run the same command in each process of the job with
``--distributed``, e.g. with SLURM:

    srun --nodes=4 --ntasks-per-node=1 python examples/cluster_sweep.py --distributed --out results/cluster

``--distributed`` calls ``jax.distributed.initialize()``, which reads the coordinator address, process
count and process id from the cluster environment (SLURM, Open MPI, Kubernetes/TPU); elsewhere pass them
explicitly with ``--coordinator``, ``--num-processes`` and ``--process-id`` (which imply
``--distributed``; also how the tests run it as two processes on one CPU machine). The run axis (grid
points × seeds) is sharded over ``jax.devices()`` — all devices of all processes — and every process
ends with the full result; process 0 writes it (and the checkpoints: a run stopped part way resumes from
them when started again with the same arguments).

The defaults (T = 5000, 100 seeds, 24 grid points: 2400 runs) took 29 s in one process on a shared
2-core AMD EPYC CPU; ``--horizon`` and ``--seeds`` make it smaller.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/cluster"))
    parser.add_argument("--horizon", type=int, default=5000)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument(
        "--distributed",
        action="store_true",
        help="one process of a multi-host job: call jax.distributed.initialize() (default: one process)",
    )
    parser.add_argument("--coordinator", help="host:port of process 0 (default: from the cluster)")
    parser.add_argument("--num-processes", type=int)
    parser.add_argument("--process-id", type=int)
    args = parser.parse_args(argv)
    for name in ("horizon", "seeds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} is invalid: it must be an integer >= 1")

    explicit = (args.coordinator, args.num_processes, args.process_id)
    if any(value is not None for value in explicit):
        jax.distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    elif args.distributed:
        jax.distributed.initialize()

    import jaxbandit as jb

    T, d, K = args.horizon, 10, 20

    def make_alg(p):
        return jb.cr_hvt_ucb(T, d, eps=p["eps"], nu=p["nu"], corruption=p["C"], beta_scale=p["beta_scale"])

    def make_env(p):
        return jb.envs.linear(d, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))

    grid = {
        "C": [0.0, 10.0, 100.0, 1000.0],
        "eps": [0.5, 1.0],
        "nu": [3**0.5],
        "beta_scale": [1e-5, 1e-4, 1e-3],
    }
    res = jb.sweep(
        make_alg,
        make_env,
        grid,
        horizon=T,
        seeds=args.seeds,
        record=("log", 60),
        checkpoint=args.out / "checkpoint",
        progress=jax.process_index() == 0,
    )
    if jax.process_index() == 0:
        res.save(args.out / "sweep.npz")
        print(
            f"{jax.process_count()} processes, {jax.device_count()} devices: wrote {args.out / 'sweep.npz'}"
        )


if __name__ == "__main__":
    main()
