#!/usr/bin/env bash
# One device run for the 8-bit GEMMs: gpu tests (a8w8 + the a16w16 suite, shared kernels), then
# bench of gemm_a8w8 (fp8, int8) and gemm_a8w8_blockscale against their torch references.
# Usage (repo root, on the H200): bash benchmarks/run_h200_a8w8.sh [notests] [nobench]
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)'
  date -u; } 2>&1 | tee "$OUT/env.txt"
case " $* " in *" notests "*) ;; *)
  timeout 300 python3 -m pytest -m gpu -q -x -p no:cacheprovider tests/test_gpu_a8w8.py tests/test_gpu_a16w16.py \
    2>&1 | tee "$OUT/pytest_gpu.log" | tail -15;; esac
case " $* " in *" nobench "*) ;; *)
  SQ="--shape 4096,4096,4096 --shape 8192,8192,8192"
  # DeepSeek-V3 dense (N, K) of issue 4 at M = 64, 128, 4096
  DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do
    for m in 64 128 4096; do DS="$DS --shape $m,$nk"; done; done
  python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $SQ --model llama3-70b -m 256,1024,4096 \
    --json "$OUT/a8w8_fp8.json" 2>&1 | tee "$OUT/bench_a8w8_fp8.log" | tail -25
  python3 -m gemmkit bench --op a8w8 --dtype int8 --cuda-graph $SQ --json "$OUT/a8w8_int8.json" 2>&1 \
    | tee "$OUT/bench_a8w8_int8.log"
  python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --json "$OUT/a8w8_blockscale.json" 2>&1 \
    | tee "$OUT/bench_blockscale.log";; esac
