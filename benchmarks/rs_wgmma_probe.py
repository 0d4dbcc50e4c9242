"""Does ptxas pipeline a wgmma whose A operand is in registers, in each place a Gluon partition can sit? Compile-only
(no GPU): `python benchmarks/rs_wgmma_probe.py`, sm_90a, the installed Triton's ptxas.

Why: a split tile's B-column wgmma (m64n16k16 / m64n32k16 beside the A-column m64n128k16) reads its 64 x 16 slice
of x from shared memory again for 16 / 32 columns of products. At 8192 x 9216 x 4096 (thousands of tiles: no fill
effect), bf16, cooperative tiles ran 0.984x cuBLAS on 128 x 128, 0.799x on 128 x 144, 0.852x on 128 x 160, 0.957x on
128 x 192 (`results/h200/ab/bf16_split_tile_rate.json`): the B part costs as much as ~50 columns. With x's rows read
into registers once a K step (wgmma's "RS" form), both wgmma would take them from there.

The probe: one K loop of a 64 x (128 + 16) split tile with x's rows loaded into registers each step and both
wgmma reading them, the wait keeping WAIT groups in flight, compiled three ways:

    alone        the loop in the kernel's only partition
    default      the loop in the default partition of a gl.warp_specialize (12 warps, as the library's kernels)
    worker       the loop in a worker partition (where the ping-pong's and the cooperative kernel's second
                 consumer runs)
    default8     a 128-row tile in an 8-warp default partition (both consumer warpgroups as one), a load warp
                 the only worker: the cooperative kernel's split tile as it would have to be built for the RS form

It prints ptxas's register count and its C7512 note ("wgmma.mma_async instructions are serialized due to
insufficient register resources") where it serializes. Under Triton 3.6: pipelined alone, in the default
partition and in the 8-warp default partition, serialized in a worker partition (a wait after every wgmma), at any
accumulator width (32-128) and any WAIT >= 1. Triton 3.6 runs worker partitions in a dispatch loop (`brx.idx`
over the partitions' blocks); the library's second consumer is one, so the RS form there would cost more than the
B-column reads it saves. The same under Triton 3.9 (its own ptxas, CUDA 13.4) and with 3.6's PTX under that ptxas
(2026-12-04). What the pipelined 8-warp form runs at on the GPU, with a ring's barriers: benchmarks/split_rate_probe.py
(no faster than today's two consumers, so not built).

Constraints: compile-only (triton.compile with a GPUTarget of sm_90; ptxas from the installed Triton); a probe, not
a library path."""
import argparse
import os
import re
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma, warpgroup_mma_init, warpgroup_mma_wait

PLACES = {"alone": 0, "default": 1, "worker": 2, "default8": 3}


@gluon.jit
def _rs_loop(a_ring, b_ring, t_ring, out_ptr, K, WAIT: gl.constexpr):
    """A split tile's K loop, x's rows into registers each step, both wgmma reading them; the tile stored."""
    BM: gl.constexpr = a_ring.shape[1]
    A: gl.constexpr = b_ring.shape[1]
    T: gl.constexpr = t_ring.shape[1]
    STAGES: gl.constexpr = a_ring.shape[0]
    W: gl.constexpr = BM // 16  # the partition's warps: one or two warpgroups
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[W, 1], instr_shape=[16, A, 16])
    t_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[W, 1], instr_shape=[16, T, 16])
    a_regs: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
    t_regs: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=t_layout, k_width=2)
    acc = warpgroup_mma_init(gl.zeros((BM, A), dtype=gl.float32, layout=acc_layout))
    acc_t = warpgroup_mma_init(gl.zeros((BM, T), dtype=gl.float32, layout=t_layout))
    for kk in range(K):
        idx = kk % STAGES
        a = a_ring.index(idx).load(a_regs)
        acc = warpgroup_mma(a, b_ring.index(idx).permute((1, 0)), acc, is_async=True)
        acc_t = warpgroup_mma(gl.convert_layout(a, t_regs), t_ring.index(idx).permute((1, 0)), acc_t, is_async=True)
        warpgroup_mma_wait(WAIT, deps=(acc, acc_t))
    acc, acc_t = warpgroup_mma_wait(0, deps=(acc, acc_t))
    r = gl.arange(0, BM, layout=gl.SliceLayout(1, acc_layout))
    c = gl.arange(0, A, layout=gl.SliceLayout(0, acc_layout))
    gl.store(out_ptr + r[:, None] * A + c[None, :], acc)
    r_t = gl.arange(0, BM, layout=gl.SliceLayout(1, t_layout))
    c_t = gl.arange(0, T, layout=gl.SliceLayout(0, t_layout))
    gl.store(out_ptr + BM * A + r_t[:, None] * T + c_t[None, :], acc_t)


@gluon.jit
def _idle(out_ptr):
    pass


@gluon.jit
def rs_probe_kernel(out_ptr, K, WAIT: gl.constexpr, PLACE: gl.constexpr, A: gl.constexpr, T: gl.constexpr):
    smem: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    a_ring = gl.allocate_shared_memory(gl.bfloat16, [4, 128 if PLACE == 3 else 64, 64], smem)
    b_ring = gl.allocate_shared_memory(gl.bfloat16, [4, A, 64], smem)
    t_ring = gl.allocate_shared_memory(gl.bfloat16, [4, T, 64], smem)
    if PLACE == 3:  # an 8-warp default partition (both consumer warpgroups on one 128-row tile) and a load warp
        gl.warp_specialize([(_rs_loop, (a_ring, b_ring, t_ring, out_ptr, K, WAIT)), (_idle, (out_ptr,))], [1], [24])
    elif PLACE == 1:  # 4 + 4 + 1 warps (12 launched), as the library's kernels
        gl.warp_specialize([(_rs_loop, (a_ring, b_ring, t_ring, out_ptr, K, WAIT)), (_idle, (out_ptr,)),
                            (_idle, (out_ptr,))], [4, 1], [240, 24])
    elif PLACE == 2:
        gl.warp_specialize([(_idle, (out_ptr,)), (_rs_loop, (a_ring, b_ring, t_ring, out_ptr, K, WAIT)),
                            (_idle, (out_ptr,))], [4, 1], [240, 24])
    else:
        _rs_loop(a_ring, b_ring, t_ring, out_ptr, K, WAIT)


def probe(place: str, wait: int, a: int = 128, t: int = 16) -> dict:
    """ptxas's verdict on the loop at `place` keeping `wait` wgmma groups in flight."""
    src = GluonASTSource(rs_probe_kernel, {"out_ptr": "*fp32", "K": "i32", "WAIT": "constexpr", "PLACE": "constexpr",
                                           "A": "constexpr", "T": "constexpr"},
                         {"WAIT": wait, "PLACE": PLACES[place], "A": a, "T": t})
    warps = 8 if place == "default8" else 4
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
    bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "k.ptx")
        with open(ptx, "w") as f:
            f.write(compiled.asm["ptx"])
        for name in ("ptxas", "ptxas-blackwell"):  # (3.9's PTX version needs its newer ptxas, the second)
            cmd = [os.path.join(bin_dir, name), "-arch=sm_90a", "-v", ptx, "-o", os.path.join(d, "k.cubin")]
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode == 0:
                break
        else:
            raise RuntimeError(f"no ptxas of {bin_dir} assembles the probe: {run.stderr[-300:]}")
        log = run.stderr
    regs = re.search(r"Used (\d+) registers", log)
    return {"place": place, "wait": wait, "A": a, "B": t, "registers": int(regs.group(1)) if regs else None,
            "serialized": "C7512" in log or "C7511" in log}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wait", type=int, nargs="+", default=[0, 2])
    args = ap.parse_args()
    print(f"triton {triton.__version__}")
    for place in PLACES:
        for wait in args.wait:
            print(probe(place, wait))
