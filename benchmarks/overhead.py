"""Host time per eager call (microseconds), gemmkit against the torch call it replaces, in one process.

Each pair runs many back-to-back calls on a tiny problem: three interleaved rounds per side, each the best of
three runs of 1000 calls (the wall time: the host's, or the GPU's where its kernels take longer); and the host's
time alone (`host_us`: calls queued behind a GPU sleep, so none waits for the GPU). Rows: `name, gemmkit_us,
torch_us, ratio` (gemmkit over torch), `gemmkit_host_us, torch_host_us`, plus the first call of a new signature after
compilation (a new M: checks, dispatch and plan, recorded once: gemmkit/callplan.py), then a cProfile of
gemm_a16w16's repeated call and of a converted model's gemmkit.nn.Linear on a decode step's (1, 1, K) input.
Usage: PYTHONPATH=. python benchmarks/overhead.py [--json PATH]"""
import argparse
import cProfile
import json
import pstats
import time

import torch

import gemmkit
from gemmkit import callplan


def per_call_us(fn, n=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):  # best of three: the host is shared, a slow round is noise
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def host_us(fn, n=200):
    """The host's time per call alone: the calls queued behind a GPU sleep (torch.cuda._sleep) long enough that
    none of them waits for the GPU, timed before it ends; best of five."""
    for _ in range(20):
        fn()
    best = float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        torch.cuda._sleep(100_000_000)  # ~50 ms at 2 GHz: longer than n calls' host time
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
        torch.cuda.synchronize()
    return best


def rows():
    dev, bf = "cuda", torch.bfloat16
    x = torch.randn(1, 256, device=dev, dtype=bf)
    w = torch.randn(256, 256, device=dev, dtype=bf)
    out = torch.empty(1, 256, device=dev, dtype=bf)
    ptr_cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 256, "GROUP_SIZE_M": 1,
               "num_warps": 4, "num_stages": 3}
    tma_cfg = dict(ptr_cfg, tma=True)
    splitk_cfg = dict(ptr_cfg, BLOCK_SIZE_K=64, NUM_KSPLIT=2)
    f8 = torch.float8_e4m3fn
    x8, w8 = x.to(f8), w.to(f8)
    xs, ws = torch.ones(1, 1, device=dev), torch.ones(1, 256, device=dev)
    xb = torch.ones(1, 2, device=dev)
    wb = torch.ones(2, 2, device=dev)
    x_blk = torch.randn(1, 256, device=dev, dtype=bf)
    wgu = torch.randn(512, 256, device=dev, dtype=bf)
    wd = torch.randn(256, 256, device=dev, dtype=bf)
    # split-cat: D = 2 heads of S1 + S2 = 64 + 64, y (1, 2, 32)
    wsc = torch.randn(256, 256, device=dev, dtype=bf)
    ysc = torch.randn(1, 2, 32, device=dev, dtype=bf)
    xb3, wb3 = torch.randn(4, 16, 256, device=dev, dtype=bf), torch.randn(4, 256, 256, device=dev, dtype=bf)
    mm = lambda: torch.matmul(x, w.T)  # noqa: E731
    scaled = lambda: torch._scaled_mm(x8, w8.T, xs, ws, out_dtype=bf)  # noqa: E731
    bmm = lambda: torch.bmm(xb3, wb3.transpose(1, 2))  # noqa: E731
    D, S1, S2 = 2, 64, 64

    def split_cat_torch():
        c = torch.matmul(x, wsc.T).view(1, D, S1 + S2)
        return torch.cat([c[..., :S1], ysc], -1), c[..., S1:]

    # name, gemmkit call, torch name, torch call
    yield "gemm_a16w16 (table config)", lambda: gemmkit.gemm_a16w16(x, w), "torch.matmul", mm
    yield "gemm_a16w16(out=)", lambda: gemmkit.gemm_a16w16(x, w, out=out), "torch.matmul", mm
    yield "gemm_a16w16(config=pointer)", lambda: gemmkit.gemm_a16w16(x, w, config=ptr_cfg), "torch.matmul", mm
    yield "gemm_a16w16(config=tma)", lambda: gemmkit.gemm_a16w16(x, w, config=tma_cfg), "torch.matmul", mm
    yield "gemm_a16w16(config=split-K 2)", lambda: gemmkit.gemm_a16w16(x, w, config=splitk_cfg), "torch.matmul", mm
    yield ("torch.ops.gemmkit.gemm_a16w16", lambda: torch.ops.gemmkit.gemm_a16w16(x, w, None, "none", bf, ""),
           "torch.matmul", mm)
    yield "gemm_a8w8 fp8", lambda: gemmkit.gemm_a8w8(x8, w8, xs, ws), "torch._scaled_mm rowwise", scaled
    yield ("gemm_a8w8_blockscale", lambda: gemmkit.gemm_a8w8_blockscale(x8, w8, xb, wb), "torch._scaled_mm rowwise",
           scaled)
    yield ("quantize_fp8_per_token", lambda: gemmkit.quant.quantize_fp8_per_token(x_blk),
           "torch amax, div, cast", lambda: (x_blk / (x_blk.abs().amax(-1, keepdim=True) / 448)).to(f8))
    yield ("ffn_gated", lambda: gemmkit.ffn_gated(x, wgu, wd), "torch mm, silu*mul, mm",
           lambda: torch.matmul(torch.nn.functional.silu(x @ wgu[:256].T) * (x @ wgu[256:].T), wd.T))
    yield ("gemm_split_cat", lambda: gemmkit.gemm_split_cat(x, wsc, ysc, S1, S2), "torch mm, view, cat",
           split_cat_torch)
    yield "batched_gemm_a16w16", lambda: gemmkit.batched_gemm_a16w16(xb3, wb3), "torch.bmm", bmm
    # what a converted model calls (gemmkit.nn.convert): a decode step's (batch, 1, hidden) input, with and
    # without bias (Qwen2's q / k / v have one), against the torch.nn.Linear it replaced (weights without grad:
    # no autograd on either side)
    from gemmkit import nn as gnn

    x3 = torch.randn(1, 1, 256, device=dev, dtype=bf)
    for bias in (False, True):
        lin = torch.nn.Linear(256, 256, bias=bias, device=dev, dtype=bf).requires_grad_(False)
        mine = gnn.from_linear(lin, "bf16")
        yield (f"gemmkit.nn.Linear (1 x 1 x 256{', bias' if bias else ''})", (lambda m: lambda: m(x3))(mine),
               "torch.nn.Linear", (lambda m: lambda: m(x3))(lin))
    yield "gemm_a16w16 (1 x 1 x 256)", lambda: gemmkit.gemm_a16w16(x3, w), "F.linear", \
        lambda: torch.nn.functional.linear(x3, w)


def profile(title, fn, n=2000):
    """A cProfile of n repeated calls of fn (after one), the 25 costliest functions by their own time."""
    fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    torch.cuda.synchronize()
    print(f"{title}:")
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def first_call_us(n=20):
    """A new signature's first call after its kernel is compiled: M = 17, 19, 21, ..., 55, each timed once, median.
    (These M take two decode buckets' tiles and, under one tile of tokens, five boxes-of-rows specialisations
    (kernels/_host.x_boxes' X_BOXES): the first call of each of those compiles, 5 of the 20; the median is a call
    that does not.)"""
    w = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    gemmkit.gemm_a16w16(torch.randn(15, 256, device="cuda", dtype=torch.bfloat16), w)  # compile
    times = []
    for i in range(n):
        x = torch.randn(17 + 2 * i, 256, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        t = time.perf_counter()
        gemmkit.gemm_a16w16(x, w)
        times.append((time.perf_counter() - t) * 1e6)
    return sorted(times)[n // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    args = ap.parse_args()
    table = []
    for name, fn, torch_name, torch_fn in rows():
        try:
            # interleaved rounds, best of each: the shared host's slow spells hit both sides alike
            ours, theirs = float("inf"), float("inf")
            for _ in range(3):
                ours, theirs = min(ours, per_call_us(fn, 1000)), min(theirs, per_call_us(torch_fn, 1000))
            host, torch_host = host_us(fn), host_us(torch_fn)
        except Exception as e:  # noqa: BLE001 - report the row, keep measuring the others
            print(f"{name:36s} failed: {type(e).__name__}: {e}")
            continue
        table.append({"name": name, "gemmkit_us": round(ours, 2), "torch": torch_name, "torch_us": round(theirs, 2),
                      "ratio": round(ours / theirs, 3), "gemmkit_host_us": round(host, 2),
                      "torch_host_us": round(torch_host, 2)})
        print(f"{name:36s} {ours:7.1f} us   {torch_name:26s} {theirs:7.1f} us   {ours / theirs:5.2f}x"
              f"   host alone {host:5.1f} / {torch_host:5.1f} us")
    first = first_call_us()
    table.append({"name": "gemm_a16w16 first call of a new signature", "gemmkit_us": round(first, 1),
                  "torch": None, "torch_us": None, "ratio": None})
    print(f"{'first call of a new signature':36s} {first:7.1f} us")
    print("call plans:", callplan.STATS)
    x = torch.randn(1, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    profile("gemm_a16w16 on (1, 256)", lambda: gemmkit.gemm_a16w16(x, w))
    lin = gemmkit.nn.from_linear(torch.nn.Linear(256, 256, device="cuda", dtype=torch.bfloat16).requires_grad_(False),
                                 "bf16")
    x3 = x.view(1, 1, 256)
    profile("gemmkit.nn.Linear on (1, 1, 256)", lambda: lin(x3))
    if args.json:


        from gemmkit.bench import stamp

        with open(args.json, "w") as f:
            json.dump({**stamp(), "method": "gemmkit and torch interleaved, 3 rounds each of best-of-3 x 1000 "
                       "back-to-back calls, wall time / call, best round; ratio = gemmkit_us / torch_us; "
                       "*_host_us: the host alone, 200 calls queued behind a GPU sleep, best of 5",
                       "rows": table}, f, indent=1)


if __name__ == "__main__":
    main()
