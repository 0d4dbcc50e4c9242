"""Rows off 32-byte sectors (bf16, K % 16 == 8) read by a pointer kernel: `python benchmarks/offsector_probe.py OUT.json
MxNxK ...` (a GPU).

A question probe, not a gemmkit kernel: TMA box rows that start off a 32-byte sector cost our loads ~3 cycles a row
(docs/PERF.md "Unaligned K"); does a kernel that reads the same rows with 16-byte cp.async copies (each at 16-byte
alignment, K % 8 == 0) pay it too? `mm` below is a plain software-pipelined Triton GEMM (one program a tile, grouped
order); its row strides and K go through `// 8 * 8`, which tells Triton 3.6 they are multiples of 8 elements (it
ignores `tl.multiple_of` on a scalar argument), so its loads compile to 16-byte cp.async (HINT False: 2-byte loads).
Per shape, in one process, on inputs rotated past the L2, CUDA-graph replay: cuBLAS (torch.matmul), gemmkit as served
(the copy to a 128-byte pitch + TMA), gemmkit with dispatch.PITCH off (TMA on the rows as given) and `mm` on four
tiles; each result's largest error against fp64 relative to the largest product. Time a shape beside its K rounded
to 16 for the aligned speed.

`mm`, one program a tile:

        K ------------------------------>
  x   [ BM rows (wrapped mod M) x BK ] -> cp.async ring (num_stages) -> tl.dot (wgmma) -> acc (BM x BN, fp32)
  w   [ BN rows (wrapped mod N) x BK ] ->                                                  |
                                                                      y[BM x BN] bf16, masked at M, N

Constraints: bf16 x (M, K), w (N, K), y (M, N), unit stride on the last dimension; HINT needs K and both row strides
multiples of 8 (it rounds them down to one: a wrong answer otherwise); the K tail masked; BM, BN, BK powers of two
>= 16; int32 offsets within a row (K < 2**31), int64 rows. A probe: no op dispatches to it.
"""
import json
import sys

import torch
import triton
import triton.language as tl

import gemmkit
from gemmkit import bench, callplan
from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.ops import dispatch as D

TILES = {"p128x128s4w8": (128, 128, 64, 4, 8), "p128x256s3w8": (128, 256, 64, 3, 8),
         "p128x128s3w4": (128, 128, 64, 3, 4), "p64x128s5w4": (64, 128, 64, 5, 4)}  # BM, BN, BK, stages, warps
L2_BYTES = 50 * 2**20


@triton.jit
def mm(x_ptr, w_ptr, y_ptr, M, N, K, sx, sw, sy, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
       GROUP: tl.constexpr, HINT: tl.constexpr):
    pid = tl.program_id(0)
    npm = tl.cdiv(M, BM)
    width = GROUP * tl.cdiv(N, BN)
    first = pid // width * GROUP
    rows = min(npm - first, GROUP)
    pm = first + (pid % width) % rows
    pn = (pid % width) // rows
    if HINT:  # 16-byte rows: the loads become 16-byte cp.async
        sx = sx // 8 * 8
        sw = sw // 8 * 8
        K = K // 8 * 8
    rm = (pm * BM + tl.arange(0, BM)) % M
    rn = (pn * BN + tl.arange(0, BN)) % N
    rk = tl.arange(0, BK)
    xp = x_ptr + rm[:, None].to(tl.int64) * sx + rk[None, :]
    wp = w_ptr + rn[None, :].to(tl.int64) * sw + rk[:, None]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(xp, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(wp, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        xp += BK
        wp += BK
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    tl.store(y_ptr + om[:, None].to(tl.int64) * sy + on[None, :], acc.to(tl.bfloat16),
             mask=(om[:, None] < M) & (on[None, :] < N))


def probe(x, w, y, BM, BN, BK, stages, warps, hint=True):
    """y = x @ w.T by `mm` (x (M, K), w (N, K), y (M, N) bf16, unit stride on their last dimension)."""
    M, K = x.shape
    N = w.shape[0]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    mm[grid](x, w, y, M, N, K, x.stride(0), w.stride(0), y.stride(0), BM, BN, BK, 8, hint,
             num_stages=stages, num_warps=warps)
    return y


def _no_pitch(x, w):
    old, D.PITCH = D.PITCH, False
    try:
        return gemmkit.gemm_a16w16(x, w)
    finally:
        D.PITCH = old


def main(out_path, shapes):
    callplan.ENABLED = False  # each capture takes the op's full path (the PITCH switch is read there)
    rows = []
    for M, N, K in shapes:
        sets = [(torch.randn(M, K, device="cuda").to(torch.bfloat16), torch.randn(N, K, device="cuda").to(torch.bfloat16))
                for _ in range(rotation_count((M + N) * K * 2, L2_BYTES))]
        ref = sets[0][0].double() @ sets[0][1].double().T
        fns = {"cublas": lambda x, w: torch.matmul(x, w.T), "gemmkit": gemmkit.gemm_a16w16, "gemmkit_nopitch": _no_pitch}
        for name, tile in TILES.items():
            y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            fns[name] = (lambda tile, y: lambda x, w: probe(x, w, y, *tile))(tile, y)
        row = {"M": M, "N": N, "K": K, "us": {}, "err": {}}
        for name, fn in fns.items():
            row["err"][name] = float((fn(*sets[0]).double() - ref).abs().max() / ref.abs().max())
            row["us"][name] = 1e3 * time_graph(fn, sets, rep_ms=30)
        print(M, N, K, {k: round(v, 1) for k, v in row["us"].items()}, flush=True)
        rows.append(row)
    with open(out_path, "w") as f:
        json.dump({**bench.stamp(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], [tuple(map(int, s.split("x"))) for s in sys.argv[2:]])
