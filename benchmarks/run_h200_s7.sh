#!/usr/bin/env bash
# Session 7 device runs (H200). STAGE (space-separated, any order):
#   tests    pytest -m gpu: tests/test_gpu_batched.py (the batched ping-pong and cooperative kernels) and
#            tests/test_gpu_hopper_coop.py (the dense cooperative kernel, whose partition gained BATCHED)
#   sweep    benchmarks/sweep_batched.py round 4 (cooperative candidates vs round 3's winners, torch.bmm
#            in the same process); with `writetable` the winners go into BATCHED_A16W16.json (a copy comes
#            back) and gemmkit bench's rows into batched_a16w16.json
#   floor    benchmarks/read_floor.py: the streaming-read / copy floor at the decode bars' sizes, with the
#            bars' own M = 1 calls in the same process
#   fp8tests the fp8 Gluon kernel's gpu tests (its mainloops moved to hopper_fp8_mainloop.py)
#   (the session's `gemv` / `gemvtests` stages ran benchmarks/gemv_ab.py and tests/test_gpu_gemv.py at git
#   1f3b4fd / 31eb73e; the GEMV mainloop lost everywhere and was removed: gemv_ab_round{1,2}.json, PERF.md)
#   probe    benchmarks/racecheck_cp_async_probe.py modes 0-5 under compute-sanitizer racecheck
#   racetests the fp8 kernel's sanitizer tests alone
#   bsbench  gemmkit bench --op a8w8_blockscale --cuda-graph (the shipped tables)
#   gated32  tune the gated GEMM at M = 32 for the Llama-3 8B / 70B FFN tables (--install), then bench
#            ffn_gated on both models at M <= 256
#   final    tests/test_gpu_batched.py -k batch_strides (both layouts)
#   alltests the whole gpu suite (tests/, ~3 min with -n 8)
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="tests sweep floor" bash benchmarks/run_h200_s7.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has floor; then
  timeout 90 python3 benchmarks/read_floor.py --json "$OUT/read_floor.json" 2>&1 | tee "$OUT/read_floor.log" | tail -12
fi
if has tests; then
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 180 \
    tests/test_gpu_batched.py tests/test_gpu_hopper_coop.py 2>&1 | tee "$OUT/pytest_batched_coop.log" | tail -15
fi
if has sweep; then
  TABLE=gemmkit/configs/sm_90/BATCHED_A16W16.json
  timeout 300 python3 benchmarks/sweep_batched.py --op batched_a16w16 --json "$OUT/sweep_a16w16.json" \
    $(has writetable && echo --write-table $TABLE --bench-json "$OUT/batched_a16w16.json") 2>&1 \
    | tee "$OUT/sweep_a16w16.log" | grep -E "^best|^  B=|^  M=|sweep took|wrote|^B=|vendor" | tail -40
  has writetable && cp $TABLE "$OUT/BATCHED_A16W16.json"
fi
if has fp8tests; then
  timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 200 \
    tests/test_gpu_a8w8_gluon.py tests/test_gpu_blockscale_gluon.py 2>&1 | tee "$OUT/pytest_fp8.log" | tail -15
fi
if has bsbench; then
  DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do
    for m in 64 128 4096; do DS="$DS --shape $m,$nk"; done; done
  timeout 300 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --json "$OUT/a8w8_blockscale.json" 2>&1 \
    | tee "$OUT/bench_blockscale.log" | tail -25
fi
if has probe; then
  for m in ${PROBE_MODES:-0 1 2 3 4 5}; do
    timeout 120 compute-sanitizer --tool racecheck python3 benchmarks/racecheck_cp_async_probe.py $m 2>&1 \
      | tee "$OUT/racecheck_probe_mode$m.log" | grep -E "mode|Race reported|RACECHECK SUMMARY|probe done" | head -6
  done
fi
if has racetests; then
  timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 --timeout 220 tests/test_gpu_blockscale_gluon.py \
    -k "racecheck or sanitizer" -rA 2>&1 | tee "$OUT/pytest_fp8_sanitizers.log" | tail -15
fi
if has gated32; then
  # the gated GEMM's M = 32 bucket of the two Llama-3 FFN tables (0.81x / 1.02x torch in ffn_gated.json)
  for shp in "32 28672 8192" "32 14336 4096"; do
    timeout 200 python3 -m gemmkit tune --op a16w16_gated --shape $shp --install --out "$OUT/tune_gated" \
      --max-candidates 24 2>&1 | tail -6
  done
  cp gemmkit/configs/sm_90/A16W16_GATED-N=28672-K=8192.json gemmkit/configs/sm_90/A16W16_GATED-N=14336-K=4096.json "$OUT/"
  for mdl in llama3-8b llama3-70b; do
    timeout 150 python3 -m gemmkit bench --op ffn_gated --model $mdl -m 1,16,32,64,128,256 --cuda-graph \
      --json "$OUT/ffn_gated_$mdl.json" 2>&1 | tail -8
  done
  tar czf "$OUT/tune_gated.tgz" -C "$OUT" tune_gated && rm -rf "$OUT/tune_gated"
fi
if has final; then
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 180 -rA tests/test_gpu_batched.py \
    -k "batch_strides" 2>&1 | tee "$OUT/pytest_batch_strides.log" | tail -4
fi
if has alltests; then
  timeout 560 python3 -m pytest -q -m gpu tests/ -p no:cacheprovider -n 8 2>&1 | tee "$OUT/pytest_gpu.log" | tail -8
fi
ls -la "$OUT"
