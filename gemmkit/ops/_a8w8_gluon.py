"""gemm_a8w8's and gemm_a8w8_blockscale's Gluon backend: a config with "backend": "gluon" runs the FP8
kernel of kernels/gluon/hopper_pingpong_fp8.py (sm_90, float8_e4m3fn, fp32 accumulation promoted
every BLOCK_SIZE_K <= 128 products): per-token x per-channel scales (SCALE = "rowcol", gemm_a8w8)
or DeepSeek-V3 block scales applied in each promotion (SCALE = "block", gemm_a8w8_blockscale).
The config's num_warps picks the kernel's layout: 4 = ping-pong (a tile per consumer warpgroup),
8 = cooperative (one 128 x BN or 256 x BN tile, a half per consumer warpgroup); the Triton fallback runs
the same config (for num_warps 8, the Triton tier's own 8-warp shape), but a 256-row fp8 tile at 128 rows
(`dense.triton_tile`: the Triton tier's promotion would spill there).

Where that kernel cannot take the call, the op's Triton tier runs the same config (its tile
sizes), as gemm_a16w16 does for its Gluon bf16 kernel (`gluon_unsupported` says why):
the interpreter, int8, non-TMA strides or alignment (K % 16 != 0 for fp8 rows), an output
or scale layout the kernel does not take, split-K, a block_shape whose blocks do not hold
whole tiles (BLOCK_SIZE_N must divide bn and BLOCK_SIZE_K divide bk).
"""
from __future__ import annotations

from . import _common as C


def _block_shape(scaling):
    return (scaling.block_n, scaling.block_k) if scaling.mode == "block" else None


def gluon_unsupported(x, w, scaling, y, cfg, target) -> str | None:
    """Why a "backend": "gluon" config runs on the Triton tier for this call (None: it runs on Gluon)."""
    if cfg.get("backend") != "gluon":
        return "the config does not ask for the gluon backend"
    if C.interpreting():
        return "the Triton interpreter does not run Gluon kernels"
    if cfg.get("NUM_KSPLIT", 1) != 1:
        return "split-K configs run on the Triton tier"
    if scaling.mode not in ("rowcol", "block"):
        return f"the gluon fp8 kernel takes per-token x per-channel or block scales, not {scaling.mode!r}"
    if scaling.mode == "block" and (scaling.block_n % cfg["BLOCK_SIZE_N"] or scaling.block_k % cfg["BLOCK_SIZE_K"]):
        return (f"block_shape ({scaling.block_n}, {scaling.block_k}): the gluon kernel needs BLOCK_SIZE_N "
                f"({cfg['BLOCK_SIZE_N']}) to divide bn and BLOCK_SIZE_K ({cfg['BLOCK_SIZE_K']}) to divide bk")
    from ..kernels.gluon import hopper_pingpong_fp8

    return hopper_pingpong_fp8.unsupported(x, w, y, scaling.x_scale, scaling.w_scale, target, _block_shape(scaling))


def try_launch(x, w, scaling, bias, y, cfg, target, compile_only=False) -> bool:
    """Run (or compile) the Gluon fp8 kernel for this call if the config asks for it and it can;
    True when it did, False when the caller's Triton launch should run instead."""
    if gluon_unsupported(x, w, scaling, y, cfg, target) is not None:
        return False
    from ..kernels.gluon import hopper_pingpong_fp8 as k

    k.launch(x, w, scaling.x_scale, scaling.w_scale, bias, y, cfg, target, compile_only=compile_only,
             block_shape=_block_shape(scaling))
    return True
