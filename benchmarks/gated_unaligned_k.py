"""Unaligned K on the GPU for the gated GEMM: gemm_a16w16_gated where x's and w's rows are not 16-byte multiples
(K % 8 != 0), as served (M <= 16: gemm_rows_kernel reading w where it lies + the gated reduce; to
dispatch.ROWS_TMA_MAX_M where x's copies are few: gemm_rows_tma, its class-major partials summed into act(g) * u by
its rows_reduce_kernel (I % 8 != 0: partials in y's order + the gated reduce); else the TMA kernel on
padded copies, ops/dispatch.py `gated`), against the copy path (`copy`: gemm_rows_tma turned off), the pointer kernel
(the copies turned off too), the torch sequence (matmul, chunk, silu(g) * u), gemm_a16w16 + the same elementwise, and
the served call at K rounded up to 8 (the aligned shape's speed); at M <= 16 also gemm_rows_tma (`rows_tma`: its
class-major partials into rows_reduce_kernel's act(g) * u). Same process,
CUDA-graph replay, inputs rotated past the L2, each in ABBA order.

    PYTHONPATH=. python3 benchmarks/gated_unaligned_k.py benchmarks/results/<gpu>/gated_unaligned_k.json"""
import argparse
import json

import torch
import torch.nn.functional as F

import gemmkit
from gemmkit import bench, callplan
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import dispatch as D

SHAPES = [(1, 4096, 4095), (4, 4096, 4095), (16, 4096, 4095), (64, 4096, 4095), (256, 4096, 4095),
          (1024, 4096, 4095), (4096, 4096, 4095), (1, 14336, 4095), (16, 5000, 7001), (3000, 5000, 7001),
          (128, 2880, 2881), (17, 4096, 4095), (32, 14336, 4095), (128, 14336, 4095), (48, 8192, 5119)]


def vendor(x, w):
    g, u = torch.matmul(x, w.T).chunk(2, dim=-1)
    return F.silu(g) * u


def dense_then_act(x, w):
    g, u = gemmkit.gemm_a16w16(x, w).chunk(2, dim=-1)
    return F.silu(g) * u


def served(x, w):
    return gemmkit.gemm_a16w16_gated(x, w)


def copy(x, w):
    """The call without gemm_rows_tma (past M = 16: x and w copied to aligned rows)."""
    keep = D.ROWS_TMA
    D.ROWS_TMA = False
    try:
        return gemmkit.gemm_a16w16_gated(x, w)
    finally:
        D.ROWS_TMA = keep


def pointer(x, w):
    """The call without the copies or gemm_rows_tma (at M <= 16 the rows path still serves: it copies nothing)."""
    keep = D._copies_align
    D._copies_align = lambda *a: False
    try:
        return copy(x, w)
    finally:
        D._copies_align = keep


def rows_tma(x, w):
    """gemm_rows_tma's gated launch (class-major, rows_reduce_kernel) at M <= 16, where gemm_rows serves."""
    from gemmkit.kernels.triton import gemm_rows_tma
    y = torch.empty(x.shape[0], w.shape[0] // 2, device=x.device, dtype=x.dtype)
    gemm_rows_tma.launch(x, w, None, y, "silu", TARGET, gated=True)
    return y


TARGET = None


def main(path):
    global TARGET
    from gemmkit import arch
    TARGET = arch.current()
    callplan.ENABLED = False  # each call its own dispatch (`copy` and `pointer` patch it)
    rows = []
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for M, I, K in SHAPES:
        KA = (K + 7) // 8 * 8
        n = rotation_count((M + 2 * I) * KA * 2, l2)

        def make(k):
            return [(torch.randn(M, k, device="cuda", dtype=torch.bfloat16),
                     torch.randn(2 * I, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5) for _ in range(n)]
        sets, aligned = make(K), make(KA)
        x, w = sets[0]
        ref = F.silu(x.float() @ w[:I].float().T) * (x.float() @ w[I:].float().T)
        fns = {"vendor": (vendor, sets), "served": (served, sets), "copy": (copy, sets), "pointer": (pointer, sets),
               "dense_then_act": (dense_then_act, sets), "aligned": (served, aligned)}
        if M <= 16 and I % 8 == 0:  # gemm_rows' tokens: gemm_rows_tma there
            fns.update(rows_tma=(rows_tma, sets))
        err = {}
        for name, (fn, s) in fns.items():
            if name != "aligned":
                err[name] = ((fn(*s[0]).float() - ref).norm() / ref.norm()).item()
                assert err[name] < 2e-2, (M, I, K, name, err[name])
        ms = {k: [] for k in fns}
        for order in (list(fns), list(fns)[::-1]):
            for k in order:
                fn, s = fns[k]
                ms[k].append(time_graph(fn, s, 10, 30))
        us = {k: sum(v) / len(v) * 1e3 for k, v in ms.items()}
        row = {"M": M, "I": I, "K": K, "us": us, "ratio_vs_vendor": {k: us["vendor"] / us[k] for k in us if k != "vendor"},
               "served_vs_aligned": us["aligned"] / us["served"], "served_vs_copy": us["copy"] / us["served"],
               "rel_err_vs_fp32": err}
        rows.append(row)
        print(f"{M:5d} {I:6d} {K:5d}  " + "  ".join(f"{k} {v:.1f}" for k, v in us.items())
              + f"  (us)  served {row['ratio_vs_vendor']['served']:.2f}x vendor, "
              f"{row['served_vs_aligned']:.0%} of aligned, {row['served_vs_copy']:.2f}x copy",
              flush=True)
        if path:
            json.dump({**bench.stamp(),
                       "method": "CUDA-graph replay, inputs rotated past the L2, ABBA (each the mean of its two)",
                       "rows": rows}, open(path, "w"), indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="?", help="write the rows (stamped) to this path")
    main(ap.parse_args().json)
