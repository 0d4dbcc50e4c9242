"""The config model (gemmkit/configs/model.py) on shapes no table was tuned for: gemm_a16w16 with the default
bucket chosen and fitted for the shape (model.choose), and as the bucket is, against torch.matmul in the same process; CUDA-graph replay,
inputs rotated past the L2, each mode twice (the better round). Layers of models the tables never saw (GPT-OSS-120B,
Mistral-Large-2) and odd sizes. Rows the model leaves alone time the same config twice: the noise floor.

    PYTHONPATH=. python3 benchmarks/config_model.py benchmarks/results/<gpu>/config_model.json"""
import argparse

ARGS = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ARGS.add_argument("json", nargs="?", help="write the rows (stamped: device, date, versions, git sha) to this path")
ARGS = ARGS.parse_args()

import datetime
import json
import os
import subprocess
import sys

import torch
import triton

sys.path.insert(0, ".")
import gemmkit  # noqa: E402
from gemmkit import arch, callplan, configs  # noqa: E402
from gemmkit.bench.timing import rotation_count, time_graph  # noqa: E402
from gemmkit.configs import model  # noqa: E402

UNTUNED_MODELS = ("gpt-oss-120b", "mistral-large-2")  # in gemmkit/bench/model_configs.json; no table was tuned on them
with open("gemmkit/bench/model_configs.json") as f:
    _MODELS = json.load(f)["models"]
LAYERS = {m: _MODELS[m]["layers"] for m in UNTUNED_MODELS}  # (N, K) of each nn.Linear weight
M_VALUES = (128, 256, 1024, 4096)
ODD = [("odd", 3000, 5000, 7000), ("odd", 1000, 3000, 2000), ("odd", 777, 1536, 8000), ("odd", 4096, 256, 16384)]

dev = "cuda"
target = arch.get("sm_90").with_cus(torch.cuda.get_device_properties(0).multi_processor_count)
L2 = torch.cuda.get_device_properties(0).L2_cache_size
real_choose = model.choose
rows = []
shapes = [(f"{m} {layer}", M, n, k) for m, layers in LAYERS.items() for layer, (n, k) in layers.items()
          for M in M_VALUES] + ODD
for label, M, N, K in shapes:
    fitted, source = configs.serve("a16w16", target, M, N, K)
    changed = "fitted" in source
    sets = [(torch.randn(M, K, device=dev, dtype=torch.bfloat16), torch.randn(N, K, device=dev, dtype=torch.bfloat16))
            for _ in range(rotation_count((M + N) * K * 2, L2))]
    res = {}
    for mode in ("model", "bucket", "vendor", "model2", "bucket2"):
        model.choose = real_choose if mode.startswith("model") else (lambda op, cfg, *a: (cfg, []))
        callplan.clear()
        fn = (lambda x, w: torch.matmul(x, w.t())) if mode == "vendor" else (lambda x, w: gemmkit.gemm_a16w16(x, w))
        if mode in ("model", "bucket"):  # each served config's result, against fp32, before it is timed
            x, w = sets[0]
            ref = x.float() @ w.float().t()
            err = ((fn(x, w).float() - ref).norm() / ref.norm()).item()
            assert err < 1e-2, (label, M, N, K, mode, err)
        res[mode] = time_graph(fn, sets) * 1e3
    model.choose = real_choose
    us_model, us_bucket = min(res["model"], res["model2"]), min(res["bucket"], res["bucket2"])
    row = dict(label=label, M=M, N=N, K=K, fitted=changed, source=source, model_us=round(us_model, 2),
               bucket_us=round(us_bucket, 2), vendor_us=round(res["vendor"], 2),
               ratio_model=round(res["vendor"] / us_model, 3), ratio_bucket=round(res["vendor"] / us_bucket, 3))
    rows.append(row)
    print(json.dumps(row), flush=True)

sha = os.environ.get("GEMMKIT_GIT_SHA") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                                          text=True).stdout.strip() or "unknown"
out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
       "date": datetime.date.today().isoformat(), "git_sha": sha,
       "method": "CUDA-graph replay, inputs rotated past the L2, each gemmkit mode twice (better round); "
                 "ratio = vendor_us / gemmkit_us (torch.matmul)", "rows": rows}
if ARGS.json:
    with open(ARGS.json, "w") as f:
        json.dump(out, f, indent=1)
