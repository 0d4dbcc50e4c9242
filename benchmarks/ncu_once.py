"""One launch of one kernel, between cudaProfilerStart/Stop, for Nsight Compute (ncu --profile-from-start off).

Each case warms its kernel up (compile, autotuned nothing) outside the profiled range, then launches it once
inside. Cases (H200 shapes the docs discuss):

  bf16-coop-8192      gemm_a16w16, the cooperative Gluon kernel 128 x 256 x 64, 3 stages (hopper_coop.py), 8192^3
  bf16-cublas-8192    torch.matmul bf16, 8192^3
  fp8-block-coop      gemm_a8w8_blockscale, coop 128 x 128 x 128 s5 g16 (the M >= 4096 buckets), M N K = 4096 4096 7168
  fp8-block-coop-old  the same with the kernel module named by --before (a copy of hopper_pingpong_fp8.py)
  fp8-rowcol-coop     gemm_a8w8 (per-token x per-channel), the same tile in rowcol mode, same M N K
  fp8-scaled-mm       torch._scaled_mm rowwise, fast accum off, same M N K
  fp8-rowcol-table-8192  gemm_a8w8 (per-token x per-channel) with its table config, 8192^3
  fp8-scaled-mm-8192  torch._scaled_mm rowwise, fast accum off, 8192^3 (cuBLAS runs the same 128 x 128 x 128
                      cooperative tile, 6 stages: benchmarks/vendor_kernels.py)
  fp8-rowcol-down     gemm_a8w8 (per-token x per-channel) with its table config, Llama-3-70B down at M = 4096
                      (4096 x 8192 x 28672: the long-K row where the staged epilogue scales measured ~3% slower in graph replay)
  fp8-rowcol-down-old the same through the kernel of the directory --before names (fp8_kernel_ab.load_prev: that
                      revision's hopper_fp8_plan / hopper_fp8_mainloop / hopper_pingpong_fp8)
  bmm-8x1024-cublas   torch.bmm bf16, B = 8, M = N = K = 1024 (gemmkit ran 0.94-0.95x torch.bmm there)
  bmm-8x1024-gemmkit  batched_gemm_a16w16, the table config, same shape
  splitcat-m1-gemmkit gemm_split_cat, kv_b_proj (N = 32768, K = 512) at M = 1, the table config
  matmul-m1-kvb       torch.matmul bf16 at the same M, N, K (cuBLAS's M = 1 kernel)
  shape               any dense op of `gemmkit bench` on one shape, as served or the vendor's call:
                      --op a16w16|a8w8|a8w8_blockscale|... --who gemmkit|vendor --mnk M,N,K
                      (results/h200/ab/ncu_one_tile_rows.json: --metrics gpu__time_duration.sum,lts__t_bytes.sum,
                      lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__m_xbar2l1tex_read_bytes.sum,
                      sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed)

Usage on the GPU:
  ncu --clock-control none --profile-from-start off --set full -o REPORT python3 benchmarks/ncu_once.py CASE [--before PATH]
"""
import argparse
import importlib.util
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gemmkit.ops import _common as C  # noqa: E402

COOP_BF16 = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
             "num_stages": 3, "backend": "gluon"}
COOP_FP8 = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 16, "num_warps": 8,
            "num_stages": 5, "backend": "gluon"}
FP8_SHAPE = (4096, 4096, 7168)


CASES = ("bf16-coop-8192", "bf16-cublas-8192", "fp8-block-coop", "fp8-block-coop-old", "fp8-rowcol-coop",
         "fp8-scaled-mm", "fp8-rowcol-table-8192", "fp8-scaled-mm-8192", "fp8-rowcol-down", "fp8-rowcol-down-old",
         "bmm-8x1024-cublas", "bmm-8x1024-gemmkit", "splitcat-m1-gemmkit", "matmul-m1-kvb", "shape")


def _load_before(path):
    """The kernel module at `path` as gemmkit.kernels.gluon.<stem> (its relative imports resolve)."""
    name = "gemmkit.kernels.gluon." + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _fp8_block_inputs(M, N, K):
    from gemmkit.bench.ops import get

    return get("a8w8_blockscale").inputs(M, N, K, "fp8", torch.device("cuda"))[:4]


def shape_fn(op_name, who, M, N, K):
    """One call of a `gemmkit bench` op (its first dtype; fp8 for a8w8) on M, N, K: served, or the vendor's."""
    from gemmkit.bench import ops as bench_ops

    op = bench_ops.get(op_name)
    inp = op.make_inputs(M, N, K, "fp8" if op_name == "a8w8" else op.dtypes[0], "cuda")
    return (lambda: op.run(inp, None)) if who == "gemmkit" else (lambda: op.vendor(inp))


def case_fn(name, before=None):
    import gemmkit

    if name in ("fp8-rowcol-table-8192", "fp8-scaled-mm-8192"):
        from gemmkit.bench.ops import get

        x, w, xs, ws = get("a8w8").inputs(8192, 8192, 8192, "fp8", torch.device("cuda"))[:4]
        if name == "fp8-rowcol-table-8192":
            return lambda: gemmkit.gemm_a8w8(x, w, xs, ws)
        return lambda: torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16,
                                        use_fast_accum=False)
    if name.startswith("fp8-rowcol-down"):
        from gemmkit.bench.ops import get
        from gemmkit.kernels.gluon import hopper_pingpong_fp8 as new

        x, w, xs, ws = get("a8w8").inputs(4096, 8192, 28672, "fp8", torch.device("cuda"))[:4]
        if name.endswith("-old"):
            import fp8_kernel_ab

            if not before:
                raise SystemExit("fp8-rowcol-down-old needs --before DIR (fp8_kernel_ab.load_prev)")
            new.launch = fp8_kernel_ab.load_prev(before).launch  # this process runs the old kernel only
        return lambda: gemmkit.gemm_a8w8(x, w, xs, ws)
    if name.startswith("bmm-8x1024"):
        x = torch.randn(8, 1024, 1024, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(8, 1024, 1024, device="cuda", dtype=torch.bfloat16)
        if name.endswith("gemmkit"):
            return lambda: gemmkit.batched_gemm_a16w16(x, w)
        return lambda: torch.bmm(x, w.transpose(1, 2))
    if name in ("splitcat-m1-gemmkit", "matmul-m1-kvb"):
        x = torch.randn(1, 512, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(32768, 512, device="cuda", dtype=torch.bfloat16)
        y = torch.randn(1, 1, 64, device="cuda", dtype=torch.bfloat16).expand(1, 128, 64)
        if name == "matmul-m1-kvb":
            return lambda: torch.matmul(x, w.T)
        return lambda: gemmkit.gemm_split_cat(x, w, y, 128, 128)
    if name.startswith("bf16"):
        x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        if name == "bf16-coop-8192":
            return lambda: gemmkit.gemm_a16w16(x, w, config=COOP_BF16)
        return lambda: torch.matmul(x, w.T)
    M, N, K = FP8_SHAPE
    if name.startswith("fp8-block"):
        x, w, xs, ws = _fp8_block_inputs(M, N, K)
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        if name == "fp8-block-coop":
            return lambda: gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, config=COOP_FP8, out=y)
        if not before:
            raise SystemExit("fp8-block-coop-old needs --before PATH (a copy of hopper_pingpong_fp8.py before a change)")
        mod = _load_before(before)
        target = C.target_for(torch.device("cuda"))
        return lambda: mod.launch(x, w, xs, ws, None, y, COOP_FP8, target, block_shape=(128, 128))
    from gemmkit.bench.ops import get

    x, w, xs, ws = get("a8w8").inputs(M, N, K, "fp8", torch.device("cuda"))[:4]
    if name == "fp8-rowcol-coop":
        return lambda: gemmkit.gemm_a8w8(x, w, xs, ws, config=COOP_FP8)
    return lambda: torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16, use_fast_accum=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", choices=CASES, metavar="CASE", help="one of the cases listed above")
    ap.add_argument("--before", help="the older kernel: a hopper_pingpong_fp8.py copy (fp8-block-coop-old) or a "
                                     "directory of that revision's kernel files (fp8-rowcol-down-old)")
    ap.add_argument("--op", default="a16w16", help="shape: the op (a `gemmkit bench --op` name)")
    ap.add_argument("--who", choices=("gemmkit", "vendor"), default="gemmkit", help="shape: whose call")
    ap.add_argument("--mnk", help="shape: M,N,K")
    args = ap.parse_args()
    name = args.case
    if name == "shape":
        if not args.mnk:
            raise SystemExit("shape needs --mnk M,N,K")
        fn = shape_fn(args.op, args.who, *map(int, args.mnk.split(",")))
    else:
        fn = case_fn(name, args.before)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    fn()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(f"{name}: profiled one launch")


if __name__ == "__main__":
    main()
