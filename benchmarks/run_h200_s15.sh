#!/usr/bin/env bash
# Session 15 device runs (H200). STAGE (space-separated, any order):
#   bstests   the gpu tests that run the FP8 kernel's block mode (block scale, quantizer, split-cat, a8w8)
#   ab        benchmarks/fp8_kernel_ab.py --op a8w8_blockscale: the kernel as committed (scales by TMA where the
#             x scales are M-major, and by cp.async: --cpasync) against PREV (a directory holding an earlier
#             revision's hopper_pingpong_fp8.py, hopper_fp8_mainloop.py and hopper_fp8_plan.py; default ./ab_prev),
#             bf16 torch.matmul timed beside them; AB_MS the M values (default 128,4096). Make PREV with
#             mkdir ab_prev; for f in hopper_fp8_plan hopper_fp8_mainloop hopper_pingpong_fp8; do
#               git show REV:gemmkit/kernels/gluon/$f.py > ab_prev/$f.py; done   (session 15: REV = 48331d5)
#   bench     gemmkit bench --op a8w8_blockscale (DeepSeek-V3 at M = 64, 128, 4096; a second pass at 4096) and
#             --op a8w8 (squares, Llama-3-70B at M >= 256)
#   alltests  the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="bstests ab" bash benchmarks/run_h200_s15.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has bstests; then
  timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests/test_gpu_blockscale_gluon.py \
    tests/test_gpu_quant.py tests/test_gpu_split_cat.py tests/test_gpu_a8w8.py 2>&1 | tee "$OUT/pytest_bs.log" | tail -8
fi
if has ab; then
  timeout 420 python3 benchmarks/fp8_kernel_ab.py --op a8w8_blockscale --cpasync --prev "${PREV:-ab_prev}" \
    --bs-ms "${AB_MS:-128,4096}" --json "$OUT/bs_kernel_ab${AB_TAG:-}.json" --passes ${PASSES:-3} 2>&1 | grep -v Warn \
    | tee "$OUT/bs_kernel_ab${AB_TAG:-}.log" | tail -16
fi
if has bench; then
  DS=""; ALL=""
  for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do
    DS="$DS --shape 4096,$nk"; ALL="$ALL --shape 64,$nk --shape 128,$nk --shape 4096,$nk"
  done
  timeout 200 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $ALL --json "$OUT/a8w8_blockscale.json" \
    2>&1 | grep -v Warn | tail -20
  timeout 120 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --json "$OUT/a8w8_blockscale_2.json" \
    2>&1 | grep -v Warn | tail -8
  SQ="--shape 4096,4096,4096 --shape 8192,8192,8192"
  timeout 250 python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $SQ --model llama3-70b -m 256,1024,4096 \
    --json "$OUT/a8w8.json" 2>&1 | grep -v Warn | tail -16
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
