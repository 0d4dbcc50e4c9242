#!/usr/bin/env bash
# Session 17 device runs (H200). STAGE (space-separated, any order):
#   tests256  the FP8 Gluon kernel's gpu tests (per-token and block scale; the coop 256 tile is new in both)
#   a8sweep   benchmarks/sweep_batched.py --candidates a8w8_s17: the coop 256 x 128 tile against the tables, fp8
#             per-token on the squares and Llama-3-70B at M >= 256
#   bssweep   benchmarks/sweep_batched.py --candidates a8w8_blockscale_s17 (BS_CANDS) on DeepSeek-V3's six rows (BS_NK) at
#             M = 4096 (BS_MS)
#   bsab      benchmarks/fp8_kernel_ab.py --op a8w8_blockscale at M = 128 (the 64-row pingpong tables, whose block
#             promotion became inline PTX) against the kernel files of PREV (default ./ab_prev16)
#   a8bench   gemmkit bench --op a8w8 --dtype fp8 --cuda-graph, the squares and Llama-3-70B at M >= 256, NPASS passes
#   bspasses  run_h200_s16.sh's bspasses (block scale on the six DeepSeek-V3 rows at M = 4096, NPASS passes)
#   alltests  the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="tests256 a8sweep" bash benchmarks/run_h200_s17.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has tests256; then
  gpu_tests pytest_fp8.log tests/test_gpu_a8w8_gluon.py tests/test_gpu_blockscale_gluon.py
fi
if has a8sweep; then
  SH=1x4096x4096x4096,1x8192x8192x8192
  for m in ${A8_MS:-256 1024 4096}; do for nk in 10240x8192 8192x8192 57344x8192 8192x28672; do SH="$SH,1x${m}x${nk}"; done; done
  timeout 560 python3 benchmarks/sweep_batched.py --op a8w8 --dtype fp8 --candidates ${A8_CANDS:-a8w8_s17} --shapes "$SH" \
    --passes ${PASSES:-2} --rep-ms ${REP_MS:-30} --json "$OUT/a8w8_sweep_s17${TAG:-}.json" 2>&1 | grep -v Warn \
    | tee "$OUT/a8w8_sweep_s17${TAG:-}.log" | tail -120
fi
if has bssweep; then
  bs_sweep bs_sweep_s17 "${BS_CANDS:-a8w8_blockscale_s17}" 2
fi
if has bsab; then
  timeout 400 python3 benchmarks/fp8_kernel_ab.py --op a8w8_blockscale --prev "${PREV:-ab_prev16}" --bs-ms 128 \
    --passes 3 --json "$OUT/bs_ab_m128.json" 2>&1 | grep -v Warn | tail -20
fi
if has a8bench; then
  for p in $(seq 1 ${NPASS:-3}); do
    timeout 200 python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph --shape 4096,4096,4096 --shape 8192,8192,8192 \
      --model llama3-70b -m 256,1024,4096 --json "$OUT/a8w8_pass$p.json" 2>&1 | grep -v Warn | tail -18
  done
fi
if has bspasses; then
  STAGE=bspasses bash "$(dirname "$0")/run_h200_s16.sh"
fi
if has alltests; then
  gpu_tests pytest_gpu_all.log tests
fi
