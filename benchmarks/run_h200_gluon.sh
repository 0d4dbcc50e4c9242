#!/usr/bin/env bash
# Issue 7 part 2 on the H200: gemm_a16w16's "backend": "gluon" (gpu tests), then the tuner
# restricted to Gluon candidates (plus each shape's current table config) on the model layers
# at the M of the tables' M >= 256 buckets. Progress and tables under $OUT/tune.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT/tune"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest -q -m gpu tests/test_gpu_hopper_pingpong.py -k "op_backend" 2>&1 | tail -5 | tee "$OUT/pytest.txt"
python3 -m gemmkit tune --op a16w16 --model all -m ${GLUON_M:-256,1024,4096} --backend gluon \
  --max-candidates ${GLUON_CANDS:-6} --rep-ms 30 --out "$OUT/tune" > "$OUT/tune.log" 2>&1
tail -n 100 "$OUT/tune.log"
