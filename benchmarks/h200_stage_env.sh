# Sourced by the staged device scripts (run_h200_s7.sh, run_h200_s8.sh): $OUT, PYTHONPATH, `has STAGE_NAME`
# (is it in $STAGE?), and env.txt under $OUT (GPU, driver, clocks, versions, date, stages, git sha).
OUT=${OUT:-./h200_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
has() { case " ${STAGE:-} " in *" $1 "*) return 0;; esac; return 1; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)'
  date -u; echo "STAGE: ${STAGE:-} sha: ${GEMMKIT_GIT_SHA:-}"; } 2>&1 | tee "$OUT/env.txt"
# gpu_tests LOG [pytest args...]: the gpu-marked tests (8 workers, 300 s a test, 500 s in all), output to $OUT/LOG.
# bs_sweep NAME CANDIDATES PASSES: sweep_batched.py on the block-scale op, DeepSeek-V3's six (N, K) rows (BS_NK) at
# M = BS_MS (4096), PASSES passes unless $PASSES is set; output $OUT/NAME$TAG.{json,log}.
bs_sweep() { local name=$1 cands=$2 passes=$3 SH="" nk m
  for nk in ${BS_NK:-2112x7168 24576x1536 32768x512 7168x16384 4096x7168 7168x2048}; do
    for m in ${BS_MS:-4096}; do SH="$SH${SH:+,}1x${m}x$nk"; done; done
  timeout 500 python3 benchmarks/sweep_batched.py --op a8w8_blockscale --dtype fp8 --candidates "$cands" --shapes "$SH" \
    --passes ${PASSES:-$passes} --rep-ms ${REP_MS:-30} --json "$OUT/$name${TAG:-}.json" 2>&1 \
    | grep -v Warn | tee "$OUT/$name${TAG:-}.log" | tail -60; }
gpu_tests() { local log=$1; shift
  timeout 500 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 --timeout 300 "$@" 2>&1 | tee "$OUT/$log" | tail -12; }
