"""What a 2-CTA cluster with TMA multicast is worth on Hopper, measured before any library kernel is built on it
(issue 33 item 5): `python benchmarks/multicast_probe.py [--json OUT.json]` on an sm_90 GPU, Triton >= 3.7.

One pipelined (not warp-specialized, not persistent) Gluon GEMM, y = x @ w.T in bf16, run two ways with
everything else equal:

  single   num_ctas = 1: each CTA loads its BM x BK box of x and the BN x BK box of w it needs
  cluster  num_ctas = 2: two CTAs on adjacent BM-row tiles of the same BN columns form one cluster; each loads
           its own x box, CTA 0 multicasts the shared w box into both CTAs' shared memory (Gluon 3.7-3.9 issue a
           multicast load from the cluster's first CTA only), so w's L2 -> shared traffic is halved

   cluster tile (2 BM x BN):   x rows [m, m + BM)      -> CTA 0 ┐  w box [n, n + BN) x BK, loaded once,
                               x rows [m + BM, m + 2BM) -> CTA 1 ┘  multicast to CTA 0 and CTA 1

   K loop (S-stage ring, per CTA): wait ready[s]; wgmma (async); wait until 1 group in flight; the slot of
   step k - 1 is now free: arrive on empty[(k-1) % S] (a two-CTA barrier living in CTA 0, count 2 there);
   refill it: CTA 0 waits empty (both CTAs done with the slot it multicasts into), every CTA expects its x box +
   the whole w box on its own ready[s], loads its x box; CTA 0 issues the multicast w load.

The same two ways, warp-specialized ("_ws" tiles: `ws_probe_kernel`): a 1-warp load partition and the 4-warp
consumer, as gemmkit's Hopper kernels are built. Each CTA's loader waits for its own consumer to free a slot
(empty_local, for its x box); CTA 0's also waits for both CTAs' consumers (empty_cluster, a two-CTA mbarrier in CTA 0:
the wait is CTA 0's only) before the multicast w load refills the slot in both.

`--tiles` picks the tiles (default: the three 128-row ones; `64x128` / `64x128_ws`: one 64-row tile a CTA, as the
bf16 one-tile rows run) and `--shape M,N,K` the shapes (default: SHAPES).

Beside them in the same process: cuBLAS (torch.matmul) and what gemmkit serves (gemm_a16w16), all timed by
CUDA-graph replay over inputs rotated past the L2 (gemmkit/bench/timing.py). Each kernel's result is checked
against torch first (every element, fp32 reference of the bf16 inputs).

Constraints: sm_90, Triton >= 3.7 (multicast TMA loads and two-CTA mbarriers in Gluon); on 3.7 the two-CTA
barrier layout is not honoured by the compiler (each CTA keeps its own), so this probe refuses 3.7 rather than
race; M, N, K multiples of 16 bytes' worth (TMA); a probe, not a library path: no bias, no epilogue options.
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from gemmkit.bench.timing import rotation_count, time_graph
from gemmkit.kernels.gluon._compat import tma_load, tma_store
from gemmkit.kernels.triton._schedule import tile_coords

TRITON = tuple(int(v) for v in triton.__version__.split(".")[:2])


@gluon.jit
def _store_tile(acc, y_desc, off_m, off_n):
    """The fp32 accumulator cast to y's dtype, staged in shared memory, TMA-stored at (off_m, off_n)."""
    c_smem = gl.allocate_shared_memory(y_desc.dtype, y_desc.block_type.shape, y_desc.layout)
    c_smem.store(acc.to(y_desc.dtype))
    fence_async_shared()
    tma_store(y_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def probe_kernel(x_desc, w_desc, y_desc, K, ACC: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                 EXIT_SYNC: gl.constexpr):
    CTAS: gl.constexpr = gl.num_ctas()
    CBM: gl.constexpr = x_desc.block_type.shape[0]  # rows of the cluster tile (BM x CTAS)
    BK: gl.constexpr = x_desc.block_type.shape[1]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    M = y_desc.shape[0]
    N = y_desc.shape[1]
    # grouped order over cluster tiles (GROUP_M row tiles share their w columns in L2)
    # the cluster's index (the grid counts clusters), in the kernels' grouped order (kernels/triton/_schedule.py);
    # cluster coordinates: the compiler adds CTA rank x BM to x's and y's rows
    pid_m, pid_n = tile_coords(gl.program_id(0), gl.cdiv(M, CBM), gl.cdiv(N, BN), GROUP_M, 1)
    off_m = pid_m * CBM
    off_n = pid_n * BN

    a_ring = gl.allocate_shared_memory(x_desc.dtype, [STAGES, CBM, BK], x_desc.layout)
    b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
    ready = mbarrier.allocate_mbarrier(batch=STAGES)
    empty = mbarrier.allocate_mbarrier(batch=STAGES, two_ctas=CTAS == 2)
    for j in gl.static_range(STAGES):
        mbarrier.init(ready.index(j), count=1)
        mbarrier.init(empty.index(j), count=1)
    tx: gl.constexpr = x_desc.nbytes_per_cta + w_desc.nbytes_per_cta
    num_k = gl.cdiv(K, BK)
    for i in gl.static_range(STAGES - 1):
        mbarrier.expect(ready.index(i), tx, pred=i < num_k)
        tma_load(x_desc, [off_m, i * BK], ready.index(i), a_ring.index(i), i < num_k)
        tma_load(w_desc, [off_n, i * BK], ready.index(i), b_ring.index(i), i < num_k, multicast=CTAS == 2)

    acc = gl.zeros([CBM, BN], gl.float32, ACC)
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        acc = warpgroup_mma(a_ring.index(s), b_ring.index(s).permute((1, 0)), acc, is_async=True)
        acc, _, _ = warpgroup_mma_wait(1, deps=[acc, a_ring.index(s), b_ring.index(s)])
        kn = k + STAGES - 1
        if CTAS == 2:  # noqa: SIM102 (a compile-time branch around a run-time one)
            if (k > 0) and (kn < num_k):
                mbarrier.arrive(empty.index((k - 1) % STAGES))  # CTA 1's arrival lands on CTA 0's barrier
        if kn < num_k:
            sn = kn % STAGES
            if CTAS == 2:
                mbarrier.wait(empty.index(sn), ((kn // STAGES) - 1) & 1, pred=kn >= STAGES)  # CTA 0 only
            mbarrier.expect(ready.index(sn), tx)
            tma_load(x_desc, [off_m, kn * BK], ready.index(sn), a_ring.index(sn))
            tma_load(w_desc, [off_n, kn * BK], ready.index(sn), b_ring.index(sn), multicast=CTAS == 2)
    acc = warpgroup_mma_wait(0, deps=[acc])
    _store_tile(acc, y_desc, off_m, off_n)
    if EXIT_SYNC:
        gl.barrier(cluster=True)  # before 3.9 nothing keeps a CTA alive while its peer may still arrive on it


@gluon.jit
def _ws_load(x_desc, w_desc, a_ring, b_ring, ready, empty_local, empty_cluster, off_m, off_n, num_k,
             STAGES: gl.constexpr, CTAS: gl.constexpr):
    BK: gl.constexpr = x_desc.block_type.shape[1]
    tx: gl.constexpr = x_desc.nbytes_per_cta + w_desc.nbytes_per_cta
    for k in range(num_k):
        s = k % STAGES
        free = ((k // STAGES) & 1) ^ 1  # a fresh barrier has completed the phase before 0: the first pass is free
        mbarrier.wait(empty_local.index(s), free)
        if CTAS == 2:
            mbarrier.wait(empty_cluster.index(s), free)  # CTA 0 only: both CTAs' consumers are done with slot s
        mbarrier.expect(ready.index(s), tx)
        tma_load(x_desc, [off_m, k * BK], ready.index(s), a_ring.index(s))
        tma_load(w_desc, [off_n, k * BK], ready.index(s), b_ring.index(s), multicast=CTAS == 2)


@gluon.jit
def _ws_mma(y_desc, a_ring, b_ring, ready, empty_local, empty_cluster, off_m, off_n, num_k,
            ACC: gl.constexpr, STAGES: gl.constexpr, CTAS: gl.constexpr):
    CBM: gl.constexpr = y_desc.block_type.shape[0]
    BN: gl.constexpr = y_desc.block_type.shape[1]
    acc = gl.zeros([CBM, BN], gl.float32, ACC)
    for k in range(num_k):
        s = k % STAGES
        mbarrier.wait(ready.index(s), (k // STAGES) & 1)
        acc = warpgroup_mma(a_ring.index(s), b_ring.index(s).permute((1, 0)), acc, is_async=True)
        acc, _, _ = warpgroup_mma_wait(1, deps=[acc, a_ring.index(s), b_ring.index(s)])
        if k > 0:  # step k - 1's wgmma is done: its slot is free
            p = (k - 1) % STAGES
            mbarrier.arrive(empty_local.index(p))
            if CTAS == 2:
                mbarrier.arrive(empty_cluster.index(p))  # CTA 1's arrival lands on CTA 0's barrier
    acc = warpgroup_mma_wait(0, deps=[acc])
    _store_tile(acc, y_desc, off_m, off_n)


@gluon.jit
def ws_probe_kernel(x_desc, w_desc, y_desc, K, ACC: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                    EXIT_SYNC: gl.constexpr):
    CTAS: gl.constexpr = gl.num_ctas()
    CBM: gl.constexpr = x_desc.block_type.shape[0]
    BK: gl.constexpr = x_desc.block_type.shape[1]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    M = y_desc.shape[0]
    N = y_desc.shape[1]
    # the cluster's index (the grid counts clusters), in the kernels' grouped order (kernels/triton/_schedule.py);
    # cluster coordinates: the compiler adds CTA rank x BM to x's and y's rows
    pid_m, pid_n = tile_coords(gl.program_id(0), gl.cdiv(M, CBM), gl.cdiv(N, BN), GROUP_M, 1)
    off_m = pid_m * CBM
    off_n = pid_n * BN
    a_ring = gl.allocate_shared_memory(x_desc.dtype, [STAGES, CBM, BK], x_desc.layout)
    b_ring = gl.allocate_shared_memory(w_desc.dtype, [STAGES, BN, BK], w_desc.layout)
    ready = mbarrier.allocate_mbarrier(batch=STAGES)
    empty_local = mbarrier.allocate_mbarrier(batch=STAGES)
    empty_cluster = mbarrier.allocate_mbarrier(batch=STAGES, two_ctas=CTAS == 2)
    for j in gl.static_range(STAGES):
        mbarrier.init(ready.index(j), count=1)
        mbarrier.init(empty_local.index(j), count=1)
        mbarrier.init(empty_cluster.index(j), count=1)
    num_k = gl.cdiv(K, BK)
    gl.warp_specialize([
        (_ws_mma, (y_desc, a_ring, b_ring, ready, empty_local, empty_cluster, off_m, off_n, num_k, ACC, STAGES, CTAS)),
        (_ws_load, (x_desc, w_desc, a_ring, b_ring, ready, empty_local, empty_cluster, off_m, off_n, num_k, STAGES,
                    CTAS)),
    ], [1], [24])
    if EXIT_SYNC:
        gl.barrier(cluster=True)


def launcher(BM, BN, BK, STAGES, num_warps, ctas, GROUP_M=8, ws=False):
    """A function (x, w, y) -> None running the probe with this tile on `ctas` CTAs per cluster."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    cga = [[1, 0]] if ctas == 2 else []
    bcast = [[0, 0]] if ctas == 2 else []
    la = gl.NVMMASharedLayout.get_default_for([ctas * BM, BK], gl.bfloat16, cga_layout=cga)
    lb = gl.NVMMASharedLayout.get_default_for([BN, BK], gl.bfloat16, cga_layout=bcast)
    lc = gl.NVMMASharedLayout.get_default_for([ctas * BM, BN], gl.bfloat16, cga_layout=cga)
    acc = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BN, 16],
                                    cga_layout=cga)

    def run(x, w, y):
        xd = TensorDescriptor.from_tensor(x, [ctas * BM, BK], la)
        wd = TensorDescriptor.from_tensor(w, [BN, BK], lb)
        yd = TensorDescriptor.from_tensor(y, [ctas * BM, BN], lc)
        grid = (triton.cdiv(y.shape[0], ctas * BM) * triton.cdiv(y.shape[1], BN),)
        (ws_probe_kernel if ws else probe_kernel)[grid](xd, wd, yd, x.shape[1], acc, STAGES, GROUP_M,
                                                        ctas == 2 and TRITON < (3, 9), num_warps=num_warps,
                                                        num_ctas=ctas)
    return run


TILES = {  # name: (BM per CTA, BN, BK, stages, warps, warp-specialized)
    "128x256": (128, 256, 64, 4, 8, False),
    "128x128": (128, 128, 64, 5, 4, False),
    "128x128_ws": (128, 128, 64, 4, 4, True),
    # one 64-row tile a CTA (the bf16 one-tile rows: M = 128-256 on 2880-5760 columns, docs/PERF.md decision log)
    "64x128": (64, 128, 64, 8, 4, False),
    "64x128_ws": (64, 128, 64, 8, 4, True),
}
DEFAULT_TILES = ("128x256", "128x128", "128x128_ws")
SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 28672, 8192), (4000, 4096, 4096)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--rep-ms", type=int, default=200)
    ap.add_argument("--shape", action="append", help="M,N,K (repeatable; default: the four SHAPES)")
    ap.add_argument("--tiles", default=",".join(DEFAULT_TILES), help=f"comma-separated names of {', '.join(TILES)}")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shape] if args.shape else SHAPES
    tiles = {name: TILES[name] for name in args.tiles.split(",")}
    if TRITON < (3, 8):
        sys.exit(f"multicast_probe: needs Triton >= 3.8 (two-CTA mbarriers), this is {triton.__version__}")
    import gemmkit

    torch.manual_seed(0)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows = []
    for M, N, K in shapes:
        nsets = rotation_count((M * K + N * K + M * N) * 2, l2)
        sets = [(torch.randn(M, K, device="cuda", dtype=torch.bfloat16),
                 torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / math.sqrt(K),
                 torch.empty(M, N, device="cuda", dtype=torch.bfloat16)) for _ in range(nsets)]
        x, w, _ = sets[0]
        ref = x.float() @ w.float().T
        runs = {"cublas": lambda x, w, y: torch.matmul(x, w.T, out=y),
                "gemmkit": lambda x, w, y: gemmkit.gemm_a16w16(x, w, out=y)}
        for name, (BM, BN, BK, S, nw, ws) in tiles.items():
            for ctas in (1, 2):
                runs[f"{name}_{'cluster' if ctas == 2 else 'single'}"] = launcher(BM, BN, BK, S, nw, ctas, ws=ws)
        row = {"M": M, "N": N, "K": K}
        for name, fn in runs.items():
            y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            try:
                fn(x, w, y)
                torch.cuda.synchronize()
                err = ((y.float() - ref).abs() / (ref.abs() + 1)).max().item()
                if not err < 2e-2:
                    row[name] = f"wrong (max rel err {err:.3g})"
                    continue
                ms = time_graph(fn, sets, rep_ms=args.rep_ms)
                row[name] = round(2 * M * N * K / ms / 1e9, 1)  # TFLOP/s
            except Exception as e:  # noqa: BLE001 (a config that does not compile or launch is a row entry, not a crash)
                row[name] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:

        from gemmkit.bench import stamp
        with open(args.json, "w") as f:
            json.dump({**stamp(), "unit": "TFLOP/s", "tiles": tiles, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
