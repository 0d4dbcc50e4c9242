#!/usr/bin/env bash
# Session 13 device runs (H200). STAGE (space-separated, any order):
#   kscale   benchmarks/fp8_k_scaling.py: fp8 per-token time against K at M = N = 4096 / 8192, ours and _scaled_mm
#   probe / xtile / fp8bench  A/B of uncommitted patches of the FP8 coop consumer (see the comments at each stage)
#   fp8tests the fp8 gpu tests
#   alltests the whole gpu suite
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="kscale" bash benchmarks/run_h200_s13.sh
# (Session 13's first runs, PDL on / off, used benchmarks/pdl_ab.py and this file's `pdl` stage at git 2f06cc3.)
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has kscale; then
  timeout 560 python3 benchmarks/fp8_k_scaling.py --json "$OUT/fp8_k_scaling.json" ${KS_ARGS:-} > "$OUT/fp8_k_scaling.log" 2>&1
  grep -v Warn "$OUT/fp8_k_scaling.log" | tail -20
fi
# probe: the fp8_k_scaling series under GEMMKIT_EPI_PROBE = 0-5, a probe patch of the FP8 kernel's coop epilogue that
# was never committed (docs/PERF.md, session 13: 1 no scale loads, 2 scales loaded before the mainloop, 3 no
# epilogue, 4 / 5 direct global stores); on committed code every probe value runs the shipped kernel.
if has probe; then
  for P in ${PROBES:-0 1 2 3 0}; do
    NC=""; case $P in 1|3) NC=--no-check;; esac
    GEMMKIT_EPI_PROBE=$P timeout 200 python3 benchmarks/fp8_k_scaling.py --json "$OUT/probe_$P.json" --sizes ${SIZES:-4096} \
      --passes 3 $NC > "$OUT/probe_$P.log" 2>&1
    echo "probe $P"; grep -v Warn "$OUT/probe_$P.log" | tail -8
  done
fi
if has fp8tests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests/test_gpu_a8w8_gluon.py \
    tests/test_gpu_blockscale_gluon.py tests/test_gpu_a8w8.py 2>&1 | tee "$OUT/pytest_fp8.log" | tail -6
fi
# xtile / fp8bench: GEMMKIT_XTILE 0 (the shipped coop consumer) / 1 (the rotated loop), separate processes, alternating;
# the switch exists only with logs/session13/coop_rotated_loop.patch applied (never committed; docs/PERF.md, session 13).
if has xtile; then
  for X in ${XS:-0 1 0 1}; do
    GEMMKIT_XTILE=$X timeout 250 python3 benchmarks/fp8_k_scaling.py --json "$OUT/xtile_$X.json" --sizes ${SIZES:-4096,8192} \
      --passes 2 > "$OUT/xtile_$X.log" 2>&1
    echo "xtile $X"; grep -E "fit|K=  4096|K=  8192" "$OUT/xtile_$X.log" | tail -5
  done
fi
if has fp8bench; then
  for X in ${BXS:-1 0}; do
    SQ="--shape 4096,4096,4096 --shape 8192,8192,8192"
    GEMMKIT_XTILE=$X timeout 250 python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $SQ --model llama3-70b \
      -m 256,1024,4096 --json "$OUT/a8w8_x$X.json" 2>&1 | grep -v Warn | tail -16
    DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do DS="$DS --shape 4096,$nk"; done
    GEMMKIT_XTILE=$X timeout 200 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS \
      --json "$OUT/a8w8_blockscale_x$X.json" 2>&1 | grep -v Warn | tail -8
  done
fi
if has alltests; then
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 tests 2>&1 \
    | tee "$OUT/pytest_gpu_all.log" | tail -8
fi
