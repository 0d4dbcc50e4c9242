#!/usr/bin/env bash
# One device run for batched_gemm_a16w16 (issue 5: >= 1.0x torch.bmm at B in {8, 64}, M = N = K in
# {512, 1024, 2048}, CUDA-graph timing), with the Gluon batched ping-pong as a backend:
#   smoke   the Gluon batched kernel on three shapes against torch (60 s cap: a hang or a wrong
#           result shows here first, before anything is timed)
#   sweep   benchmarks/sweep_batched.py: Gluon and Triton candidates on the issue's grid vs torch.bmm,
#           timed in one process (an A/B), vendor timed before and after each shape's candidates;
#           with `writetable` the winners per M (geomean over B) go into
#           gemmkit/configs/sm_90/BATCHED_A16W16.json (a copy comes back) and gemmkit bench's rows
#           with that table (CUDA graph and eager) into batched_a16w16.json
#   tests   pytest -m gpu: tests/test_gpu_batched.py and tests/test_gpu_hopper_pingpong.py (the dense
#           kernel and gemm_a16w16's gluon backend), the sanitizer runs of the latter left out
#           (`withsan` keeps them): the dense kernel's SASS is byte-identical to the last sanitized one;
#           `batchedonly`: tests/test_gpu_batched.py alone
# Usage (repo root, on the H200): bash benchmarks/run_h200_batched.sh [nosmoke] [nosweep] [writetable]
#   [notests] [withsan] [batchedonly]. At most 8 files land in $OUT.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
has() { case " $ARGS " in *" $1 "*) return 0;; esac; return 1; }
ARGS="$*"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)'
  date -u; echo "args: $ARGS"; } 2>&1 | tee "$OUT/env.txt"
if ! has nosmoke; then
  timeout 90 python3 - <<'EOF' 2>&1 | tee "$OUT/smoke.log" | tail -6
import time, torch
from gemmkit import arch
from gemmkit.kernels.gluon.hopper_pingpong_batched import launch
t = arch.current()
cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 5}
for B, M, N, K, cus in [(2, 128, 128, 64, 1), (3, 200, 264, 136, 2), (8, 512, 512, 512, None)]:
    t0 = time.time()
    x = torch.randn(B, M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(B, N, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(B, N, device="cuda", dtype=torch.bfloat16)
    y = torch.full((B, M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    launch(x, w, b, y, "none", cfg, t.with_cus(cus) if cus else t)
    torch.cuda.synchronize()
    ref = torch.bmm(x.double().cpu(), w.double().cpu().transpose(1, 2)) + b.double().cpu()[:, None, :]
    err = max(((y[i].double().cpu() - ref[i]).norm() / ref[i].norm()).item() for i in range(B))
    print(f"smoke B={B} {M}x{N}x{K} cus={cus}: max rel err per entry {err:.2e} nan={torch.isnan(y).any().item()} "
          f"({time.time() - t0:.1f}s)", flush=True)
EOF
fi
if ! has nosweep; then
  TABLE=gemmkit/configs/sm_90/BATCHED_A16W16.json
  timeout 240 python3 benchmarks/sweep_batched.py --op batched_a16w16 --json "$OUT/sweep_a16w16.json" \
    $(has writetable && echo --write-table $TABLE --bench-json "$OUT/batched_a16w16.json") 2>&1 \
    | tee "$OUT/sweep_a16w16.log" | grep -E "^best|^  B=|^  M=|sweep took|wrote|^B=|^shape|^[0-9]+x" | tail -40
  has writetable && cp $TABLE "$OUT/BATCHED_A16W16.json"
fi
if ! has notests; then
  KEXPR="not sanitizer and not racecheck"
  has withsan && KEXPR="not racecheck"
  timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 200 -k "$KEXPR" \
    tests/test_gpu_batched.py $(has batchedonly || echo tests/test_gpu_hopper_pingpong.py) 2>&1 \
    | tee "$OUT/pytest_gpu.log" | tail -15
fi
