#!/usr/bin/env bash
# The GPU measurements behind the README's GPU tables, as one command that fits a 15-minute lease on a
# machine with one GPU. Uses the machine's own jax (no install: PYTHONPATH is the
# checkout). Results go to $OUT (default benchmarks/results): grid_sweep.json, grid_sweep_record_all.json,
# xla_flags.json, pallas_sphere.json, chunk_layout.json, kernel_profile.json,
# kernel_profile_independent.json, hlo_chunk.txt.gz (the grid's optimised chunk program, to read its
# fusions after the lease), timeline.json.gz, timeline_independent.json.gz, gpu.log (pallas_select.py,
# lockstep.py: run on 2026-11-28).
# A lent machine has no git history: to time the previous code beside the current one there, extract it
# here into a folder git ignores (echo /.prev/ >> .git/info/exclude; mkdir -p .prev/REV; git archive
# REV jaxbandit | tar -x -C .prev/REV), carry .prev/REV, and set PREVIOUS=.prev/REV (PREVIOUS_RECORD: the
# code the sweep that keeps every round is timed against, default PREVIOUS). Its timeouts sum to 590 s,
# under the 600 s a command may run there.
#
#     bash benchmarks/gpu.sh
set -u
OUT=$(realpath -m "${OUT:-benchmarks/results}")
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 JAXBANDIT_BENCH_OUT=$OUT
PY=${PYTHON:-python3}
PREV=none
[ -n "${PREVIOUS:-}" ] && PREV=$(realpath -m "$PREVIOUS")
PREV_RECORD=$PREV
[ -n "${PREVIOUS_RECORD:-}" ] && PREV_RECORD=$(realpath -m "$PREVIOUS_RECORD")
cd benchmarks
{
  nvidia-smi -L
  $PY -c "import jax; print('jax', jax.__version__, jax.devices())"
  # The library compiles its sweeps and runs with command buffers on a GPU: check that this changes no bit
  # (and, with PREVIOUS set, that the previous code gives the same bits).
  timeout 75 $PY gpu_equal.py --seeds 1024 --horizon 300 $([ "$PREV" != none ] && echo --previous "$PREV")
  # The same with the projection's first Newton step and the Student-t sampler's first 12 iterations made
  # before their loops, against the library's defaults (--previous ..: this checkout loaded again).
  timeout 45 $PY gpu_equal.py --seeds 512 --horizon 300 --previous .. \
    --set jaxbandit.core.linalg.PEELED_NEWTON_STEPS=1 jaxbandit.envs.noise.PEELED_REJECTION_STEPS=12
  # Shared streams, library settings: 16 beta values x 10^4 seeds x 2000 rounds (target 3e8 agent-rounds/s
  # on one H100), Figure 1's CR tuning grid, and 10^5 independent runs x 1000 rounds (target 1.5e8);
  # each against the per-run bound (XLA's defaults). With PREVIOUS=.prev/004d850 (the last code that drew
  # the sphere's uniforms flat on a GPU too) the independent row measures the shaped draw alone.
  timeout 145 $PY grid_sweep.py --previous "$PREV" --seeds 10000 --independent 100000 --repeats 2
  # The grid keeping every round (3.2e4 runs): each chunk's results cross to the host, which the chunk
  # loop now overlaps with the next chunk's rounds (5109f38; before it, the GPU idled through each copy).
  timeout 50 $PY grid_sweep.py --previous "$PREV_RECORD" --sweeps grid16 --seeds 2000 --record all \
    --repeats 2
  # The projection's peeled Newton step and the sampler's peeled rejection steps, each in a process of its
  # own (whether the GPU's wait before each loop body, ~140 us on the H200 in 2026-11-28's timeline, goes
  # away). (Chunks 8x as long, the larger_chunks variant, left out for time: the whole call's timeline
  # below shows what lies between chunks.)
  timeout 110 $PY xla_flags.py --timeout 34 --variants library peeled_newton_step peeled_rejection_steps
  # The contexts' draw as one Pallas kernel (a thread a stream, one pass) against XLA's, for a block of
  # independent runs' rounds (10^5 streams x 12): its time and how many components differ from XLA's bits.
  timeout 25 $PY pallas_sphere.py --rounds 12 --repeats 20
  # Independent runs with the contexts materialised components first (the CPU's layout for several lanes a
  # stream; 1.00x on the grid on the H200): their draw, ten times the grid's per lane, was four passes of
  # [rounds, streams, d, K] in the tenth lease's program plus a transposition to [.., K, d].
  timeout 45 $PY chunk_layout.py --layouts auto:auto:0,auto:auto:1 --sweeps independent --independent 100000
  # Where the grid's round goes: its kernels, launches and device time per round, the device's idle time
  # by the kernels it falls between, and the call's events to read after the lease.
  timeout 50 $PY kernel_profile.py --seeds 10000 --horizon 500 --top 15 --hlo-out "$OUT/hlo_chunk.txt.gz" \
    --timeline-out "$OUT/timeline.json.gz"
  # The same for 10^5 independent runs (0.39x the per-run bound, where the grid is 0.81x).
  timeout 45 $PY kernel_profile.py --sweep independent --seeds 10000 --top 15 \
    --timeline-out "$OUT/timeline_independent.json.gz"
} 2>&1 | tee "$OUT/gpu.log"
