#!/usr/bin/env bash
# Tune on the H200: progress, merge decisions and the merged tables (the shipped ones plus the winners
# that beat them by > 2%: gemmkit/tune/merge.py) under $OUT/tune (resumable: rerun with the same dir).
# benchmarks/run_h200_tables.sh is the issue-3 tables run built on this.
# Usage: bash benchmarks/run_h200_tune.sh "<gemmkit tune args>" ...   (one quoted argument per tune run)
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT/tune"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# resume: a progress file fetched from an earlier call, carried in tune_state/ (git-ignored)
[ -f tune_state/tune_progress.jsonl ] && cp tune_state/tune_progress.jsonl "$OUT/tune/"
for a in "$@"; do
  python3 -m gemmkit tune $a --out "$OUT/tune" 2>&1 | tee -a "$OUT/tune.log"
done
