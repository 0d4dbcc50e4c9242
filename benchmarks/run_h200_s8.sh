#!/usr/bin/env bash
# Session 8 device runs (H200). STAGE (space-separated, any order):
#   kernels  benchmarks/vendor_kernels.py: the kernels cuBLAS (and gemmkit) launch on the rows we trail
#   scsweep  benchmarks/sweep_batched.py --op split_cat at M = 1 (kv_b_proj): CANDIDATES["split_cat"], 3 passes,
#            torch (matmul + cat) between every two
#   fp8sweep benchmarks/sweep_batched.py --op a8w8: the cooperative fp8 kernel against the tables' ping-pong configs,
#            per-token fp8 at 4096^3, 8192^3 and the Llama-3-70B rows at M = 256 / 1024 / 4096
#   fp8tables the fp8 gpu tests, A8W8.json "any" vs the cooperative config (round 2), gemmkit bench --op a8w8 fp8
#   floor    benchmarks/read_floor.py (with the smaller read programs added this session)
#   ncu      Nsight Compute, one launch each (benchmarks/ncu_once.py NCU_CASES), details pages in ncu.tgz
# Usage (repo root): GEMMKIT_GIT_SHA=<sha> STAGE="kernels scsweep" bash benchmarks/run_h200_s8.sh
set -u
. "$(dirname "$0")/h200_stage_env.sh"
if has kernels; then
  timeout 150 python3 benchmarks/vendor_kernels.py --json "$OUT/vendor_kernels.json" 2>&1 | tee "$OUT/vendor_kernels.log" | tail -60
fi
if has scsweep; then
  timeout 400 python3 benchmarks/sweep_batched.py --op split_cat --shapes 1x1x32768x512 --passes ${PASSES:-3} \
    --json "$OUT/split_cat_m1_sweep.json" 2>&1 | tee "$OUT/split_cat_m1_sweep.log" | tail -90
fi
if has fp8sweep; then
  SH=1x4096x4096x4096,1x8192x8192x8192; for m in 256 1024 4096; do for nk in 10240x8192 8192x8192 57344x8192 8192x28672; do
    SH=$SH,1x${m}x$nk; done; done
  timeout 500 python3 benchmarks/sweep_batched.py --op a8w8 --dtype fp8 --shapes $SH --passes 2 \
    --json "$OUT/a8w8_coop_sweep.json" 2>&1 | tee "$OUT/a8w8_coop_sweep.log" | grep -E "^B=|vendor|ratio|^  " | tail -150
fi
if has fp8tables; then
  # after the A8W8 shape tables moved to the cooperative config: the fp8 gpu tests, round 2 (A8W8.json's "any"
  # bucket against that config on the other models' rows), the closing bench of the 14 rows into a8w8.json
  timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 250 tests/test_gpu_a8w8_gluon.py \
    tests/test_gpu_a8w8.py 2>&1 | tee "$OUT/pytest_a8w8.log" | tail -4
  SH=$(python3 -c "
from gemmkit.bench.suite import model_suite
s = sorted({(m, n, k) for lb, m, n, k in model_suite(['all'], [256, 1024, 4096]) if 'llama3-70b' not in lb})
print(','.join(f'1x{m}x{n}x{k}' for m, n, k in s))")
  timeout 420 python3 benchmarks/sweep_batched.py --op a8w8 --dtype fp8 --candidates a8w8_any --shapes $SH --passes 2 \
    --json "$OUT/a8w8_any_sweep.json" > "$OUT/a8w8_any_sweep.log" 2>&1; tail -66 "$OUT/a8w8_any_sweep.log"
  DS="--shape 4096,4096,4096 --shape 8192,8192,8192"
  timeout 200 python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $DS --model llama3-70b -m 256,1024,4096 \
    --json "$OUT/a8w8.json" 2>&1 | tee "$OUT/bench_a8w8.log" | tail -18
fi
if has floor; then
  timeout 120 python3 benchmarks/read_floor.py --json "$OUT/read_floor.json" 2>&1 | tee "$OUT/read_floor.log" | tail -12
fi
if has ncu; then
  mkdir -p "$OUT/ncu"
  for c in ${NCU_CASES:-bmm-8x1024-cublas bmm-8x1024-gemmkit splitcat-m1-gemmkit matmul-m1-kvb}; do
    timeout 150 ncu --clock-control none --profile-from-start off --set full -f -o "$OUT/ncu/$c" \
      python3 benchmarks/ncu_once.py $c > "$OUT/ncu/$c.run.txt" 2>&1
    ncu -i "$OUT/ncu/$c.ncu-rep" --page details > "$OUT/ncu/$c.details.txt" 2>&1
    grep -E "^  [a-zA-Z_].*\(|Duration|SM Frequency|DRAM Throughput|Compute \(SM\) Throughput|Memory Throughput|L2 Hit Rate|Achieved Occupancy|Registers Per|Grid Size|Block Size|Issue Slots Busy|Executed Ipc Active" \
      "$OUT/ncu/$c.details.txt" | head -20
  done
  tar czf "$OUT/ncu.tgz" -C "$OUT" ncu && rm -rf "$OUT/ncu"
fi
ls -la "$OUT"
