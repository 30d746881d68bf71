#!/usr/bin/env bash
# The benchmark (python -m jaxbandit bench) on one GPU, sized to a 15-minute lease: the quick benchmark
# (every algorithm), then the full benchmark of the O(1)-per-round algorithms (the O(t) ones -- GAdaOFUL,
# Heavy-OFUL, TOFU -- hold a T x d history per run: 1e5 runs x T = 5000 would not fit); each under a
# timeout, whatever finished is kept (the bench saves per algorithm and resumes with --resume). Uses the
# machine's own jax (PYTHONPATH is the checkout). Output in $OUT (default benchmarks/results).
#
#     bash benchmarks/gpu_bench.sh
set -u
OUT=$(realpath -m "${OUT:-benchmarks/results}")
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
{
  nvidia-smi -L
  $PY -c "import jax, numpy; print('jax', jax.__version__, jax.devices())"
  $PY -c "import tqdm, matplotlib; print('tqdm', tqdm.__version__, 'matplotlib', matplotlib.__version__)" || true
  $PY -c "import xarray, h5netcdf, h5py; print('xarray', xarray.__version__)" || echo "no xarray/h5netcdf: results.npz only"
  /usr/bin/time -v timeout "${QUICK_S:-200}" $PY -m jaxbandit bench --quick --device gpu --out "$OUT/quick" --no-progress 2>&1 \
    | grep -v "^\s*\(Page\|Minor\|Major\|Vol\|Invol\|Swaps\|File\|Socket\|Signals\|Average\|Exit\|Percent\)"
  timeout "${FULL_S:-300}" $PY -m jaxbandit bench --device gpu --out "$OUT/full" --no-progress \
    --algorithms cr_hvt_ucb hvt_ucb crt oful cw_oful lin_ts multilayer_oful omd_glb
  echo "full benchmark exit status $?"
  for d in quick full; do $PY -c "import json,sys; d=json.load(open('$OUT/$d/bench.json')); print('$d', d['timings'])" || true; done
} 2>&1 | tee "$OUT/gpu_bench.log"
