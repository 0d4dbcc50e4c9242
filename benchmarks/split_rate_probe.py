"""What a split tile's K step costs, by how its two wgmma read x and how a slot is released: `python
benchmarks/split_rate_probe.py [--json OUT.json]` (a CUDA GPU, sm_90; compile-side: benchmarks/rs_wgmma_probe.py).

Why: a split tile BN = A + B (hopper_coop.py) issues two wgmma a K step on the same rows of x, m64nAk16 and m64nBk16;
on the cooperative 128 x 144 / 160 it ran 0.80 / 0.85x cuBLAS where 128 x 128 ran 0.98x
(results/h200/ab/bf16_split_tile_rate.json). The lead: read x into registers once a step for both (wgmma's "RS" form),
which ptxas pipelines only outside warp_specialize's worker partitions, so both consumer warpgroups as one 8-warp
default partition with the load warp its only worker. This probe times one 128 x (A + B) tile's K loop on every SM,
no global loads (the ring's slots are read as they are), K = 2048 steps of BK = 64, median of 20 launches:

  ring-free: the loop alone, slot k % S each step
    free_coop      two 4-warp partitions, 64 rows each, x from shared memory (today's cooperative split tile)
    free_d8ss      one 8-warp partition, 128 rows, x from shared memory
    free_d8rs      one 8-warp partition, x read into registers once a step, both wgmma read them
    free_d8rs_bar  free_d8rs with a 256-thread barrier a step (what one mbarrier arrival a slot from 8 warps needs:
                   Triton puts one ahead of every mbarrier.arrive there)
  with the ring's protocol: full[s] mbarriers a load warp arrives on (no TMA), the slot released after each step
    coop_mbar      today's: two 4-warp consumers, empty[s] counts 2 (Gluon's mbarrier.arrive)
    d8ss_mbar      one 8-warp consumer, x from shared memory, empty[s] counts 1
    d8rs_mbar      the same, x into registers
    d8ss_named     one 8-warp consumer; the release a named barrier (8 + s): each consumer warp bar.arrive (no
    d8rs_named     wait), the load warp bar.sync over 288 threads before it refills slot s (no 256-thread barrier)
    d8rs_pair      d8rs_named with two register sets for x (steps alternate, the loop unrolled by two): the next
                   step's x read while this step's wgmma run
    d8rs_next      d8rs_named with the next step's x read right after this step's issue (one set, moved a step)

Measured (H200, Triton 3.6, 2026-12-04; results/h200/ab/bf16_split_rate_probe.json, ns a K step at 128 x 144):
ring-free, x in registers helps (free_d8rs 355 against free_coop 389; 128 x 128: 298-309), a barrier a step undoes it
(free_d8rs_bar 432); with the ring's protocol no register form beats today's (coop_mbar 390, d8rs_mbar 398,
d8rs_named 447, d8rs_pair 397, d8rs_next 462), and x from shared memory in one 8-warp partition with named-barrier
release is level (d8ss_named 390; 406 / 467 against 426 / 448 at 160 / 192). The register form's x load waits on the
slot's full barrier each step, in the step's critical path; and Triton's membar pass puts a 256-thread barrier ahead
of a wait that follows a step's issue (d8rs_pair, d8rs_next). So nothing was built into the kernel.

Constraints: a probe, not a library path; sm_90 (wgmma, setmaxnreg); the named barriers 8 .. 8 + S - 1 (S <= 8
stages) must be free of Triton's own (0: a partition's barrier, 1: warp_specialize's start, 2..: workers'); K even
(d8rs_pair's unrolled loop)."""
import argparse
import json
import os
import time

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (mbarrier, warpgroup_mma, warpgroup_mma_init,
                                                              warpgroup_mma_wait)

STEPS = 2048
STAGES = 4
STAGES_ = gl.constexpr(STAGES)  # (the kernel reads it)
CONSUMER_WARPS_ = gl.constexpr(8)
CONSUMER_WARPS = CONSUMER_WARPS_.value  # the named-barrier modes' one consumer partition (both warpgroups)
NAMED_THREADS = 32 * (CONSUMER_WARPS + 1)  # those warps and the load warp take part in a slot's named barrier
SYNC_ASM = gl.constexpr(f"bar.sync $1, {NAMED_THREADS}; mov.u32 $0, 0;")
ARRIVE_ASM = gl.constexpr(f"bar.arrive $1, {NAMED_THREADS}; mov.u32 $0, 0;")


@gluon.jit
def _named(bar_id, W: gl.constexpr, SYNC: gl.constexpr):
    """bar.sync (SYNC) or bar.arrive on named barrier `bar_id` by every thread of a W-warp partition, NAMED_THREADS
    taking part (the consumer partition's warps and the load warp)."""
    L: gl.constexpr = gl.BlockedLayout([1], [32], [W], [0])
    ids = gl.full([32 * W], 0, gl.int32, L) + bar_id
    if SYNC:
        gl.inline_asm_elementwise(SYNC_ASM, "=r,r", [ids], dtype=gl.int32, is_pure=False, pack=1)
    else:
        gl.inline_asm_elementwise(ARRIVE_ASM, "=r,r", [ids], dtype=gl.int32, is_pure=False, pack=1)


@gluon.constexpr_function
def _acc_layout(ROWS, N):
    """A wgmma accumulator of ROWS x N over ROWS / 16 warps (one or two warpgroups)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[ROWS // 16, 1], instr_shape=[16, N, 16])


@gluon.constexpr_function
def _x_regs(ROWS, N):
    """x's rows in registers as wgmma's A operand beside an accumulator of `_acc_layout(ROWS, N)`."""
    return gl.DotOperandLayout(operand_index=0, parent=_acc_layout(ROWS, N), k_width=2)


@gluon.jit
def _issue(a, b_ring, t_ring, idx, acc, acc_t, TWO: gl.constexpr):
    """This step's wgmma: A columns, and (TWO) the B columns on the same x (shared-memory rows or registers)."""
    acc = warpgroup_mma(a, b_ring.index(idx).permute((1, 0)), acc, is_async=True)
    if TWO:
        acc_t = warpgroup_mma(a, t_ring.index(idx).permute((1, 0)), acc_t, is_async=True)
    return acc, acc_t


@gluon.jit
def _finish(out_ptr, acc, acc_t):
    acc, acc_t = warpgroup_mma_wait(0, deps=(acc, acc_t))
    L: gl.constexpr = acc.type.layout
    LT: gl.constexpr = acc_t.type.layout
    r = gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, L))
    c = gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, L))
    gl.store(out_ptr + r[:, None] * acc.shape[1] + c[None, :], acc)
    r_t = gl.arange(0, acc_t.shape[0], layout=gl.SliceLayout(1, LT))
    c_t = gl.arange(0, acc_t.shape[1], layout=gl.SliceLayout(0, LT))
    gl.store(out_ptr + r_t[:, None] * acc_t.shape[1] + c_t[None, :], acc_t)


@gluon.jit
def _free(a_ring, b_ring, t_ring, out_ptr, K, ROW0: gl.constexpr, ROWS: gl.constexpr, RS: gl.constexpr,
          TWO: gl.constexpr, BAR: gl.constexpr):
    """The ring-free loop: slot k % S each step, no mbarriers."""
    A: gl.constexpr = b_ring.shape[1]
    T: gl.constexpr = t_ring.shape[1]
    a_regs: gl.constexpr = _x_regs(ROWS, A)
    acc = warpgroup_mma_init(gl.zeros((ROWS, A), dtype=gl.float32, layout=_acc_layout(ROWS, A)))
    acc_t = warpgroup_mma_init(gl.zeros((ROWS, T), dtype=gl.float32, layout=_acc_layout(ROWS, T)))
    for kk in range(K):
        idx = kk % a_ring.shape[0]
        a_s = a_ring.index(idx).slice(ROW0, ROWS)
        if RS:
            acc, acc_t = _issue(a_s.load(a_regs), b_ring, t_ring, idx, acc, acc_t, TWO)
        else:
            acc, acc_t = _issue(a_s, b_ring, t_ring, idx, acc, acc_t, TWO)
        if TWO:
            warpgroup_mma_wait(2, deps=(acc, acc_t))
        else:
            warpgroup_mma_wait(1, deps=(acc,))
        if BAR:
            gl.thread_barrier()
    _finish(out_ptr, acc, acc_t)


@gluon.jit
def _release(empty, slot, NAMED: gl.constexpr, W: gl.constexpr):
    if NAMED:
        _named(8 + slot, W, False)
    else:
        mbarrier.arrive(empty.index(slot))


@gluon.jit
def _ring(a_ring, b_ring, t_ring, full, empty, out_ptr, K, ROW0: gl.constexpr, ROWS: gl.constexpr, RS: gl.constexpr,
          NAMED: gl.constexpr):
    """The ring's protocol: wait full[s], both wgmma, retire the step before and release its slot."""
    S: gl.constexpr = a_ring.shape[0]
    A: gl.constexpr = b_ring.shape[1]
    T: gl.constexpr = t_ring.shape[1]
    a_regs: gl.constexpr = _x_regs(ROWS, A)
    acc = warpgroup_mma_init(gl.zeros((ROWS, A), dtype=gl.float32, layout=_acc_layout(ROWS, A)))
    acc_t = warpgroup_mma_init(gl.zeros((ROWS, T), dtype=gl.float32, layout=_acc_layout(ROWS, T)))
    idx = 0
    phase = 0
    for kk in range(K):
        mbarrier.wait(full.index(idx), phase)
        a_s = a_ring.index(idx).slice(ROW0, ROWS)
        if RS:
            acc, acc_t = _issue(a_s.load(a_regs), b_ring, t_ring, idx, acc, acc_t, True)
        else:
            acc, acc_t = _issue(a_s, b_ring, t_ring, idx, acc, acc_t, True)
        warpgroup_mma_wait(2, deps=(acc, acc_t))
        if kk > 0:
            _release(empty, (idx + S - 1) % S, NAMED, ROWS // 16)
        idx += 1
        if idx == S:
            idx = 0
            phase ^= 1
    acc, acc_t = warpgroup_mma_wait(0, deps=(acc, acc_t))
    _release(empty, (idx + S - 1) % S, NAMED, ROWS // 16)
    _finish(out_ptr, acc, acc_t)


@gluon.jit
def _ring_pair(a_ring, b_ring, t_ring, full, empty, out_ptr, K):
    """d8rs_pair: x in two register sets, steps alternating (unrolled by two; K even), each set read after the
    wgmma that used it two steps before retired, while this step's wgmma run."""
    S: gl.constexpr = a_ring.shape[0]
    A: gl.constexpr = b_ring.shape[1]
    T: gl.constexpr = t_ring.shape[1]
    a_regs: gl.constexpr = _x_regs(128, A)
    acc = warpgroup_mma_init(gl.zeros((128, A), dtype=gl.float32, layout=_acc_layout(128, A)))
    acc_t = warpgroup_mma_init(gl.zeros((128, T), dtype=gl.float32, layout=_acc_layout(128, T)))
    idx = 0
    phase = 0
    mbarrier.wait(full.index(0), 0)
    a0 = a_ring.index(0).load(a_regs)
    for j in range(K // 2):
        acc, acc_t = _issue(a0, b_ring, t_ring, idx, acc, acc_t, True)
        warpgroup_mma_wait(2, deps=(acc, acc_t))
        if j > 0:
            _named(8 + (idx + S - 1) % S, CONSUMER_WARPS_, False)
        idx += 1
        if idx == S:
            idx = 0
            phase ^= 1
        mbarrier.wait(full.index(idx), phase)
        a1 = a_ring.index(idx).load(a_regs)
        acc, acc_t = _issue(a1, b_ring, t_ring, idx, acc, acc_t, True)
        warpgroup_mma_wait(2, deps=(acc, acc_t))
        _named(8 + (idx + S - 1) % S, CONSUMER_WARPS_, False)
        idx += 1
        if idx == S:
            idx = 0
            phase ^= 1
        if j + 1 < K // 2:
            mbarrier.wait(full.index(idx), phase)
            a0 = a_ring.index(idx).load(a_regs)
    acc, acc_t = warpgroup_mma_wait(0, deps=(acc, acc_t))
    _named(8 + (idx + S - 1) % S, CONSUMER_WARPS_, False)
    _finish(out_ptr, acc, acc_t)


@gluon.jit
def _ring_next(a_ring, b_ring, t_ring, full, empty, out_ptr, K):
    """d8rs_next: one step a loop iteration, the next step's x read after this step's wgmma are issued and the step
    before retired."""
    S: gl.constexpr = a_ring.shape[0]
    A: gl.constexpr = b_ring.shape[1]
    T: gl.constexpr = t_ring.shape[1]
    a_regs: gl.constexpr = _x_regs(128, A)
    acc = warpgroup_mma_init(gl.zeros((128, A), dtype=gl.float32, layout=_acc_layout(128, A)))
    acc_t = warpgroup_mma_init(gl.zeros((128, T), dtype=gl.float32, layout=_acc_layout(128, T)))
    idx = 0
    phase = 0
    mbarrier.wait(full.index(0), 0)
    a = a_ring.index(0).load(a_regs)
    for kk in range(K):
        acc, acc_t = _issue(a, b_ring, t_ring, idx, acc, acc_t, True)
        nidx = (idx + 1) % S
        nphase = phase ^ (nidx == 0).to(gl.int32)
        warpgroup_mma_wait(2, deps=(acc, acc_t))
        if kk > 0:
            _named(8 + (idx + S - 1) % S, CONSUMER_WARPS_, False)
        if kk + 1 < K:
            mbarrier.wait(full.index(nidx), nphase)
            a = a_ring.index(nidx).load(a_regs)
        idx = nidx
        phase = nphase
    acc, acc_t = warpgroup_mma_wait(0, deps=(acc, acc_t))
    _named(8 + (idx + S - 1) % S, CONSUMER_WARPS_, False)
    _finish(out_ptr, acc, acc_t)


@gluon.jit
def _loader(full, empty, K, NAMED: gl.constexpr):
    """The load warp without loads: wait for a slot's release (empty[s], or NAMED its named barrier from the second
    lap), arrive on full[s]; NAMED: then take the last S releases, so every barrier phase completes."""
    S: gl.constexpr = full.shape[0]
    idx = 0
    phase = 0
    for g in range(K):
        if NAMED:
            if g >= S:
                _named(8 + idx, 1, True)
        else:
            mbarrier.wait(empty.index(idx), phase ^ 1)
        mbarrier.arrive(full.index(idx))
        idx += 1
        if idx == S:
            idx = 0
            phase ^= 1
    if NAMED:
        for g in range(K - S, K):
            if g >= 0:
                _named(8 + g % S, 1, True)


@gluon.jit
def _idle(out_ptr):
    pass


@gluon.jit
def rate_kernel(out_ptr, K, MODE: gl.constexpr, A: gl.constexpr, T: gl.constexpr):
    smem: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    TWO: gl.constexpr = T > 0
    TT: gl.constexpr = T if TWO else 16  # (T = 0: one wgmma a step; the B ring unused)
    gl.static_assert(STAGES_ <= 8, "named barriers 8 .. 15")
    a_ring = gl.allocate_shared_memory(gl.bfloat16, [STAGES_, 128, 64], smem)
    b_ring = gl.allocate_shared_memory(gl.bfloat16, [STAGES_, A, 64], smem)
    t_ring = gl.allocate_shared_memory(gl.bfloat16, [STAGES_, TT, 64], smem)
    full = gl.allocate_shared_memory(gl.int64, [STAGES_, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES_, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES_):
        mbarrier.init(full.index(i), count=1)
        mbarrier.init(empty.index(i), count=2 if MODE == 4 else 1)
    if MODE == 0:  # free_coop
        gl.warp_specialize([(_free, (a_ring, b_ring, t_ring, out_ptr, K, 0, 64, False, TWO, False)),
                            (_free, (a_ring, b_ring, t_ring, out_ptr, K, 64, 64, False, TWO, False)),
                            (_idle, (out_ptr,))], [4, 1], [240, 24])
    elif MODE <= 3:  # free_d8ss, free_d8rs, free_d8rs_bar
        gl.warp_specialize([(_free, (a_ring, b_ring, t_ring, out_ptr, K, 0, 128, MODE >= 2, TWO, MODE == 3)),
                            (_idle, (out_ptr,))], [1], [24])
    elif MODE == 4:  # coop_mbar
        gl.warp_specialize([(_ring, (a_ring, b_ring, t_ring, full, empty, out_ptr, K, 0, 64, False, False)),
                            (_ring, (a_ring, b_ring, t_ring, full, empty, out_ptr, K, 64, 64, False, False)),
                            (_loader, (full, empty, K, False))], [4, 1], [240, 24])
    elif MODE <= 8:  # d8ss_mbar, d8rs_mbar, d8ss_named, d8rs_named
        gl.warp_specialize([(_ring, (a_ring, b_ring, t_ring, full, empty, out_ptr, K, 0, 128, MODE % 2 == 0,
                                     MODE >= 7)),
                            (_loader, (full, empty, K, MODE >= 7))], [1], [24])
    elif MODE == 9:
        gl.warp_specialize([(_ring_pair, (a_ring, b_ring, t_ring, full, empty, out_ptr, K)),
                            (_loader, (full, empty, K, True))], [1], [24])
    else:
        gl.warp_specialize([(_ring_next, (a_ring, b_ring, t_ring, full, empty, out_ptr, K)),
                            (_loader, (full, empty, K, True))], [1], [24])


MODES = {"free_coop": 0, "free_d8ss": 1, "free_d8rs": 2, "free_d8rs_bar": 3, "coop_mbar": 4, "d8ss_mbar": 5,
         "d8rs_mbar": 6, "d8ss_named": 7, "d8rs_named": 8, "d8rs_pair": 9, "d8rs_next": 10}
WIDTHS = ((128, 0), (128, 16), (128, 32), (128, 64))  # (A, B): 128, 144, 160, 192 columns


def run(mode: str, a: int, t: int, sms: int, out) -> dict:
    """One mode at one width: the median of 20 timed launches (after one to compile), ns a K step and TFLOP/s."""
    warps = 4 if mode in ("free_coop", "coop_mbar") else CONSUMER_WARPS
    args = (out, STEPS, MODES[mode], a, t)
    k = rate_kernel[(sms,)](*args, num_warps=warps)
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        rate_kernel[(sms,)](*args, num_warps=warps)
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1))
    ms = sorted(times)[len(times) // 2]
    return dict(mode=mode, A=a, B=t, ms=ms, ns_per_step=ms * 1e6 / STEPS,
                tflops=2 * 128 * (a + t) * 64 * STEPS * sms / ms / 1e9, spills=k.n_spills)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.zeros(1 << 20, device="cuda", dtype=torch.float32)
    rows = []
    for a, t in WIDTHS:
        for mode in args.modes:
            if t == 0 and not mode.startswith("free"):  # the ring's modes issue two wgmma
                continue
            row = run(mode, a, t, sms, out)
            print(f"{mode:14s} 128 x {a + t:3d}  {row['ns_per_step']:6.1f} ns a step  {row['tflops']:5.0f} TFLOP/s",
                  flush=True)
            rows.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(0), triton=triton.__version__, torch=torch.__version__,
                           date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           git_sha=os.environ.get("GEMMKIT_GIT_SHA", "unknown"), steps=STEPS, stages=STAGES, sms=sms,
                           rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
