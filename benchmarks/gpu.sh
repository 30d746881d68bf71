#!/usr/bin/env bash
# The GPU measurements behind the README's GPU table, as one command on a machine with one GPU.
# Uses the machine's own jax (no install: PYTHONPATH is the checkout). Results go to $OUT (default
# benchmarks/results): throughput.json (and command_buffers/throughput.json), runtime_vs_T.json,
# grid_sweep.json,
# figure1/, variants.json, memory.json, gpu.log.
#
#     bash benchmarks/gpu.sh
set -u
OUT=${OUT:-benchmarks/results}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 JAXBANDIT_BENCH_OUT=$OUT
PY=${PYTHON:-python3}
{
  nvidia-smi -L
  $PY -c "import jax; print('jax', jax.__version__, jax.devices())"
  # CR-Hvt-UCB against the environment's RNG bound; 1e8 agent-rounds per measurement.
  timeout 330 $PY benchmarks/throughput.py --batches 1000 100000 1000000 --budget 1e8 --repeats 3
  # The same with XLA's command buffers (CUDA graphs) for loops too: the projection's per-run stopping
  # gives its Newton loop a data-dependent trip count, which XLA otherwise drives from the host.
  XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUSTOM_CALL,WHILE,CONDITIONAL \
    JAXBANDIT_BENCH_OUT=$OUT/command_buffers \
    timeout 200 $PY benchmarks/throughput.py --batches 100000 1000000 --budget 1e8 --repeats 3
  # Shared streams: 16 beta values x 10^4 seeds (target 3e8 agent-rounds/s on one H100), and Figure 1's
  # CR tuning grid; against the per-run bound.
  timeout 300 $PY benchmarks/grid_sweep.py --previous none --seeds 10000 --repeats 3
  timeout 100 $PY benchmarks/runtime_vs_T.py --horizons 1000 5000 --batch 10 --repeats 2
  timeout 150 $PY -m jaxbandit figure1 --out "$OUT/figure1" --no-progress
  # Unrolled vs XLA sums and Cholesky on this backend; a sweep of a million runs (jb.sweep, chunked).
  timeout 120 $PY benchmarks/variants.py --batch 100000 --rounds 200
  timeout 150 $PY benchmarks/memory.py --runs 1000000 --rounds 1000 --records '["log", 50]'
} 2>&1 | tee "$OUT/gpu.log"
