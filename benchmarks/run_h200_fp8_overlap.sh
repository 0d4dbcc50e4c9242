#!/usr/bin/env bash
# FP8 promotion-overlap probe (kernels/gluon/hopper_pingpong_fp8_overlap.py) on the H200: a smoke run under a
# short timeout (a deadlocked barrier hangs, it does not fail), then benchmarks/fp8_overlap_probe.py
# (correctness on ragged shapes first, then 4096^3 / 8192^3 vs _scaled_mm precise and the shipped kernel).
#   GEMMKIT_GIT_SHA=<sha>-dirty bash benchmarks/run_h200_fp8_overlap.sh
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee "$OUT/fp8_overlap_gpu.txt"
timeout 120 python3 - <<'PY' 2>&1 | grep -v Warn | tee "$OUT/fp8_overlap_smoke.log"
import torch
from gemmkit import arch
from gemmkit.kernels.gluon import hopper_pingpong_fp8_overlap as ov
t = arch.current()
for name, cfg in ov.PROBE_CFGS:
    for cus, (M, N, K) in [(1, (300, 392, 272)), (None, (2048, 2048, 2048))]:
        x = (torch.randn(M, K, device="cuda") * 2).to(torch.float8_e4m3fn)
        w = (torch.randn(N, K, device="cuda") * 2).to(torch.float8_e4m3fn)
        xs, ws = torch.rand(M, device="cuda") + 0.1, torch.rand(N, device="cuda") + 0.1
        y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float32)
        ov.launch(x, w, xs, ws, y, cfg, t.with_cus(cus) if cus else t)
        torch.cuda.synchronize()
        ref = (x.double() @ w.double().T) * xs.double()[:, None] * ws.double()[None, :]
        print("smoke", name, cus, M, N, K, "rel", ((y.double() - ref).norm() / ref.norm()).item(), "finite",
              bool(torch.isfinite(y).all()), flush=True)
PY
[ "${PIPESTATUS[0]}" = 0 ] || { echo "smoke failed or hung: stop"; exit 1; }
if [ -f tests/test_gpu_fp8_overlap.py ]; then
  timeout 120 python3 -m pytest -q -m gpu tests/test_gpu_fp8_overlap.py -p no:cacheprovider -rf \
    > "$OUT/fp8_overlap_tests.log" 2>&1; echo "tests rc=$?"; grep -v Warn "$OUT/fp8_overlap_tests.log" | tail -8
fi
timeout ${BENCH_TIMEOUT:-300} python3 benchmarks/fp8_overlap_probe.py "$OUT/fp8_overlap_probe.json" \
  > "$OUT/fp8_overlap_probe.log" 2>&1; echo "probe rc=$?"
grep -v Warn "$OUT/fp8_overlap_probe.log" | grep -v "^check" | tail -40
grep -c " ok$" "$OUT/fp8_overlap_probe.log" | sed 's/^/checks ok: /'; grep FAIL "$OUT/fp8_overlap_probe.log" | head
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | sed 's/^/clock after: /' | tee -a "$OUT/fp8_overlap_gpu.txt"
