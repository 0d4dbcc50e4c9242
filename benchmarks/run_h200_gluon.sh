#!/usr/bin/env bash
# Issue 7 part 2 on the H200, gemm_a16w16's "backend": "gluon".
#   bash benchmarks/run_h200_gluon.sh tune    gpu tests, then the tuner restricted to Gluon candidates
#                                             (plus each shape's current table config) on the model
#                                             layers at the M of the tables' M >= 256 buckets
#   bash benchmarks/run_h200_gluon.sh bench   gpu tests, then the squares and the model sweep at
#                                             M >= 256 with the shipped tables (CUDA-graph timing)
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest -q -m gpu tests/test_gpu_hopper_pingpong.py -k "op_backend" 2>&1 | tail -5 | tee "$OUT/pytest.txt"
case "${1:-bench}" in
tune)
  mkdir -p "$OUT/tune"
  python3 -m gemmkit tune --op a16w16 --model all -m ${GLUON_M:-256,1024,4096} --backend gluon \
    --max-candidates ${GLUON_CANDS:-6} --rep-ms 30 --out "$OUT/tune" > "$OUT/tune.log" 2>&1
  tail -n 100 "$OUT/tune.log" ;;
bench)
  python3 -m gemmkit bench --cuda-graph --shape 4096,4096,4096 --shape 8192,8192,8192 --shape 16384,16384,16384 \
    --json "$OUT/a16w16_squares_graph.json" 2>&1 | tee "$OUT/bench_squares.log"
  python3 -m gemmkit bench --cuda-graph --model all -m ${BENCH_M:-256,1024,4096} \
    --json "$OUT/a16w16_models_geq256_graph.json" 2>&1 | tee "$OUT/bench_models.log" | tail -n 80 ;;
esac
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | sed 's/^/clock after: /' | tee -a "$OUT/gpu.txt"
