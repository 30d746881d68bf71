"""A sweep of an algorithm whose every round makes a batched LAPACK call (Heavy-OFUL's eigendecomposition),
large enough that jaxlib 0.10's CPU kernel splits the batch over XLA's thread pool: run with
``python lapack_sweep_job.py OUT.npz`` under ``XLA_FLAGS=--xla_force_host_platform_device_count=2``
(the distributed tests), or call :func:`run` in-process (one device)."""

import sys

import numpy as np

import jaxbandit as jb

T, D, K = 12, 10, 20
C = np.linspace(0.0, 300.0, 16)
SEEDS = 8  # 16 × 8 = 128 runs: 64 matrices a call on each of 2 devices (32 were not split)


def run() -> jb.SweepResult:
    def make_alg(p):
        return jb.heavy_oful(T, D, eps=1.0, nu=3**0.5)

    def make_env(p):
        return jb.envs.linear(D, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))

    return jb.sweep(make_alg, make_env, {"C": C}, horizon=T, seeds=SEEDS, record="all")


if __name__ == "__main__":
    run().save(sys.argv[1])
