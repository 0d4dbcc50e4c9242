"""Host-side rules every kernel's host code shares: operand dtypes, TMA's tensor rules, 32- or 64-bit
offsets, compiler options per target. No device code, no torch.library, nothing from ops/.

(ops/_common.py re-exports these for the ops' argument checks.)
"""
from __future__ import annotations

import os

import torch

FLOAT16_DTYPES = (torch.bfloat16, torch.float16)
FP8_E4M3_DTYPES = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e4m3fnuz, torch.float8_e5m2, torch.float8_e5m2fnuz)
# torch dtype -> Triton's signature name (static compiles)
TL_DTYPE = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.int8: "i8",
            torch.float8_e4m3fn: "fp8e4nv", torch.float8_e4m3fnuz: "fp8e4b8", torch.float8_e5m2: "fp8e5",
            torch.float8_e5m2fnuz: "fp8e5b16"}


def cdiv(a, b):
    return (a + b - 1) // b


def next_pow2(n):
    return 1 << (max(1, n) - 1).bit_length()


def fp8_dtype(target) -> torch.dtype:
    """The FP8 (E4M3) torch dtype `target`'s matrix units take (gemmkit.arch.Target.fp8_e4m3)."""
    return getattr(torch, target.fp8_e4m3)


# The Hopper Gluon dense kernels start a last row / column of tiles that would reach past M / N one tile before it
# ends (kernels/gluon/hopper_parts.py `tile_origin`: boxes past a tensor's end load about twice as slowly), and the
# dispatch then copies x or w to whole boxes only where M or N is under one tile (ops/dispatch.py pad_m / pad_n).
# GEMMKIT_SHIFT_TILES=0 (or SHIFT_LAST_TILES = False, read at each launch) loads those tiles where they lie, e.g. to
# compare.
SHIFT_LAST_TILES = os.environ.get("GEMMKIT_SHIFT_TILES", "1") != "0"


def shift_last_tiles(acc_regs: int) -> bool:
    """Whether a Hopper Gluon dense tile of `acc_regs` accumulator registers a consumer thread shifts its last tiles
    back: SHIFT_LAST_TILES, unless the installed Triton's register budget says no (kernels/_budgets.shift_ok)."""
    from . import _budgets

    return SHIFT_LAST_TILES and _budgets.shift_ok(acc_regs)


# A launch whose tiles are one row (M < BLOCK_SIZE_M) loads only the rows x holds, rounded up to a multiple of 8
# (`x_boxes`: XBOXES TMA boxes of XROWS rows a K step, XROWS a power of two as Triton's shapes are), into the first
# rows of each BLOCK_SIZE_M-row ring slot: the slot's other rows are never written, and the output rows they make lie
# past M, never stored (a row of the product reads only its own row of x). A box reaching past M loads slowly (the
# hardware's out-of-bounds fill, ops/dispatch.py pad_m): H200, fp8 64 x 64 ping-pong, 5120 x 8192 at M = 32 21.2 us
# against 17.1 at M = 64 (docs/PERF.md). Where the boxes hold M, the dispatch makes no copy of x. The Hopper Gluon
# dense kernels take them (gluon/hopper_pingpong_fp8.py; hopper_pingpong.py and hopper_coop.py through
# gluon/hopper_host.token_boxes, which applies them to w's rows, the tokens, on a swap-AB tile). GEMMKIT_TRIM_X_BOX=0
# (or TRIM_X_BOX = False, read at each launch) loads one whole box, e.g. to compare.
TRIM_X_BOX = os.environ.get("GEMMKIT_TRIM_X_BOX", "1") != "0"
X_ROWS_MIN = 8  # a box's least rows: the 8-row swizzle atom of its NVMMA layout
MAX_X_BOXES = 8  # boxes a K step at most (the load warp issues each)


def x_boxes(bm: int, M: int) -> tuple[int, int]:
    """(rows of x's TMA box, boxes a K step) for tiles of `bm` rows at `M` rows: (bm, 1), or (TRIM_X_BOX, M < bm)
    boxes of the largest power of two dividing M rounded up to X_ROWS_MIN, doubled while more than MAX_X_BOXES of
    them would hold M (M = 32: one of 32; 48: three of 16; 40: five of 8; 72: five of 16)."""
    if not TRIM_X_BOX or M >= bm:
        return bm, 1
    m = cdiv(M, X_ROWS_MIN) * X_ROWS_MIN
    rows = min(m & -m, bm)
    while rows < bm and cdiv(M, rows) > MAX_X_BOXES:
        rows *= 2
    return rows, cdiv(M, rows)


TMA_ALIGN = 16  # bytes: a TMA tensor's base and row strides are multiples of this (sm_90)


def tma_compatible(*tensors) -> bool:
    """TMA's rules for a 2-D tensor: 16-byte aligned base, unit last stride, 16-byte aligned row stride."""
    for t in tensors:
        if t.dim() != 2 or t.stride(1) != 1 or t.data_ptr() % TMA_ALIGN:
            return False
        if (t.stride(0) * t.element_size()) % TMA_ALIGN or t.shape[0] == 0 or t.shape[1] == 0:
            return False
    return True


TMA_RULE_2D = "TMA needs a 2-D tensor, unit last stride, 16-byte aligned base and row stride"


def tma_reason(cfg: dict, target, tensors: dict, fits, compatible=tma_compatible, rule: str = TMA_RULE_2D):
    """Why a Triton TMA kernel cannot take a call (None: it can), checked in this order: the config asks for it
    ("tma": true), the target has it, each named tensor meets `compatible` (else "<name>: <rule>"), and `fits()`
    (the kernel's shared-memory fit: None or why not). Every Triton-tier host module's `tma_unsupported`."""
    if not cfg.get("tma"):
        return 'the config has "tma": false'
    if not target.is_nvidia:
        return f"TMA needs an NVIDIA sm_90 target, not {target.arch}"
    for name, t in tensors.items():
        if not compatible(t):
            return f"{name}: {rule}"
    return fits()


def fit_reason(check, *args, **kwargs) -> str | None:
    """`check(*args, **kwargs)` (a feasibility check that raises ValueError) as a reason: None, or its message."""
    try:
        check(*args, **kwargs)
    except ValueError as e:
        return str(e).removeprefix("config: ")
    return None


def last_offset(t) -> int:
    """The largest element offset of a non-empty `t`: sum over dims of (size - 1) * stride (torch strides are
    never negative). Its address span (ops/_common `_address_range`) and its offset width (`int64_offsets`) follow."""
    return sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))


INT32_SPAN = 2**31  # element offsets below this fit the kernels' int32 offset arithmetic


def int64_offsets(*tensors) -> bool:
    """The INT64_OFFSETS constexpr of a launch (kernels/triton/_offsets.py): True when any tensor's largest
    element offset, sum over dims of (size - 1) * stride, reaches 2**31, so an offset the kernels compute
    in int32 (column index x column stride, a K step x its stride) could wrap. None, empty tensors and
    anything without strides (a TMA descriptor) are skipped. Pass every tensor a kernel addresses by pointer
    (operands, output, scales, bias, workspaces); `torch.empty(..., device="meta")` stands for a workspace
    not yet allocated."""
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            continue
        if t.numel() and last_offset(t) >= INT32_SPAN:
            return True
    return False


def compiler_options(cfg: dict, target) -> dict:
    """Launch keyword arguments for the compiler, per backend (AMD-only keys only on hip), with the installed
    Triton's budget rules applied (kernels/_budgets.triton_options: maxnreg for sm_90 mma.sync tiles, one stage
    for gfx950 full-accumulator tiles, from Triton 3.7 on; nothing on 3.6)."""
    from . import _budgets

    opts = {"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]}
    if target.is_amd:
        for key in ("waves_per_eu", "matrix_instr_nonkdim", "kpack"):
            if key in cfg:
                opts[key] = cfg[key]
    opts.update(_budgets.triton_options(cfg, target))
    return opts
