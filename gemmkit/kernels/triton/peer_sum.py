"""The push all-reduce of a few rows (decode) over peer memory: each rank's partial product pushed into every peer's
inbox, a flag per program, the partials summed in rank order. One launch, no barrier across the grid.

`gemmkit.nn.parallel`'s copy-engine transport sums an output of at most INBOX_BYTES with this kernel (larger ones
are pulled by the copy engines, chunk by chunk). Each rank's symmetric-memory workspace (one per process group and
device; every rank sees every other's at an address of its own) begins with this kernel's region:

    byte 0      counters  int32 [CTAS]            this rank's calls, per program (local only)
                flags     int32 [WORLD][CTAS]     flags[j][p]: how many pushes program p of rank j has finished here
    INBOX       inbox     [2 parities][WORLD ranks] slots of INBOX_BYTES: slot (s, j) holds rank j's partial of a
                                                  call with parity s (this rank's own slot stays unused)
    REGION      the partial product `mine` the GEMM writes (the copy-engine pulls read it from here too)

    program p of rank r, call n (its counter, +1), parity s = n % 2; elements [p * span, (p + 1) * span):
      push   mine[slice] ──NVLink stores──► inbox(s, r)[slice] of every peer j
             CTA barrier; flags_j[r][p] += 1 (release, system scope)  on every peer j
      wait   until flags[j][p] >= n for every peer j (acquire, system scope); CTA barrier
      sum    out[slice] = sum over ranks in rank order (fp32) of (mine if j == r else inbox(s, j))[slice]

Why this is safe with no barrier after the sum: a rank pushes call n + 2 into the parity call n used only after its
own call n + 1 ended, which waited for every peer's push of call n + 1, which that peer made after its call n kernel
(the sum that read the inbox of parity s) had ended: kernels of one stream run in order. Every program runs once
per call (CTAS programs whatever the size), so the counters of one rank agree and every program of a call uses the
same parity. Counters and flags only count up (zeroed once, when the workspace is made): a CUDA graph's replays
advance them as eager calls do. Every rank must make the same calls in the same order (as for any collective).

Against torch's one-shot all-reduce (symm_mem.one_shot_all_reduce, what this replaced): that kernel pulls the
peers' partials with loads over NVLink from at most 24 programs, between two grid-wide barriers; a push is a store
(no round trip to wait on) from CTAS programs, and the only wait is one flag per program.

Constraints:
  - WORLD ranks whose GPUs reach each other's memory (one host, peer access); bases_ptr an int64 tensor of the WORLD
    workspaces' base addresses as this device sees them (the rank's own at RANK), 16-byte aligned;
  - numel * element bytes <= INBOX_BYTES; mine and out contiguous, of one dtype (16-bit floats or fp32);
  - the host zeroes counters and flags when it makes a workspace, before any rank's first call on it;
  - PHASE "both" on GPUs; "push" / "sum" split the call in two launches only so that the interpreter, which runs
    programs one after another, can check the layout and the sums (every rank's push, then every rank's sum).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ... import launcher as L
from .._host import cdiv

CTAS = 128  # programs of every call (fixed: every program counts every call, so one call has one parity)
BLOCK, WARPS = 2048, 4  # elements a program moves per step: 16 per thread, two 16-byte vectors of a 16-bit float
INBOX_BYTES = 1 << 20  # the largest partial it sums (decode: M x N x 2 bytes, e.g. 64 x 8192 bf16)
PHASES = ("both", "push", "sum")
PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
    # the push and the sum move 16 bytes a thread an access (BLOCK: two 16-byte vectors of a 16-bit float)
    {"promise": "16-byte loads and stores", "check": "counts['LDG128'] > 0 and counts['STG128'] > 0"},
)


def flag_bytes(world: int) -> int:
    """Bytes of the counters and flags, rounded to 4 KiB."""
    return cdiv(4 * CTAS * (1 + world), 4096) * 4096


def region_bytes(world: int) -> int:
    """Bytes of the whole region at the start of every workspace (where `mine` begins)."""
    return flag_bytes(world) + 2 * world * INBOX_BYTES


@triton.jit
def _flag(base, j, pid, CTAS: tl.constexpr):
    # flags[j][pid] of the workspace at `base` (int32 words after the CTAS counters)
    return base.to(tl.pointer_type(tl.int32)) + CTAS + j * CTAS + pid


@triton.jit
def _slot(base, parity, j, INBOX: tl.constexpr, CAP: tl.constexpr, WORLD: tl.constexpr, ELT: tl.constexpr):
    # inbox slot (parity, j) of the workspace at `base`, as a pointer to its elements
    return (base + INBOX + (parity * WORLD + j) * CAP).to(tl.pointer_type(ELT))


@triton.jit
def peer_sum_kernel(mine_ptr, out_ptr, bases_ptr, numel, span,
                    INBOX: tl.constexpr, CAP: tl.constexpr, RANK: tl.constexpr, WORLD: tl.constexpr,
                    CTAS: tl.constexpr, BLOCK: tl.constexpr, PHASE: tl.constexpr):
    ELT: tl.constexpr = out_ptr.dtype.element_ty
    pid = tl.program_id(0)
    local = tl.load(bases_ptr + RANK)
    counter = local.to(tl.pointer_type(tl.int32)) + pid
    if PHASE == "sum":
        n = tl.atomic_add(counter, 0, sem="relaxed", scope="gpu")  # the push phase counted this call
    else:
        n = tl.atomic_add(counter, 1, sem="relaxed", scope="gpu") + 1
    parity = (n % 2).to(tl.int64)
    start = pid.to(tl.int64) * span
    if PHASE != "sum":
        for step in range(0, span, BLOCK):
            offs = tl.max_contiguous(tl.multiple_of(start + step + tl.arange(0, BLOCK), BLOCK), BLOCK)
            mask = offs < numel
            v = tl.load(mine_ptr + offs, mask=mask)
            for j in tl.static_range(WORLD):
                if j != RANK:
                    dst = _slot(tl.load(bases_ptr + j), parity, RANK, INBOX, CAP, WORLD, ELT) + offs
                    tl.store(tl.multiple_of(dst, 16), v, mask=mask)
        tl.debug_barrier()  # every thread's stores issued before the flag (the release covers what the CTA wrote)
        for j in tl.static_range(WORLD):
            if j != RANK:
                tl.atomic_add(_flag(tl.load(bases_ptr + j), RANK, pid, CTAS), 1, sem="release", scope="sys")
    if PHASE != "push":
        for j in tl.static_range(WORLD):
            if j != RANK:
                got = tl.atomic_add(_flag(local, j, pid, CTAS), 0, sem="acquire", scope="sys")
                while got < n:
                    got = tl.atomic_add(_flag(local, j, pid, CTAS), 0, sem="acquire", scope="sys")
        tl.debug_barrier()
        for step in range(0, span, BLOCK):
            offs = tl.max_contiguous(tl.multiple_of(start + step + tl.arange(0, BLOCK), BLOCK), BLOCK)
            mask = offs < numel
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for j in tl.static_range(WORLD):  # rank order on every rank: the same bits everywhere
                if j == RANK:
                    acc += tl.load(mine_ptr + offs, mask=mask).to(tl.float32)
                else:  # written over NVLink by the peer: past L1, which does not see it
                    src = tl.multiple_of(_slot(local, parity, j, INBOX, CAP, WORLD, ELT) + offs, 16)
                    acc += tl.load(src, mask=mask, cache_modifier=".cg").to(tl.float32)
            tl.store(out_ptr + offs, acc.to(ELT), mask=mask)


def peer_sum(mine: torch.Tensor, out: torch.Tensor, bases: torch.Tensor, rank: int, world: int,
             phase: str = "both", compile_only: bool = False) -> torch.Tensor:
    """out = the sum over the WORLD ranks of their `mine` (this rank's partial, in its workspace's REGION), pushed
    through the inboxes of the workspaces at `bases` (the module docstring). Every rank calls it with the same shape."""
    numel = mine.numel()
    if phase not in PHASES:
        raise ValueError(f"phase: expected one of {PHASES}, got {phase!r}")
    if numel * mine.element_size() > INBOX_BYTES or out.numel() != numel or out.dtype != mine.dtype or \
            not (mine.is_contiguous() and out.is_contiguous()):
        raise ValueError(f"peer_sum: {tuple(mine.shape)} {mine.dtype} into {tuple(out.shape)} {out.dtype} (at most "
                         f"{INBOX_BYTES} bytes, one size and dtype, both contiguous)")
    span = cdiv(cdiv(numel, CTAS), BLOCK) * BLOCK
    L.launcher(peer_sum_kernel, (CTAS,), compile_only)(
        mine, out, bases, numel, span, INBOX=flag_bytes(world), CAP=INBOX_BYTES, RANK=rank, WORLD=world,
        CTAS=CTAS, BLOCK=BLOCK, PHASE=phase, num_warps=WARPS)
    return out


def static_spec(dtype: str = "bf16", rank: int = 0, world: int = 2):
    """(kernel, signature, constexprs, divisible, options) of the kernel as `peer_sum` launches it, for the static
    compiles of `gemmkit isa` and the tests."""
    sig = {"mine_ptr": f"*{dtype}", "out_ptr": f"*{dtype}", "bases_ptr": "*i64", "numel": "i32", "span": "i32"}
    ce = dict(INBOX=flag_bytes(world), CAP=INBOX_BYTES, RANK=rank, WORLD=world, CTAS=CTAS, BLOCK=BLOCK, PHASE="both")
    sig.update({k: "constexpr" for k in ce})
    return peer_sum_kernel, sig, ce, ["mine_ptr", "out_ptr", "bases_ptr", "numel", "span"], {"num_warps": WARPS}


def isa_cases(archs):
    """`gemmkit isa`: the kernel as gemmkit.nn.parallel launches it (bf16, 2 ranks) on sm_90, the target of its
    tensor-parallel transport (peer memory over NVLink)."""
    if "sm_90" in archs:
        yield {"kernel": "peer_sum_kernel", "op": "peer_sum", "arch": "sm_90", "table": "-", "bucket": "bf16",
               "config": {"BLOCK_M": 1, "BLOCK_K": BLOCK, "num_warps": WARPS, "world": 2}, "path": "peer_sum"}


def isa_spec(case):
    kernel, sig, ce, div, opts = static_spec(case["bucket"], rank=0, world=case["config"]["world"])
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts, promises=PROMISES,
                block=None, smem_bound=0)
