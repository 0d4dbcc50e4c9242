"""Which kernels does the vendor library (and gemmkit) launch for a shape, with what grid, block, registers
and shared memory? One profiled call per case under torch.profiler (Kineto's trace carries the launch
parameters); the vendor's kernel names spell its tile, ring and cluster choices (cuBLAS 13 on sm_90:
`nvjet_sm90_tst_<tile>_<BK>x<stages>_<cluster>_..._coopA`), which say what our tables would have to match.
gemmkit's rows also record the config the op serves (`config`, `config_source`: configs.serve).

Cases: the rows where gemmkit trails cuBLAS in the results under benchmarks/results/h200/ (batched torch.bmm
at B = 8 / 64, M = N = K = 512 / 1024 / 2048; kv_b_proj at M = 1; the squares; the few-tile M = 256 / 512
rows; DeepSeek N = 576 / 1536; `torch._scaled_mm` rowwise), each for the vendor and for gemmkit's table
config.

Usage (repo root, on the GPU): PYTHONPATH=. python benchmarks/vendor_kernels.py --json OUT.json [--mm M,N,K ...]
"""
import argparse
import json
import os
import tempfile


def cases(torch, gemmkit, shapes=None):
    """[(label, who, fn, served)]: served = (config, its table source) for gemmkit's rows, None for the vendor's.
    `shapes`: [(M, N, K)] bf16 GEMMs to look at instead of the default cases."""
    from gemmkit import configs
    from gemmkit.ops import _common as C

    dev = "cuda"
    bf = torch.bfloat16
    out = []
    target = C.target_for(torch.device(dev))  # the target the ops serve on this GPU

    def served(table_op, M, N, K):  # what the op runs: the table's bucket as the config model fits it to the shape
        return configs.serve(table_op, target, M, N, K)

    def mm(label, M, N, K):
        x = torch.randn(M, K, device=dev, dtype=bf)
        w = torch.randn(N, K, device=dev, dtype=bf)
        out.append((label, "vendor", lambda: torch.matmul(x, w.T), None))
        out.append((label, "gemmkit", lambda: gemmkit.gemm_a16w16(x, w), served("a16w16", M, N, K)))

    def bmm(B, S):
        x = torch.randn(B, S, S, device=dev, dtype=bf)
        w = torch.randn(B, S, S, device=dev, dtype=bf)
        label = f"bmm B={B} {S}^3"
        out.append((label, "vendor", lambda: torch.bmm(x, w.transpose(1, 2)), None))
        out.append((label, "gemmkit", lambda: gemmkit.batched_gemm_a16w16(x, w), served("batched_a16w16", S, S, S)))

    if shapes:
        for M, N, K in shapes:
            mm(f"{M}x{N}x{K}", M, N, K)
        return out
    for B in (8, 64):
        for S in (512, 1024, 2048):
            bmm(B, S)
    mm("kv_b_proj M=1", 1, 32768, 512)
    for S in (4096, 8192, 16384):
        mm(f"square {S}", S, S, S)
    mm("70b qkv M=256", 256, 10240, 8192)
    mm("8b qkv M=512", 512, 6144, 4096)
    mm("kv_a_proj M=1024", 1024, 576, 7168)
    mm("kv_a_proj M=4096", 4096, 576, 7168)
    mm("q_a_proj M=512", 512, 1536, 7168)
    for S in (4096, 8192):
        from gemmkit.bench.ops import get

        x, w, xs, ws = get("a8w8").inputs(S, S, S, "fp8", torch.device(dev))[:4]
        out.append((f"fp8 rowwise {S}^3", "vendor",
                    lambda x=x, w=w, xs=xs, ws=ws: torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws,
                                                                    out_dtype=bf, use_fast_accum=False), None))
        out.append((f"fp8 rowwise {S}^3", "gemmkit", lambda x=x, w=w, xs=xs, ws=ws: gemmkit.gemm_a8w8(x, w, xs, ws),
                    served("a8w8", S, S, S)))
    return out


def kernels_of(torch, fn):
    """[(name, dur_us, grid, block, regs, smem)] of the GPU kernels one call of fn launches."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    rows = []
    for e in trace.get("traceEvents", []):
        if e.get("cat") != "kernel":
            continue
        a = e.get("args", {})
        rows.append({"name": e.get("name", ""), "us": e.get("dur"), "grid": a.get("grid"), "block": a.get("block"),
                     "regs": a.get("registers per thread"), "smem": a.get("shared memory")})
    return rows


def main():
    import torch

    import gemmkit
    from gemmkit.bench import stamp

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--mm", nargs="+", metavar="M,N,K", help="bf16 GEMM shapes to look at instead of the default cases")
    args = ap.parse_args()
    shapes = [tuple(map(int, s.split(","))) for s in args.mm] if args.mm else None
    res = {**stamp(), "method": __doc__.split("Usage")[0].strip(), "cases": []}
    for label, who, fn, cfg in cases(torch, gemmkit, shapes):
        try:
            ks = kernels_of(torch, fn)
        except Exception as e:  # one case failing must not hide the others
            ks = [{"error": f"{type(e).__name__}: {str(e)[:200]}"}]
        res["cases"].append({"case": label, "who": who, "kernels": ks,
                             **({"config": cfg[0], "config_source": cfg[1]} if cfg else {})})
        for k in ks:
            if "error" in k:
                print(f"{label:22s} {who:8s} ERROR {k['error']}", flush=True)
                continue
            print(f"{label:22s} {who:8s} {k['us'] or 0:9.1f} us grid {k['grid']} block {k['block']} regs {k['regs']} "
                  f"smem {k['smem']}  {k['name'][:150]}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
