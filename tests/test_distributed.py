"""Sharding over devices and checkpoint/resume give the same numbers as one uninterrupted run."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxbandit as jb

JOB = Path(__file__).parent / "scripts" / "sweep_job.py"


#: The jobs share JAX's persistent compilation cache: a killed and resumed job loads the executables
#: the reference job compiled (same shapes, same device count) instead of compiling them again.
CACHE = {"dir": None}


def run_job(out, *args, devices=1, wait=True):
    env = dict(os.environ)
    # XLA's default optimisation level, the one the library promises equal bits at: at level 0 (faster to
    # compile) the unoptimised code generator rounds some fused arithmetic differently from one program
    # to another, so the lockstep, 8-device program differs from the reference there
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    env.pop("JAX_ENABLE_X64", None)
    if CACHE["dir"] is not None:
        env.update(
            JAX_COMPILATION_CACHE_DIR=str(CACHE["dir"]),
            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
            JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0",
        )
    cmd = [sys.executable, str(JOB), str(out), *args]
    if wait:
        subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
        return jb.SweepResult.load(out)
    return subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    CACHE["dir"] = tmp_path_factory.mktemp("xla-cache")
    return run_job(tmp_path_factory.mktemp("ref") / "one.npz", "--chunk", "8")


@pytest.mark.slow
def test_eight_devices_equal_one(reference, tmp_path):
    """Sharded over 8 devices, in lockstep (one program for both algorithms) and with a GPU's chunk layout
    (rounds drawn ahead, runs minor), the sweep is bitwise the single-device one with one program per
    algorithm and the CPU's layout. (Sharded with the CPU's layout: the two-process cluster test.)"""
    sharded = run_job(
        tmp_path / "eight.npz", "--chunk", "8", "--lockstep", "--gpu-layout", devices=8
    )  # 18 runs: padded to 24 over 8 devices
    assert sharded.meta["devices"] == 8 and reference.meta["devices"] == 1
    for field in reference.data:
        np.testing.assert_array_equal(sharded.data[field], reference.data[field])


@pytest.mark.slow
def test_killed_sweep_resumes_to_identical_results(reference, tmp_path):
    """Killed (SIGKILL) right after a chosen checkpoint — mid first algorithm, then again mid second
    algorithm of the resumed job — and resumed, the sweep ends bitwise equal to an uninterrupted one. The
    last job resumes with a GPU's chunk layout (rounds drawn ahead, runs minor) over 3 devices (the streams
    padded otherwise): a checkpoint does not depend on the layout or the device count that wrote it."""
    ckpt = tmp_path / "ckpt"
    out = tmp_path / "resumed.npz"
    rounds_per_algorithm = 240 // 8  # chunks of 8 rounds, T = 240: 30 saves each
    for saves, algorithm, next_round in ((7, 0, 56), (rounds_per_algorithm - 7 + 5, 1, 40)):
        proc = run_job(
            out, "--checkpoint", str(ckpt), "--chunk", "8", "--die-after-saves", str(saves), wait=False
        )
        assert proc.wait(timeout=600) == -signal.SIGKILL
        with np.load(ckpt / f"algorithm-{algorithm}.npz") as z:
            assert int(z["next_round"]) == next_round
        assert not out.exists()
    resumed = run_job(out, "--checkpoint", str(ckpt), "--chunk", "8", "--gpu-layout", devices=3)
    for field in reference.data:
        np.testing.assert_array_equal(resumed.data[field], reference.data[field])


def _free_port():
    import socket

    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_process_cluster_equals_one_process(tmp_path):
    """examples/cluster_sweep.py under jax.distributed.initialize: 2 processes × 2 CPU devices each."""
    script = Path(__file__).resolve().parents[1] / "examples" / "cluster_sweep.py"
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    env.pop("JAX_ENABLE_X64", None)

    def launch(out, n):
        port = _free_port()
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(script),
                    "--out",
                    str(out),
                    "--horizon",
                    "30",
                    "--seeds",
                    "2",
                    "--coordinator",
                    f"localhost:{port}",
                    "--num-processes",
                    str(n),
                    "--process-id",
                    str(i),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for i in range(n)
        ]
        for p in procs:
            _, err = p.communicate(timeout=400)
            assert p.returncode == 0, err.decode()[-2000:]
        return jb.SweepResult.load(out / "sweep.npz")

    two = launch(tmp_path / "two", 2)
    one = launch(tmp_path / "one", 1)
    assert two.meta["devices"] == 4 and one.meta["devices"] == 2
    for field in one.data:
        np.testing.assert_array_equal(two.data[field], one.data[field])


@pytest.mark.slow
def test_batched_lapack_on_two_cpu_devices_finishes_and_equals_one(tmp_path):
    """Heavy-OFUL (an eigendecomposition a round) over 2 CPU devices on this machine's thread pool: with one
    batched LAPACK call per device, jaxlib 0.10 split both over the pool's threads and waited on them
    there, so on 2 cores the job never finished (it did not, before ``batching.lapack``). It finishes, and
    equals the same sweep on one device bitwise."""
    sys.path.insert(0, str(JOB.parent))
    try:
        import lapack_sweep_job
    finally:
        sys.path.pop(0)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    env.pop("JAX_ENABLE_X64", None)
    out = tmp_path / "two.npz"
    # ~10 s on 2 cores; a hung job would wait forever
    subprocess.run(
        [sys.executable, str(JOB.parent / "lapack_sweep_job.py"), str(out)],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    two, one = jb.SweepResult.load(out), lapack_sweep_job.run()
    assert two.meta["devices"] == 2 and one.meta["devices"] == 1
    for field in one.data:
        np.testing.assert_array_equal(two.data[field], one.data[field])
