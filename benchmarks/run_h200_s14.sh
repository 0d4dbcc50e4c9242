#!/usr/bin/env bash
# Session 14 device runs (H200). STAGE (space-separated, any order):
#   fp8tests  the fp8 gpu tests (Gluon kernel both modes, the op)
#   ab        benchmarks/fp8_kernel_ab.py: the FP8 kernel as committed against PREV (a copy of an earlier
#             hopper_pingpong_fp8.py, default ./ab_prev_fp8.py), same process, with _scaled_mm
#   bench     gemmkit bench --op a8w8 (squares, Llama-3-70B M >= 256) and --op a8w8_blockscale (DeepSeek-V3, M = 4096)
#   alltests  the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="fp8tests ab" bash benchmarks/run_h200_s14.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has fp8tests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests/test_gpu_a8w8_gluon.py \
    tests/test_gpu_blockscale_gluon.py tests/test_gpu_a8w8.py 2>&1 | tee "$OUT/pytest_fp8.log" | tail -6
fi
if has ab; then
  timeout 400 python3 benchmarks/fp8_kernel_ab.py --prev "${PREV:-ab_prev_fp8.py}" --json "$OUT/fp8_kernel_ab${AB_TAG:-}.json" \
    --passes ${PASSES:-3} ${AB_ARGS:-} 2>&1 | grep -v Warn | tee "$OUT/fp8_kernel_ab${AB_TAG:-}.log" | tail -20
fi
if has bench; then
  SQ="--shape 4096,4096,4096 --shape 8192,8192,8192"
  timeout 250 python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $SQ --model llama3-70b -m 256,1024,4096 \
    --json "$OUT/a8w8.json" 2>&1 | grep -v Warn | tail -16
  DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do DS="$DS --shape 4096,$nk"; done
  timeout 200 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --json "$OUT/a8w8_blockscale.json" 2>&1 \
    | grep -v Warn | tail -8
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
# bsprobe: benchmarks/bs_probe.py under GEMMKIT_BS_PROBE = 0-4, a timing probe of the block-scale mainloop
# (logs/session14/bs_probe.patch, never committed: 1 no w-scale load, 2 no x-scale cp.async, 3 FADD promotion,
# 4 all three); processes alternate, each with its own Triton cache; on committed code every value runs the shipped
# kernel.
if has bsprobe; then
  PATCH=benchmarks/results/h200/logs/session14/bs_probe.patch
  if command -v git >/dev/null; then git apply "$PATCH"; else patch -p1 < "$PATCH"; fi || exit 1
  i=0
  for P in ${BSPROBES:-0 1 2 3 4 0}; do
    i=$((i + 1)); RC=""; [ "$P" = 0 ] && RC=--rowcol
    GEMMKIT_BS_PROBE=$P TRITON_CACHE_DIR=/tmp/tc_bs$P timeout 200 python3 benchmarks/bs_probe.py \
      --json "$OUT/bs_probe_${i}_p$P.json" --passes 2 $RC 2>&1 | grep -v Warn | tail -6
  done
  if command -v git >/dev/null; then git apply -R "$PATCH"; else patch -R -p1 < "$PATCH"; fi
fi
# mmajor: benchmarks/bs_probe.py on the shipped kernel, x_scale row-major (the bench's until a7339ad) against M-major
# (a (KB, M) tensor transposed: each K step's 128 scales contiguous). At a7339ad and later the bench's x_scale is
# M-major already and this stage compares it with itself: run it at b3053c9 to repeat session 14's comparison.
if has mmajor; then
  for i in 1 2; do
    timeout 200 python3 benchmarks/bs_probe.py --json "$OUT/bs_mmajor_$i.json" --passes 3 --mmajor 2>&1 | grep -v Warn | tail -6
  done
fi
# bstests: the block-scale and quantizer gpu tests, then the block-scale bench (M-major x scales since session 14)
if has bstests; then
  timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests/test_gpu_blockscale_gluon.py \
    tests/test_gpu_quant.py tests/test_gpu_split_cat.py tests/test_gpu_a8w8.py 2>&1 | tee "$OUT/pytest_bs.log" | tail -4
  DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do DS="$DS --shape 4096,$nk"; done
  for i in 1 2; do
    timeout 200 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --shape 64,7168,2048 --shape 128,4096,7168 \
      --json "$OUT/a8w8_blockscale_$i.json" 2>&1 | grep -v Warn | tail -9
  done
fi
