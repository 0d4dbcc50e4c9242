#!/usr/bin/env bash
# Session 9 device runs (H200). STAGE (space-separated, any order):
#   tests    the gpu tests of the kernels this session touched (cooperative split tiles, the shared load
#            partition): test_gpu_hopper_coop / _hopper_pingpong / _batched / _a16w16
#   split    benchmarks/sweep_batched.py --op a16w16 --candidates a16w16_split: the split tiles (128 x 192,
#            128 x 96) against the table's config (SERVED) on the M >= 256 rows a power-of-two width fits badly
#   splitall the same sweep (CANDIDATES[$CAND], default "a16w16_split_all"; "a16w16_split_pp": the ping-pong's
#            split tiles), 3 passes, over all 120 model rows at M = 256 ... 4096
#   bench    gemmkit bench --model all -m 256,...,4096 --cuda-graph (issue 3's M >= 256 sweep), squares
#   alltests the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="tests split" bash benchmarks/run_h200_s9.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has tests; then
  timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 ${TESTS:-tests/test_gpu_hopper_coop.py \
    tests/test_gpu_hopper_pingpong.py tests/test_gpu_batched.py tests/test_gpu_a16w16.py} 2>&1 \
    | tee "$OUT/pytest_s9.log" | tail -8
fi
if has split; then
  SH=${SPLIT_SHAPES:-1x4096x576x7168,1x2048x576x7168,1x1024x576x7168,1x256x10240x8192,1x512x10240x8192,1x1024x10240x8192,1x256x6144x4096,1x512x6144x4096,1x1024x6144x4096,1x512x1536x7168,1x1024x1536x7168,1x2048x1536x7168,1x4096x1536x7168,1x256x36864x7168,1x256x18432x16384,1x256x24576x1536,1x1024x7168x18432,1x2048x7168x2048}
  timeout 540 python3 benchmarks/sweep_batched.py --op a16w16 --dtype bf16 --candidates a16w16_split --shapes $SH \
    --passes ${PASSES:-2} --json "$OUT/a16w16_split_sweep.json" > "$OUT/a16w16_split_sweep.log" 2>&1
  grep -E "^B=|vendor|ratio|rel err|Error|^  " "$OUT/a16w16_split_sweep.log" | tail -160
fi
if has splitall; then
  # round 2: every model row at M = 256 ... 4096 (120), the split tiles and the cooperative 128 x 128 against the table
  SH=$(python3 -c "
from gemmkit.bench.suite import model_suite
s = sorted({(m, n, k) for lb, m, n, k in model_suite(['all'], [256, 512, 1024, 2048, 4096])})
print(','.join(f'1x{m}x{n}x{k}' for m, n, k in s))")
  CAND=${CAND:-a16w16_split_all}
  timeout 560 python3 benchmarks/sweep_batched.py --op a16w16 --dtype bf16 --candidates $CAND --shapes $SH \
    --passes ${PASSES:-3} --json "$OUT/${CAND/a16w16_split/a16w16_split_sweep}.json" > "$OUT/$CAND.log" 2>&1
  grep -E "^  B=|sweep took|Error" "$OUT/$CAND.log" | tail -130
fi
if has bench; then
  timeout 560 python3 -m gemmkit bench --model all -m 256,512,1024,2048,4096 --cuda-graph \
    --shape 4096,4096,4096 --shape 8192,8192,8192 --shape 16384,16384,16384 \
    --json "$OUT/a16w16_models_geq256_graph.json" 2>&1 | tee "$OUT/bench_geq256.log" | tail -30
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
ls -la "$OUT"
