#!/usr/bin/env bash
# One device run for the batched GEMMs:
#   sweep      benchmarks/sweep_batched.py over the grid (B in {8, 64} x M = N = K in
#              {512, 1024, 2048}, bf16), with `writetable`: the winners per M (geomean over B) go
#              into gemmkit/configs/sm_90/BATCHED_A16W16.json before the bench (a copy comes back);
#              with `sweep8`: also the batched a8w8 sweeps (fp8, int8)
#   tests      pytest -m gpu tests/test_gpu_batched.py
#   bench      batched_gemm_a16w16 vs torch.bmm on the grid (CUDA-graph and eager timing), and a
#              few batched_gemm_a8w8 rows (fp8, int8) vs a loop of torch._scaled_mm / torch._int_mm
# Usage (repo root, on the H200): bash benchmarks/run_h200_batched.sh [nosweep] [writetable] [sweep8]
#   [notests] [nobench]. Everything lands in $OUT as at most 8 files (logs and JSON tarred per step).
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
W=$(mktemp -d)
has() { case " $ARGS " in *" $1 "*) return 0;; esac; return 1; }
ARGS="$*"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)'
  date -u; } 2>&1 | tee "$OUT/env.txt"
if ! has nosweep; then
  mkdir -p "$W/sweep"
  TABLE=gemmkit/configs/sm_90/BATCHED_A16W16.json
  timeout 150 python3 benchmarks/sweep_batched.py --op batched_a16w16 --json "$W/sweep/sweep_a16w16.json" \
    $(has writetable && echo --write-table $TABLE) 2>&1 | tee "$W/sweep/sweep_a16w16.log" | tail -6
  has writetable && cp $TABLE "$OUT/BATCHED_A16W16.json"
  if has sweep8; then
    for dt in fp8 int8; do
      timeout 60 python3 benchmarks/sweep_batched.py --op batched_a8w8 --dtype $dt --shapes 8x1024,64x512,8x2048 \
        --json "$W/sweep/sweep_a8w8_$dt.json" 2>&1 | tee "$W/sweep/sweep_a8w8_$dt.log" | tail -5
    done
  fi
  tar -C "$W" -czf "$OUT/sweep.tgz" sweep
fi
if ! has notests; then
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_batched.py 2>&1 \
    | tee "$OUT/pytest_gpu.log" | tail -4
fi
if ! has nobench; then
  mkdir -p "$W/bench"
  SQ="--shape 512,512,512 --shape 1024,1024,1024 --shape 2048,2048,2048"
  for B in 8 64; do
    python3 -m gemmkit bench --op batched_a16w16 --batch $B --cuda-graph $SQ --json "$W/bench/a16w16_B${B}_graph.json" \
      2>&1 | tee "$W/bench/a16w16_B${B}_graph.log" | tail -4
    python3 -m gemmkit bench --op batched_a16w16 --batch $B $SQ --json "$W/bench/a16w16_B${B}_eager.json" \
      2>&1 | tee "$W/bench/a16w16_B${B}_eager.log" | tail -4
  done
  for dt in fp8 int8; do
    python3 -m gemmkit bench --op batched_a8w8 --dtype $dt --batch 8 --cuda-graph --shape 1024,1024,1024 \
      --shape 2048,2048,2048 --json "$W/bench/a8w8_${dt}_B8_graph.json" 2>&1 | tee "$W/bench/a8w8_${dt}_B8.log" | tail -3
    python3 -m gemmkit bench --op batched_a8w8 --dtype $dt --batch 64 --cuda-graph --shape 512,512,512 \
      --json "$W/bench/a8w8_${dt}_B64_graph.json" 2>&1 | tee "$W/bench/a8w8_${dt}_B64.log" | tail -3
  done
  tar -C "$W" -czf "$OUT/bench.tgz" bench
fi
