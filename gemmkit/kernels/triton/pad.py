"""Padding copies: an operand TMA can address, for K that leaves rows off 16-byte multiples (`pad_k`), x with
whole boxes of rows past M (`pad_m`) and w with whole boxes of rows past N (`pad_n`).

TMA (and so every sm_90 TMA and Gluon GEMM kernel here) needs each row of x and w to start on a 16-byte boundary:
K * element bytes a multiple of 16 (K % 8 == 0 for bf16, K % 16 == 0 for fp8). Any other K runs the Triton pointer
kernel, whose loads of rows at 2-byte alignment cannot be vectorised: 41 TFLOP/s at 4096 x 4096 x 4095 bf16 on the
H200, 24x slower than K = 4096. A copy to rows of KP elements (K rounded up to the next 16 bytes, zeros after K)
costs one read and one write of the operand and lets the fast kernels run; the zeros add nothing to the sums.

TMA boxes that reach past a tensor's last row are slow: the hardware fills the rows out of bounds with zeros, and
on the H200 a box with rows past M loads far slower than one of real rows. The same fp8 ping-pong config on
8192 x 28672 weights ran 67.8 us at M = 64 (one row of 64-row tiles), 143 us at M = 65 (a second row of tiles,
63 of its 64 rows past M) and 78 us at M = 128 (both rows real); bf16 8192 x 8192 with 128-row tiles ran 80 us at
M = 160 and 54 us at M = 256 (benchmarks/results/h200/ab/fp8_m_sweep.json, bf16_m200.json). Where x is small
beside w, a copy of x to whole boxes of rows (zeros after M) costs a few microseconds and loads at full speed.

    src (R, K), any strides                dst (RP, KP), rows stride_dr apart (pad_rows: KP; copy_rows: any), RP >= R
    ┌─────────────────────┐               ┌─────────────────────┬───┐
    │ row r: K elements   │  ── copy ──►  │ row r: K elements   │ 0 │
    └─────────────────────┘               ├─────────────────────┴───┤
                                          │ rows R .. RP - 1: 0      │
                                          └─────────────────────────┘
    one program per BLOCK_R x BLOCK_K block of dst

`copy_rows` (no padding) copies y out of the workspace a kernel wrote at a 16-byte row pitch where y's own rows are
off it (N % 8 != 0 for a 16-bit y: `Choice.pitch_y`). ops/dispatch.py decides when a call copies: `Choice.pad_k`
when x or w breaks TMA's rules only by its rows and y meets them, at any M (measured on the H200: the copy wins
from M = 16, 1.5x, to M = 4096, 16x; docs/PERF.md);
`Choice.pad_m` when a TMA kernel's x boxes would reach past M and the copy of x is small beside w (`dispatch.pad_m`);
`Choice.pad_n` when the Gluon ping-pong's w boxes would reach past a narrow N under one tile and the copy of w is
small beside x (`dispatch.pad_n`; past one tile the Gluon kernels shift their last tiles instead); copies at a
128-byte row pitch where rows start off 32-byte sectors (`Choice.pitch_x` / `pitch_w`). The kernels then compute the zero rows too; y's descriptor (M rows, N columns) drops them at the
store.

Constraints:
  - dst (RP, KP) with unit stride along its rows (pad_rows: contiguous; copy_rows: y's row stride), RP >= R,
    KP >= K; src any strides (int64 offsets throughout: R * stride may pass 2**31);
  - elements of 1, 2 or 4 bytes, copied as integers of that width (every float format's zero is zero bits);
  - BLOCK_R, BLOCK_K powers of two.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from ... import launcher as L
from .._host import TMA_ALIGN, cdiv

BLOCK_R, BLOCK_K, WARPS = 32, 128, 4  # a 32 x 128 block: 8 KiB of bf16 a program, 16-byte vectors on dst

PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
)


@triton.jit
def pad_rows_kernel(src_ptr, dst_ptr, R, K, RP, KP, stride_sr, stride_sk, stride_dr,
                    BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, BITS: tl.constexpr):
    # A copy moves bits: the elements as integers of their width (every float format's zero is zero bits).
    src = src_ptr.to(tl.pointer_type(BITS), bitcast=True)
    dst = dst_ptr.to(tl.pointer_type(BITS), bitcast=True)
    offs_r = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    offs_k = (tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)).to(tl.int64)
    rows, cols = offs_r[:, None], offs_k[None, :]
    v = tl.load(src + rows * stride_sr + cols * stride_sk, mask=(rows < R) & (cols < K), other=0)
    tl.store(dst + rows * stride_dr + cols, v, mask=(rows < RP) & (cols < KP))


@triton.jit
def shift_rows_kernel(src_ptr, dst_ptr, R, K, RP, KS, stride_sr, stride_sk, pitch,
                      BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, BITS: tl.constexpr, VEC: tl.constexpr):
    # dst[q RP + r, i] = src[r, i - s_q], s_q = (q * pitch) % VEC, zeros outside src's columns; rows R .. RP - 1 of
    # each copy unwritten (gemm_rows_tma.py's x: those rows feed only outputs its stores drop)
    src = src_ptr.to(tl.pointer_type(BITS), bitcast=True)
    dst = dst_ptr.to(tl.pointer_type(BITS), bitcast=True)
    q = tl.program_id(2)
    shift = (q * pitch) % VEC
    offs_r = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    offs_k = (tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)).to(tl.int64)
    rows, cols = offs_r[:, None], offs_k[None, :]
    k = cols - shift
    v = tl.load(src + rows * stride_sr + k * stride_sk, mask=(rows < R) & (k >= 0) & (k < K), other=0)
    tl.store(dst + (q * RP + rows) * KS + cols, v, mask=(rows < R) & (cols < KS))


def padded_k(K: int, element_size: int) -> int:
    """K rounded up so that a row of K elements is a multiple of 16 bytes (TMA's row-stride rule)."""
    per = max(1, TMA_ALIGN // element_size)
    return cdiv(K, per) * per


def pad_rows(t: torch.Tensor, KP: int, compile_only: bool = False, RP: int | None = None) -> torch.Tensor:
    """A new contiguous (RP, KP) copy of the 2-D `t` (R, K) (RP None: R rows), zeros after column K and row R."""
    R, K = t.shape
    RP = R if RP is None else RP
    if RP < R or KP < K:
        raise ValueError(f"pad_rows: ({RP}, {KP}) cannot hold ({R}, {K})")
    dst = torch.empty((RP, KP), dtype=t.dtype, device=t.device)
    L.launcher(pad_rows_kernel, (cdiv(RP, BLOCK_R), cdiv(KP, BLOCK_K)), compile_only)(
        t, dst, R, K, RP, KP, t.stride(0), t.stride(1), KP, BLOCK_R=BLOCK_R, BLOCK_K=BLOCK_K,
        BITS=_BITS[t.element_size()], num_warps=WARPS)
    return dst


def shift_rows(t: torch.Tensor, pitch: int, RP: int, KS: int, compile_only: bool = False) -> torch.Tensor:
    """VEC (16 bytes of elements) copies of the 2-D `t` (R, K), each (RP, KS), stacked: copy q's row r < R, column
    i is t[r, i - s_q], s_q = (q * pitch) mod VEC, zeros outside t's columns: x shifted as
    kernels/triton/gemm_rows_tma.py reads the weight rows of class q (row stride `pitch`) from the 16-byte boundary
    before them. Rows R .. RP - 1 of each copy are left unwritten (whatever the allocation held): each feeds only its
    own output row, past M, which the kernel's stores drop."""
    R, K = t.shape
    vec = TMA_ALIGN // t.element_size()
    if RP < R or KS < K + vec - 1 or (KS * t.element_size()) % TMA_ALIGN:
        raise ValueError(f"shift_rows: ({RP}, {KS}) cannot hold ({R}, {K}) shifted by up to {vec - 1}")
    dst = torch.empty((vec * RP, KS), dtype=t.dtype, device=t.device)
    L.launcher(shift_rows_kernel, (cdiv(R, BLOCK_R), cdiv(KS, BLOCK_K), vec), compile_only)(
        t, dst, R, K, RP, KS, t.stride(0), t.stride(1), pitch, BLOCK_R=BLOCK_R, BLOCK_K=BLOCK_K,
        BITS=_BITS[t.element_size()], VEC=vec, num_warps=WARPS)
    return dst


def copy_rows(src: torch.Tensor, dst: torch.Tensor, compile_only: bool = False) -> torch.Tensor:
    """dst[:] = src (2-D, one shape; dst with unit stride along its rows, any row stride): the copy of y out of the
    workspace the kernel wrote at a 16-byte row pitch (ops/dispatch.py `Choice.pitch_y`)."""
    R, K = src.shape
    if tuple(dst.shape) != (R, K) or dst.stride(1) != 1 or dst.dtype != src.dtype:
        raise ValueError(f"copy_rows: dst {tuple(dst.shape)} {dst.dtype} (stride {dst.stride()}) cannot take "
                         f"src {tuple(src.shape)} {src.dtype}")
    L.launcher(pad_rows_kernel, (cdiv(R, BLOCK_R), cdiv(K, BLOCK_K)), compile_only)(
        src, dst, R, K, R, K, src.stride(0), src.stride(1), dst.stride(0), BLOCK_R=BLOCK_R, BLOCK_K=BLOCK_K,
        BITS=_BITS[src.element_size()], num_warps=WARPS)
    return dst


_BITS = {1: tl.int8, 2: tl.int16, 4: tl.int32}


def static_spec(dtype: str = "bf16"):
    """(kernel, signature, constexprs, divisible, options) of the copy as `pad_rows` launches it for a `dtype`
    operand with unit stride along K (what ops/dispatch.py copies), for the static compiles of `gemmkit isa`."""
    width = {"bf16": 2, "fp16": 2, "fp8e4nv": 1, "fp8e4b8": 1, "i8": 1}[dtype]
    sig = {"src_ptr": f"*{dtype}", "dst_ptr": f"*{dtype}", "R": "i32", "K": "i32", "RP": "i32", "KP": "i32",
           "stride_sr": "i32",
           "stride_sk": "constexpr", "stride_dr": "i32"}
    ce = dict(stride_sk=1, BLOCK_R=BLOCK_R, BLOCK_K=BLOCK_K, BITS=_BITS[width])
    sig.update({k: "constexpr" for k in ce if k not in sig})
    return pad_rows_kernel, sig, ce, ["src_ptr", "dst_ptr", "KP", "stride_dr"], {"num_warps": WARPS}


def shift_static_spec(dtype: str = "bf16"):
    """(kernel, signature, constexprs, divisible, options) of x's shifted copies as `shift_rows` launches them for
    kernels/triton/gemm_rows_tma.py (16- or 8-bit x, unit stride along K; KS whole 128-byte chunks), for `gemmkit
    isa`."""
    width = {"bf16": 2, "fp16": 2, "fp8e4nv": 1, "i8": 1}[dtype]
    sig = {"src_ptr": f"*{dtype}", "dst_ptr": f"*{dtype}", "R": "i32", "K": "i32", "RP": "i32", "KS": "i32",
           "stride_sr": "i32", "stride_sk": "constexpr", "pitch": "i32"}
    ce = dict(stride_sk=1, BLOCK_R=BLOCK_R, BLOCK_K=BLOCK_K, BITS=_BITS[width], VEC=TMA_ALIGN // width)
    sig.update({k: "constexpr" for k in ce if k not in sig})
    return shift_rows_kernel, sig, ce, ["src_ptr", "dst_ptr", "KS"], {"num_warps": WARPS}
