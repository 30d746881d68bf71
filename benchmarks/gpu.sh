#!/usr/bin/env bash
# The GPU measurements behind the README's GPU tables, as one command that fits a 15-minute lease on a
# machine with one GPU (about 7 minutes at its last run, before lockstep.py was added: ~9 now). Uses the machine's own jax (no
# install: PYTHONPATH is the checkout). Results go to $OUT (default benchmarks/results): gpu_equal.log,
# grid_sweep.json, throughput.json, lockstep.json, gpu.log.
#
#     bash benchmarks/gpu.sh
set -u
OUT=$(realpath -m "${OUT:-benchmarks/results}")
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 JAXBANDIT_BENCH_OUT=$OUT
PY=${PYTHON:-python3}
cd benchmarks
{
  nvidia-smi -L
  $PY -c "import jax; print('jax', jax.__version__, jax.devices())"
  # The library compiles its sweeps and runs with command buffers on a GPU: check that this changes no bit.
  timeout 100 $PY gpu_equal.py --seeds 1024 --horizon 300
  # Shared streams, library settings: 16 beta values x 10^4 seeds x 2000 rounds (target 3e8 agent-rounds/s
  # on one H100), Figure 1's CR tuning grid, and 10^5 independent runs x 1000 rounds (target 1.5e8);
  # each against the per-run bound (XLA's defaults).
  timeout 280 $PY grid_sweep.py --previous none --seeds 10000 --independent 100000 --repeats 2
  # Independent runs under XLA's defaults (a hand-written jit of vmap(jb.simulate)), as in earlier sessions.
  timeout 100 $PY throughput.py --batches 100000 --budget 1e8 --repeats 2
  # Four algorithms in lockstep (one program, one draw) against one program each, 10^4 independent seeds.
  timeout 150 $PY lockstep.py --seeds 10000 --horizon 1000 --repeats 2
} 2>&1 | tee "$OUT/gpu.log"
