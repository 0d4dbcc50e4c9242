"""The plan of the FP8 Gluon kernel (hopper_pingpong_fp8.py): everything its launch and static compiles derive
from one config (`derive` -> Fp8Plan: tiles, layout, ring depth, output staging, registers, swizzles, scale mode),
the constexpr arguments (`constexprs`), and the coop layout's tail split (`tail_plan`, configs/model/tail.py);
and what they derive from a call's tensors: whether the kernel can take them (`unsupported`), whether the x scales
can go by TMA (`scale_tma_ok`), the scales' 1-D TMA views (`flat_storage`) and the boxes' shared layouts
(`fp8_layout`, `scale_layout`). Host code only; the kernel file re-exports these names (its API:
`hopper_pingpong_fp8.derive`, `.unsupported`, ...).

  config ──► derive ──► Fp8Plan ──► constexprs ──► hopper_pingpong_fp8_kernel[grid](...)
               │ hopper_plan.py: check_config, budget (ring fit, staging, registers), swizzle
  (M, N, K, SMs) + Fp8Plan ──► tail_plan ──► (tail tiles, splits): the launch's TAIL / SPLITS, workspace, reduce
  (x, w, y, scales) ──► unsupported ──► None, or why (ops/dispatch.py: the Triton tier runs the call)
  x_scale (block) ──► scale_tma_ok ──► the load warp copies the x scales by TMA, or by cp.async

Constraints: those of hopper_pingpong_fp8.py (its docstring), checked here with a ValueError naming the config
key: BLOCK_SIZE_M 64 / 128 (coop: 128 / 256), BLOCK_SIZE_N a power of two in [16, 256], BLOCK_SIZE_K 32 / 64 / 128
dividing the scale block's K, BLOCK_SIZE_N dividing its N, at most 192 live accumulator registers per consumer
thread, at least 2 ring stages beside the output staging; num_warps 4 (pingpong) or 8 (coop). A call's tensors:
`unsupported` says which it cannot take (sm_90, fp8 e4m3fn x / w, a 16-bit or fp32 y, TMA-able x / w / y, contiguous
fp32 rowcol scales, 2-D fp32 block scales spanning < 2**31 elements); the launch checks the shapes.
"""
from __future__ import annotations

import functools

from triton.experimental.gluon import language as gl

from ...configs.model import tail_split
from . import hopper_host as hh
from . import hopper_plan as hplan
from .hopper_plan import Fp8Plan

SLICE_M = 64  # rows of one wgmma chain (m64) and of the partial accumulator
MAX_PROMOTE_K = 128  # fp8 products the tensor cores' adder may carry before an fp32 FADD
# The coop tail split's rule (`tail_plan`): the K a tile needs before splitting the last round pays for the
# partials and the reduce launch. Measured at BK = 128 (same-process A/B, docs/PERF.md decision log): K = 512,
# 1536 and 2048 (4-16 steps) lost or tied (0.969-1.002), K = 7168 and more gained where the tail round was more
# than a few % of the time (+2-14%). Any threshold between 2048 and 7168 fits those rows; 4096 was not measured.
MIN_TAIL_K = 4096
# The paired pingpong's rule (`pair_plan`: both consumers on one tile where the tiles are at most one a CTA, the
# decode tile 64 x 64 on N = 4224-8448 at 17 <= M <= 64): the least K, per scale mode, where the halved K loops pay
# for the exchange of the partial. Same-process A/B (ab/fp8_pair.json, ab/blockscale_pair.json, H200, 36 rows
# each): rowcol +1 to +29% at every K >= 4096 (+20-29% on 72-80 tiles with K >= 17920, +3% on 128 tiles), mixed
# below (2048-3072: -1.6 to +1.7%); block 0 to +27% at K >= 6400, mixed at 4096-5120 (-3.4 to +14%), -1.6 to -4.4%
# at 2048-3072 (a block step's promotion reads its scales: the halves save less).
PAIR_MIN_K = {"rowcol": 4096, "block": 6144}
# (coop rowcol) work items whose epilogue scales the load warp stages at once: the one in its epilogue, the next
VECTOR_BUFFERS = 2
_LOAD_LANES = 32  # lanes of the load warp (hopper_fp8_parts.LOAD_THREADS): it copies at least one w scale a lane
# (block) a ring slot's w-scale buffer: 128 bytes, as a TMA destination in shared memory must start on a 128-byte
# boundary, of which a 16-byte TMA box (the least a box moves) fills the first WS_BOX_FLOATS, from the w scale's
# offset rounded down to 4 elements, since a box must also start on a 16-byte boundary in global memory (measured
# with a probe kernel: an unaligned box faults, "illegal instruction"; a 16-byte slot, "misaligned address").
W_SLOT_FLOATS = hh.TMA_SMEM_ALIGN // 4  # fp32
WS_BOX_FLOATS = hh.TMA_ALIGN // 4
_MAX_LIVE_ACC = 192  # acc + partial(s) fp32 registers per consumer thread (of 240: the rest for addresses)
LAYOUTS = {hh.CONSUMER_WARPS: "pingpong", hplan.COOP_WARPS: "coop"}  # num_warps (warps computing one output tile) -> layout
CONFIG_KEYS = hh.CONFIG_KEYS


def derive(cfg: dict, target=None, out_bytes: int = 2, block_shape=None, pair: bool = False) -> Fp8Plan:
    """Everything the kernel and its launch need, from one config. ValueError names the key that cannot work.

    Derivation (H200: 227 KiB shared memory per block, 64 K registers per SM; fp8 = 1 byte):
      promote  every BK products (BK <= 128): each k step of a 64-row slice is one chain of
               BK / 32 wgmma k32 from zero, then one FADD per accumulator register.
      regs     acc BM * BN / 128 + partial 64 * BN / 128 per consumer thread (128 x 128: 128 + 64
               = 192; 64 x 256 would need 256: refused). Warps: 4 + 4 + 1 + 1, the two load warps
               share one padded warpgroup -> 12 warps, 384 threads, 168 registers at entry;
               setmaxnreg: load warpgroup 24, consumers (168 * 384 - 24 * 128) / 256 = 240
               (hopper_plan.register_split: the ping-pong's numbers, the same split).
      ring     stage_bytes = (BM + BN) * BK (128 x 128 x 128: 32 KiB); two rings of `stages` each.
               Two output tiles (one per consumer) when 2 * num_stages stages fit beside them, else
               one shared tile and stages = min(num_stages, (smem - tile - slack) // (2 * stage_bytes)),
               at least 2. 128 x 128 x 128, bf16 out: 2 tiles -> 2 stages a ring; 1 tile -> 3.
      swizzle  128 B rows (BK = 128 fp8): 128-byte swizzle for a and b; y as the ping-pong (hopper_plan.swizzle).
      scales   block_shape None: rowcol. (SBN, SBK): block; BK | SBK (no chain straddles two scale
               blocks; BK < SBK promotes every step with the same scales) and BN | SBN (one w scale
               per tile per K block); each ring slot also holds the step's BM fp32 x scales and a
               W_SLOT_FLOATS = 32 buffer holding its w scale (stage_bytes + 4 (BM + 32): 128 x 128 x 128
               -> 33408 B, 2 stages a ring beside two bf16 output tiles, as 3 no longer fit beside one).
      layout   num_warps 4 -> "pingpong" (above); num_warps 8 -> "coop" (BLOCK_SIZE_M 128; 256 at the end):
               one ring, one load warp (still 12 warps: 4 + 4 + 1 padded; the same 168 / 24 / 240
               registers), consumer rows 64: acc 64 * BN / 128 + two partials 64 * BN / 128 (128 x 128:
               64 + 2 x 64 = 192 of 240 with the in-flight chain's second partial, no spill; 128 x 256: 384, refused). Output
               staging: two 64 x BN buffers (one per consumer, each its own TMA store), BM * BN *
               out_bytes in all; rowcol adds two buffers of the epilogue's scales (BM + max(BN, 32) fp32
               each, staged by the load warp: `vector_bytes`, 2 KiB at 128 x 128); stages = min(num_stages,
               (smem - staging - vectors - slack) // stage_bytes): 128 x 128 x 128 bf16 out: rowcol 6
               (196608 + 32768 + 2048 + 1024 slack = 232448 B, the whole 227 KiB), block 5 (33408 B a slot);
               fp32 out: rowcol 5, block 4. Pingpong's shared-memory plan and SASS are unchanged.
               BLOCK_SIZE_M 256 (coop 256): consumer rows 128, one partial (acc 128 + 64 = 192 at BN = 128);
               a 48 KiB slot (256 + 128) x 128 (block: + 4 (256 + 32)); two 128 x BN staging buffers, or one shared
               (c_free) where two leave fewer than 2 slots (fp32 out); rowcol vectors 2 x (256 + 128) fp32:
               bf16 out 3 slots (3 x 49152 + 65536 + 3072 + 1024 = 217088 B), fp32 out 3 (one 64 KiB buffer).
      pair     (pingpong, `pair`: the launch's `pair_plan`) both consumers on one tile, K halved between
               their rings: one output staging buffer (consumer 0 stores) beside an fp32 BM x BN exchange
               buffer (consumer 1's partial) where the unpaired kernel has two staging buffers: 64 x 64 x 128
               bf16 out: 8 + 16 KiB beside 6 slots a ring of 16 KiB (block: 16768 B), as unpaired; 128 x 128 x
               128 bf16 out: 32 + 64 KiB, 2 slots a ring (rowcol; block and fp32 out: 1, so `launch_plan` runs
               those unpaired).
    """
    nw = cfg.get("num_warps")
    if nw not in LAYOUTS:
        raise ValueError(f"config: key 'num_warps' = {nw!r}; the gluon fp8 backend needs 4 (ping-pong: a "
                         "warpgroup per tile) or 8 (cooperative: two warpgroups on one 128- or 256-row tile)")
    layout = LAYOUTS[nw]
    if pair and layout != "pingpong":
        raise ValueError("pair: the paired K halves are the ping-pong layout's (num_warps 4), not the cooperative one's")
    bm = cfg.get("BLOCK_SIZE_M")
    if layout == "coop" and bm is not None and bm not in (2 * SLICE_M, 4 * SLICE_M):
        raise ValueError(f"config: key 'BLOCK_SIZE_M' = {bm} with num_warps 8 (the cooperative layout): "
                         f"it needs 128 (a 64-row half per consumer warpgroup) or 256 (a 128-row half)")
    rows = bm if layout == "pingpong" or bm is None else bm // 2  # output rows one consumer computes per tile
    # The shared checks (hopper_plan.check_config) know num_warps 4 and the rows of one consumer (a missing
    # BLOCK_SIZE_M stays missing: its error names the key).
    _, bn, bk = hplan.check_config({**cfg, "num_warps": hh.CONSUMER_WARPS,
                                    **({} if bm is None else {"BLOCK_SIZE_M": rows})},
                                   "gluon fp8", "the gluon fp8 kernel", "(m64 slices)")
    if bk not in (32, 64, 128):
        raise ValueError(f"config: key 'BLOCK_SIZE_K' = {bk}; the gluon fp8 backend needs 32, 64 or 128 "
                         f"(k32 wgmma, promotion at least every {MAX_PROMOTE_K} products)")
    rings = 2 if layout == "pingpong" else 1
    # coop 128: each consumer keeps one chain in flight while it promotes the other (two partials); pingpong and
    # coop 256 (128 rows a consumer): one partial, each chain waited, the other consumer's wgmma runs meanwhile
    partials = 2 if rows == SLICE_M and layout == "coop" else 1
    acc_regs, partial_regs = hplan.acc_regs(rows, bn), partials * hplan.acc_regs(SLICE_M, bn)
    hplan.check_acc_regs(acc_regs + partial_regs, bm, bn, "gluon fp8", limit=_MAX_LIVE_ACC,
                         count=f"{acc_regs} + {partial_regs}", note=f" ({layout})", why=" (fp32 tile + partials)")
    scale, sbn, sbk, scale_bytes = "rowcol", 1, 1, 0
    if block_shape is not None:
        sbn, sbk = block_shape
        if sbk % bk:
            raise ValueError(f"config: key 'BLOCK_SIZE_K' = {bk} does not divide the scale block's K = {sbk} "
                             "(a promotion would straddle two scale blocks)")
        if sbn % bn:
            raise ValueError(f"config: key 'BLOCK_SIZE_N' = {bn} does not divide the scale block's N = {sbn} "
                             "(a tile's w scale would not be one scalar per K block)")
        scale, scale_bytes = "block", 4 * (bm + W_SLOT_FLOATS)
    buf_bytes = rows * bn * out_bytes  # one consumer's output staging buffer
    vec = vector_bytes(layout, scale, bm, bn)
    # coop: a half each: two buffers (one tile's bytes), or one shared where two leave < 2 stages;
    # pingpong: two buffers where num_stages stages a ring fit beside them, else one shared
    # pair: consumer 0's staging buffer and the exchange buffer of consumer 1's fp32 partial (one option)
    staging = [(1, buf_bytes + rows * bn * 4)] if pair else [(2, 2 * buf_bytes + vec), (1, buf_bytes + vec)]
    b = hplan.budget(target, (bm, bn, bk), stage_bytes=(bm + bn) * bk + scale_bytes, num_stages=cfg["num_stages"],
                     staging=staging, want=2 if layout == "coop" else None,
                     rings=rings, load_warps=rings, out_bytes=out_bytes, each_ring=True)
    return Fp8Plan(BM=bm, BN=bn, BK=bk, GROUP_SIZE_M=cfg["GROUP_SIZE_M"], **b.fields(), acc_regs=acc_regs,
                   swizzle_a=hplan.swizzle(bk), swizzle_b=hplan.swizzle(bk), swizzle_c=hplan.swizzle(bn * out_bytes),
                   promote_k=bk, slices=rows // SLICE_M, c_tiles=b.staging, partial_regs=partial_regs, scale=scale,
                   scale_bn=sbn, scale_bk=sbk, scale_bytes=scale_bytes, layout=layout, rings=rings,
                   consumer_rows=rows, pair=pair)


def vector_bytes(layout: str, scale: str, bm: int, bn: int) -> int:
    """Shared memory for the coop rowcol epilogue's staged scales: VECTOR_BUFFERS x (BM x scales + max(BN, 32)
    w scales) fp32 (the kernel's v_smem); 0 for the other layouts and modes (they load them in the epilogue,
    or apply block scales in the promotion)."""
    if layout != "coop" or scale != "rowcol":
        return 0
    return VECTOR_BUFFERS * (bm + max(bn, _LOAD_LANES)) * 4


def constexprs(plan: Fp8Plan, *, has_bias: bool, scale_tma: bool = False, x_boxes: int = 1) -> dict:
    """The kernel's constexpr arguments (one place for the launch and the static compile). scale_tma (block
    mode): the load warp copies the scales by TMA (the launch decides from the scale tensors: `scale_tma_ok`).
    x_boxes: x's TMA boxes a K step (kernels/_host.x_boxes: more than one only under one row of tiles)."""
    return dict(STAGES=plan.stages, C_TILES=plan.c_tiles, GROUP_SIZE_M=plan.GROUP_SIZE_M, HAS_BIAS=has_bias,
                LAYOUT=plan.layout, SCALE=plan.scale, SCALE_BN=plan.scale_bn, SCALE_BK=plan.scale_bk,
                SCALE_TMA=bool(scale_tma and plan.scale == "block"), PAIR=plan.pair, MMA_REGS=plan.mma_regs,
                LOAD_REGS=plan.load_regs, BM=plan.BM, XBOXES=x_boxes)


def pair_plan(plan: Fp8Plan, M: int, N: int, K: int, ctas: int, pair=None) -> bool:
    """Whether a pingpong launch pairs its consumers on one tile, each its ring's half of K (`pair` None: the rule;
    a bool forces it where the layout allows and K has 2 steps or more). The rule: every CTA holds at most one tile
    (tiles <= ctas: the second consumer and its ring would idle) and K >= PAIR_MIN_K of the scale mode."""
    if plan.layout != "pingpong" or pair is False or -(-K // plan.BK) < 2:
        return False
    return bool(pair) or (-(-M // plan.BM) * -(-N // plan.BN) <= ctas and K >= PAIR_MIN_K[plan.scale])


def launch_plan(cfg: dict, target, out_bytes: int, block_shape, M: int, N: int, K: int, pair=None) -> Fp8Plan:
    """The plan a launch runs: `derive`'s, paired where `pair_plan` says so and the exchange buffer leaves each ring
    2 slots (else unpaired; a forced pair=True raises the ValueError)."""
    plan = derive(cfg, target, out_bytes, block_shape)
    if pair_plan(plan, M, N, K, target.num_cus, pair):
        try:
            return derive(cfg, target, out_bytes, block_shape, pair=True)
        except ValueError:
            if pair:
                raise
    return plan


def tail_plan(plan: Fp8Plan, M: int, N: int, K: int, ctas: int, tail=None) -> tuple[int, int]:
    """(tail tiles, splits) of a launch (configs/model/tail.py tail_split): coop layout only (a pingpong CTA runs two
    tiles at once, and its shared output staging is handed over tile by tile); `tail` None applies the rule
    (K >= MIN_TAIL_K), a false value never splits, a true one splits wherever tail_split can."""
    if plan.layout != "coop" or (tail is not None and not tail):
        return 0, 1
    tiles = -(-M // plan.BM) * -(-N // plan.BN)
    return tail_split(tiles, ctas, -(-K // plan.BK), 1 if tail else -(-MIN_TAIL_K // plan.BK))


# ----------------------------------------------------------------------------- what a call may pass; TMA layouts

@functools.lru_cache(maxsize=None)
def fp8_layout(rows: int, cols: int):
    """NVMMA shared layout of an fp8 rows x cols TMA box (128-byte swizzle for 128 columns)."""
    return gl.NVMMASharedLayout.get_default_for([rows, cols], gl.float8e4nv)


def unsupported(x, w, y, x_scale=None, w_scale=None, target=None, block_shape=None) -> str | None:
    """Why this kernel cannot run these tensors (None: it can). The op falls back to the Triton tier then.
    block_shape None: per-token / per-channel scales; (SBN, SBK): block scales."""
    import torch

    if target is not None and target.arch != "sm_90":
        return f"needs sm_90, not {target.arch}"
    if x.dtype != torch.float8_e4m3fn or w.dtype != torch.float8_e4m3fn:
        return f"needs float8_e4m3fn x and w, got {x.dtype} and {w.dtype}"
    if y.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        return f"needs a bf16, fp16 or fp32 output, got {y.dtype}"
    for name, t in (("x", x), ("w", w), ("y", y)):
        if not hh.tma_ok(t):
            return f"{name}: TMA needs a 2-D tensor, unit last stride, 16-byte aligned base and row stride"
    for name, s in (("x_scale", x_scale), ("w_scale", w_scale)):
        if s is None:
            continue
        if block_shape is None and (s.dtype != torch.float32 or s.dim() != 1 or s.stride(0) != 1):
            return f"{name}: needs a contiguous 1-D fp32 vector"
        if block_shape is not None:
            if s.dtype != torch.float32 or s.dim() != 2:
                return f"{name}: block scales need a 2-D fp32 tensor"
            if sum((d - 1) * st for d, st in zip(s.shape, s.stride())) >= 2**31:
                return f"{name}: spans 2**31 elements or more (the kernel's scale offsets are int32)"
    return None


@functools.lru_cache(maxsize=None)
def scale_layout():
    """The shared layout of the block scales' 1-D TMA boxes (fp32, unswizzled)."""
    return gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=1)


def flat_storage(s):
    """A 1-D view of a scale tensor's storage, from its first element to its last (TMA coordinates are offsets)."""
    return s.as_strided((1 + sum((d - 1) * st for d, st in zip(s.shape, s.stride())),), (1,))


def scale_tma_ok(x_scale) -> bool:
    """Whether the load warp can copy the x scales by TMA, one 1-D box of BM a K step: they must be consecutive in
    memory (M-major, stride (1, *): the layout gemmkit.quant and torch._scaled_mm use; or M == 1) and every box
    must start on a 16-byte boundary (on the H200 an unaligned box faults, "illegal instruction",
    measured with a probe kernel), so a 16-byte aligned base and a K-block stride of a multiple of 4 elements
    (M % 4 == 0 when dense; or one K block). Otherwise cp.async (any strides; row-major x_scale costs a line a
    row, docs/PERF.md). (The w scale always comes by TMA: `launch` copies a w_scale whose base is off a
    16-byte boundary.)"""
    m, kb = x_scale.shape
    return ((x_scale.stride(0) == 1 or m == 1) and (x_scale.stride(1) * 4 % hh.TMA_ALIGN == 0 or kb == 1) and
            x_scale.data_ptr() % hh.TMA_ALIGN == 0)
