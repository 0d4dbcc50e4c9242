#!/usr/bin/env bash
# Session 16 device runs (H200). STAGE (space-separated, any order):
#   swap      benchmarks/swap_ab_probe.py: the Gluon kernels with the operands swapped (weight rows in the wgmma's M)
#             against cuBLAS and the tables at M = 1 ... 64 (kv_b_proj / split_cat and three decode shapes)
#   ncu       Nsight Compute, one launch each (benchmarks/ncu_once.py): fp8 per-token on Llama-3-70B down at M = 4096,
#             the kernel as committed and session 13's (PREV, default ./ab_prev13: git show d16d15c:... of the three
#             FP8 kernel files, as run_h200_s15.sh's "ab" stage), --set full; details pages under $OUT/ncu
#   bssweep   benchmarks/sweep_batched.py --candidates a8w8_blockscale_s16 (BS_CANDS) on the two block-scale rows short
#             of the bars
#   a8sweep   benchmarks/sweep_batched.py --candidates a8w8_s16: fp8 per-token, the squares and Llama-3-70B at M >= 256
#   bench     run_h200_s15.sh's bench stage (block scale on DeepSeek-V3 at M = 64 / 128 / 4096 + a second M = 4096 pass;
#             fp8 per-token on the squares and Llama-3-70B at M >= 256)
#   bspasses  gemmkit bench --op a8w8_blockscale --cuda-graph on the six DeepSeek-V3 rows at M = 4096, NPASS passes (5)
#   swaptests the swap-AB gpu tests and the ping-pong's / split-K's (tests/test_gpu_gluon_swap_ab.py, ...)
#   swapsweep benchmarks/sweep_batched.py --candidates a16w16_swap: swap-AB against the tables at M = 1, 16, 32, 64
#             on Llama-3-8B / -70B and DeepSeek-V3 layers (SWAP_MS, SWAP_NK to narrow)
#   decode    gemmkit bench --op a16w16 --cuda-graph at M = 1, 16, 32, 64 on the five models of a16w16_decode_graph.json
#   ffn       gemmkit bench --op ffn_gated --cuda-graph on Llama-3-8B / -70B at M = 1 ... 256 (issue 5's bar rows)
#   alltests  the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="swap" bash benchmarks/run_h200_s16.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has swap; then
  timeout 540 python3 benchmarks/swap_ab_probe.py --json "$OUT/swap_ab_probe${TAG:-}.json" --passes ${PASSES:-3} \
    2>&1 | grep -v Warn | tee "$OUT/swap_ab_probe${TAG:-}.log" | tail -150
fi
if has ncu; then
  mkdir -p "$OUT/ncu"
  for c in fp8-rowcol-down fp8-rowcol-down-old; do
    timeout 200 ncu --clock-control none --profile-from-start off --set full -f -o "$OUT/ncu/$c" \
      python3 benchmarks/ncu_once.py $c --before "${PREV:-ab_prev13}" > "$OUT/ncu/$c.run.txt" 2>&1
    ncu -i "$OUT/ncu/$c.ncu-rep" --page details > "$OUT/ncu/$c.details.txt" 2>&1
    grep -E "Duration|SM Frequency|Elapsed Cycles|SM Active Cycles|Compute \(SM\) Throughput|Memory Throughput" \
      "$OUT/ncu/$c.details.txt" | head -8
  done
fi
if has bssweep; then
  timeout 400 python3 benchmarks/sweep_batched.py --op a8w8_blockscale --dtype fp8 --candidates ${BS_CANDS:-a8w8_blockscale_s16} \
    --shapes 1x4096x7168x16384,1x4096x7168x2048 --passes ${PASSES:-3} --json "$OUT/bs_sweep_s16${TAG:-}.json" 2>&1 \
    | grep -v Warn | tee "$OUT/bs_sweep_s16${TAG:-}.log" | tail -40
fi
if has a8sweep; then
  SH=1x4096x4096x4096,1x8192x8192x8192
  for m in 256 1024 4096; do for nk in 10240x8192 8192x8192 57344x8192 8192x28672; do SH="$SH,1x${m}x${nk}"; done; done
  timeout 540 python3 benchmarks/sweep_batched.py --op a8w8 --dtype fp8 --candidates a8w8_s16 --shapes "$SH" \
    --passes ${PASSES:-3} --json "$OUT/a8w8_sweep_s16${TAG:-}.json" 2>&1 | grep -v Warn \
    | tee "$OUT/a8w8_sweep_s16${TAG:-}.log" | tail -200
fi
if has bench; then
  STAGE=bench bash "$(dirname "$0")/run_h200_s15.sh"
fi
if has bspasses; then
  DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do DS="$DS --shape 4096,$nk"; done
  for p in $(seq 1 ${NPASS:-5}); do
    timeout 150 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --json "$OUT/a8w8_blockscale_pass$p.json" \
      2>&1 | grep -v Warn | tail -8
  done
fi
if has swaptests; then
  timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests/test_gpu_gluon_swap_ab.py \
    tests/test_gpu_hopper_pingpong.py tests/test_gpu_gluon_split_k.py 2>&1 | tee "$OUT/pytest_swap.log" | tail -8
fi
if has swapsweep; then
  SH=""
  for m in ${SWAP_MS:-1 16 32 64}; do
    for nk in ${SWAP_NK:-6144x4096 4096x4096 28672x4096 4096x14336 10240x8192 8192x8192 57344x8192 8192x28672 24576x1536 7168x16384 2112x7168 4096x7168}; do
      SH="$SH${SH:+,}1x${m}x${nk}"; done; done
  timeout 560 python3 benchmarks/sweep_batched.py --op a16w16 --dtype bf16 --candidates ${SWAP_CANDS:-a16w16_swap} --shapes "$SH" \
    --passes ${PASSES:-3} --json "$OUT/swap_sweep${TAG:-}.json" 2>&1 | grep -v Warn | tee "$OUT/swap_sweep${TAG:-}.log" \
    | tail -70
fi
if has decode; then
  for m in deepseek-v3 llama3-405b llama3-70b llama3-8b qwen2.5-72b; do
    timeout 200 python3 -m gemmkit bench --op a16w16 --cuda-graph --model $m -m 1,16,32,64 \
      --json "$OUT/a16w16_decode_$m.json" 2>&1 | grep -v Warn | tail -30
  done
fi
if has ffn; then
  for m in llama3-8b llama3-70b; do
    timeout 200 python3 -m gemmkit bench --op ffn_gated --cuda-graph --model $m -m 1,2,4,8,16,32,64,128,256 \
      --json "$OUT/ffn_gated_$m.json" 2>&1 | grep -v Warn | tail -12
  done
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
