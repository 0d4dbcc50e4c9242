#!/usr/bin/env bash
# Session 11 device runs (H200). STAGE (space-separated, any order):
#   ncu      Nsight Compute, one launch each (benchmarks/ncu_once.py NCU_CASES; default: fp8 per-token, the table's
#            cooperative config against torch._scaled_mm, and bf16 coop against cuBLAS, all at 8192^3)
#   tail     gemmkit bench (fp8 per-token and bf16, CUDA graph) at M around 4096 / 8192 with N = K = 4096 / 8192:
#            tile counts that leave the last round of the persistent grid partly empty, or fill it exactly,
#            twice each (the ncu runs showed our SMs active as many cycles as cuBLAS's but idle longer)
#   ncuspread ncu, per-SM spread of active cycles (min / avg / max over the SMs) for the NCU_CASES above: are the
#            extra idle cycles one slow SM (work imbalance) or all SMs late (start-up / drain)? NCU_EXTRA: more ncu
#            options (e.g. --cache-control none), NCU_TAG: a file-name tag for them
#   tsplit   benchmarks/sweep_batched.py --candidates a16w16_triton_split_range: the Triton tier's split-K buckets
#            (M_GEQ_64 / M_GEQ_128 with NUM_KSPLIT > 1) at their bottom and top M, served split vs halved / quartered
#   alltests the whole gpu suite (the Hopper Gluon host side moved to kernels/gluon/hopper_host.py)
#   bs64     benchmarks/sweep_batched.py --op a8w8_blockscale --candidates a8w8_blockscale_bn64: the cooperative
#            128 x 64 block-scale tile against the table's config (SERVED) at M = 4096 on DeepSeek-V3's six
#            dense (N, K) (BS_SHAPES overrides)
#   tests    the gpu tests of the kernels this session touched (_work_space in the dense / batched Gluon partitions,
#            fp16 through split-K): test_gpu_gluon_split_k / _hopper_coop / _hopper_pingpong / _batched
#   between  benchmarks/sweep_batched.py --op a16w16 --candidates a16w16_splitk_between: the split-K buckets at M
#            between session 10's sweep rows, served (fit_split_k) against the bucket's config before session 10
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="alltests bs64" bash benchmarks/run_h200_s11.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has bs64; then
  SH=${BS_SHAPES:-1x4096x2112x7168,1x4096x24576x1536,1x4096x32768x512,1x4096x7168x16384,1x4096x4096x7168,1x4096x7168x2048}
  timeout 560 python3 benchmarks/sweep_batched.py --op a8w8_blockscale --dtype fp8 --candidates a8w8_blockscale_bn64 \
    --shapes $SH --passes ${PASSES:-3} --json "$OUT/a8w8_blockscale_bn64_sweep.json" > "$OUT/a8w8_blockscale_bn64_sweep.log" 2>&1
  grep -E "^B=|vendor|ratio|rel err|Error|took" "$OUT/a8w8_blockscale_bn64_sweep.log" | tail -80
fi
if has tests; then
  timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests/test_gpu_gluon_split_k.py \
    tests/test_gpu_hopper_coop.py tests/test_gpu_hopper_pingpong.py tests/test_gpu_batched.py 2>&1 \
    | tee "$OUT/pytest_s11.log" | tail -8
fi
if has between; then
  SH=${BETWEEN_SHAPES:-1x300x576x7168,1x384x576x7168,1x480x576x7168,1x768x576x7168,1x1536x576x7168,1x384x1536x7168,1x768x1536x7168,1x384x4096x14336,1x480x4096x14336}
  timeout 560 python3 benchmarks/sweep_batched.py --op a16w16 --dtype bf16 --candidates a16w16_splitk_between \
    --shapes $SH --passes ${PASSES:-3} --json "$OUT/a16w16_splitk_between.json" > "$OUT/a16w16_splitk_between.log" 2>&1
  grep -E "^B=|vendor|ratio|rel err|Error|took" "$OUT/a16w16_splitk_between.log" | tail -120
fi
if has ncu; then
  mkdir -p "$OUT/ncu"
  for c in ${NCU_CASES:-fp8-rowcol-table-8192 fp8-scaled-mm-8192 bf16-coop-8192 bf16-cublas-8192}; do
    timeout 150 ncu --clock-control none --profile-from-start off --set full -f -o "$OUT/ncu/$c" \
      python3 benchmarks/ncu_once.py $c > "$OUT/ncu/$c.run.txt" 2>&1
    ncu -i "$OUT/ncu/$c.ncu-rep" --page details > "$OUT/ncu/$c.details.txt" 2>&1
    echo "== $c"
    grep -E "^  [a-zA-Z_].*\(|Duration|SM Frequency|DRAM Throughput|Compute \(SM\) Throughput|L2 Hit Rate|Registers Per|Grid Size|Issue Slots Busy" \
      "$OUT/ncu/$c.details.txt" | head -14
  done
  rm -f "$OUT"/ncu/*.ncu-rep
fi
if has tail; then
  S8="--shape 8064,8192,8192 --shape 8192,8192,8192 --shape 8320,8192,8192 --shape 8448,8192,8192"
  S4="--shape 4096,4096,4096 --shape 4224,4096,4096"
  for pass in 1 2; do
    timeout 250 python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $S8 $S4 \
      --json "$OUT/tail_fp8_pass$pass.json" 2>&1 | tee "$OUT/tail_fp8_pass$pass.log" | tail -8
    timeout 250 python3 -m gemmkit bench --op a16w16 --cuda-graph $S8 $S4 \
      --json "$OUT/tail_bf16_pass$pass.json" 2>&1 | tee "$OUT/tail_bf16_pass$pass.log" | tail -8
  done
fi
if has ncuspread; then
  for c in ${NCU_CASES:-fp8-rowcol-table-8192 fp8-scaled-mm-8192 bf16-coop-8192 bf16-cublas-8192}; do
    echo "== $c"
    timeout 150 ncu --clock-control none ${NCU_EXTRA:-} --profile-from-start off --csv --metrics \
      sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max,gpc__cycles_elapsed.max \
      python3 benchmarks/ncu_once.py $c 2>&1 | tee "$OUT/ncuspread${NCU_TAG:-}_$c.csv" | grep -E "sm__|gpc__" | cut -d, -f12-16
  done
fi
if has tsplit; then
  SH=${TSPLIT_SHAPES:-1x64x576x7168,1x255x576x7168,1x64x1536x7168,1x255x1536x7168,1x64x4096x14336,1x255x4096x14336,1x64x4096x7168,1x127x4096x7168,1x64x4096x4096,1x127x4096x4096,1x64x8192x28672,1x127x8192x28672,1x128x7168x18432,1x255x7168x18432,1x128x7168x16384,1x255x7168x16384,1x128x8192x29568,1x255x8192x29568,1x128x6144x4096,1x255x6144x4096}
  timeout 560 python3 benchmarks/sweep_batched.py --op a16w16 --dtype bf16 --candidates a16w16_triton_split_range \
    --shapes $SH --passes ${PASSES:-3} --json "$OUT/a16w16_triton_split_range.json" > "$OUT/a16w16_triton_split_range.log" 2>&1
  grep -E "^B=|ratio|rel err|Error|took" "$OUT/a16w16_triton_split_range.log" | tail -90
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
ls -la "$OUT"
