#!/usr/bin/env bash
# The tracking benchmarks at a GPU's sizes, on a machine with one GPU, in under 600 s per part.
#
#     bash benchmarks/gpu.sh [perf|bench|bench-linear]
#
# perf (the default): throughput.py, grid_sweep.py, sweep_overhead.py, lockstep.py and memory.py, each
# under a timeout (what finished is kept); the targets are those of benchmarks/README.md.
# bench: the robustness benchmark (python -m jaxbandit bench): the quick one (every algorithm), then the
# full one of the O(1)-per-round algorithms (the O(t) ones, GAdaOFUL, Heavy-OFUL and TOFU, hold a T x d
# history per run: 10^5 runs x T = 5000 would not fit); it saves per algorithm and resumes with --resume.
# bench-linear: the full benchmark of the O(t) algorithms (GAdaOFUL, Heavy-OFUL, TOFU) at T = 5000, the
# whole scenario set (a tuning batch is 6 settings x 104 scenarios x 10 seeds: ~6 k runs of a T x d
# history, about 1.3 GB in float32), each call resuming $OUT/full_linear for up to LINEAR_S seconds
# (default 540): call it again until it prints "complete".
#
# Uses the machine's own jax (PYTHONPATH is the checkout). Output: $OUT (default benchmarks/results): each
# script's JSON and a log. PREVIOUS=FOLDER times the code in FOLDER beside this checkout in grid_sweep.py
# (a machine without the git history: git archive REV jaxbandit | tar -x -C FOLDER, and copy FOLDER over).
set -u
PART=${1:-perf}
OUT=$(realpath -m "${OUT:-benchmarks/results}")
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 JAXBANDIT_BENCH_OUT=$OUT
PY=${PYTHON:-python3}
PREV=none
[ -n "${PREVIOUS:-}" ] && PREV=$(realpath -m "$PREVIOUS")
{
  nvidia-smi -L
  $PY -c "import jax; print('jax', jax.__version__, jax.devices())"
  case "$PART" in
  perf)
    cd benchmarks
    # CR-Hvt-UCB against the environment's own cost (target: >= 1e8 agent-rounds/s on one H100 at 10^5 runs)
    timeout 80 $PY throughput.py --batches 100000 --repeats 3
    # shared streams: 16 beta x 10^4 seeds x 2000 rounds (target 3e8 /s), Figure 1's CR tuning grid, and
    # 10^5 independent runs x 1000 rounds (target 1.5e8 /s), each against the per-run bound
    timeout 180 $PY grid_sweep.py --previous "$PREV" --seeds 10000 --independent 100000 --repeats 2
    # jb.sweep against a hand-written jit(vmap(jb.simulate)) of the same runs
    timeout 80 $PY sweep_overhead.py --runs 100000 --rounds 1000
    # four algorithms in lockstep against one program each
    timeout 120 $PY lockstep.py --seeds 10000 --repeats 2
    # a million runs x 1000 rounds with 50 log-spaced records: seconds and host memory
    timeout 120 $PY memory.py --runs 1000000 --rounds 1000 --records '["log", 50]'
    ;;
  bench)
    timeout "${QUICK_S:-240}" $PY -m jaxbandit bench --quick --device gpu --out "$OUT/quick" --no-progress
    timeout "${FULL_S:-330}" $PY -m jaxbandit bench --device gpu --out "$OUT/full" --no-progress \
      --algorithms cr_hvt_ucb hvt_ucb crt oful cw_oful lin_ts multilayer_oful omd_glb
    echo "full benchmark exit status $?"
    ;;
  bench-linear)
    timeout "${LINEAR_S:-540}" $PY -m jaxbandit bench --device gpu --out "$OUT/full_linear" --no-progress \
      --resume --algorithms gadaoful heavy_oful tofu
    status=$?
    if [ "$status" -eq 0 ]; then echo "complete"; else echo "stopped (exit $status): call again to resume"; fi
    ;;
  *)
    echo "unknown part '$PART': choose perf, bench or bench-linear" >&2
    exit 2
    ;;
  esac
} 2>&1 | tee "$OUT/gpu_$PART.log"
