#!/usr/bin/env bash
# Session 6 on the H200 (issue 4, block-scale loader; issue 7, ncu of the coop kernels).
#   STAGE=ab   bash benchmarks/run_h200_s6.sh   smoke (hang guard), fp8 Gluon gpu tests, then the loader A/B
#                                               (benchmarks/blockscale_coop.py --ab: before / after / rowcol,
#                                               3 alternating rounds) and the block-scale rows vs bf16
#   STAGE=ncu  bash benchmarks/run_h200_s6.sh   one launch each of the cases in benchmarks/ncu_once.py under
#                                               ncu --set full (--clock-control none): details + top stalls
# STAGE=tests: the whole gpu suite; STAGE=bench: issue 4 rows (bench a8w8_blockscale / a8w8, blockscale_coop.py).
# BEFORE=path of the kernel module before the change (a copy of hopper_pingpong_fp8.py: on this machine
#   `git show 6d8d8e0:gemmkit/kernels/gluon/hopper_pingpong_fp8.py > .exp/hopper_pingpong_fp8_before.py`, then
#   carry .exp: the device copy has no .git). The ablation variants of a8w8_blockscale_loader_variants.json were
#   .exp copies of the kernel; each is described in that JSON (the committed ones are 35ae5a4 and 8005d02).
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
BEFORE=${BEFORE:-.exp/hopper_pingpong_fp8_before.py}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,driver_version --format=csv | tee -a "$OUT/gpu.txt"
t0=$(date +%s)
if [ "${STAGE:-ab}" = tests ]; then  # the whole gpu suite
  timeout ${TEST_S:-560} python3 -m pytest -q -m gpu tests/ -p no:cacheprovider > "$OUT/pytest_gpu.log" 2>&1
  echo "pytest rc=$? ($(( $(date +%s) - t0 ))s)" | tee -a "$OUT/pytest_gpu.log"; tail -n 8 "$OUT/pytest_gpu.log"
elif [ "${STAGE:-ab}" = bench ]; then  # issue 4's rows: block scale (18 rows), fp8 squares + llama3-70b, coop vs ping-pong
  SQ="--shape 4096,4096,4096 --shape 8192,8192,8192"
  DS=""; for nk in 2112,7168 24576,1536 32768,512 7168,16384 4096,7168 7168,2048; do
    for m in 64 128 4096; do DS="$DS --shape $m,$nk"; done; done
  timeout 150 python3 -m gemmkit bench --op a8w8_blockscale --cuda-graph $DS --json "$OUT/a8w8_blockscale.json" \
    > "$OUT/bench_blockscale.log" 2>&1; echo "blockscale rc=$? ($(( $(date +%s) - t0 ))s)"; grep -v Warn "$OUT/bench_blockscale.log" | tail -22
  timeout 150 python3 -m gemmkit bench --op a8w8 --dtype fp8 --cuda-graph $SQ --model llama3-70b -m 256,1024,4096 \
    --json "$OUT/a8w8.json" > "$OUT/bench_a8w8.log" 2>&1; echo "a8w8 rc=$? ($(( $(date +%s) - t0 ))s)"; grep -v Warn "$OUT/bench_a8w8.log" | tail -18
  timeout 200 python3 benchmarks/blockscale_coop.py "$OUT/blockscale_coop.json" --no-models > "$OUT/coop.log" 2>&1
  echo "coop rc=$? ($(( $(date +%s) - t0 ))s)"; sed -n '/^summary a8w8/,$p' "$OUT/coop.log"
elif [ "${STAGE:-ab}" = ab ]; then
  timeout ${SMOKE_S:-60} python3 - > "$OUT/smoke.log" 2>&1 <<'PY'
import torch, gemmkit
from gemmkit.bench.ops import get
for cfg in ({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 8,
             "num_stages": 5, "backend": "gluon"},
            {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
             "num_stages": 4, "backend": "gluon"}):
    for M, N, K in ((300, 256, 1000), (4096, 4096, 7168)):
        x, w, xs, ws = get("a8w8_blockscale").inputs(M, N, K, "fp8", torch.device("cuda"))[:4]
        y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, config=cfg)
        kb = xs.shape[1]
        ref = sum((x[:, i * 128:(i + 1) * 128].float().double() @ w[:, i * 128:(i + 1) * 128].float().double().T) * xs[:, i:i + 1].double()
                  * ws[:, i].double().repeat_interleave(128)[:N][None, :] for i in range(kb))
        err = ((y.double() - ref).norm() / ref.norm()).item()
        print(cfg["num_warps"], M, N, K, "rel err", f"{err:.3g}", "OK" if err < 1e-2 else "BAD", flush=True)
PY
  rc=$?; echo "smoke rc=$rc ($(( $(date +%s) - t0 ))s)" | tee -a "$OUT/smoke.log"; cat "$OUT/smoke.log"
  if [ $rc -ne 0 ]; then exit $rc; fi
  timeout ${TEST_S:-240} python3 -m pytest -q -m gpu tests/test_gpu_blockscale_gluon.py tests/test_gpu_a8w8_gluon.py \
    tests/test_gpu_split_cat.py -p no:cacheprovider > "$OUT/pytest.log" 2>&1
  echo "pytest rc=$? ($(( $(date +%s) - t0 ))s)" | tee -a "$OUT/pytest.log"; tail -n 6 "$OUT/pytest.log"
  timeout ${BENCH_S:-300} python3 benchmarks/blockscale_coop.py "$OUT/blockscale_ab.json" --no-squares --no-models \
    --ab "$BEFORE" > "$OUT/ab.log" 2>&1
  echo "ab rc=$? ($(( $(date +%s) - t0 ))s)" | tee -a "$OUT/ab.log"; grep -E "^ab |summary|^ *4096 " "$OUT/ab.log" | head -60
else
  mkdir -p "$OUT/ncu"
  for c in ${CASES:-fp8-block-coop fp8-block-coop-old fp8-rowcol-coop fp8-scaled-mm bf16-coop-8192 bf16-cublas-8192}; do
    timeout ${NCU_S:-150} ncu --clock-control none --profile-from-start off --set full -f -o "$OUT/ncu/$c" \
      python3 benchmarks/ncu_once.py $c --before "$BEFORE" > "$OUT/ncu/$c.log" 2>&1
    echo "$c ncu rc=$? ($(( $(date +%s) - t0 ))s)"
    ncu -i "$OUT/ncu/$c.ncu-rep" --page details > "$OUT/ncu/$c.details.txt" 2>&1
    ncu -i "$OUT/ncu/$c.ncu-rep" --page source --csv --print-source sass 2>/dev/null | python3 benchmarks/ncu_top.py 40 \
      > "$OUT/ncu/$c.top.txt" 2>&1
    grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Tensor|Memory Throughput|L2 Hit|DRAM Throughput" \
      "$OUT/ncu/$c.details.txt" | head -12
    head -n 14 "$OUT/ncu/$c.top.txt" | cut -c1-160
  done
  ls -la "$OUT/ncu"
  tar czf "$OUT/ncu_txt.tgz" -C "$OUT" $(cd "$OUT" && ls ncu/*.txt ncu/*.log)
  tar czf "$OUT/ncu_rep.tgz" -C "$OUT" $(cd "$OUT" && ls ncu/*.ncu-rep) && ls -la "$OUT"/*.tgz
  rm -rf "$OUT/ncu"
fi
nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader | sed 's/^/after: /' | tee -a "$OUT/gpu.txt"
