#!/usr/bin/env bash
# Session 19 device runs (H200). STAGE (space-separated, any order):
#   tests     the FP8 Gluon kernel's gpu tests (per-token and block scale)
#   a8ab      benchmarks/fp8_kernel_ab.py --op a8w8 (squares, Llama-3-70B at M = 256, 1024, 4096) against the kernel
#             files of PREV (default ./ab_prev19: main before the rotated coop loop), PASSES (3) passes; SUSTAIN (ms,
#             default 0: off) adds the back-to-back run with the SM clock and power sampled, ROWS (MxNxK,...) a subset,
#             NEWCFG (JSON) a config A/B: merged into the new side's table config (PREV then a copy of main's files)
# (Block-scale A/B, benches, the whole gpu suite: run_h200_s18.sh's stages bsab, bsbench, a8bench, bspasses, alltests.)
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="tests a8ab" bash benchmarks/run_h200_s19.sh
# (PREV is gitignored, /ab_prev*/: recreate it with `git show <sha>:gemmkit/kernels/gluon/<file>` of the kernel's
# three files, hopper_fp8_plan.py, hopper_fp8_mainloop.py and hopper_pingpong_fp8.py, and carry it.)
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has tests; then
  gpu_tests pytest_fp8.log tests/test_gpu_a8w8_gluon.py tests/test_gpu_blockscale_gluon.py
fi
if has a8ab; then
  timeout ${AB_TIMEOUT:-500} python3 benchmarks/fp8_kernel_ab.py --op a8w8 --prev "${PREV:-ab_prev19}" \
    --ms ${AB_MS:-256,1024,4096} --passes ${PASSES:-3} --sustain-ms ${SUSTAIN:-0} ${ROWS:+--rows $ROWS} \
    ${NEWCFG:+--new-config "$NEWCFG"} \
    --json "$OUT/a8_ab${TAG:-}.json" 2>&1 | grep -v Warn | tail -40
fi
