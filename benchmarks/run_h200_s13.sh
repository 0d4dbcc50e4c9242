#!/usr/bin/env bash
# Session 13 device runs (H200). STAGE (space-separated, any order):
#   pdl      benchmarks/pdl_ab.py: programmatic dependent launch off / on for the Triton-tier kernels and the
#            batched Gluon kernels, shipped configs (PDL_ARGS: e.g. --passes 5 --rows split_cat)
#   tests    the gpu tests of the ops whose kernels take part in PDL (split_cat, batched, ffn, a16w16)
#   alltests the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="pdl tests" bash benchmarks/run_h200_s13.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has pdl; then
  timeout 560 python3 benchmarks/pdl_ab.py --json "$OUT/pdl_ab.json" ${PDL_ARGS:-} > "$OUT/pdl_ab.log" 2>&1
  grep -v Warn "$OUT/pdl_ab.log" | tail -40
fi
if has tests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests/test_gpu_split_cat.py \
    tests/test_gpu_batched.py tests/test_gpu_ffn.py tests/test_gpu_a16w16.py tests/test_gpu_launch.py 2>&1 \
    | tee "$OUT/pytest_s13.log" | tail -12
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
