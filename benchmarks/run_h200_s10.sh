#!/usr/bin/env bash
# Session 10 device runs (H200). STAGE (space-separated, any order):
#   tests    the gpu tests of the kernels this session touched (split-K in the dense Gluon kernels):
#            test_gpu_gluon_split_k / _hopper_coop / _hopper_pingpong / _a16w16 (TESTS overrides)
#   splitk   benchmarks/sweep_batched.py --op a16w16 --candidates a16w16_splitk: Gluon split-K against the
#            table's config (SERVED) on the rows where every tiling leaves SMs idle (SPLITK_SHAPES overrides)
#   bench    gemmkit bench --model all -m 256,...,4096 --cuda-graph (issue 3's M >= 256 sweep), squares
#   alltests the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="tests splitk" bash benchmarks/run_h200_s10.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has tests; then
  timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 ${TESTS:-tests/test_gpu_gluon_split_k.py \
    tests/test_gpu_hopper_coop.py tests/test_gpu_hopper_pingpong.py tests/test_gpu_a16w16.py} 2>&1 \
    | tee "$OUT/pytest_s10.log" | tail -8
fi
if has splitk; then
  SH=${SPLITK_SHAPES:-1x256x576x7168,1x512x576x7168,1x1024x576x7168,1x2048x576x7168,1x4096x576x7168,1x256x1536x7168,1x512x1536x7168,1x1024x1536x7168,1x2048x1536x7168,1x256x7168x2048,1x512x7168x2048,1x256x7168x16384,1x256x7168x18432,1x256x10240x8192,1x256x6144x4096,1x256x4096x7168,1x512x4096x7168,1x256x4096x14336,1x256x18432x16384}
  timeout 560 python3 benchmarks/sweep_batched.py --op a16w16 --dtype bf16 --candidates ${CAND:-a16w16_splitk} --shapes $SH \
    --passes ${PASSES:-3} --json "$OUT/${CAND:-a16w16_splitk}_sweep.json" > "$OUT/${CAND:-a16w16_splitk}_sweep.log" 2>&1
  grep -E "^B=|vendor|ratio|rel err|Error|took" "$OUT/${CAND:-a16w16_splitk}_sweep.log" | tail -250
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
