"""gemm_a8w8: y = (x @ w.T) * x_scale * w_scale + bias for int8 or fp8 operands.

    x (M, K) int8 | fp8      x_scale (M, 1) or (M,) fp32   per token
    w (N, K) same dtype      w_scale (1, N) or (N,) fp32   per output channel
    acc = x @ w.T            int32 (int8: exact) or fp32 (fp8, promoted every K block; _mainloop.py)
    y   = acc * x_scale[:, None] * w_scale[None, :] + bias      in fp32, then cast to out_dtype

The same dense kernels as gemm_a16w16 (kernels/triton/dense.py, SCALE = "rowcol"): the
scales are a change to the epilogue only. ops/dispatch.py chooses the kernel: a "backend": "gluon"
config (fp8 on sm_90) runs kernels/gluon/hopper_pingpong_fp8.py where it can take the call, else the
Triton tier runs the same config. Two custom ops with fakes:

  gemmkit::gemm_a8w8      functional
  gemmkit::gemm_a8w8_out  writes into `out`

FP8 format per target: float8_e4m3fn on sm_90 and gfx950, float8_e4m3fnuz on
gfx942 (gemmkit.arch.Target.fp8_e4m3); the other one is a TypeError, never a
silent reinterpretation of the bits.
"""
from __future__ import annotations

import torch

from . import _common as C
from . import dispatch as D
from ._registry import Op
from ..kernels.triton import dense as G

OP = "a8w8"
# Config tables per operand type: fp8 (A8W8.json) promotes its accumulator (two fp32 tiles live,
# so smaller tiles fit the registers), int8 (A8W8_INT8.json) accumulates exactly in one int32 tile.
TABLE_OP = {"fp8": "a8w8", "int8": "a8w8_int8"}
BIAS_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


# ----------------------------------------------------------------------------- validation

def check_8bit_pair(x, w, *, allow_int8=True):
    """x (M, K) and w (N, K) of one supported 8-bit dtype; returns (M, N, K)."""
    allowed = (torch.int8,) + C.FP8_E4M3_DTYPES if allow_int8 else C.FP8_E4M3_DTYPES
    C.check_tensor("x", x, dtypes=allowed, ndim=2)
    C.check_tensor("w", w, ndim=2)
    if w.dtype != x.dtype:
        raise TypeError(f"w: expected dtype {x.dtype} (the dtype of x), got {w.dtype}")
    M, K = x.shape
    if w.shape[1] != K:
        raise ValueError(f"w: expected shape (N, {K}) to match x's last dim K={K}, got {tuple(w.shape)}")
    return M, w.shape[0], K


def check_fp8_flavour(x, target):
    """An fp8 x must be the E4M3 flavour the target's matrix units take (and, on a CPU, one the installed Triton's
    interpreter has: `C.interpreter_dtype_unsupported`)."""
    if x.dtype in C.FP8_E4M3_DTYPES and x.dtype != C.fp8_dtype(target):
        raise TypeError(f"x: {target.name} ({target.arch}) multiplies {C.fp8_dtype(target)}, got {x.dtype}; "
                        "quantize to the target's FP8 format (gemmkit.quant takes dtype=None for it)")
    why = C.interpreter_dtype_unsupported(x)
    if why:
        raise ValueError(f"x: {why}; run it on the GPU, or compile it for {target.arch} with static_spec")


def _vector_scale(name, s, length, shapes):
    C.check_tensor(name, s, dtypes=(torch.float32,))
    if tuple(s.shape) not in shapes:
        raise ValueError(f"{name}: expected shape {' or '.join(map(str, shapes))}, got {tuple(s.shape)}")


def _check_out(out, M, N, out_dtype):
    if out is None:
        return
    C.check_tensor("out", out, ndim=2)
    if tuple(out.shape) != (M, N):
        raise ValueError(f"out: expected shape {(M, N)}, got {tuple(out.shape)}")
    if out.dtype != out_dtype:
        raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
    C.check_no_overlap("out", out)


# int8: |sum| <= 128 * 128 * K must fit the int32 accumulator.
INT8_MAX_K = (2**31 - 1) // (128 * 128)


def resolve_out_dtype(out_dtype, out):
    """out_dtype=None: out's dtype when `out` is given, else bf16."""
    if out_dtype is None:
        return out.dtype if isinstance(out, torch.Tensor) else torch.bfloat16
    return out_dtype


def _check_inputs(x, w, x_scale, w_scale, bias, out_dtype, out=None):
    M, N, K = check_8bit_pair(x, w)
    if x.dtype == torch.int8 and K > INT8_MAX_K:
        raise ValueError(f"x: K = {K} can overflow the int32 accumulator (int8 allows K <= {INT8_MAX_K})")
    _vector_scale("x_scale", x_scale, M, [(M, 1), (M,)])
    _vector_scale("w_scale", w_scale, N, [(1, N), (N,)])
    if bias is not None:
        C.check_tensor("bias", bias, dtypes=BIAS_DTYPES, ndim=1)
        if bias.shape[0] != N:
            raise ValueError(f"bias: expected shape ({N},) (N = w.shape[0]), got {tuple(bias.shape)}")
    C.check_out_dtype(out_dtype)
    _check_out(out, M, N, out_dtype)
    C.check_same_device(x=x, w=w, x_scale=x_scale, w_scale=w_scale, bias=bias, out=out)
    C.check_out_disjoint("out", out, x=x, w=w, x_scale=x_scale, w_scale=w_scale, bias=bias)
    return M, N, K


# ----------------------------------------------------------------------------- implementation

def _run(x, w, x_scale, w_scale, bias, config, y, compile_only=False):
    M, K = x.shape
    N = w.shape[0]
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if M == 0 or N == 0:
        return
    if K == 0:  # the empty sum, scaled: bias (or zeros) in every row
        y.copy_((bias.float() if bias is not None else torch.zeros(N, device=x.device)).expand(M, N))
        return
    target = C.target_for(x.device)
    check_fp8_flavour(x, target)
    kind = "int8" if x.dtype == torch.int8 else "fp8"
    cfg, _source = C.resolve_config(TABLE_OP[kind], config, target, M, N, K, tune_as=("a8w8", kind, x.device))
    scaling = G.Scaling("rowcol", x_scale.reshape(M).contiguous(), w_scale.reshape(N).contiguous())
    x2, w2 = G.matrix_operand(x), G.matrix_operand(w)
    choice = D.dense(cfg, target, x2, w2, y, scaling, epilogue=D.Epilogue(bias is not None))
    D.launch_dense(choice, x2, w2, bias.contiguous() if bias is not None else None, y, "none", target, scaling,
                   compile_only=compile_only)


def _check(x, w, x_scale, w_scale, bias, *, out_dtype, out):
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, bias, out_dtype, out)
    return M, N


def _execute(x, w, x_scale, w_scale, bias, *, config, y):
    _run(x, w, x_scale, w_scale, bias, config, y)


GEMM_A8W8 = Op("gemm_a8w8", "Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, Tensor? bias", 5, _check, _execute,
               default_out_dtype=lambda x, out: resolve_out_dtype(None, out))


def gemm_a8w8(x, w, x_scale, w_scale, bias=None, *, out_dtype=None, out=None, config=None):
    """y = (x @ w.T) * x_scale * w_scale + bias, int8 or fp8 operands, per-token / per-channel scales.

    Args:
      x: (M, K) int8, or fp8 in the target's E4M3 format (float8_e4m3fn on H100/H200 and MI355X,
         float8_e4m3fnuz on MI300X).
      w: (N, K), same dtype as x (nn.Linear layout).
      x_scale: (M, 1) or (M,) float32, one scale per row of x (per token).
      w_scale: (1, N) or (N,) float32, one scale per row of w (per output channel).
      bias: optional (N,) bf16 / fp16 / fp32, added after the scales.
      out_dtype: bf16, fp16 or fp32; None (default): out's dtype if `out` is given, else bf16.
      out: optional preallocated (M, N) tensor of out_dtype.
      config: optional dict overriding the config table (gemmkit/configs/<arch>/A8W8.json).

    int8 accumulates exactly in int32; fp8 in fp32 (promoted out of the tensor cores'
    reduced-precision accumulator every K block; see kernels/triton/_mainloop.py).
    Returns (M, N) of out_dtype. M or N == 0: empty; K == 0: bias (or zeros) in every row.
    """
    return GEMM_A8W8.call(x, w, x_scale, w_scale, bias, out_dtype=out_dtype, out=out, config=config)


def compile_for(x, w, x_scale, w_scale, config: dict, bias=None, out_dtype=torch.bfloat16):
    """Compile (no launch) the kernel gemm_a8w8(..., config=config) would run (the tuner's warm-up)."""
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, bias, out_dtype)
    y = torch.empty((M, N), dtype=out_dtype, device=x.device)
    _run(x, w, x_scale, w_scale, bias, C.config_to_str(config), y, compile_only=True)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def isa_cases(archs):
    """Every bucket of every shipped A8W8 (fp8, the target's E4M3) and A8W8_INT8 table, and for sm_90 the kernels
    that read w's rows off 16 bytes where they lie (K % 16 != 0; fp8 and int8 with the scales, split and not): at a
    few tokens kernels/triton/gemm_rows.py, past them kernels/triton/gemm_rows_tma.py with its reduce and x's
    shifted copies; for gfx942 / gfx950 the copy and gemm_rows (the target's fp8 and int8: dispatch._vector_rows)."""
    for dtype, table_op in TABLE_OP.items():
        for case in G.table_cases(table_op, archs, dtypes=(dtype,)):
            yield dict(case, op=OP)
    from .. import arch as _arch
    from .gemm_a16w16 import amd_rows_cases

    for arch in (a for a in archs if a != "sm_90"):  # the AMD copy and gemm_rows of unaligned K (dispatch._vector_rows)
        yield from amd_rows_cases(OP, arch, (G.TL_DTYPE[C.fp8_dtype(_arch.ARCHS[arch])], "i8"))
    if "sm_90" in archs:
        from .. import arch as _arch
        from ..kernels.triton import gemm_rows, gemm_rows_tma, pad

        sm90 = _arch.ARCHS["sm_90"]
        rows_bm = gemm_rows.tile(1, 4096, 4095, 1, sm90.num_cus)["BLOCK_M"]  # (M <= MAX_M: one M tile size)
        for dtype, bucket in (("fp8", "fp8e4nv"), ("int8", "i8")):
            for split in (1, 3):
                yield {"kernel": "gemm_rows_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": bucket,
                       "config": {"BLOCK_M": rows_bm, "BLOCK_N": gemm_rows.BLOCK_N, "num_warps": gemm_rows.WARPS,
                                  "SPLIT_K": split}, "path": "rows", "dtype": dtype}
                # past it by TMA where they lie: the swapped tile (y's order at 8 tokens, class-major from 16), the
                # unswapped ones (no wide one at 8 bits: gemm_rows_tma.tile); their reduce (16 classes) and x's 16
                # shifted copies
                for M, N in ((8, 4096), (16, 4096), (64, 4096), (128, 4096), (256, 4096)):
                    t = gemm_rows_tma.tile(M, N, 4095, 1, sm90.num_cus)
                    yield {"kernel": "gemm_rows_tma_kernel", "op": OP, "arch": "sm_90", "table": "-",
                           "bucket": bucket, "dtype": dtype, "path": "rows_tma",
                           "config": {"M": M, "N": N, "BLOCK_M": t["BLOCK_M"], "BLOCK_N": t["BLOCK_J"],
                                      "num_warps": t["num_warps"], "SPLIT_K": split}}
                for bm, bj in ((gemm_rows_tma.REDUCE_M, gemm_rows_tma.REDUCE_J), (1, gemm_rows_tma.REDUCE_MIN_J)):
                    yield {"kernel": "rows_reduce_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": bucket,
                           "dtype": dtype, "path": "rows_reduce",
                           "config": {"BLOCK_M": bm, "BLOCK_N": bj * gemm_rows_tma.vec(1),
                                      "num_warps": gemm_rows_tma.REDUCE_WARPS, "SPLIT_K": split}}
            yield {"kernel": "shift_rows_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": bucket,
                   "dtype": dtype, "path": "shift",
                   "config": {"BLOCK_R": pad.BLOCK_R, "BLOCK_K": pad.BLOCK_K, "num_warps": pad.WARPS}}


def isa_spec(case):
    from ..kernels.triton import gemm_rows_tma

    return gemm_rows_tma.isa_spec(case) or G.table_spec(case, scale="rowcol")
