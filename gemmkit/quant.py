"""Quantizers for the GEMMs' inputs, each a Triton kernel with a torch reference beside it.

Layouts are the ones the GEMMs take (y = x @ w.T, x (M, K), w (N, K); DeepSeek / torch._scaled_mm
conventions; dequantized value = q * scale, scales fp32):

    quantize_fp8_per_token(x)           -> q (M, K) fp8,  scale (M, 1)                  gemm_a8w8 x_scale
    quantize_fp8_per_channel(w)         -> q (N, K) fp8,  scale (1, N)                  gemm_a8w8 w_scale
    quantize_int8_per_token(x)          -> q (M, K) int8, scale (M, 1)
    quantize_fp8_blockwise(x, (1, 128))   -> q (M, K) fp8, scale (M, ceil(K/128))        blockscale x_scale
                                             (M-major: strides (1, M), not contiguous; .contiguous() for row-major)
    quantize_fp8_blockwise(w, (128, 128)) -> q (N, K) fp8, scale (ceil(N/128), ceil(K/128)) blockscale w_scale
    quantize_mxfp4(x)                   -> packed (M, K/2) uint8, scales (M, K/32) uint8 (E8M0)

  Gated forms, for the activation between a gated MLP's two GEMMs: h (M, 2I) = [gate | up] (the gate_up GEMM's
  output, gate columns first), v = act(gate) * up computed in fp32 from h's values (one rounding: the quantization;
  torch's `act(g) * u` rounds twice to h's dtype before it), quantized as above in the same pass over h:
    quantize_fp8_per_token_gated(h, act)   -> q (M, I) fp8,  scale (M, 1)
    quantize_int8_per_token_gated(h, act)  -> q (M, I) int8, scale (M, 1)
    quantize_fp8_blockwise_gated(h, act)   -> q (M, I) fp8,  scale (M, ceil(I/128)), M-major (block (1, 128))
  act: "silu", "gelu", "gelu_tanh" or "relu" (ffn_gated's, kernels/triton/_epilogue.py).
    dequantize_mxfp4(packed, scales)    -> (M, K) float32

FP8 format: `dtype=None` is the current target's (`fp8_dtype_for`): float8_e4m3fn (max 448) on
sm_90 and gfx950, float8_e4m3fnuz (max 240) on gfx942; either may be passed explicitly.

Scales: fp32 amax / QMAX with amax floored at AMAX_FLOOR = 1e-10, so an all-zero row or block gets
a finite positive scale (1e-10 / QMAX) and q = 0; rows/blocks whose amax is below the floor are
quantized against the floor (their values are then below the format's resolution anyway). q is
clamp(x / scale, -QMAX, QMAX) rounded to nearest even, so it never overflows to NaN/Inf.
  inf inputs:  clamped, not rejected (a check would cost a device sync). amax is capped at
               AMAX_CEIL = 2^127 (so QMAX * scale cannot round up to inf): |x| above 2^127 and
               inf become +-QMAX at scale 2^127 / QMAX, the rest of an inf's row/block underflows
               to 0; q * scale stays finite.
  NaN inputs:  the row/block's scale is NaN and its q is 0, so the dequantized row/block is NaN.
The kernels and the `*_ref` functions compute every step with the same exactly rounded fp32
operations, so they agree bit for bit (the tests check it).

MXFP4 (OCP MX v1.0): scale = 2^X with X = floor(log2(amax)) - 2 per 32 elements along K, stored as
the E8M0 byte X + 127 (an all-zero group: byte 0, i.e. 2^-127; a NaN in the group: byte 255 (NaN)
and codes 0; an inf saturates to 6 at the largest scale); elements are E2M1 codes, round to
nearest even, saturating at +-6. Nibble order: byte i of a row packs element 2i in its LOW nibble
(bits 0-3) and element 2i + 1 in its HIGH nibble (bits 4-7), as tl.dot_scaled's "e2m1" format and
triton.tools.mxfp.MXFP4Tensor.to_packed_tensor expect. Negative values that round to zero keep
their sign (code 0x8).

Every quantizer is an `Op` (gemmkit/ops/_registry.py, as the GEMMs): a torch.library custom op and its
`_out` form (torch.ops.gemmkit.quantize_rowwise[_out], quantize_fp8_blockwise[_out], quantize_mxfp4[_out],
dequantize_mxfp4[_out]) with fakes, so it works under torch.compile(fullgraph=True); plain eager calls skip
the dispatcher and a repeated signature replays its call plan. They are not differentiable: inputs are
detached. Inputs are 2-D bf16 / fp16 / fp32 with any strides; outputs are contiguous (the (1, 128) block
scale: M-major), or the caller's (`out=`). The kernels are in gemmkit/kernels/triton/quant.py.
"""
from __future__ import annotations

import torch

from .kernels.triton import quant as K
from .ops import _common as C
from . import launcher as L
from .ops._registry import Op

__all__ = [
    "quantize_fp8_per_token", "quantize_fp8_per_channel", "quantize_int8_per_token", "quantize_fp8_blockwise",
    "quantize_mxfp4", "dequantize_mxfp4", "fp8_dtype_for",
    "quantize_fp8_per_token_gated", "quantize_int8_per_token_gated", "quantize_fp8_blockwise_gated",
    "quantize_gated_ref", "GATED_ACTIVATIONS",
    "quantize_fp8_per_token_ref", "quantize_fp8_per_channel_ref", "quantize_int8_per_token_ref",
    "quantize_fp8_blockwise_ref", "quantize_mxfp4_ref", "dequantize_mxfp4_ref", "dequantize_ref",
    "AMAX_FLOOR", "AMAX_CEIL", "MXFP4_GROUP",
]

AMAX_FLOOR = float(K.AMAX_FLOOR.value)
AMAX_CEIL = float(K.AMAX_CEIL.value)
_FLT_MAX = float(K.FLT_MAX.value)
MXFP4_GROUP = 32
IN_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)
BLOCKS = ((1, 128), (128, 128))
_QMAX = {torch.float8_e4m3fn: 448.0, torch.float8_e4m3fnuz: 240.0, torch.int8: 127.0}
GATED_ACTIVATIONS = ("silu", "gelu", "gelu_tanh", "relu")  # the gated forms' act (the kernels' _epilogue names)
_TL_DTYPE = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32",
             torch.float8_e4m3fn: "fp8e4nv", torch.float8_e4m3fnuz: "fp8e4b8", torch.int8: "i8", torch.uint8: "u8"}


def fp8_dtype_for(target) -> torch.dtype:
    """The FP8 (E4M3) dtype a target's GEMMs take: OCP e4m3fn on sm_90 / gfx950, e4m3fnuz on gfx942
    (the target fact gemmkit.arch.Target.fp8_e4m3, read through ops._common.fp8_dtype)."""
    return C.fp8_dtype(target)


# ----------------------------------------------------------------------------- validation

def _check_x(name, x):
    C.check_tensor(name, x, dtypes=IN_DTYPES, ndim=2)


def _resolve_fp8(dtype, x):
    """The fp8 dtype of a call: the target's when None; an explicit one must be an E4M3 the target's
    Triton backend has (Hopper has no e4m3fnuz; AMD converts to either, e4m3fn in software on gfx942)."""
    if dtype is None:
        return fp8_dtype_for(C.target_for(x.device))
    if dtype not in FP8_DTYPES:
        raise TypeError(f"dtype: expected None, torch.float8_e4m3fn or torch.float8_e4m3fnuz, got {dtype}")
    if dtype == torch.float8_e4m3fnuz and x.device.type == "cuda":
        target = C.target_for(x.device)
        if target.is_nvidia:
            raise TypeError(f"dtype: {target.name} ({target.arch}) has no torch.float8_e4m3fnuz; expected None or "
                            "torch.float8_e4m3fn")
    return dtype


def _check_q_dtype(dtype, allowed):
    """The custom ops' own check of an already resolved output dtype (torch.ops callers skip the wrappers)."""
    if dtype not in allowed:
        raise TypeError(f"dtype: expected {' or '.join(map(str, allowed))}, got {dtype}")


def _check_block(block):
    try:
        b = tuple(int(v) for v in block)
    except (TypeError, ValueError):
        b = None
    if b not in BLOCKS:
        raise ValueError(f"block: expected (1, 128) or (128, 128), got {block!r}")
    return b


def _check_mxfp4_x(x):
    _check_x("x", x)
    if x.shape[1] % MXFP4_GROUP:
        raise ValueError(f"x: expected K (x.shape[1]) divisible by {MXFP4_GROUP} for MXFP4, got shape {tuple(x.shape)}")


def _check_mxfp4_packed(packed, scales):
    C.check_tensor("packed", packed, dtypes=(torch.uint8,), ndim=2)
    C.check_tensor("scales", scales, dtypes=(torch.uint8,), ndim=2)
    M, half_k = packed.shape
    if half_k % (MXFP4_GROUP // 2):
        raise ValueError(f"packed: expected shape (M, K/2) with K divisible by {MXFP4_GROUP}, "
                         f"got {tuple(packed.shape)}")
    if tuple(scales.shape) != (M, half_k * 2 // MXFP4_GROUP):
        raise ValueError(f"scales: expected shape ({M}, {half_k * 2 // MXFP4_GROUP}) (M, K/32) for packed "
                         f"{tuple(packed.shape)}, got {tuple(scales.shape)}")
    C.check_same_device(packed=packed, scales=scales)
    return M, half_k * 2


def _check_runnable(x, dtype):
    C.check_device_supported(x)
    why = C.interpreter_dtype_unsupported(x, dtype)
    if why:
        raise ValueError(f"dtype: {why}; pass dtype=torch.float8_e4m3fn, or compile for gfx942 with static_spec")


# ----------------------------------------------------------------------------- launch parameters

def _pow2(n):
    return 1 << (max(1, int(n)) - 1).bit_length()


def _cdiv(a, b):
    return (a + b - 1) // b


def launch_params(kernel: str, M: int, K: int, *, dtype=None, block=(128, 128), int64_offsets=False, gated=None):
    """(grid, constexprs, options) of one launch: the one place the launcher and `static_spec` read.
    `int64_offsets`: the call's tensors span 2**31 elements or more (ops/_common.int64_offsets; INT64_OFFSETS
    of kernels/triton/_offsets.py).

    quant_rowwise_kernel   one row per program in chunks of up to ONE_PASS_K (rounded up to a power of two), 4-16
                           warps, read once (ONE_PASS) where the row fits one chunk: at M <= ROW_PER_PROGRAM_M
                           (decode: a few rows would otherwise run on one or two programs walking K serially; H200,
                           M = 1, K = 14336: the per-token fp8 decode step of a Llama-3-8B-shaped model ran 0.61x
                           bf16 under CUDA graphs, the block quantizer's 1.02x), and above it where the row fills
                           3/4 of its chunk (benchmarks/results/h200/ab/quant_rowwise_one_pass.json: 1.25-2.35x the
                           four-row parameters at K = 8192 / 4096 and the gated 14336, 4096 x 7168 -6%; 3000 x 5120,
                           5/8 of its chunk, -38%: not understood). Else 4 rows per program, K in chunks of 1024, two
                           passes (8192 x 8192 at 2.1 TB/s where one pass reaches 2.8)
    quant_block_kernel     (1, 128): 32 rows x 128 per program; (128, 128): one 128 x 128 block
    mxfp4_*                16 rows x up to 128 elements (4 scale groups) per program
    `gated`: None, or the activation of a gated form (GATED / ACTIVATION; K is then the output's columns, x has 2K)
    """
    g = dict(GATED=gated is not None, ACTIVATION=gated or "none")
    if kernel == "quant_rowwise_kernel":
        if M <= ROW_PER_PROGRAM_M or (_pow2(K) <= ONE_PASS_K and 4 * K >= 3 * _pow2(K)):
            bm, bk = 1, min(ONE_PASS_K, max(16, _pow2(K)))
            warps = min(16, max(4, bk // 1024))
        else:
            bm, bk, warps = 4, min(1024, max(16, _pow2(K))), 4
        ce = dict(QMAX=_QMAX[dtype], IS_INT=dtype == torch.int8, BLOCK_M=bm, BLOCK_K=bk,
                  INT64_OFFSETS=bool(int64_offsets), ONE_PASS=bk >= K, **g)
        return (_cdiv(M, bm),), ce, {"num_warps": warps}
    if kernel == "quant_block_kernel":
        gm, bk = block
        bm = max(gm, 32)
        ce = dict(QMAX=_QMAX[dtype], GROUP_M=gm, BLOCK_M=bm, BLOCK_K=bk, INT64_OFFSETS=bool(int64_offsets), **g)
        return (_cdiv(M, bm), _cdiv(K, bk)), ce, {"num_warps": 8 if bm * bk >= 128 * 128 else 4}
    if kernel in ("mxfp4_quant_kernel", "mxfp4_dequant_kernel"):
        bm, bk = 16, min(128, max(MXFP4_GROUP, _pow2(K)))
        return (_cdiv(M, bm), _cdiv(K, bk)), dict(BLOCK_M=bm, BLOCK_K=bk, INT64_OFFSETS=bool(int64_offsets)), \
            {"num_warps": 4}
    raise ValueError(f"kernel: expected one of {', '.join(KERNELS)}, got {kernel!r}")


KERNELS = ("quant_rowwise_kernel", "quant_block_kernel", "mxfp4_quant_kernel", "mxfp4_dequant_kernel")
ROW_PER_PROGRAM_M = 256  # rowwise quantizer: up to this many rows, one row per program (`launch_params`)
ONE_PASS_K = 16384  # rowwise quantizer: a row of up to this many (to a power of two) read once (`launch_params`)


def static_spec(kernel: str, target, *, x_dtype=torch.bfloat16, dtype=None, block=(128, 128), shape=(4096, 4096),
                gated=None):
    """(kernel, signature, constexprs, divisible, options) to compile one quantizer for `target` on
    any machine (gemmkit.isa.compile_static), as the JIT specialises a contiguous launch on x of `shape` (M, K)
    (default a large one; the rowwise kernel's decode launch: M <= ROW_PER_PROGRAM_M).
    `dtype`: the output format of the fp8/int8 kernels (default: the target's fp8); `gated`: a gated form's
    activation (shape's K is then the output's columns)."""
    dtype = dtype or fp8_dtype_for(target)
    _grid, ce, opts = launch_params(kernel, *shape, dtype=dtype, block=block, gated=gated)
    tx, tq = _TL_DTYPE[x_dtype], _TL_DTYPE[dtype]
    if kernel == "quant_rowwise_kernel":
        sig = {"x_ptr": f"*{tx}", "q_ptr": f"*{tq}", "scale_ptr": "*fp32", "M": "i32", "K": "i32",
               "stride_xm": "i32", "stride_xk": "constexpr"}
    elif kernel == "quant_block_kernel":
        # the scale's unit stride as the launch passes it (_block_scale_empty): (1, bk) M-major, (bm, bk) row-major
        unit, other = ("stride_sm", "stride_sk") if block[0] == 1 else ("stride_sk", "stride_sm")
        sig = {"x_ptr": f"*{tx}", "q_ptr": f"*{tq}", "scale_ptr": "*fp32", "M": "i32", "K": "i32",
               "stride_xm": "i32", "stride_xk": "constexpr", "stride_sm": "i32", "stride_sk": "i32",
               unit: "constexpr", other: "i32"}
    elif kernel == "mxfp4_quant_kernel":
        sig = {"x_ptr": f"*{tx}", "q_ptr": "*u8", "s_ptr": "*u8", "M": "i32", "K": "i32",
               "stride_xm": "i32", "stride_xk": "constexpr"}
    else:
        sig = {"q_ptr": "*u8", "s_ptr": "*u8", "y_ptr": "*fp32", "M": "i32", "K": "i32",
               "stride_qm": "i32", "stride_qk": "constexpr", "stride_sm": "i32", "stride_sk": "constexpr"}
    ce = dict(ce, **{k: 1 for k, v in sig.items() if v == "constexpr"})  # unit inner strides
    sig.update({k: "constexpr" for k in ce if k not in sig})
    divisible = [k for k, v in sig.items()
                 if v.startswith("*") or (v == "i32" and k in ("K", "stride_xm", "stride_qm", "stride_sm", "stride_sk"))]
    return getattr(K, kernel), sig, ce, divisible, opts


# `gemmkit isa` (isa/report.py): each quantizer as it launches, on each target. Triton 3.6's AMD backend picks its
# fp32 -> fp8 conversion lowering for the first AMD target a process compiles for (after a gfx942 compile gfx950 gets
# the software conversion; after a gfx950 one gfx942's e4m3fnuz aborts the process), so these cases compile one
# process a target (`isolate`).
_DECODE = (1, 14336)  # the rowwise kernel's decode launch: one row a program, the row one chunk
ISA_CASES = (  # (kernel, static_spec keywords, archs)
    ("quant_rowwise_kernel", {}, ("gfx942", "gfx950", "sm_90")),
    ("quant_rowwise_kernel", {"dtype": "int8"}, ("gfx942", "gfx950", "sm_90")),
    ("quant_rowwise_kernel", {"shape": _DECODE}, ("gfx942", "gfx950", "sm_90")),
    ("quant_block_kernel", {"block": (1, 128)}, ("gfx942", "gfx950", "sm_90")),
    ("quant_block_kernel", {"block": (128, 128)}, ("gfx942", "gfx950", "sm_90")),
    ("quant_rowwise_kernel", {"gated": "silu", "shape": (4096, 14336)}, ("gfx942", "gfx950", "sm_90")),
    ("quant_rowwise_kernel", {"gated": "silu", "shape": _DECODE}, ("gfx942", "gfx950", "sm_90")),
    ("quant_block_kernel", {"gated": "silu", "block": (1, 128)}, ("gfx942", "gfx950", "sm_90")),
    ("mxfp4_quant_kernel", {}, ("gfx950", "sm_90")),  # MXFP4: the targets of gemm_afp4wfp4
    ("mxfp4_dequant_kernel", {}, ("gfx950", "sm_90")),
)


def isa_cases(archs):
    from . import arch as _arch

    for kernel, kw, on in ISA_CASES:
        for arch in archs:
            if arch not in on:
                continue
            dtype = torch.int8 if kw.get("dtype") == "int8" else fp8_dtype_for(_arch.ARCHS[arch])
            _grid, ce, opts = launch_params(kernel, *kw.get("shape", (4096, 4096)), dtype=dtype,
                                            block=kw.get("block", (128, 128)), gated=kw.get("gated"))
            out = "mxfp4" if kernel == "mxfp4_quant_kernel" else "fp32" if kernel == "mxfp4_dequant_kernel" else \
                _TL_DTYPE[dtype]
            source = "mxfp4" if kernel == "mxfp4_dequant_kernel" else kw.get("gated", "bf16")
            yield {"kernel": kernel, "op": "quant", "arch": arch, "table": "-", "bucket": f"{source}->{out}",
                   "config": {"BLOCK_M": ce["BLOCK_M"], "BLOCK_K": ce["BLOCK_K"], "num_warps": opts["num_warps"],
                              "out": out, "spec": {k: list(v) if isinstance(v, tuple) else v for k, v in kw.items()}},
                   "path": "quant", "isolate": arch.startswith("gfx")}


def isa_spec(case):
    from . import arch as _arch

    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in case["config"]["spec"].items()}
    if kw.get("dtype") == "int8":
        kw["dtype"] = torch.int8
    kernel, sig, ce, div, opts = static_spec(case["kernel"], _arch.ARCHS[case["arch"]], **kw)
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts, promises=K.PROMISES,
                block=None, smem_bound=0)


# ----------------------------------------------------------------------------- implementations

def _block_scale_empty(M, Kd, block, like):
    """The scale tensor of quantize_fp8_blockwise: (ceil(M/bm), ceil(K/bk)) fp32. Token groups (bm = 1) are
    M-major (strides (1, M): a (KB, M) tensor, transposed), the layout torch._scaled_mm's blockwise mode and
    DeepGEMM take, in which the 128 scales of one K block of a 128-row tile are contiguous: the FP8 Gluon
    kernel's load warp then reads 4 lines a K step instead of 128 (+4-13% at M = 4096, docs/PERF.md),
    as one TMA box where M % 4 == 0. Weight blocks (128, 128) stay row-major (the kernel reads one per tile per K step)."""
    rows, cols = _cdiv(M, block[0]), _cdiv(Kd, block[1])
    if block[0] == 1:
        return like.new_empty((cols, rows), dtype=torch.float32).t()
    return like.new_empty((rows, cols), dtype=torch.float32)


# ----------------------------------------------------------------------------- the ops (ops/_registry.Op, plain)
# Each op: `check(*args, out_dtype, out)` -> the outputs' shapes (out: the caller's tuple, or None), `run(*args,
# config, y)` -> the kernel into the outputs y. Op gives each a functional and an `_out` custom op with fakes, the
# eager path past the dispatcher, and call plans (a repeated signature replays its launch).

def _check_outs(out, shapes, dtypes, contiguous, **inputs):
    """The caller's outputs: each of its shape and dtype, not overlapping itself, contiguous where the kernel
    writes row-major (`contiguous`, one flag an output), on the inputs' device, sharing no memory with the inputs or
    each other."""
    if out is None:
        return
    if not isinstance(out, (tuple, list)) or len(out) != len(shapes):
        raise TypeError(f"out: expected a tuple of {len(shapes)} tensors, got {type(out).__name__}")
    for j, (t, shape, dtype, flat) in enumerate(zip(out, shapes, dtypes, contiguous)):
        name = f"out[{j}]"
        C.check_tensor(name, t)
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")
        if t.dtype != dtype:
            raise TypeError(f"{name}: expected dtype {dtype}, got {t.dtype}")
        if flat and not t.is_contiguous():
            raise ValueError(f"{name}: expected a contiguous tensor (the kernel writes it row-major), got strides "
                             f"{tuple(t.stride())}")
        C.check_no_overlap(name, t)
    named = {f"out[{j}]": t for j, t in enumerate(out)}
    C.check_same_device(**inputs, **named)
    for j, t in enumerate(out):
        C.check_out_disjoint(f"out[{j}]", t, **inputs, **{f"out[{i}]": out[i] for i in range(j)})


def _rowwise_check(x, dtype, out_dtype=None, out=None):
    _check_x("x", x)
    _check_q_dtype(dtype, tuple(_QMAX))
    shapes = (tuple(x.shape), (x.shape[0], 1))
    _check_outs(out, shapes, (dtype, torch.float32), (True, True), x=x)
    return shapes


def _rowwise_launch(x, q, scale, dtype, gated=None):
    """quant_rowwise_kernel over q (M, Kd): x's rows, or with `gated` act(gate) * up of x = [gate | up]."""
    M, Kd = q.shape
    if M == 0:
        return
    _check_runnable(x, dtype)
    grid, ce, opts = launch_params("quant_rowwise_kernel", M, Kd, dtype=dtype, int64_offsets=C.int64_offsets(x, q),
                                   gated=gated)
    L.launch(K.quant_rowwise_kernel, grid, x, q, scale, M, Kd, x.stride(0), x.stride(1), **ce, **opts)


def _block_launch(x, q, scale, block, dtype, gated=None):
    """quant_block_kernel over q (M, Kd) in `block`s: x's values, or with `gated` act(gate) * up of x = [gate | up]."""
    M, Kd = q.shape
    if q.numel() == 0:
        return
    _check_runnable(x, dtype)
    grid, ce, opts = launch_params("quant_block_kernel", M, Kd, dtype=dtype, block=block,
                                   int64_offsets=C.int64_offsets(x, q, scale), gated=gated)
    L.launch(K.quant_block_kernel, grid, x, q, scale, M, Kd, x.stride(0), x.stride(1), scale.stride(0),
             scale.stride(1), **ce, **opts)


def _rowwise_run(x, dtype, config, y):
    _rowwise_launch(x, *y, dtype)


def _block_check(x, block_m, block_k, dtype, out_dtype=None, out=None):
    _check_x("x", x)
    _check_q_dtype(dtype, FP8_DTYPES)
    gm, bk = _check_block((block_m, block_k))
    M, Kd = x.shape
    shapes = ((M, Kd), (_cdiv(M, gm), _cdiv(Kd, bk)))
    _check_outs(out, shapes, (dtype, torch.float32), (True, False), x=x)  # the scale: any strides (the kernel's)
    return shapes


def _block_outputs(args, shapes, dtypes, like):
    x, gm, bk = args[0], args[1], args[2]
    return like.new_empty(shapes[0], dtype=dtypes[0]), _block_scale_empty(x.shape[0], x.shape[1], (gm, bk), like)


def _block_run(x, block_m, block_k, dtype, config, y):
    _block_launch(x, *y, (block_m, block_k), dtype)


def _mxfp4_check(x, out_dtype=None, out=None):
    _check_mxfp4_x(x)
    M, Kd = x.shape
    shapes = ((M, Kd // 2), (M, Kd // MXFP4_GROUP))
    _check_outs(out, shapes, (torch.uint8, torch.uint8), (True, True), x=x)
    return shapes


def _mxfp4_run(x, config, y):
    packed, scales = y
    M, Kd = x.shape
    if packed.numel() == 0:
        return
    C.check_device_supported(x)
    grid, ce, opts = launch_params("mxfp4_quant_kernel", M, Kd, int64_offsets=C.int64_offsets(x, packed, scales))
    L.launch(K.mxfp4_quant_kernel, grid, x, packed, scales, M, Kd, x.stride(0), x.stride(1), **ce, **opts)


def _dequant_check(packed, scales, out_dtype=None, out=None):
    M, Kd = _check_mxfp4_packed(packed, scales)
    _check_outs(None if out is None else (out,), ((M, Kd),), (torch.float32,), (True,), packed=packed, scales=scales)
    return (M, Kd)


def _dequant_run(packed, scales, config, y):
    M, Kd = packed.shape[0], packed.shape[1] * 2
    if y.numel() == 0:
        return
    C.check_device_supported(packed, "packed")
    grid, ce, opts = launch_params("mxfp4_dequant_kernel", M, Kd, int64_offsets=C.int64_offsets(packed, scales, y))
    L.launch(K.mxfp4_dequant_kernel, grid, packed, scales, y, M, Kd, packed.stride(0), packed.stride(1),
             scales.stride(0), scales.stride(1), **ce, **opts)


def _check_gated(h, activation):
    """h (M, 2I) of a gated form: its output's columns I."""
    _check_x("h", h)
    if activation not in GATED_ACTIVATIONS:
        raise ValueError(f"activation: expected one of {GATED_ACTIVATIONS}, got {activation!r}")
    if h.shape[1] % 2:
        raise ValueError(f"h: expected [gate | up], an even number of columns (M, 2I), got shape {tuple(h.shape)}")
    return h.shape[1] // 2


def _rowwise_gated_check(h, activation, dtype, out_dtype=None, out=None):
    I = _check_gated(h, activation)
    _check_q_dtype(dtype, tuple(_QMAX))
    shapes = ((h.shape[0], I), (h.shape[0], 1))
    _check_outs(out, shapes, (dtype, torch.float32), (True, True), h=h)
    return shapes


def _rowwise_gated_run(h, activation, dtype, config, y):
    _rowwise_launch(h, *y, dtype, gated=activation)


def _block_gated_check(h, activation, block_k, dtype, out_dtype=None, out=None):
    I = _check_gated(h, activation)
    _check_q_dtype(dtype, FP8_DTYPES)
    _check_block((1, block_k))
    shapes = ((h.shape[0], I), (h.shape[0], _cdiv(I, block_k)))
    _check_outs(out, shapes, (dtype, torch.float32), (True, False), h=h)
    return shapes


def _block_gated_outputs(args, shapes, dtypes, like):
    h, bk = args[0], args[2]
    M, I = shapes[0]
    return like.new_empty(shapes[0], dtype=dtypes[0]), _block_scale_empty(M, I, (1, bk), like)


def _block_gated_run(h, activation, block_k, dtype, config, y):
    _block_launch(h, *y, (1, block_k), dtype, gated=activation)


_QUANT = dict(plain=True, legacy_schema=True, grad_checked=(), default_out_dtype=None)
QUANTIZE_ROWWISE = Op("quantize_rowwise", "Tensor x, ScalarType dtype", 1, _rowwise_check, _rowwise_run,
                      outputs=("q", "scale"), out_dtypes=lambda x, dtype, out_dtype: (dtype, torch.float32),
                      output_shape=lambda x, dtype: (tuple(x.shape), (x.shape[0], 1)), **_QUANT)
QUANTIZE_BLOCKWISE = Op("quantize_fp8_blockwise", "Tensor x, int block_m, int block_k, ScalarType dtype", 1,
                        _block_check, _block_run, outputs=("q", "scale"),
                        out_dtypes=lambda x, gm, bk, dtype, out_dtype: (dtype, torch.float32),
                        output_shape=lambda x, gm, bk, dtype: (tuple(x.shape), (_cdiv(x.shape[0], gm),
                                                                                _cdiv(x.shape[1], bk))),
                        new_outputs=_block_outputs, **_QUANT)
QUANTIZE_MXFP4 = Op("quantize_mxfp4", "Tensor x", 1, _mxfp4_check, _mxfp4_run, outputs=("packed", "scales"),
                    out_dtypes=lambda x, out_dtype: (torch.uint8, torch.uint8),
                    output_shape=lambda x: ((x.shape[0], x.shape[1] // 2), (x.shape[0], x.shape[1] // MXFP4_GROUP)),
                    **_QUANT)
QUANTIZE_ROWWISE_GATED = Op("quantize_rowwise_gated", "Tensor h, str activation, ScalarType dtype", 1,
                            _rowwise_gated_check, _rowwise_gated_run, outputs=("q", "scale"),
                            out_dtypes=lambda h, act, dtype, out_dtype: (dtype, torch.float32),
                            output_shape=lambda h, act, dtype: ((h.shape[0], h.shape[1] // 2), (h.shape[0], 1)),
                            **_QUANT)
QUANTIZE_BLOCKWISE_GATED = Op("quantize_fp8_blockwise_gated", "Tensor h, str activation, int block_k, ScalarType dtype",
                              1, _block_gated_check, _block_gated_run, outputs=("q", "scale"),
                              out_dtypes=lambda h, act, bk, dtype, out_dtype: (dtype, torch.float32),
                              output_shape=lambda h, act, bk, dtype: ((h.shape[0], h.shape[1] // 2),
                                                                      (h.shape[0], _cdiv(h.shape[1] // 2, bk))),
                              new_outputs=_block_gated_outputs, **_QUANT)
DEQUANTIZE_MXFP4 = Op("dequantize_mxfp4", "Tensor packed, Tensor scales", 2, _dequant_check, _dequant_run,
                      out_dtypes=lambda packed, scales, out_dtype: (torch.float32,),
                      output_shape=lambda packed, scales: (packed.shape[0], packed.shape[1] * 2), **_QUANT)


# ----------------------------------------------------------------------------- public API

def _rowwise(x, dtype, out=None):
    return QUANTIZE_ROWWISE.call(x.detach(), dtype, out=out)


def quantize_fp8_per_token(x, dtype=None, *, out=None):
    """(q, scale): q (M, K) fp8 and scale (M, 1) fp32 with x ~= q * scale, one scale per row (token).

    x: (M, K) bf16 / fp16 / fp32, any strides. dtype: None (the target's fp8), torch.float8_e4m3fn
    or torch.float8_e4m3fnuz. The `x_scale` layout of gemm_a8w8. out: None or a pair (q, scale) of those shapes
    and dtypes, contiguous, written in place and returned.
    """
    _check_x("x", x)
    return _rowwise(x, _resolve_fp8(dtype, x), out)


def quantize_fp8_per_channel(w, dtype=None):
    """(q, scale): q (N, K) fp8 and scale (1, N) fp32 with w ~= q * scale.T, one scale per row of w
    (= per output channel of y = x @ w.T). The `w_scale` layout of gemm_a8w8. dtype as in
    quantize_fp8_per_token."""
    _check_x("w", w)
    q, scale = _rowwise(w, _resolve_fp8(dtype, w))
    return q, scale.view(1, w.shape[0])


def quantize_int8_per_token(x, *, out=None):
    """(q, scale): q (M, K) int8 in [-127, 127] (symmetric, round half to even) and scale (M, 1) fp32
    with x ~= q * scale. Use it for int8 weights too: scale.view(1, N) is the per-channel layout. out: as
    quantize_fp8_per_token's."""
    _check_x("x", x)
    return _rowwise(x, torch.int8, out)


def quantize_fp8_blockwise(x, block=(1, 128), dtype=None, *, out=None):
    """(q, scale) with one fp32 scale per `block` of x (M, K):

      block=(1, 128):   scale (M, ceil(K/128))              activations, gemm_a8w8_blockscale x_scale;
                        M-major (strides (1, M)), the layout the FP8 kernel reads fastest (any strides work)
      block=(128, 128): scale (ceil(M/128), ceil(K/128))    weights (N, K), gemm_a8w8_blockscale w_scale

    q (M, K) fp8; x[i, k] ~= q[i, k] * scale[i // block[0], k // block[1]]. Ragged last blocks (M or K
    not multiples) take their amax over the elements that exist. dtype as in quantize_fp8_per_token. out: None or
    a pair (q, scale) of those shapes and dtypes (q contiguous, scale of any strides), written in place and returned.
    """
    _check_x("x", x)
    gm, bk = _check_block(block)
    return QUANTIZE_BLOCKWISE.call(x.detach(), gm, bk, _resolve_fp8(dtype, x), out=out)


def quantize_fp8_per_token_gated(h, activation="silu", dtype=None, *, out=None):
    """(q, scale): act(gate) * up of h = [gate | up] (M, 2I), quantized per token: q (M, I) fp8, scale (M, 1) fp32,
    in one pass over h (the value computed in fp32 from h's, rounded once). The `x_scale` layout of gemm_a8w8: a
    gated MLP's down projection input. activation: one of GATED_ACTIVATIONS; dtype and out as quantize_fp8_per_token's.
    """
    _check_x("h", h)
    return QUANTIZE_ROWWISE_GATED.call(h.detach(), activation, _resolve_fp8(dtype, h), out=out)


def quantize_int8_per_token_gated(h, activation="silu", *, out=None):
    """quantize_fp8_per_token_gated's int8 form (q in [-127, 127], round half to even)."""
    _check_x("h", h)
    return QUANTIZE_ROWWISE_GATED.call(h.detach(), activation, torch.int8, out=out)


def quantize_fp8_blockwise_gated(h, activation="silu", block=(1, 128), dtype=None, *, out=None):
    """(q, scale): act(gate) * up of h = [gate | up] (M, 2I) quantized per (1, 128) block: q (M, I) fp8, scale
    (M, ceil(I/128)) fp32, M-major as quantize_fp8_blockwise's (1, 128) scale; in one pass over h. The `x_scale`
    layout of gemm_a8w8_blockscale. block: (1, 128) only (activations)."""
    _check_x("h", h)
    gm, bk = _check_block(block)
    if gm != 1:
        raise ValueError(f"block: the gated form quantizes activations, expected (1, 128), got {block!r}")
    return QUANTIZE_BLOCKWISE_GATED.call(h.detach(), activation, bk, _resolve_fp8(dtype, h), out=out)


def quantize_mxfp4(x, *, out=None):
    """(packed, scales): OCP MXFP4 of x (M, K), K % 32 == 0.

    packed (M, K/2) uint8: byte i holds element 2i in bits 0-3 and element 2i + 1 in bits 4-7 (E2M1
    codes: sign bit 3, exponent bits 2-1, mantissa bit 0). scales (M, K/32) uint8 E8M0: the scale of
    elements 32j .. 32j + 31 is 2^(scales[:, j] - 127). The layout tl.dot_scaled takes for "e2m1". out: None or a
    contiguous pair (packed, scales) of those shapes, written in place and returned.
    """
    _check_mxfp4_x(x)
    return QUANTIZE_MXFP4.call(x.detach(), out=out)


def dequantize_mxfp4(packed, scales, *, out=None):
    """(M, K) float32 from quantize_mxfp4's (packed (M, K/2), scales (M, K/32)); exact (every E2M1 value
    times a power of two is an fp32, down to fp32's normal range). out: None or a contiguous (M, K) float32."""
    _check_mxfp4_packed(packed, scales)
    return DEQUANTIZE_MXFP4.call(packed, scales, out=out)


# ----------------------------------------------------------------------------- torch references

def _scale_ref(amax, qmax):
    """fp32 scale from fp32 amax, the kernels' rule step for step (IEEE division by a tensor, never a
    reciprocal multiply)."""
    a = torch.clamp(amax, min=AMAX_FLOOR, max=AMAX_CEIL)
    s = a / torch.full_like(a, qmax)
    return torch.where(torch.isnan(amax), torch.full_like(s, float("nan")), s)


def _quantize_ref(xf, scale, dtype):
    qmax = _QMAX[dtype]
    v = xf / scale
    v = torch.clamp(torch.where(torch.isnan(v), torch.zeros_like(v), v), -qmax, qmax)
    return torch.round(v).to(dtype) if dtype == torch.int8 else v.to(dtype)


def _rowwise_ref(x, dtype):
    xf = x.detach().float()
    amax = xf.abs().amax(dim=1, keepdim=True) if xf.shape[1] else xf.new_zeros((xf.shape[0], 1))
    scale = _scale_ref(amax, _QMAX[dtype])
    return _quantize_ref(xf, scale, dtype), scale


def quantize_fp8_per_token_ref(x, dtype=torch.float8_e4m3fn):
    """Torch reference of quantize_fp8_per_token: (q (M, K), scale (M, 1) fp32)."""
    return _rowwise_ref(x, dtype)


def quantize_fp8_per_channel_ref(w, dtype=torch.float8_e4m3fn):
    """Torch reference of quantize_fp8_per_channel: (q (N, K), scale (1, N) fp32)."""
    q, scale = _rowwise_ref(w, dtype)
    return q, scale.view(1, -1)


def quantize_int8_per_token_ref(x):
    """Torch reference of quantize_int8_per_token: (q (M, K) int8, scale (M, 1) fp32)."""
    return _rowwise_ref(x, torch.int8)


def _expand_blocks(scale, block, shape):
    """Per-element scale (M, K) from a per-block one (gemmkit.reference.expand_block_scales)."""
    from .reference import expand_block_scales

    return expand_block_scales(scale, block, shape)


def quantize_fp8_blockwise_ref(x, block=(1, 128), dtype=torch.float8_e4m3fn):
    """Torch reference of quantize_fp8_blockwise: (q (M, K), scale (ceil(M/bm), ceil(K/bk)) fp32)."""
    gm, bk = _check_block(block)
    xf = x.detach().float()
    M, Kd = xf.shape
    mb, kb = _cdiv(M, gm), _cdiv(Kd, bk)
    padded = xf.new_zeros((mb * gm, kb * bk))
    padded[:M, :Kd] = xf
    amax = padded.abs().reshape(mb, gm, kb, bk).amax(dim=(1, 3))
    scale = _scale_ref(amax, _QMAX[dtype])
    return _quantize_ref(xf, _expand_blocks(scale, (gm, bk), (M, Kd)), dtype), scale


def _e2m1_code_ref(v):
    a = v.abs()
    mag = ((a > 0.25).int() + (a >= 0.75).int() + (a > 1.25).int() + (a >= 1.75).int()
           + (a > 2.5).int() + (a >= 3.5).int() + (a > 5.0).int())
    return mag


def quantize_mxfp4_ref(x):
    """Torch reference of quantize_mxfp4: (packed (M, K/2) uint8, scales (M, K/32) uint8 E8M0)."""
    xf = x.detach().float()
    M, Kd = xf.shape
    g = xf.reshape(M, Kd // MXFP4_GROUP, MXFP4_GROUP)
    amax = torch.clamp(g.abs().amax(dim=2), max=_FLT_MAX) if Kd else g.new_zeros((M, 0))
    has_nan = torch.isnan(g).any(dim=2)
    X = torch.clamp(((amax.view(torch.int32) >> 23) & 0xFF) - 127 - 2, min=-127)
    inv_scale = ((127 - X) << 23).view(torch.float32)
    sign = (g.view(torch.int32) >> 31) & 1
    code = _e2m1_code_ref(g * inv_scale[..., None]) | (sign << 3)
    code = torch.where(has_nan[..., None], torch.zeros_like(code), code).reshape(M, Kd)
    packed = (code[:, 0::2] | (code[:, 1::2] << 4)).to(torch.uint8)
    scales = torch.where(has_nan, torch.full_like(X, 255), X + 127).to(torch.uint8)
    return packed, scales


_E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def dequantize_mxfp4_ref(packed, scales):
    """Torch reference of dequantize_mxfp4: (M, K) float32 (low nibble = element 2i)."""
    M, Kd = packed.shape[0], packed.shape[1] * 2
    codes = torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(M, Kd).long()
    values = torch.tensor(_E2M1_VALUES, dtype=torch.float32, device=packed.device)[codes]
    b = scales.to(torch.float64)
    scale = torch.where(b == 255, torch.full_like(b, float("nan")), torch.exp2(b - 127)).float()
    return (values.reshape(M, Kd // MXFP4_GROUP, MXFP4_GROUP) * scale[..., None]).reshape(M, Kd)


def quantize_gated_ref(h, activation="silu", kind="fp8_per_token", dtype=torch.float8_e4m3fn):
    """Torch reference of the gated forms: act(gate) * up in float64 from h's values, then rounded to fp32 (the
    kernels compute it in fp32, so q may differ from theirs by one step where v sits on a rounding boundary) and
    quantized by the reference of `kind`: "fp8_per_token", "int8_per_token" or "fp8_blockwise" ((1, 128))."""
    from .reference import activation_ref

    I = _check_gated(h, activation)
    hd = h.detach().double()
    v = (activation_ref(hd[:, :I], activation) * hd[:, I:]).float()
    if kind == "fp8_per_token":
        return _rowwise_ref(v, dtype)
    if kind == "int8_per_token":
        return _rowwise_ref(v, torch.int8)
    if kind == "fp8_blockwise":
        return quantize_fp8_blockwise_ref(v, (1, 128), dtype)
    raise ValueError(f"kind: expected fp8_per_token, int8_per_token or fp8_blockwise, got {kind!r}")


def dequantize_ref(q, scale, block=None):
    """float32 q * scale for the fp8/int8 quantizers' outputs: per-token (M, 1) and per-channel (1, N)
    scales broadcast; with `block` ((1, 128) or (128, 128)) the per-block scale is expanded."""
    qf = q.float()
    if block is not None:
        return qf * _expand_blocks(scale, _check_block(block), q.shape)
    return qf * scale
