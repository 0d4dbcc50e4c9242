"""gemm_a8w8's Gluon backend: a config with "backend": "gluon" runs the FP8 kernel of
kernels/gluon/hopper_pingpong_fp8.py (sm_90, float8_e4m3fn, per-token x per-channel scales,
fp32 accumulation promoted every BLOCK_SIZE_K <= 128 products).

Where that kernel cannot take the call, the op's Triton tier runs the same config (its tile
sizes), as gemm_a16w16 does for its Gluon bf16 kernel (`gluon_unsupported` says why):
the interpreter, int8, non-TMA strides or alignment (K % 16 != 0 for fp8 rows), an output
or scale layout the kernel does not take, split-K.
"""
from __future__ import annotations

from . import _common as C


def gluon_unsupported(x, w, scaling, y, cfg, target) -> str | None:
    """Why a "backend": "gluon" config runs on the Triton tier for this call (None: it runs on Gluon)."""
    if cfg.get("backend") != "gluon":
        return "the config does not ask for the gluon backend"
    if C.interpreting():
        return "the Triton interpreter does not run Gluon kernels"
    if cfg.get("NUM_KSPLIT", 1) != 1:
        return "split-K configs run on the Triton tier"
    if scaling.mode != "rowcol":
        return f"the gluon fp8 kernel takes per-token x per-channel scales, not {scaling.mode!r}"
    from ..kernels.gluon import hopper_pingpong_fp8

    return hopper_pingpong_fp8.unsupported(x, w, y, scaling.x_scale, scaling.w_scale, target)


def try_launch(x, w, scaling, bias, y, cfg, target, compile_only=False) -> bool:
    """Run (or compile) the Gluon fp8 kernel for this call if the config asks for it and it can;
    True when it did, False when the caller's Triton launch should run instead."""
    if gluon_unsupported(x, w, scaling, y, cfg, target) is not None:
        return False
    from ..kernels.gluon import hopper_pingpong_fp8 as k

    k.launch(x, w, scaling.x_scale, scaling.w_scale, bias, y, cfg, target, compile_only=compile_only)
    C.LAUNCHES[k.KERNEL_NAME] += not compile_only
    return True
