#!/usr/bin/env bash
# Session 18 device runs (H200). STAGE (space-separated, any order):
#   tests     the FP8 Gluon kernel's gpu tests (per-token and block scale)
#   ncu       Nsight Compute, one launch each (benchmarks/ncu_once.py, --set full) of the block-scale coop tile and the
#             same tile in rowcol mode, 4096 x 4096 x 7168 (NCU_CASES): details pages and the most-stalled SASS
#             (benchmarks/ncu_top.py) under $OUT/ncu. (Session 18's run also had a 6-slot case, from an uncommitted
#             ncu_once.py case and logs/session18/ctiles_rule.patch; neither was kept.)
#   bssweep   benchmarks/sweep_batched.py --candidates a8w8_blockscale_s18 (BS_CANDS) on DeepSeek-V3's six rows (BS_NK)
#             at M = 4096 (BS_MS)
#   bsab      benchmarks/fp8_kernel_ab.py --op a8w8_blockscale at M = BS_AB_MS (default 4096,128) against the kernel
#             files of PREV (default ./ab_prev17: session 17's), PASSES (3) passes
#   bsbench   gemmkit bench --op a8w8_blockscale --cuda-graph on DeepSeek-V3's six rows at M = 64, 128, 4096
#   a8bench   run_h200_s17.sh's a8bench (fp8 per-token bench, NPASS passes: 3 unless set; session 18 ran 5)
#   bspasses  run_h200_s16.sh's bspasses (block scale on the six DeepSeek-V3 rows at M = 4096, NPASS passes)
#   alltests  the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="tests ncu" bash benchmarks/run_h200_s18.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has tests; then
  gpu_tests pytest_fp8.log tests/test_gpu_a8w8_gluon.py tests/test_gpu_blockscale_gluon.py
fi
if has ncu; then
  mkdir -p "$OUT/ncu" /tmp/ncu_s18
  for c in ${NCU_CASES:-fp8-block-coop fp8-rowcol-coop}; do
    timeout 240 ncu --clock-control none --profile-from-start off --set full -f -o "/tmp/ncu_s18/$c" \
      python3 benchmarks/ncu_once.py $c > "$OUT/ncu/$c.run.txt" 2>&1
    ncu -i "/tmp/ncu_s18/$c.ncu-rep" --page details > "$OUT/ncu/$c.details.txt" 2>&1
    ncu -i "/tmp/ncu_s18/$c.ncu-rep" --page source --csv --print-source sass 2>/dev/null \
      | python3 benchmarks/ncu_top.py 45 > "$OUT/ncu/$c.top.txt" 2>&1
    echo "== $c"; grep -E "^ +(Duration|SM Frequency|Elapsed Cycles|Compute \(SM\) Throughput|Memory Throughput)" \
      "$OUT/ncu/$c.details.txt" | head -6; head -14 "$OUT/ncu/$c.top.txt"
  done
fi
if has bssweep; then
  bs_sweep bs_sweep_s18 "${BS_CANDS:-a8w8_blockscale_s18}" 3
fi
if has bsab; then
  timeout 500 python3 benchmarks/fp8_kernel_ab.py --op a8w8_blockscale --prev "${PREV:-ab_prev17}" \
    --bs-ms ${BS_AB_MS:-4096,128} --passes ${PASSES:-3} --json "$OUT/bs_ab${TAG:-}.json" 2>&1 | grep -v Warn | tail -24
fi
if has bsbench; then
  ALL=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do
    ALL="$ALL --shape 64,$nk --shape 128,$nk --shape 4096,$nk"; done
  timeout 200 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $ALL --json "$OUT/a8w8_blockscale.json" 2>&1 \
    | grep -v Warn | tail -20
fi
if has a8bench; then
  STAGE=a8bench bash "$(dirname "$0")/run_h200_s17.sh"
fi
if has bspasses; then
  STAGE=bspasses bash "$(dirname "$0")/run_h200_s16.sh"
fi
if has alltests; then
  gpu_tests pytest_gpu_all.log tests
fi
