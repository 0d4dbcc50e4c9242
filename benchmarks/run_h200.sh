#!/usr/bin/env bash
# One device run: environment, host overhead, optional sweep, gpu tests + compute-sanitizer, bench --json.
# Usage (from the repo root, on the H200): bash benchmarks/run_h200.sh [sweep] [notests]
# Results go to $OUT (the device tool's folder) or ./h200_out.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)'
  date -u; } 2>&1 | tee "$OUT/env.txt"
python3 benchmarks/overhead.py 2>&1 | tee "$OUT/overhead.txt"
case " $* " in *" sweep "*) python3 benchmarks/sweep_a16w16.py "$OUT/sweep_a16w16.json" 2>&1 | tee "$OUT/sweep.log";; esac
case " $* " in *" notests "*) ;; *)
  python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_a16w16.py 2>&1 | tee "$OUT/pytest_gpu.log" | tail -15;; esac
python3 -m gemmkit bench --json "$OUT/a16w16.json" 2>&1 | tee "$OUT/bench.log"
python3 -m gemmkit bench --cuda-graph --no-check --json "$OUT/a16w16_graph.json" 2>&1 | tee "$OUT/bench_graph.log"
