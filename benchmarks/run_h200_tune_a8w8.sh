#!/usr/bin/env bash
# Tune the 8-bit GEMMs on the H200 (resumable: progress logs under $OUT/tune_<op>).
# Usage (repo root): bash benchmarks/run_h200_tune_a8w8.sh
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
timeout 200 python3 -m gemmkit tune --op a8w8 --dtype fp8 --max-candidates 24 --rep-ms 30 --out "$OUT/tune_a8w8" \
  --shape 8192 8192 8192 --shape 4096 4096 4096 --shape 256 10240 8192 --shape 1024 8192 28672 2>&1 | grep -v Warning
S=""; for nk in "2112 7168" "24576 1536" "32768 512" "7168 16384" "4096 7168" "7168 2048"; do S="$S --shape 4096 $nk"; done
timeout 330 python3 -m gemmkit tune --op a8w8_blockscale --max-candidates 24 --rep-ms 30 --out "$OUT/tune_bs" \
  $S --shape 64 2112 7168 --shape 128 4096 7168 2>&1 | grep -v Warning
cd "$OUT" && tar czf tune_a8w8.tgz tune_a8w8 tune_bs && rm -rf tune_a8w8 tune_bs
