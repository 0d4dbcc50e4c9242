#!/usr/bin/env bash
# Session 5: same-process A/B (benchmarks/ab_configs.py) of the 62 A16W16 buckets the coop tune
# switched to "gluon_coop": before (HEAD's serving config) vs after, against cuBLAS, both orders.
#   GEMMKIT_GIT_SHA=<sha> bash benchmarks/run_h200_coop_ab.sh
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv | tee "$OUT/gpu.txt"
timeout ${AB_S:-330} python3 benchmarks/ab_configs.py benchmarks/results/h200/tune/a16w16_coop_ab_input.json \
  "$OUT/a16w16_coop_ab.json" 2>&1 | grep -v Warn > "$OUT/coop_ab.log"
echo "ab rc=${PIPESTATUS[0]}"; tail -n 70 "$OUT/coop_ab.log"
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader | sed 's/^/after: /' | tee -a "$OUT/gpu.txt"
