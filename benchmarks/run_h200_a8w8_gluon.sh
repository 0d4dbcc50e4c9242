#!/usr/bin/env bash
# The Gluon FP8 kernel (kernels/gluon/hopper_pingpong_fp8.py) on the H200: a smoke check under a
# short timeout (a deadlocked barrier hangs, it does not fail), the gpu tests, then the benchmark
# (squares, every Gluon config, error vs float64; llama3-70b layers at M = 256/1024/4096).
# blockscale: a block-scale smoke check, both gpu test files, the DeepSeek-V3 block-scale benchmark.
#   GEMMKIT_GIT_SHA=<sha>-dirty bash benchmarks/run_h200_a8w8_gluon.sh [all|tests|bench|blockscale]
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
MODE=${1:-all}
if [ "$MODE" = blockscale ]; then
  timeout 150 python3 - <<'PY' 2>&1 | grep -v Warn | tee "$OUT/smoke_block.log"
import torch
from gemmkit import arch
from gemmkit.kernels.gluon.hopper_pingpong_fp8 import launch
from gemmkit.reference import expand_block_scales
t = arch.current()
for cus, (M, N, K), bm in [(1, (300, 392, 272), 64), (None, (2048, 2112, 2048), 64), (None, (1000, 1000, 1040), 128)]:
    cfg = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
           "num_stages": 4 if bm == 64 else 2}
    x = (torch.randn(M, K, device="cuda") * 4).to(torch.float8_e4m3fn)
    w = (torch.randn(N, K, device="cuda") * 4).to(torch.float8_e4m3fn)
    kb = -(-K // 128)
    xs, ws = torch.rand(M, kb, device="cuda") + 0.1, torch.rand(-(-N // 128), kb, device="cuda") + 0.1
    y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
    launch(x, w, xs, ws, None, y, cfg, t.with_cus(cus) if cus else t, block_shape=(128, 128))
    torch.cuda.synchronize()
    xd = x.double() * expand_block_scales(xs.double(), (1, 128), x.shape)
    wd = w.double() * expand_block_scales(ws.double(), (128, 128), w.shape)
    ref = xd @ wd.T
    print("smoke block", cus, M, N, K, bm, "rel", ((y.double() - ref).norm() / ref.norm()).item(), "finite",
          bool(torch.isfinite(y).all()))
PY
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "block smoke failed or hung: stop"; exit 1; }
  timeout ${TEST_TIMEOUT:-200} python3 -m pytest -q -m gpu tests/test_gpu_blockscale_gluon.py tests/test_gpu_a8w8_gluon.py \
    -p no:cacheprovider --durations=5 -rf > "$OUT/tests_block.log" 2>&1; echo "tests rc=$?"
  grep -v Warn "$OUT/tests_block.log" | tail -25
  timeout ${BENCH_TIMEOUT:-200} python3 benchmarks/a8w8_gluon.py "$OUT/a8w8_blockscale_gluon.json" --blockscale \
    > "$OUT/bench_block.log" 2>&1; echo "bench rc=$?"
  grep -v Warn "$OUT/bench_block.log" | tail -80
  nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | sed 's/^/clock after: /' | tee -a "$OUT/gpu.txt"
  exit 0
fi
timeout 90 python3 - <<'PY' 2>&1 | grep -v Warn | tee "$OUT/smoke.log"
import torch
from gemmkit import arch
from gemmkit.kernels.gluon.hopper_pingpong_fp8 import launch
t = arch.current()
for cus, (M, N, K), st in [(1, (300, 392, 256), 3), (2, (520, 264, 1040), 2), (None, (2048, 2048, 2048), 3)]:
    cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
           "num_stages": st}
    x = (torch.randn(M, K, device="cuda") * 4).to(torch.float8_e4m3fn)
    w = (torch.randn(N, K, device="cuda") * 4).to(torch.float8_e4m3fn)
    xs, ws = torch.rand(M, device="cuda") + 0.1, torch.rand(N, device="cuda") + 0.1
    y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
    launch(x, w, xs, ws, None, y, cfg, t.with_cus(cus) if cus else t)
    torch.cuda.synchronize()
    ref = (x.float().double() @ w.float().double().T) * xs.double()[:, None] * ws.double()[None, :]
    print("smoke", cus, M, N, K, st, "rel", ((y.double() - ref).norm() / ref.norm()).item(), "finite",
          bool(torch.isfinite(y).all()))
PY
[ "${PIPESTATUS[0]}" = 0 ] || { echo "smoke failed or hung: stop"; exit 1; }
if [ "$MODE" != bench ]; then
  timeout ${TEST_TIMEOUT:-180} python3 -m pytest -q -m gpu tests/test_gpu_a8w8_gluon.py -p no:cacheprovider \
    --durations=5 -rf > "$OUT/tests.log" 2>&1; echo "tests rc=$?"
  grep -v Warn "$OUT/tests.log" | tail -30
fi
if [ "$MODE" != tests ]; then
  timeout ${BENCH_TIMEOUT:-200} python3 benchmarks/a8w8_gluon.py "$OUT/a8w8_gluon.json" ${BENCH_ARGS:-} \
    > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  grep -v Warn "$OUT/bench.log" | grep -A200 summary | head -90
fi
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | sed 's/^/clock after: /' | tee -a "$OUT/gpu.txt"
