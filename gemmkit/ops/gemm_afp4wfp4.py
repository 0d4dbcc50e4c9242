"""gemm_afp4wfp4: y = x @ w.T for OCP MXFP4 operands (E2M1 values, one E8M0 scale per 32 along K).

    x (M, K/2) uint8     two E2M1 codes per byte, element 2i in the LOW nibble, 2i + 1 in the high one
    w (N, K/2) uint8     same packing (nn.Linear layout)
    x_scale (M, K/32) uint8 E8M0    x[m, 32j .. 32j + 31] scaled by 2^(x_scale[m, j] - 127)
    w_scale (N, K/32) uint8 E8M0    one per 32 elements of each row of w
    y (M, N) = dequantize_mxfp4(x, x_scale) @ dequantize_mxfp4(w, w_scale).T    (fp32 accumulate)

gemmkit.quant.quantize_mxfp4 makes these operands (and dequantize_mxfp4 undoes them).
One Triton kernel (kernels/triton/gemm_afp4wfp4.py, tl.dot_scaled per K step) and
the shared split-K reduce; their host code (target and config checks, constexprs, grid, launch,
static spec) is kernels/triton/fp4.py. Two custom ops with fakes, from one `Op` (ops/_registry.py: checks once
per call signature, call plans, the eager path without the dispatcher):

  gemmkit::gemm_afp4wfp4      functional
  gemmkit::gemm_afp4wfp4_out  writes into `out`

Targets (Triton 3.6):
  gfx950 (MI355X)   native: tl.dot_scaled becomes v_mfma_scale_f32_16x16x128_f8f6f4
  sm_90 (H100/H200) emulated: the codes are decoded and scaled to bf16 in registers, then
                    bf16 wgmma / mma.sync; correct, at bf16 tensor-core speed at best
  gfx942 (MI300X)   not supported: Triton 3.6 fails to lower tl.dot_scaled with e2m1
                    operands for gfx942 ("Unsupported DotScaleOp"); the op raises ValueError
  CPU interpreter   Triton 3.6's interpreter has no tl.dot_scaled: gemmkit models it there
                    (kernels/_interpreter.py: e2m1 x e2m1, E8M0 per 32, exact in fp32)
"""
from __future__ import annotations


import torch

from . import _common as C
from ._registry import Op
from ..kernels.triton import fp4 as H
# The kernel's host code (kernels/triton/fp4.py), re-exported where the tuner and tests have always found it.
from ..kernels.triton.fp4 import (MIN_BLOCK_K, MX_GROUP, UNSUPPORTED_ARCHS, check_config,  # noqa: F401
                                  constexprs, smem_bytes, static_spec)
from .gemm_a8w8 import _check_out, resolve_out_dtype

OP = "afp4wfp4"


# ----------------------------------------------------------------------------- validation

def _check_inputs(x, w, x_scale, w_scale, out_dtype, out=None):
    """(M, N, K) with K the unpacked length (2 * x.shape[1]); errors name the argument."""
    C.check_tensor("x", x, dtypes=(torch.uint8,), ndim=2)
    C.check_tensor("w", w, dtypes=(torch.uint8,), ndim=2)
    M, half_k = x.shape
    N = w.shape[0]
    K = 2 * half_k
    if K % MX_GROUP:
        raise ValueError(f"x: expected K = 2 * x.shape[1] divisible by {MX_GROUP} (one E8M0 scale per "
                         f"{MX_GROUP} elements), got shape {tuple(x.shape)} (K = {K})")
    if w.shape[1] != half_k:
        raise ValueError(f"w: expected shape (N, {half_k}) (K/2 packed bytes like x), got {tuple(w.shape)}")
    for name, s, rows in (("x_scale", x_scale, M), ("w_scale", w_scale, N)):
        C.check_tensor(name, s, dtypes=(torch.uint8,), ndim=2)
        if tuple(s.shape) != (rows, K // MX_GROUP):
            raise ValueError(f"{name}: expected shape ({rows}, {K // MX_GROUP}) (one E8M0 byte per {MX_GROUP} "
                             f"elements, K = {K}), got {tuple(s.shape)}")
    C.check_out_dtype(out_dtype)
    _check_out(out, M, N, out_dtype)
    C.check_same_device(x=x, w=w, x_scale=x_scale, w_scale=w_scale, out=out)
    C.check_out_disjoint("out", out, x=x, w=w, x_scale=x_scale, w_scale=w_scale)
    return M, N, K


# ----------------------------------------------------------------------------- implementation

def _run(x, w, x_scale, w_scale, config, y, compile_only=False):
    M, N, K = x.shape[0], w.shape[0], 2 * x.shape[1]
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if M == 0 or N == 0:
        return
    if K == 0:  # the empty sum
        y.zero_()
        return
    target = C.target_for(x.device)
    H.check_target(target)
    cfg, _source = C.resolve_config(OP, config, target, M, N, K)
    check_config(cfg, target)
    H.launch(x, w, x_scale, w_scale, y, cfg, target, compile_only)


def _check(x, w, x_scale, w_scale, *, out_dtype, out):
    """The op's checks (Op: eager, custom ops and fakes alike); the output's shape."""
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, out_dtype, out)
    return M, N


def _execute(x, w, x_scale, w_scale, *, config, y):
    _run(x, w, x_scale, w_scale, config, y)


GEMM_AFP4WFP4 = Op("gemm_afp4wfp4", "Tensor x, Tensor w, Tensor x_scale, Tensor w_scale", 4, _check, _execute,
                   default_out_dtype=lambda x, out: resolve_out_dtype(None, out), legacy_schema=True)


def gemm_afp4wfp4(x, w, x_scale, w_scale, *, out_dtype=None, out=None, config=None):
    """y = x @ w.T for OCP MXFP4 operands (what gemmkit.quant.quantize_mxfp4 returns).

    Args:
      x: (M, K/2) uint8, two E2M1 codes per byte: element 2i in bits 0-3, element 2i + 1 in bits 4-7.
      w: (N, K/2) uint8, same packing (nn.Linear layout).
      x_scale: (M, K/32) uint8 E8M0: x[m, 32j:32j+32] is scaled by 2^(x_scale[m, j] - 127) (255 = NaN).
      w_scale: (N, K/32) uint8 E8M0, the same for the rows of w.
      out_dtype: bf16, fp16 or fp32; None (default): out's dtype if `out` is given, else bf16.
      out: optional preallocated (M, N) tensor of out_dtype.
      config: optional dict overriding gemmkit/configs/<arch>/AFP4WFP4.json (BLOCK_SIZE_K >= 64, counted in
        unpacked elements; no "tma").

    K (= 2 * x.shape[1]) must be a multiple of 32. Accumulates in fp32. Native on gfx950; emulated on
    sm_90 (decoded to bf16, then bf16 tensor cores); not available on gfx942 (ValueError).
    Returns (M, N) of out_dtype. M or N == 0: empty; K == 0: zeros.
    """
    return GEMM_AFP4WFP4.call(x, w, x_scale, w_scale, out_dtype=out_dtype, out=out, config=config)


def compile_for(x, w, x_scale, w_scale, config: dict, out_dtype=torch.bfloat16):
    """Compile (no launch) the kernel gemm_afp4wfp4(..., config=config) would run (the tuner's warm-up)."""
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, out_dtype)
    y = torch.empty((M, N), dtype=out_dtype, device=x.device)
    _run(x, w, x_scale, w_scale, C.config_to_str(config), y, compile_only=True)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def isa_cases(archs):
    """Every bucket of every shipped AFP4WFP4 table (sm_90, gfx950; gfx942 has none: see UNSUPPORTED_ARCHS)."""
    yield from H.table_cases(OP, archs)


def isa_spec(case):
    return H.table_spec(case)
