#!/usr/bin/env bash
# One device run: environment, gpu tests, compute-sanitizer, optional sweep, bench --json.
# Usage (from the repo root, on the H200): bash benchmarks/run_h200.sh [sweep]
# Results go to $OUT (the device tool's folder) or ./h200_out.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)'
  git rev-parse HEAD 2>/dev/null; date -u; } 2>&1 | tee "$OUT/env.txt"
if [ "${1:-}" = "sweep" ]; then
  python3 benchmarks/sweep_a16w16.py "$OUT/sweep_a16w16.json" 2>&1 | tee "$OUT/sweep.log"
fi
python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_a16w16.py 2>&1 | tee "$OUT/pytest_gpu.log" | tail -25
python3 -m gemmkit bench --json "$OUT/a16w16.json" 2>&1 | tee "$OUT/bench.log"
