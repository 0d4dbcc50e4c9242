#!/usr/bin/env bash
# The Gluon FP8 kernel's cooperative layout (num_warps 8; kernels/gluon/hopper_pingpong_fp8.py) on the H200:
# a smoke check of both modes under a short timeout (a deadlocked barrier hangs, it does not fail), the
# gpu tests of both Gluon FP8 test files, then benchmarks/blockscale_coop.py (18 DeepSeek-V3 block-scale
# rows, 4096^3 / 8192^3 rowcol, llama3-70b rowcol while time is left).
#   GEMMKIT_GIT_SHA=<sha>-dirty bash benchmarks/run_h200_h1.sh [all|tests|bench]
# Run 2 (the loader's one-step-ahead scale loads, A/B against the run-1 kernel copied to
# benchmarks/_h1_before_fp8.py for that run only): BENCH_ARGS="--ab benchmarks/_h1_before_fp8.py --no-squares"
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/gpu.txt"
MODE=${1:-all}
timeout ${SMOKE_TIMEOUT:-75} python3 - <<'PY' 2>&1 | grep -v Warn | tee "$OUT/smoke.log"
import torch
from gemmkit import arch
from gemmkit.kernels.gluon.hopper_pingpong_fp8 import launch
from gemmkit.reference import expand_block_scales
t = arch.current()
coop = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 8,
        "num_stages": 6}
for block in (None, (128, 128)):
    for cus, (M, N, K) in [(1, (300, 392, 272)), (None, (2048, 2112, 2048))]:
        x = (torch.randn(M, K, device="cuda") * 4).to(torch.float8_e4m3fn)
        w = (torch.randn(N, K, device="cuda") * 4).to(torch.float8_e4m3fn)
        if block is None:
            xs, ws = torch.rand(M, device="cuda") + 0.1, torch.rand(N, device="cuda") + 0.1
            xd, wd = x.double() * xs.double()[:, None], w.double() * ws.double()[:, None]
        else:
            kb = -(-K // 128)
            xs, ws = torch.rand(M, kb, device="cuda") + 0.1, torch.rand(-(-N // 128), kb, device="cuda") + 0.1
            xd = x.double() * expand_block_scales(xs.double(), (1, 128), x.shape)
            wd = w.double() * expand_block_scales(ws.double(), (128, 128), w.shape)
        y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
        launch(x, w, xs, ws, None, y, coop, t.with_cus(cus) if cus else t, block_shape=block)
        torch.cuda.synchronize()
        ref = xd @ wd.T
        print("smoke coop", "block" if block else "rowcol", cus, M, N, K, "rel",
              ((y.double() - ref).norm() / ref.norm()).item(), "finite", bool(torch.isfinite(y).all()), flush=True)
PY
[ "${PIPESTATUS[0]}" = 0 ] || { echo "smoke failed or hung: stop"; exit 1; }
if [ "$MODE" != bench ]; then
  timeout ${TEST_TIMEOUT:-160} python3 -m pytest -q -m gpu tests/test_gpu_a8w8_gluon.py tests/test_gpu_blockscale_gluon.py \
    -p no:cacheprovider --durations=8 -rf > "$OUT/tests.log" 2>&1; echo "tests rc=$?"
  grep -v Warn "$OUT/tests.log" | tail -22
fi
if [ "$MODE" != tests ]; then
  timeout ${BENCH_TIMEOUT:-200} python3 benchmarks/blockscale_coop.py "$OUT/a8w8_blockscale_coop.json" ${BENCH_ARGS:-} \
    > "$OUT/bench.log" 2>&1; echo "bench rc=$?"
  grep -v Warn "$OUT/bench.log" | grep "^ab \|^rowcol ab" | head -40
  grep -v Warn "$OUT/bench.log" | grep -A80 "summary a8w8" | head -80
fi
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | sed 's/^/clock after: /' | tee -a "$OUT/gpu.txt"
