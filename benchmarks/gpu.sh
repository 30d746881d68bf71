#!/usr/bin/env bash
# The GPU measurements behind the README's GPU tables, as one command that fits a 15-minute lease on a
# machine with one GPU. Uses the machine's own jax (no install: PYTHONPATH is the
# checkout). Results go to $OUT (default benchmarks/results): grid_sweep.json, kernel_profile.json,
# hlo_chunk.txt.gz (the grid's optimised chunk program, to read its fusions after the lease),
# pallas_select.json, lockstep.json, gpu.log. A lent machine has no git history: to time the previous
# code beside the current one there, extract it here into a folder git ignores (echo /.prev/ >> .git/info/exclude;
# mkdir -p .prev/REV; git archive REV jaxbandit | tar -x -C .prev/REV), carry .prev, and set
# PREVIOUS=.prev/REV. Its timeouts sum to 580 s, under the 600 s a command may run there.
#
#     bash benchmarks/gpu.sh
set -u
OUT=$(realpath -m "${OUT:-benchmarks/results}")
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 JAXBANDIT_BENCH_OUT=$OUT
PY=${PYTHON:-python3}
PREV=none
[ -n "${PREVIOUS:-}" ] && PREV=$(realpath -m "$PREVIOUS")
cd benchmarks
{
  nvidia-smi -L
  $PY -c "import jax; print('jax', jax.__version__, jax.devices())"
  # The library compiles its sweeps and runs with command buffers on a GPU: check that this changes no bit
  # (and, with PREVIOUS set, that the previous code gives the same bits).
  timeout 90 $PY gpu_equal.py --seeds 1024 --horizon 300 $([ "$PREV" != none ] && echo --previous "$PREV")
  # Shared streams, library settings: 16 beta values x 10^4 seeds x 2000 rounds (target 3e8 agent-rounds/s
  # on one H100), Figure 1's CR tuning grid, and 10^5 independent runs x 1000 rounds (target 1.5e8);
  # each against the per-run bound (XLA's defaults).
  timeout 240 $PY grid_sweep.py --previous "$PREV" --seeds 10000 --independent 100000 --repeats 2
  # Where the grid's round goes: its kernels, launches and device time per round, against the wall time.
  timeout 70 $PY kernel_profile.py --seeds 10000 --horizon 500 --hlo-out "$OUT/hlo_chunk.txt.gz"
  # CR-Hvt-UCB's arm selection as one Pallas (Triton) kernel, runs minor, against XLA's (1.6e5 runs): does
  # one kernel reading V^-1 once pay before the whole round is written as one? Arms and scores compared.
  timeout 80 $PY pallas_select.py --seeds 10000 --lanes 16 --repeats 20
  # Four algorithms in lockstep (one program, one draw) against one program each, 10^4 independent seeds.
  timeout 100 $PY lockstep.py --seeds 10000 --horizon 1000 --repeats 2
} 2>&1 | tee "$OUT/gpu.log"
