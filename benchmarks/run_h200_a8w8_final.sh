#!/usr/bin/env bash
# Final 8-bit numbers after tuning + the fp8 promotion-cost experiment + an a16w16 regression check.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
timeout 150 python3 benchmarks/fp8_promotion_cost.py "$OUT/fp8_promotion_cost.json" 2>&1 | grep -v Warn | tail -30
SQ="--shape 4096,4096,4096 --shape 8192,8192,8192"
DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do
  for m in 64 128 4096; do DS="$DS --shape $m,$nk"; done; done
python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $SQ --model llama3-70b -m 256,1024,4096 \
  --json "$OUT/a8w8.json" 2>&1 | grep -v Warn | tail -16
python3 -m gemmkit bench --op a8w8 --dtype int8 --cuda-graph $SQ --model llama3-70b -m 256,1024,4096 \
  --json "$OUT/a8w8_int8.json" 2>&1 | grep -v Warn | tail -16
python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --json "$OUT/a8w8_blockscale.json" 2>&1 | grep -v Warn | tail -20
python3 -m gemmkit bench --cuda-graph --shape 4096,4096,4096 --shape 8192,8192,8192 --shape 256,10240,8192 \
  --json "$OUT/a16w16_check.json" 2>&1 | grep -v Warn | tail -5
