#!/usr/bin/env bash
# Session 12 device runs (H200). STAGE (space-separated, any order):
#   tests    the gpu tests of the FP8 Gluon kernel (the coop tail split: test_gpu_a8w8_gluon / _blockscale_gluon,
#            their sanitizer runs included)
#   ab       benchmarks/tail_split_ab.py: the tail split off / on / by the rule on the block-scale DeepSeek-V3 rows
#            and the fp8 per-token squares and Llama-3-70B rows (AB_ARGS: e.g. --quick)
#   bench    gemmkit bench --op a8w8_blockscale (DeepSeek-V3 rows) and --op a8w8 (squares, Llama-3-70B at M = 256 /
#            1024 / 4096), CUDA graph: the tables as the op serves them (the tail split by its rule)
#   prof     benchmarks/tail_profile.py: device time of the GEMM and of the tail reduce, tail off / on, four rows
#   mid      benchmarks/sweep_batched.py --candidates a8w8_blockscale_mid: the block-scale tables' served config
#            against the coop Gluon kernel at M = 256-2048 on DeepSeek-V3's six dense (N, K) (MID_SHAPES overrides)
#   alltests the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="tests ab" bash benchmarks/run_h200_s12.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has tests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests/test_gpu_a8w8_gluon.py \
    tests/test_gpu_blockscale_gluon.py 2>&1 | tee "$OUT/pytest_s12.log" | tail -12
fi
if has ab; then
  timeout 560 python3 benchmarks/tail_split_ab.py "$OUT/tail_split_ab.json" ${AB_ARGS:-} > "$OUT/tail_split_ab.log" 2>&1
  tail -45 "$OUT/tail_split_ab.log"
fi
if has prof; then
  for row in "block 4096 2112 7168" "block 8192 2112 7168" "rowcol 256 10240 8192" "rowcol 8192 8192 8192"; do
    timeout 120 python3 benchmarks/tail_profile.py $row 2>&1 | grep -v Warn | tail -2
  done
fi
if has bench; then
  DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do
    for m in 64 128 256 512 1024 2048 4096; do DS="$DS --shape $m,$nk"; done; done
  timeout 280 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --json "$OUT/a8w8_blockscale.json" 2>&1 \
    | grep -v Warn | tail -22
  SQ="--shape 4096,4096,4096 --shape 8192,8192,8192"
  timeout 280 python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $SQ --model llama3-70b -m 256,1024,4096 \
    --json "$OUT/a8w8.json" 2>&1 | grep -v Warn | tail -18
fi
if has mid; then
  SH=""; for nk in 2112x7168 24576x1536 32768x512 7168x16384 4096x7168 7168x2048; do
    for m in 256 512 1024 2048; do SH="$SH${SH:+,}1x${m}x$nk"; done; done
  timeout 560 python3 benchmarks/sweep_batched.py --op a8w8_blockscale --dtype fp8 --candidates a8w8_blockscale_mid \
    --shapes ${MID_SHAPES:-$SH} --passes ${PASSES:-2} --json "$OUT/a8w8_blockscale_mid.json" > "$OUT/a8w8_blockscale_mid.log" 2>&1
  grep -E "^B=|ratio|rel err|Error|took" "$OUT/a8w8_blockscale_mid.log" | tail -100
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
