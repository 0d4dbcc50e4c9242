#!/usr/bin/env bash
# ffn_gated / gemm_a16w16_gated on the H200, one call: gpu tests, tune the gated GEMM for the
# Llama-3 8B / 70B FFNs, install the tuned tables, then bench ffn_gated (CUDA graph + eager)
# and the gated GEMM alone against the torch sequence, with the issue's geometric means.
# Usage (repo root): GEMMKIT_GIT_SHA=<sha>-dirty bash benchmarks/run_h200_ffn.sh   [SKIP_TUNE=1] [SKIP_TESTS=1]
set -u
OUT=${OUT:-./h200_out}; mkdir -p "$OUT/logs"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/logs/env.txt"
M_TUNE=${M_TUNE:-1,16,32,64,128,256,1024,4096}

if [ -z "${SKIP_TESTS:-}" ]; then
  timeout ${TEST_S:-60} python3 -m pytest -q -m gpu tests/test_gpu_ffn.py 2>&1 | tail -15 | tee "$OUT/logs/gpu_tests.txt"
fi

if [ -z "${SKIP_TUNE:-}" ]; then
  # Resume from the committed progress log: the tuner skips what is already measured.
  mkdir -p "$OUT/tune" && cp benchmarks/results/h200/tune/a16w16_gated_tune_progress.jsonl "$OUT/tune/tune_progress.jsonl"
  for model in llama3-8b llama3-70b; do
    timeout ${TUNE_S:-110} python3 -m gemmkit tune --op a16w16_gated --model $model -m "$M_TUNE" --out "$OUT/tune" \
      --max-candidates ${CANDS:-20} --rep-ms 20 2>&1 | grep -v Warn | tee -a "$OUT/logs/tune.log" | tail -8
  done
  # tables from every measurement so far (also when a timeout cut a tune short)
  python3 -m gemmkit tune --op a16w16_gated --tables-from "$OUT/tune/tune_progress.jsonl" --out "$OUT/tune" --arch sm_90
  # GROUP_SIZE_M = 8 where the tuned M fits one M tile: a no-op at that M (one tile row, so the
  # tuner's pick there is random), but the bucket also serves larger M, where GROUP_SIZE_M = 1
  # walks every N tile of tile row 0 before row 1 and reads each weight tile from HBM once per
  # tile row (run 1: ffn_gated 8B at M = 32, bucket tuned at M = 16: 167 us vs 104 us at M = 16).
  python3 - "$OUT"/tune/sm_90/A16W16_GATED-*.json <<'PY'
import json, re, sys
for path in sys.argv[1:]:
    table = json.load(open(path))
    for bucket, cfg in table.items():
        m = re.match(r"M_GEQ_(\d+)$", bucket)
        if m and int(m.group(1)) <= cfg["BLOCK_SIZE_M"] and cfg["GROUP_SIZE_M"] < 8:
            cfg["GROUP_SIZE_M"] = 8
    open(path, "w").write(json.dumps(table, indent=1) + "\n")
PY
  cp "$OUT"/tune/sm_90/A16W16_GATED-*.json gemmkit/configs/sm_90/ && mkdir -p "$OUT/tables" && cp "$OUT"/tune/sm_90/*.json "$OUT/tables/"
fi

timeout ${BENCH_S:-240} python3 - "$OUT" <<'EOF' 2>&1 | grep -v Warn | tee "$OUT/logs/bench.log" | tail -45
import json, math, sys
from gemmkit.bench import run_gpu

out = sys.argv[1]
MS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 2048, 4096, 8192]
MODELS = {"llama3-8b": (14336, 4096), "llama3-70b": (28672, 8192)}  # (I, hidden) = gate_up_proj (2I, hidden)
shapes = [(f"{name} ffn", m, n, k) for name, (n, k) in MODELS.items() for m in MS]


def geo(rows, pred):
    r = [x["ratio"] for x in rows if pred(x["M"]) and x.get("ratio")]
    return math.exp(sum(map(math.log, r)) / len(r)) if r else None


def summary(rows):
    return {"geomean_ratio_M_le_256": geo(rows, lambda m: m <= 256),
            "geomean_ratio_M_ge_1024": geo(rows, lambda m: m >= 1024), "rows": len(rows)}


def run(op, graph, path):
    res = run_gpu(shapes, "bf16", json_path=path, op=op, cuda_graph=graph, rep_ms=60 if graph else 100)
    res["summary"] = summary(res["rows"])
    return res


g = run("ffn_gated", True, f"{out}/ffn_gated_graph.json")
e = run("ffn_gated", False, f"{out}/ffn_gated_eager.json")
merged = dict(g, method=g["method"] + " | eager rows: " + e["method"],
              summary={"cuda_graph": g["summary"], "eager": e["summary"]}, rows=g["rows"] + e["rows"])
json.dump(merged, open(f"{out}/ffn_gated.json", "w"), indent=1)
print("SUMMARY ffn_gated", json.dumps(merged["summary"]))
a = run("a16w16_gated", True, f"{out}/a16w16_gated.json")
json.dump(a, open(f"{out}/a16w16_gated.json", "w"), indent=1)
print("SUMMARY a16w16_gated (graph)", json.dumps(a["summary"]))

# What-if for the lead's A16W16 tables (not shipped here): the down projection's small-M buckets
# with GROUP_SIZE_M = 1 at M values with two or more tile rows, against GROUP_SIZE_M = 8.
from gemmkit import configs as _configs
down = [(f"{name} down_proj", m, k, n) for name, (n, k) in MODELS.items() for m in (32, 128)]
over = {}
for _l, m, n, k in down:
    cfg, _src = _configs.select("a16w16", "sm_90", m, n, k)
    over[(m, n, k)] = dict(cfg, GROUP_SIZE_M=8)
t = run_gpu(down, "bf16", op="a16w16", cuda_graph=True, rep_ms=60)
o = run_gpu(down, "bf16", op="a16w16", cuda_graph=True, rep_ms=60, configs=over)
json.dump({"a16w16_down_table": t, "a16w16_down_group8": o}, open(f"{out}/a16w16_down_group8.json", "w"), indent=1)
EOF
cd "$OUT" && tar czf tune.tgz tune 2>/dev/null && rm -rf tune; ls "$OUT"
