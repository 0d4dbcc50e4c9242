#!/usr/bin/env bash
# Task H3 (issues 7 and 3) on the H200: the Gluon cooperative kernel (kernels/gluon/hopper_coop.py).
#   bash benchmarks/run_h200_h3.sh         smoke (hang guard), gpu tests, then the timing of
#                                          benchmarks/hopper_coop.py (squares + large model rows)
# Each step has its own time limit (SMOKE_S, TEST_S, BENCH_S) so a hang costs one step, not the run.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,driver_version --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
timeout ${SMOKE_S:-45} python3 benchmarks/hopper_coop.py --smoke > "$OUT/smoke.log" 2>&1
rc=$?; echo "smoke rc=$rc ($(( $(date +%s) - t0 ))s)" | tee -a "$OUT/smoke.log"; tail -n 12 "$OUT/smoke.log"
if [ $rc -ne 0 ]; then exit $rc; fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout ${TEST_S:-110} python3 -m pytest -q -m gpu tests/test_gpu_hopper_coop.py -p no:cacheprovider \
    > "$OUT/pytest.log" 2>&1
  echo "pytest rc=$? ($(( $(date +%s) - t0 ))s)" | tee -a "$OUT/pytest.log"; tail -n 15 "$OUT/pytest.log"
fi
if [ "${SANITIZE:-0}" = 1 ]; then  # synccheck + racecheck of small launches (racecheck: see docs/kernels/hopper_coop.md)
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in synccheck racecheck; do
    timeout ${SAN_S:-60} "$cs" --tool $tool python3 benchmarks/hopper_coop.py --sanitize > "$OUT/san_$tool.log" 2>&1
    echo "$tool rc=$? ($(( $(date +%s) - t0 ))s)" | tee -a "$OUT/san_$tool.log"
    grep -oE "SUMMARY.*|sanitized run done|hopper_(coop|pingpong)\.py:[0-9]+" "$OUT/san_$tool.log" | sort | uniq -c | head -20
  done
fi
timeout ${BENCH_S:-165} python3 benchmarks/hopper_coop.py --out "$OUT/hopper_coop.json" ${BENCH_ARGS:-} \
  > "$OUT/bench.log" 2>&1
echo "bench rc=$? ($(( $(date +%s) - t0 ))s)" | tee -a "$OUT/bench.log"; tail -n 20 "$OUT/bench.log"
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader | sed 's/^/after: /' | tee -a "$OUT/gpu.txt"
