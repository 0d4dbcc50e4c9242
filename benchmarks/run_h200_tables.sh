#!/usr/bin/env bash
# Issue 3, the sm_90 A16W16 tables: two device calls.
#   bash benchmarks/run_h200_tables.sh tune    tune every model layer at the M the tables lacked
#                                              (M-major: 32, 512, 2048, 128 by default; Triton and
#                                              Gluon candidates), merge the winners into the tables
#                                              (>2% over the serving config, or BLOCK_SIZE_M < M at
#                                              M <= 64), send back progress, decisions and tables
#   bash benchmarks/run_h200_tables.sh sweep   with the tables merged here: the tuner's gpu test,
#                                              the copy bandwidth, then the closing sweeps (CUDA-graph
#                                              timing): squares 4096/8192/16384, decode M in
#                                              {1, 16, 32, 64}, the M >= 256 model sweep
#   TUNE2=256,8192 bash ... sweep            the same, after tuning these M too (merged into the
#                                              device copy's tables, sent back in tune2.tgz)
# Knobs: M_TUNE, CANDS (per backend), REP (tuner rep ms), BUDGET / BUDGET2 (tuner seconds), GEQ_M.
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
# compiled kernels survive between the two calls while the machine stays warm (tune_state/ is git-ignored)
export TRITON_CACHE_DIR=$PWD/tune_state/triton_cache
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv | tee -a "$OUT/gpu.txt"
case "${1:-}" in
tune)
  mkdir -p "$OUT/tune"
  timeout ${TUNE_TIMEOUT:-300} python3 -m gemmkit tune --model all -m "${M_TUNE:-32,512,2048,128}" --backend all \
    --max-candidates ${CANDS:-12} --rep-ms ${REP:-20} --budget-s ${BUDGET:-250} --out "$OUT/tune" \
    2>&1 | grep -v Warn > "$OUT/tune.log"
  # cut by the timeout before the merge: merge what was measured
  [ -f "$OUT/tune/merge_decisions.json" ] || python3 -m gemmkit tune --tables-from "$OUT/tune/tune_progress.jsonl" \
    --out "$OUT/tune" --arch sm_90 2>&1 | grep -v Warn >> "$OUT/tune.log"
  grep -c "^\[" "$OUT/tune.log"; grep -E "budget|merge .*write" "$OUT/tune.log" | tail -n 60
  tar czf "$OUT/tables.tgz" -C "$OUT/tune" sm_90 2>/dev/null
  mv "$OUT/tune/tune_progress.jsonl" "$OUT/tune/merge_decisions.json" "$OUT/" 2>/dev/null; rm -rf "$OUT/tune"
  ;;
sweep)
  if [ -n "${TUNE2:-}" ]; then  # more M first (e.g. 256,8192), merged into this copy's tables (--install)
    mkdir -p "$OUT/tune2"
    timeout ${TUNE2_TIMEOUT:-180} python3 -m gemmkit tune --model all -m "$TUNE2" --backend all --install \
      --max-candidates ${CANDS:-12} --rep-ms ${REP:-20} --budget-s ${BUDGET2:-140} --out "$OUT/tune2" \
      2>&1 | grep -v Warn > "$OUT/tune2/tune.log"
    [ -f "$OUT/tune2/merge_decisions.json" ] || python3 -m gemmkit tune --install --arch sm_90 \
      --tables-from "$OUT/tune2/tune_progress.jsonl" --out "$OUT/tune2" 2>&1 | grep -v Warn >> "$OUT/tune2/tune.log"
    grep -c "^\[" "$OUT/tune2/tune.log"; grep -E "budget|: write" "$OUT/tune2/tune.log" | cut -c1-150 | tail -n 50
    cp gemmkit/configs/sm_90/A16W16-N=*.json "$OUT/tune2/"
    tar czf "$OUT/tune2.tgz" -C "$OUT" tune2 && rm -rf "$OUT/tune2"
  fi
  timeout 90 python3 -m pytest -q -m gpu tests/test_gpu_a16w16.py -k tuner -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
  tail -n 2 "$OUT/pytest_gpu.log"
  python3 - <<'EOF' 2>&1 | tee -a "$OUT/gpu.txt"
import torch, triton.testing as tt
a = torch.randn(2**30, device="cuda", dtype=torch.bfloat16); b = torch.empty_like(a)
ms = tt.do_bench(lambda: b.copy_(a), warmup=25, rep=200, return_mode="median")
print(f"device-to-device copy: {2 * a.numel() * 2 / ms / 1e9:.2f} TB/s (read + write, 2 GiB, median {ms:.3f} ms)")
EOF
  # each sweep rewrites its JSON after every M: a cut at LIMIT seconds keeps what was measured
  S=benchmarks/sweep_a16w16.py; left() { echo $(( ${LIMIT:-410} - SECONDS > 5 ? ${LIMIT:-410} - SECONDS : 5 )); }
  timeout $(left) python3 $S "$OUT/a16w16_squares_graph.json" --squares 4096,8192,16384 > "$OUT/sweeps.log" 2>&1
  timeout $(left) python3 $S "$OUT/a16w16_decode_graph.json" --model all -m 1,16,32,64 >> "$OUT/sweeps.log" 2>&1
  timeout $(left) python3 $S "$OUT/a16w16_models_geq256_graph.json" --model all \
    -m "${GEQ_M:-256,512,1024,2048,4096}" --rep-ms 60 >> "$OUT/sweeps.log" 2>&1
  grep -E "precompiled|wrote|Error" "$OUT/sweeps.log"
  python3 $S --summary "$OUT"/a16w16_*_graph.json
  ;;
*) echo "usage: $0 tune|sweep" >&2; exit 2;;
esac
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader | sed 's/^/clock after: /' | tee -a "$OUT/gpu.txt"
