"""Which 1-D / 2-D fp32 TMA boxes work on the H200: a box starting at an element offset that is not a multiple of
16 bytes, or landing in shared memory off a 128-byte boundary, faults (session 15; the FP8 kernel's scale copies
follow from it: hopper_pingpong_fp8.scale_tma_ok, hopper_fp8_plan.W_SLOT_FLOATS).

Each case (1-D or 2-D descriptor over 4096 fp32 = arange, box size, shared slot size in fp32, box coordinates)
copies one box into slot 1 of a 4-slot shared buffer and reads it back, in its own process (a fault is sticky).
Prints OK, WRONG (values), or the CUDA error. Output of the session 15 run: docs/PERF.md "Session 15".

Usage (GPU): python benchmarks/tma_box_probe.py
"""
import subprocess, sys
CASE = r'''
import sys, torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

@gluon.jit
def k(d, out_ptr, c0, c1, SLOT: gl.constexpr, TWO_D: gl.constexpr):
    BOX: gl.constexpr = d.block_type.shape[d.block_type.shape.__len__() - 1]
    if TWO_D:
        s = gl.allocate_shared_memory(gl.float32, [4, 1, SLOT], d.layout)
    else:
        s = gl.allocate_shared_memory(gl.float32, [4, SLOT], d.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bar.index(0), count=1)
    mbarrier.expect(bar.index(0), BOX * 4)
    if TWO_D:
        tma.async_copy_global_to_shared(d, [c0, c1], bar.index(0), s.index(1).slice(0, BOX, dim=1))
    else:
        tma.async_copy_global_to_shared(d, [c0], bar.index(0), s.index(1).slice(0, BOX))
    mbarrier.wait(bar.index(0), 0)
    L: gl.constexpr = gl.BlockedLayout([1], [32], [1], [0])
    if TWO_D:
        L2: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, 1], [1, 0])
        v2 = s.index(1).slice(0, BOX, dim=1).load(L2)
        gl.store(out_ptr + gl.arange(0, BOX, layout=gl.SliceLayout(0, L2))[None, :], v2)
    else:
        v = s.index(1).slice(0, BOX).load(L)
        gl.store(out_ptr + gl.arange(0, BOX, layout=L), v)

two_d, box, slot, c0, c1 = [int(v) for v in sys.argv[1:6]]
src = torch.arange(4096, device="cuda", dtype=torch.float32)
out = torch.zeros(box, device="cuda")
if two_d:
    lay = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)
    d = TensorDescriptor(src, [64, 64], [64, 1], [1, box], lay)
    want = src.view(64, 64)[c0, c1:c1 + box]
else:
    lay = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=1)
    d = TensorDescriptor(src, [4096], [1], [box], lay)
    want = src[c0:c0 + box]
k[(1,)](d, out, c0, c1, slot, bool(two_d), num_warps=1)
torch.cuda.synchronize()
print("OK" if torch.equal(out, want) else f"WRONG {out[:8].tolist()} want {want[:8].tolist()}")
'''
cases = [(0, 128, 128, 0, 0), (0, 128, 128, 64, 0), (0, 128, 128, 1, 0), (0, 128, 128, 4, 0), (0, 4, 32, 0, 0),
         (0, 4, 32, 4, 0), (0, 4, 32, 3, 0), (0, 4, 4, 0, 0), (1, 128, 128, 3, 0), (1, 4, 32, 3, 8), (1, 4, 32, 3, 5)]
import os, tempfile
path = os.path.join(tempfile.mkdtemp(), "tma_case.py")
open(path, "w").write(CASE)
for c in cases:
    r = subprocess.run([sys.executable, path, *map(str, c)], capture_output=True, text=True, timeout=120)
    res = [l for l in r.stdout.splitlines() if l.startswith(("OK", "WRONG"))]
    err = [l for l in (r.stderr).splitlines() if "rror" in l][-1:]
    print("2d" if c[0] else "1d", "box", c[1], "slot", c[2], "coord", c[3:], res or err, flush=True)
