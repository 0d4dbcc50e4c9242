"""Does compute-sanitizer's racecheck model `cp.async.mbarrier.arrive`? A two-partition Gluon probe.

Why: racecheck reports, in the fp8 Gluon kernel's block mode, hazards between the load warp's cp.async
writes of a slot's x scales (hopper_pingpong_fp8.py, `async_copy_global_to_shared` into s_ring) and the
consumers' reads of that slot (hopper_fp8_mainloop.py), although the reads come after a wait on full[s],
whose phase needs each load lane's `cp.async.mbarrier.arrive.noinc` (PTX: fired when all prior cp.async of
that lane have completed). This probe isolates the pattern: one producer warp cp.asyncs N floats into shared
memory, the consumer warps wait on the barrier and read them.

  MODE 0  cp.async + cp.async.mbarrier.arrive.noinc (barrier count 32): the kernel's pattern
  MODE 1  cp.async + cp.async.wait_group(0) + mbarrier.arrive (count 1): the copy drained by the producer
          before an ordinary arrive (a pattern racecheck is expected to understand)
  MODE 2  MODE 0 with the consumer's wait removed: a real race (racecheck must flag it)
  MODE 3  MODE 0 on a barrier that also takes an expect-tx arrive and a TMA load (count 33): the kernel's
          full[s] exactly
  MODE 4  MODE 0 plus one ordinary arrive of the producer after its cp.async arrivals (count 33)
  MODE 5  a 2-slot ring over 8 steps: the producer waits empty[s], cp.asyncs step g's N floats into slot s
          and arrives (noinc) on full[s] (count 32); the consumer waits full[s], reads the slot, arrives on
          empty[s] (count 1, Gluon: a warpgroup bar.sync, then one elected arrive): the kernel's ring

Usage (GPU): python benchmarks/racecheck_cp_async_probe.py MODE   (under compute-sanitizer --tool racecheck)
It checks the values read and prints "probe done".
"""
import sys

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

N = 1024


@gluon.jit
def _consumer(smem, tsmem, bar, out_ptr, N: gl.constexpr, MODE: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([N // 128], [32], [4], [0])
    if MODE != 2:
        mbarrier.wait(bar, 0)
    v = smem.load(layout)
    gl.store(out_ptr + gl.arange(0, N, layout=layout), v)


@gluon.jit
def _producer(smem, tsmem, bar, src_ptr, t_desc, N: gl.constexpr, MODE: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([N // 32], [32], [1], [0])
    async_copy.async_copy_global_to_shared(smem, src_ptr + gl.arange(0, N, layout=layout))
    if MODE == 1:
        async_copy.commit_group()
        async_copy.wait_group(0)
        mbarrier.arrive(bar)
    else:
        async_copy.mbarrier_arrive(bar, increment_count=False)
    if MODE == 3:
        mbarrier.expect(bar, t_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(t_desc, [0, 0], bar, tsmem)
    if MODE == 4:
        mbarrier.arrive(bar)


@gluon.jit
def probe_kernel(src_ptr, out_ptr, t_desc, N: gl.constexpr, MODE: gl.constexpr):
    smem = gl.allocate_shared_memory(gl.float32, [N], gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1,
                                                                               order=[0]))
    tsmem = gl.allocate_shared_memory(t_desc.dtype, t_desc.block_type.shape, t_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    if MODE == 1:
        mbarrier.init(bar, count=1)
    elif MODE >= 3:
        mbarrier.init(bar, count=33)
    else:
        mbarrier.init(bar, count=32)
    gl.warp_specialize([(_consumer, (smem, tsmem, bar, out_ptr, N, MODE)),
                        (_producer, (smem, tsmem, bar, src_ptr, t_desc, N, MODE))], [1], [24])


@gluon.jit
def _ring_consumer(ring, full, empty, out_ptr, N: gl.constexpr, STEPS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([N // 128], [32], [4], [0])
    acc = gl.zeros([N], gl.float32, layout)
    for g in range(STEPS):
        s = g % 2
        mbarrier.wait(full.index(s), (g // 2) & 1)
        acc += ring.index(s).load(layout) * (g + 1)
        mbarrier.arrive(empty.index(s))
    gl.store(out_ptr + gl.arange(0, N, layout=layout), acc)


@gluon.jit
def _ring_producer(ring, full, empty, src_ptr, N: gl.constexpr, STEPS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([N // 32], [32], [1], [0])
    for g in range(STEPS):
        s = g % 2
        mbarrier.wait(empty.index(s), ((g // 2) & 1) ^ 1)
        async_copy.async_copy_global_to_shared(ring.index(s), src_ptr + g * N + gl.arange(0, N, layout=layout))
        async_copy.mbarrier_arrive(full.index(s), increment_count=False)


@gluon.jit
def ring_probe_kernel(src_ptr, out_ptr, N: gl.constexpr, STEPS: gl.constexpr):
    ring = gl.allocate_shared_memory(gl.float32, [2, N], gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1,
                                                                                 order=[0]))  # as s_ring
    full = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(full.index(i), count=32)
        mbarrier.init(empty.index(i), count=1)
    gl.warp_specialize([(_ring_consumer, (ring, full, empty, out_ptr, N, STEPS)),
                        (_ring_producer, (ring, full, empty, src_ptr, N, STEPS))], [1], [24])


def main():
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from gemmkit.kernels.gluon import hopper_host as hh

    mode = int(sys.argv[1])
    if mode == 5:
        steps = 8
        src = torch.randn(steps, N, device="cuda")
        out = torch.full((N,), float("nan"), device="cuda")
        ring_probe_kernel[(1,)](src, out, N, steps, num_warps=4)
        torch.cuda.synchronize()
        ref = (src * torch.arange(1, steps + 1, device="cuda", dtype=torch.float32)[:, None]).sum(0)
        print(f"mode 5: values {'right' if torch.allclose(out, ref, rtol=1e-5, atol=1e-5) else 'WRONG'}")
        print("probe done")
        return
    src = torch.randn(N, device="cuda")
    out = torch.full((N,), float("nan"), device="cuda")
    t = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    t_desc = TensorDescriptor.from_tensor(t, [64, 64], hh.shared_layout(64, 64, "fp16"))
    probe_kernel[(1,)](src, out, t_desc, N, mode, num_warps=4)
    torch.cuda.synchronize()
    ok = torch.equal(out, src)
    print(f"mode {mode}: values {'right' if ok else 'WRONG'}")
    print("probe done")


if __name__ == "__main__":
    main()
