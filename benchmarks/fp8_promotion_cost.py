"""What the fp8 accumulator promotion costs on sm_90 (docs/kernels/gemm_a8w8.md, "Precision").

Times gemm_a8w8 (fp8) at a few shapes with the kernel's PROMOTE_K (max_num_imprecise_acc)
forced to: 128 (what gemmkit ships), BLOCK_K = 256 (promote every 256 products), and None
(Triton's sm_90 default: never promote; the tensor cores' reduced-precision accumulator carries
the whole K) -- with the error against an fp32 reference for each, and torch._scaled_mm
(use_fast_accum False and True) in the same process. An experiment, not a shipped mode.
Usage on the GPU: PYTHONPATH=. python benchmarks/fp8_promotion_cost.py OUT.json
"""
import json
import sys

import torch

import gemmkit
from gemmkit.bench.ops import get
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import _common as C
from gemmkit.ops import _gemm as G


def cfg(bm, bn, bk, w, s):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "num_warps": w,
            "num_stages": s, "tma": True, "persistent": True}


def main(path):
    dev = torch.device("cuda")
    target = C.target_for(dev)
    bop = get("a8w8")
    original = G.constexprs
    rows = []
    for M, N, K in [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 8192, 28672)]:
        sets = [bop.inputs(M, N, K, "fp8", dev) for _ in range(rotation_count((M * K + N * K) + 2 * M * N, target.l2_bytes))]
        x, w, xs, ws = sets[0]
        ref = (x.float() @ w.float().T) * xs * ws
        for fast in (False, True):
            ms = time_graph(lambda x, w, xs, ws: torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16,
                                                                    use_fast_accum=fast), sets, rep_ms=60)
            y = torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.float32, use_fast_accum=fast)
            err = ((y - ref).norm() / ref.norm()).item()
            rows.append({"M": M, "N": N, "K": K, "impl": f"torch._scaled_mm fast_accum={fast}", "ms": ms,
                         "tflops": 2 * M * N * K / ms / 1e9, "rel_err_fp32_out": err})
            print(rows[-1], flush=True)
        for c in (cfg(128, 128, 128, 8, 4), cfg(128, 128, 256, 8, 3), cfg(128, 256, 128, 8, 3)):
            for promote in ("128", "BLOCK_K", None):
                def patched(*a, _p=promote, **k):
                    ce = original(*a, **k)
                    ce["PROMOTE_K"] = None if _p is None else (ce["BLOCK_K"] if _p == "BLOCK_K" else 128)
                    return ce
                G.constexprs = patched
                try:
                    y = gemmkit.gemm_a8w8(x, w, xs, ws, out_dtype=torch.float32, config=c)
                    err = ((y - ref).norm() / ref.norm()).item()
                    ms = time_graph(lambda x, w, xs, ws: gemmkit.gemm_a8w8(x, w, xs, ws, config=c), sets, rep_ms=60)
                    rows.append({"M": M, "N": N, "K": K, "impl": "gemmkit", "config": c, "promote": promote, "ms": ms,
                                 "tflops": 2 * M * N * K / ms / 1e9, "rel_err_fp32_out": err})
                except Exception as e:
                    rows.append({"M": M, "N": N, "K": K, "impl": "gemmkit", "config": c, "promote": promote,
                                 "error": f"{type(e).__name__}: {str(e)[:200]}"})
                finally:
                    G.constexprs = original
                print(rows[-1], flush=True)
        del sets
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows},
              open(path, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
