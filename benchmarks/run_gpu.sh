#!/usr/bin/env bash
# One GPU run with named stages, from the repository root on a CUDA machine (torch and Triton installed):
#
#   bash benchmarks/run_gpu.sh [stage ...]        (no stage: env tests)
#
#   env        GPU, driver, clocks, power limit, torch / Triton / CUDA versions, date, git sha -> env.txt
#   tests      every gpu-marked test (pytest -m gpu), in parallel workers where pytest-xdist is there -> tests.log;
#              GPU_TESTS="path[::name] ..." runs only those (a cold compile cache makes the whole suite ~6-7 minutes)
#   sanitize   compute-sanitizer memcheck over every kernel family (tests/kernels/test_sanitizer.py) -> sanitize.log
#   large      the >= 2**31-element operand tests (tests/kernels/test_large_offsets.py, ~4 GiB weights) -> large.log
#   overhead   host time per eager call against torch (benchmarks/overhead.py) -> overhead.txt
#   bench      gemm_a16w16 against cuBLAS, CUDA-graph replay (gemmkit bench) -> a16w16_graph.json
#   a16w16     the model sweeps of benchmarks/results/<gpu>/: every layer of every model at M = 1-64 and
#              M = 256-4096, plus the 4096^3 / 8192^3 / 16384^3 squares -> a16w16_decode_graph.json,
#              a16w16_models_geq256_graph.json (+ .log each)
#   fp8        gemm_a8w8 fp8 and int8, gemm_a8w8_blockscale, each its op's default rows; FP8_PASSES=N (default 1)
#              passes, each its own process -> a8w8.json, a8w8_int8.json, a8w8_blockscale.json, passes/*_passN.json
#   family     afp4wfp4, batched (B = 8 and 64), a16w16_gated and ffn_gated (Llama-3 8B / 70B), split_cat (bf16
#              and fp8 block scale) -> one JSON per op and model (the committed files merge some of them)
#   floor      the memory floor of the decode rows (benchmarks/read_floor.py) -> read_floor.json
#   vendor     which kernels cuBLAS launches on the weak rows (benchmarks/vendor_kernels.py) -> vendor_kernels.json
#   heldout    the config model on the held-out model families (benchmarks/config_model.py: model_configs.json entries
#              marked untuned, M = 128-4096, odd sizes) for HELDOUT_OPS (default a16w16 a8w8 a8w8_blockscale)
#              -> config_model_OP.json (+ .log); then the tuned families at M between their tables' buckets
#              (80, 128, 200) -> config_model_tuned_OP.json
#   models     issue 32's suites: every layer of every model (tuned families and held-out ones) at M = 1-8192 plus odd
#              sizes, with the roofline (gemmkit bench --roofline), for MODELS_OPS (default a16w16 a8w8 a8w8_blockscale
#              a8w8_int8; a16w16_gated and ffn_gated run every model's gate_up layer), in two processes an op (M <= 128 with the odd sizes, M >= 256) -> models/OP_small.json,
#              models/OP_large.json; benchmarks/models_merge.py makes benchmarks/results/<gpu>/OP_models.json of them
#   random     seeded random shapes no table or rule was fitted on (gemmkit bench --random: RANDOM_SEED, default
#              20261128, RANDOM_COUNT 48) for MODELS_OPS, with the roofline -> OP_random.json (+ .log)
#   tp         2 GPUs (nvidia-h100-x2 / h200-x2): the tensor-parallel tests (tests/nn/test_parallel_gpu.py) -> tp_tests.log,
#              then benchmarks/tp.py under torchrun (Llama-3-70B MLP / qkv / o_proj, TP_M, default 1,16,64,1024,4096,8192;
#              TP_DTYPES, default bf16,fp8,fp8_block) -> tp.json, tp.log
#   unaligned  K % 8 != 0 (bf16): benchmarks/rows_tma.py over ROWS_SETS (default "small-m small-m-heldout default
#              unswapped": M = 2-16 fitted and held out, 17-512, past 64 tokens; "share" (x's copies 0.30-0.51 of w)
#              on request; each its own rows_tma_SET.json,
#              `default` rows_tma.json; ~7-8 minutes in all on an H100), gated_unaligned_k.py
#              -> gated_unaligned_k.json, kernel_breakdown.py -> kernel_breakdown.json; one log, unaligned.log
#   copies     unaligned K on the operand copies against the pointer kernel on the operands as given, the vendor beside
#              (benchmarks/unaligned_k.py: gemm_a16w16 / gemm_a8w8 past the rows kernels' tokens, batched_gemm_a16w16
#              at B = 8-64) -> unaligned_k.json (+ .log)
#   unaligned8 K % 16 != 0 for gemm_a8w8 (fp8 / int8) at M = 1-256: gemm_rows_tma / gemm_rows against each other,
#              the copy, the aligned K and _scaled_mm there (benchmarks/rows_8bit.py) -> rows_8bit.json (+ .log)
#   ncu        one launch per NCU_CASES case under Nsight Compute (benchmarks/ncu_once.py; default
#              "fp8-rowcol-table-8192 fp8-scaled-mm-8192") -> ncu_CASE.ncu-rep, ncu_CASE.details.txt
#
# The CUDA-graph stages take minutes each (a16w16 the longest): on a machine with a per-command limit, run
# them one per call. STAGE_TIMEOUT (default 540 s) bounds each command. The device tool brings back at most 8 files a
# call: `models` writes 4 an op (two JSON, two logs), so MODELS_OPS names at most two ops a call (with nothing else
# in $OUT), or the rest is lost.
#
# Output goes to $OUT (the device tool's folder) or ./gpu_out. Each stage's log ends with its summary.
#
# TRITON_PIECES=DIR runs every stage under the Triton release benchmarks/triton_pieces.sh wrote to DIR (its two pieces
# carried to this machine, p1 in an earlier call): joined, checked, unpacked under /tmp, first on PYTHONPATH.
set -u
OUT=${OUT:-./gpu_out}; mkdir -p "$OUT"
if [ -n "${TRITON_PIECES:-}" ]; then
  site=/tmp/triton-site-$(basename "$TRITON_PIECES")
  if [ ! -d "$site/triton" ]; then
    cat "$TRITON_PIECES"/p1/part00 "$TRITON_PIECES"/p2/part01 > /tmp/triton-pieces.tar.xz || exit 1
    [ "$(sha256sum < /tmp/triton-pieces.tar.xz | cut -d' ' -f1)" = "$(cat "$TRITON_PIECES"/p2/sha256)" ] \
      || { echo "TRITON_PIECES: sha256 mismatch (a piece missing or stale)"; exit 1; }
    mkdir -p "$site" && tar -xJf /tmp/triton-pieces.tar.xz -C "$site" || exit 1
  fi
  export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
STAGES=${*:-env tests}
has() { case " $STAGES " in *" $1 "*) return 0;; esac; return 1; }
workers() { python3 -c 'import xdist' 2>/dev/null && echo "-n ${PYTEST_WORKERS:-8}"; }
# -v: each test's outcome as it ends, so a stage its timeout cuts off still names what failed (-rf: why, at the end)
pytest_gpu() { local log=$1; shift
  timeout "${STAGE_TIMEOUT:-540}" python3 -m pytest -m gpu -v -rf -p no:cacheprovider "$@" 2>&1 | tee "$OUT/$log" | tail -15; }

if has env; then
  { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,memory.total --format=csv
    python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)'
    date -u; echo "stages: $STAGES  git: ${GEMMKIT_GIT_SHA:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  } 2>&1 | tee "$OUT/env.txt"
fi
# shellcheck disable=SC2046
has tests && pytest_gpu tests.log $(workers) ${GPU_TESTS:---ignore=tests/kernels/test_sanitizer.py --ignore=tests/kernels/test_large_offsets.py}
# shellcheck disable=SC2046
has sanitize && pytest_gpu sanitize.log $(workers) tests/kernels/test_sanitizer.py
has large && pytest_gpu large.log tests/kernels/test_large_offsets.py
has overhead && python3 benchmarks/overhead.py 2>&1 | tee "$OUT/overhead.txt" | tail -20
has bench && python3 -m gemmkit bench --cuda-graph --json "$OUT/a16w16_graph.json" 2>&1 | tee "$OUT/bench.log" | tail -20

# gb NAME [gemmkit bench options]: one CUDA-graph bench into $OUT/NAME.json, its output in $OUT/NAME.log
gb() { local name=$1; shift; mkdir -p "$(dirname "$OUT/$name")"
  timeout "${STAGE_TIMEOUT:-540}" python3 -m gemmkit bench --cuda-graph --json "$OUT/$name.json" "$@" 2>&1 \
    | tee "$OUT/$name.log" | tail -8; }
if has a16w16; then
  gb a16w16_decode_graph --model all -m 1,16,32,64
  gb a16w16_models_geq256_graph --model all -m 256,512,1024,2048,4096 \
     --shape 4096,4096,4096 --shape 8192,8192,8192 --shape 16384,16384,16384
fi
if has fp8; then
  for p in $(seq 1 "${FP8_PASSES:-1}"); do
    sfx=; [ "${FP8_PASSES:-1}" -gt 1 ] && sfx=passes/ && tag=_pass$p || tag=
    gb "${sfx}a8w8$tag" --op a8w8 --dtype fp8
    gb "${sfx}a8w8_blockscale$tag" --op a8w8_blockscale
  done
  gb a8w8_int8 --op a8w8 --dtype int8
fi
if has family; then
  gb afp4wfp4 --op afp4wfp4
  gb batched_a16w16_b8 --op batched_a16w16 --batch 8 --shape 512,512,512 --shape 1024,1024,1024 --shape 2048,2048,2048
  gb batched_a16w16_b64 --op batched_a16w16 --batch 64 --shape 512,512,512 --shape 1024,1024,1024 --shape 2048,2048,2048
  gb batched_a8w8 --op batched_a8w8 --batch 8 --shape 1024,1024,1024 --shape 2048,2048,2048
  for m in llama3-8b llama3-70b; do  # --model takes one model (or all)
    gb "a16w16_gated_$m" --op a16w16_gated --model "$m" -m 1,16,64,256,1024,4096,8192
    gb "ffn_gated_${m}_graph" --op ffn_gated --model "$m" -m 1,2,4,8,16,32,64,128,256
    gb "ffn_gated_large_$m" --op ffn_gated --model "$m" -m 1024,2048,4096,8192
  done
  gb split_cat --op split_cat --model deepseek-v3 -m 1,16,64,128,512,1024,4096,8192,16384
  gb split_cat_blockscale --op a8w8_blockscale_split_cat --model deepseek-v3 -m 1,16,64,128,512,1024,4096,8192,16384
fi
has floor && python3 benchmarks/read_floor.py --json "$OUT/read_floor.json" 2>&1 | tee "$OUT/read_floor.log" | tail -12
if has unaligned; then
  for set in ${ROWS_SETS:-small-m small-m-heldout default unswapped}; do
    name=rows_tma_${set//-/_}; flag=--$set
    case $set in default) name=rows_tma; flag=;; small-m-heldout) flag="--small-m --heldout";; esac
    # shellcheck disable=SC2086
    timeout "${STAGE_TIMEOUT:-540}" python3 benchmarks/rows_tma.py $flag "$OUT/$name.json" >> "$OUT/unaligned.log" 2>&1
  done
  timeout "${STAGE_TIMEOUT:-540}" python3 benchmarks/gated_unaligned_k.py "$OUT/gated_unaligned_k.json" \
    >> "$OUT/unaligned.log" 2>&1
  timeout "${STAGE_TIMEOUT:-540}" python3 benchmarks/kernel_breakdown.py "$OUT/kernel_breakdown.json" \
    >> "$OUT/unaligned.log" 2>&1
  tail -40 "$OUT/unaligned.log"
fi
has copies && timeout "${STAGE_TIMEOUT:-540}" python3 benchmarks/unaligned_k.py "$OUT/unaligned_k.json" 2>&1 \
  | tee "$OUT/unaligned_k.log" | tail -8
has unaligned8 && timeout "${STAGE_TIMEOUT:-540}" python3 benchmarks/rows_8bit.py "$OUT/rows_8bit.json" 2>&1 \
  | tee "$OUT/rows_8bit.log" | tail -8
has vendor && python3 benchmarks/vendor_kernels.py --json "$OUT/vendor_kernels.json" 2>&1 | tee "$OUT/vendor_kernels.log" | tail -12
if has heldout; then
  for op in ${HELDOUT_OPS:-a16w16 a8w8 a8w8_blockscale}; do
    timeout "${STAGE_TIMEOUT:-540}" python3 benchmarks/config_model.py --op "$op" "$OUT/config_model_$op.json" 2>&1 \
      | tee "$OUT/config_model_$op.log" | tail -3
    timeout "${STAGE_TIMEOUT:-540}" python3 benchmarks/config_model.py --op "$op" -m 80,128,200 --no-odd \
      --models llama3-8b,llama3-70b,llama3-405b,qwen2.5-72b,mixtral-8x7b,deepseek-v3 \
      "$OUT/config_model_tuned_$op.json" 2>&1 | tee "$OUT/config_model_tuned_$op.log" | tail -3
  done
fi
if has models; then
  odd="--shape 17,5120,5120 --shape 1,4096,4095 --shape 4095,4096,4096 --shape 4096,4096,4095 --shape 3000,5000,7000 \
       --shape 1000,3000,2000 --shape 777,1536,8000 --shape 4096,256,16384"
  for op in ${MODELS_OPS:-a16w16 a8w8 a8w8_blockscale a8w8_int8}; do
    case $op in a8w8) args="--op a8w8 --dtype fp8";; a8w8_int8) args="--op a8w8 --dtype int8";; *) args="--op $op";; esac
    # shellcheck disable=SC2086
    gb "models/${op}_small" $args --roofline --rep-ms "${MODELS_REP_MS:-50}" --model all -m 1,16,32,64,128 $odd
    # shellcheck disable=SC2086
    gb "models/${op}_large" $args --roofline --rep-ms "${MODELS_REP_MS:-50}" --model all -m 256,512,1024,2048,4096,8192
  done
fi
if has random; then
  for op in ${MODELS_OPS:-a16w16 a8w8 a8w8_blockscale a8w8_int8}; do
    case $op in a8w8) args="--op a8w8 --dtype fp8";; a8w8_int8) args="--op a8w8 --dtype int8";; *) args="--op $op";; esac
    # shellcheck disable=SC2086
    gb "${op}_random" $args --roofline --rep-ms "${RANDOM_REP_MS:-20}" --random "${RANDOM_COUNT:-48}" \
      --seed "${RANDOM_SEED:-20261128}"
  done
fi
if has tp; then
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1  # NVLink multicast stays off
  pytest_gpu tp_tests.log tests/nn/test_parallel_gpu.py
  timeout "${STAGE_TIMEOUT:-540}" torchrun --nproc-per-node 2 benchmarks/tp.py --M "${TP_M:-1,16,64,1024,4096,8192}" \
    --dtypes "${TP_DTYPES:-bf16,fp8,fp8_block}" --json "$OUT/tp.json" 2>&1 | tee "$OUT/tp.log" | tail -30
fi
if has ncu; then
  for c in ${NCU_CASES:-fp8-rowcol-table-8192 fp8-scaled-mm-8192}; do
    timeout "${STAGE_TIMEOUT:-540}" ncu --clock-control none --profile-from-start off --set full -f -o "$OUT/ncu_$c" \
      python3 benchmarks/ncu_once.py "$c" 2>&1 | tail -3
    ncu -i "$OUT/ncu_$c.ncu-rep" --page details > "$OUT/ncu_$c.details.txt" 2>&1
    ncu -i "$OUT/ncu_$c.ncu-rep" --page source --csv --print-source sass 2>/dev/null | python3 benchmarks/ncu_top.py 30 \
      > "$OUT/ncu_$c.top.txt" 2>&1
  done
fi
exit 0
