#!/usr/bin/env bash
# Session 5, issues 3 + 7: tune every model layer at M >= 1024 with the cooperative Gluon kernel's
# candidates (kernels/gluon/hopper_coop.py; run as "backend": "gluon_coop", now "gluon" + num_warps 8: with
# --backend gluon the ping-pong candidates come too) against the config serving each
# M today, in the same process (the tuner's A/B); the merge (> 2% over the serving config) is redone
# here from the progress file with `gemmkit tune --tables-from`.
#   GEMMKIT_GIT_SHA=<sha> bash benchmarks/run_h200_coop_tune.sh
# Knobs: M_TUNE (default 2048,4096,1024,8192), BUDGET (s), REP (ms).
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT/tune"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,driver_version --format=csv | tee "$OUT/gpu.txt"
timeout ${TUNE_TIMEOUT:-400} python3 -m gemmkit tune --model all -m "${M_TUNE:-2048,4096,1024,8192}" \
  --backend gluon --max-candidates 8 --rep-ms ${REP:-20} --budget-s ${BUDGET:-330} --out "$OUT/tune" \
  2>&1 | grep -v Warn > "$OUT/coop_tune.log"
grep -c "^\[" "$OUT/coop_tune.log"; grep -E "budget|: write" "$OUT/coop_tune.log" | cut -c1-160 | tail -n 40
mv "$OUT/tune/tune_progress.jsonl" "$OUT/coop_tune_progress.jsonl"; mv "$OUT/tune/merge_decisions.json" "$OUT/coop_merge_decisions.json" 2>/dev/null; rm -rf "$OUT/tune"
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader | sed 's/^/after: /' | tee -a "$OUT/gpu.txt"
