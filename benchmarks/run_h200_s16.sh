#!/usr/bin/env bash
# Session 16 device runs (H200). STAGE (space-separated, any order):
#   swap      benchmarks/swap_ab_probe.py: the Gluon kernels with the operands swapped (weight rows in the wgmma's M)
#             against cuBLAS and the tables at M = 1 ... 64 (kv_b_proj / split_cat and three decode shapes)
#   alltests  the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="swap" bash benchmarks/run_h200_s16.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has swap; then
  timeout 540 python3 benchmarks/swap_ab_probe.py --json "$OUT/swap_ab_probe${TAG:-}.json" --passes ${PASSES:-3} \
    2>&1 | grep -v Warn | tee "$OUT/swap_ab_probe${TAG:-}.log" | tail -150
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
