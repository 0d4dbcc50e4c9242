#!/usr/bin/env bash
# Task H4 (issue 5) on the H200: gemm_split_cat bf16 at decode M (kv_b_proj), batched_gemm_a16w16 at
# 8 x 512^3 / 8 x 1024^3 (and B = 64 at the same M buckets, which share the table rows).
# Usage (device machine, repo root): GEMMKIT_GIT_SHA=<sha> OUT=<dir> STAGE=<stage> bash benchmarks/run_h200_h4.sh
#   STAGE=sweep    candidates checked and timed, vendor interleaved (benchmarks/h4_sweep.py)      (run 1)
#   STAGE=confirm  gpu tests of both ops; the new tables (config=None) against the configs they
#                  replaced, interleaved, more passes; M = 1 probes (torch.matmul alone, S3 = 0, plain
#                  read kernels over w)                                                            (run 2)
# Run 2 of session 5 stopped at the S3 = 0 probe (a compile failure, since fixed in the kernel); the probes
# are wrapped now, so one failing probe no longer ends the run.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
STAGE=${STAGE:-sweep}
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$OUT/env.txt" 2>&1
t0=$(date +%s)
if [ "$STAGE" = confirm ]; then
  timeout ${TEST_TIMEOUT:-180} python3 -m pytest -q -m gpu tests/test_gpu_split_cat.py tests/test_gpu_batched.py \
    -p no:cacheprovider > "$OUT/gpu_tests.txt" 2>&1
  grep -E "passed|failed|error" "$OUT/gpu_tests.txt" | tail -5; echo "tests done at $(( $(date +%s) - t0 )) s"
  timeout ${SWEEP_TIMEOUT:-200} python3 benchmarks/h4_sweep.py --stage confirm --passes ${PASSES:-5} \
    --budget-s ${BUDGET_S:-150} --json "$OUT/h4_confirm.json" 2>&1 | grep -v Warn > "$OUT/h4_confirm.log"
  cat "$OUT/h4_confirm.log" | cut -c1-150 | tail -80
else
  timeout ${SWEEP_TIMEOUT:-270} python3 benchmarks/h4_sweep.py --stage sweep --passes ${PASSES:-3} \
    --budget-s ${BUDGET_S:-200} --json "$OUT/h4_sweep.json" 2>&1 | grep -v Warn > "$OUT/h4_sweep.log"

  # the three best rows of every shape (full list in the log)
  awk '/^(split_cat|batched)/{n=0; print; next} /^  vendor/{next} /^  /{if (n++ < 4) print}' "$OUT/h4_sweep.log"
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv,noheader >> "$OUT/env.txt" 2>&1
echo "stage $STAGE done at $(( $(date +%s) - t0 )) s"
