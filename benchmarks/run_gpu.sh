#!/usr/bin/env bash
# One GPU run with named stages, from the repository root on a CUDA machine (torch and Triton installed):
#
#   bash benchmarks/run_gpu.sh [stage ...]        (no stage: env tests)
#
#   env        GPU, driver, clocks, power limit, torch / Triton / CUDA versions, date, git sha -> env.txt
#   tests      every gpu-marked test (pytest -m gpu), in parallel workers where pytest-xdist is there -> tests.log
#   sanitize   compute-sanitizer memcheck over every kernel family (tests/test_gpu_sanitizer.py) -> sanitize.log
#   large      the >= 2**31-element operand tests (tests/test_large_offsets.py, ~4 GiB weights) -> large.log
#   overhead   host time per eager call against torch (benchmarks/overhead.py) -> overhead.txt
#   bench      gemm_a16w16 against cuBLAS, CUDA-graph replay (gemmkit bench) -> a16w16_graph.json
#
# Output goes to $OUT (the device tool's folder) or ./gpu_out. Each stage's log ends with its summary.
set -u
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
STAGES=${*:-env tests}
has() { case " $STAGES " in *" $1 "*) return 0;; esac; return 1; }
workers() { python3 -c 'import xdist' 2>/dev/null && echo "-n ${PYTEST_WORKERS:-8}"; }
pytest_gpu() { local log=$1; shift
  timeout "${STAGE_TIMEOUT:-540}" python3 -m pytest -m gpu -q -p no:cacheprovider "$@" 2>&1 | tee "$OUT/$log" | tail -15; }

if has env; then
  { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,memory.total --format=csv
    python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)'
    date -u; echo "stages: $STAGES  git: ${GEMMKIT_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  } 2>&1 | tee "$OUT/env.txt"
fi
# shellcheck disable=SC2046
has tests && pytest_gpu tests.log $(workers) --ignore=tests/test_gpu_sanitizer.py --ignore=tests/test_large_offsets.py
has sanitize && pytest_gpu sanitize.log tests/test_gpu_sanitizer.py
has large && pytest_gpu large.log tests/test_large_offsets.py
has overhead && python3 benchmarks/overhead.py 2>&1 | tee "$OUT/overhead.txt" | tail -20
has bench && python3 -m gemmkit bench --cuda-graph --json "$OUT/a16w16_graph.json" 2>&1 | tee "$OUT/bench.log" | tail -20
exit 0
