#!/usr/bin/env bash
# Session 3 closing run on the H200: every gpu test of the integrated tree, then the two sweeps
# the session's table changes touch (CUDA-graph timing): ffn_gated at M <= 256 on Llama-3 8B/70B
# (GROUP_SIZE_M 8 in the down-projection buckets) and gemm_a16w16 at decode M on every model layer.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
timeout 330 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
tail -n 25 "$OUT/pytest_gpu.log"
for m in llama3-8b llama3-70b; do
  python3 -m gemmkit bench --op ffn_gated --cuda-graph --model $m -m 1,2,4,8,16,32,64,128,256 \
    --json "$OUT/ffn_gated_${m}_graph.json" > "$OUT/ffn_${m}.log" 2>&1
  tail -n 3 "$OUT/ffn_${m}.log"
done
python3 -m gemmkit bench --cuda-graph --model all -m 1,16,32,64 --json "$OUT/a16w16_decode_graph.json" \
  > "$OUT/a16w16_decode.log" 2>&1
tail -n 5 "$OUT/a16w16_decode.log"
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | sed 's/^/clock after: /' | tee -a "$OUT/gpu.txt"
