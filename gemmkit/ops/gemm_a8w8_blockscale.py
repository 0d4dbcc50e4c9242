"""gemm_a8w8_blockscale: FP8 GEMM with DeepSeek-V3 / torch._scaled_mm block scales.

    x (M, K) fp8    x_scale (M, ceil(K / bk)) fp32            one scale per row per K block (1 x bk)
    w (N, K) fp8    w_scale (ceil(N / bn), ceil(K / bk)) fp32  one scale per bn x bk block of w
    y[m, n] = sum over K blocks kb of  x_scale[m, kb] * w_scale[n // bn, kb] * (x[m, kb] . w[n, kb])

block_shape = (bn, bk), (128, 128) by default. The scales change every bk of K,
so they are applied inside the K loop (SCALE = "block" in kernels/triton/
_mainloop.py): each K step's product is scaled before it joins the fp32
accumulator. The config's BLOCK_SIZE_K is capped at bk so a step never
straddles two scale blocks, unless it is a multiple of bk: the Triton TMA kernel
then loads a step as boxes of one scale block each (kernels/triton/dense.py
`step_boxes`; the pointer kernel and the Gluon one take bk). K need not be a
multiple of bk: the last block is partial (masked loads), its scale column
covers what is there.

Short K (seed 002's short-K form: the whole K in one tile, no pipelined
steady state): for K of a few steps, e.g. DeepSeek-V3's (32768, 512), a shape
file A8W8_BLOCKSCALE-N=<N>-K=<K>.json sets num_stages >= ceil(K / BLOCK_SIZE_K),
so the pipeliner's prologue issues every K step's loads before the first MMA
and the tile's whole K sits in shared memory at once. (Unrolling the loop
instead made the compiler keep every step's scaled partial product live: 936+
bytes of spills at 128 x 128 on sm_90.)
"""
from __future__ import annotations

import torch

from . import _common as C
from . import dispatch as D
from ._registry import Op
from ..kernels.triton import dense as G
from .gemm_a8w8 import _check_out, check_8bit_pair, check_fp8_flavour, resolve_out_dtype

OP = "a8w8_blockscale"


def _block_shape(block_shape):
    if (not isinstance(block_shape, (tuple, list)) or len(block_shape) != 2
            or not all(isinstance(b, int) and not isinstance(b, bool) for b in block_shape)):
        raise ValueError(f"block_shape: expected a pair of ints (bn, bk), got {block_shape!r}")
    bn, bk = block_shape
    if bn < 1:
        raise ValueError(f"block_shape: expected bn >= 1, got {bn}")
    if bk < 32 or bk & (bk - 1):
        raise ValueError(f"block_shape: expected bk a power of two >= 32 (the kernel's K step divides it; "
                         f"8-bit MMAs take K >= 32), got {bk}")
    return bn, bk


def _check_inputs(x, w, x_scale, w_scale, block_n, block_k, out_dtype, out=None):
    M, N, K = check_8bit_pair(x, w, allow_int8=False)
    bn, bk = _block_shape((block_n, block_k))
    kb, nb = G.cdiv(K, bk), G.cdiv(N, bn)
    for name, s, want in (("x_scale", x_scale, (M, kb)), ("w_scale", w_scale, (nb, kb))):
        C.check_tensor(name, s, dtypes=(torch.float32,), ndim=2)
        if tuple(s.shape) != want:
            raise ValueError(f"{name}: expected shape {want} for block_shape ({bn}, {bk}) with M={M}, N={N}, K={K}, "
                             f"got {tuple(s.shape)}")
    C.check_out_dtype(out_dtype)
    _check_out(out, M, N, out_dtype)
    C.check_same_device(x=x, w=w, x_scale=x_scale, w_scale=w_scale, out=out)
    C.check_out_disjoint("out", out, x=x, w=w, x_scale=x_scale, w_scale=w_scale)
    return M, N, K


def _run(x, w, x_scale, w_scale, block_n, block_k, config, y, compile_only=False):
    M, K = x.shape
    N = w.shape[0]
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if M == 0 or N == 0:
        return
    if K == 0:
        y.zero_()
        return
    target = C.target_for(x.device)
    check_fp8_flavour(x, target)
    cfg, _source = C.resolve_config(OP, config, target, M, N, K, tune_as=("a8w8_blockscale", "fp8", x.device))
    # Derived: a K step never straddles two scale blocks, or (a multiple of block_k: the Triton TMA kernel's
    # boxes of one scale block each, kernels/triton/dense.step_boxes) covers whole ones.
    if cfg["BLOCK_SIZE_K"] % block_k:
        cfg["BLOCK_SIZE_K"] = min(cfg["BLOCK_SIZE_K"], block_k)
    scaling = G.Scaling("block", x_scale, w_scale, block_n, block_k)
    x2, w2 = G.matrix_operand(x), G.matrix_operand(w)
    D.launch_dense(D.dense(cfg, target, x2, w2, y, scaling), x2, w2, None, y, "none", target, scaling,
                   compile_only=compile_only)


def _check(x, w, x_scale, w_scale, block_n, block_k, *, out_dtype, out):
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, block_n, block_k, out_dtype, out)
    return M, N


def _execute(x, w, x_scale, w_scale, block_n, block_k, *, config, y):
    _run(x, w, x_scale, w_scale, block_n, block_k, config, y)


GEMM_A8W8_BLOCKSCALE = Op("gemm_a8w8_blockscale",
                          "Tensor x, Tensor w, Tensor x_scale, Tensor w_scale, int block_n, int block_k", 4, _check,
                          _execute, default_out_dtype=lambda x, out: resolve_out_dtype(None, out))


def gemm_a8w8_blockscale(x, w, x_scale, w_scale, *, block_shape=(128, 128), out_dtype=None, out=None,
                         config=None):
    """y = x @ w.T with FP8 operands and block scales (DeepSeek-V3 layout).

    Args:
      x: (M, K) fp8 in the target's E4M3 format (float8_e4m3fn on H100/H200 and MI355X,
         float8_e4m3fnuz on MI300X).
      w: (N, K), same dtype.
      x_scale: (M, ceil(K / bk)) float32: x[m, j*bk:(j+1)*bk] is scaled by x_scale[m, j]. Any strides; the
        fastest is M-major (strides (1, M), as quantize_fp8_blockwise(x, (1, bk)) and torch._scaled_mm use it):
        a K block's scales of a tile are then contiguous, and with M % 4 == 0 (a K-block stride of 16 bytes) and a
        16-byte aligned base the sm_90 Gluon kernel copies them by TMA (otherwise by cp.async: up to ~5% slower at
        M = 4096 for M-major scales; row-major ones ran 6-12% below M-major: docs/PERF.md).
      w_scale: (ceil(N / bn), ceil(K / bk)) float32: the bn x bk block (i, j) of w by w_scale[i, j].
      block_shape: (bn, bk), default (128, 128); bk a power of two >= 32.
      out_dtype: bf16, fp16 or fp32; None (default): out's dtype if `out` is given, else bf16.
      out: optional preallocated (M, N) tensor.
      config: optional dict overriding gemmkit/configs/<arch>/A8W8_BLOCKSCALE*.json.

    Returns (M, N) of out_dtype; K need not be a multiple of bk. M or N == 0: empty; K == 0: zeros.
    """
    bn, bk = _block_shape(block_shape)
    return GEMM_A8W8_BLOCKSCALE.call(x, w, x_scale, w_scale, bn, bk, out_dtype=out_dtype, out=out, config=config)


def compile_for(x, w, x_scale, w_scale, config: dict, block_shape=(128, 128), out_dtype=torch.bfloat16):
    """Compile (no launch) what gemm_a8w8_blockscale(..., config=config) would run (the tuner's warm-up)."""
    bn, bk = _block_shape(block_shape)
    M, N, _K = _check_inputs(x, w, x_scale, w_scale, bn, bk, out_dtype)
    y = torch.empty((M, N), dtype=out_dtype, device=x.device)
    _run(x, w, x_scale, w_scale, bn, bk, C.config_to_str(config), y, compile_only=True)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def isa_cases(archs):
    """Every bucket of every shipped table (fp8), plus (sm_90) the tail reduce of the Gluon coop kernel's tail
    split as the DeepSeek-V3 (2112, 7168) row at M = 4096 runs it (configs/model/tail.py tail_split: 8 splits; 4-row
    programs)."""
    yield from G.table_cases(OP, archs, dtypes=("fp8",))
    if "sm_90" in archs:
        from .. import arch as _arch
        from ..configs.model import tail_split

        sms = _arch.ARCHS["sm_90"].num_cus
        tail, splits = tail_split(32 * 17, sms, 7168 // 128)  # (2112, 7168) at M = 4096, 128 x 128 x 128 tiles
        yield {"kernel": "tail_reduce_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": "-",
               # BLOCK_M x BLOCK_N: one program's rows of a TILE_M x BLOCK_N tail tile (the report's reduce columns)
               "config": {"SPLIT_K": splits, "BLOCK_M": G.tail_reduce_rows(128, tail, 2 * sms), "BLOCK_N": 128,
                          "TILE_M": 128, "num_warps": G.REDUCE_WARPS},
               "path": "tail-reduce"}


def isa_spec(case):
    if case["path"] != "tail-reduce":
        return G.table_spec(case, scale="block", scale_bn=128, scale_bk=128)
    from ..kernels.triton import _splitk_reduce

    c = case["config"]
    sig = {"part_ptr": "*fp32", "bias_ptr": "*bf16", "y_ptr": "*bf16", "M": "i32", "N": "i32", "stride_ym": "i32",
           "stride_yn": "constexpr", "first_tile": "i32"}
    ce = dict(stride_yn=1, SPLITS=c["SPLIT_K"], BM=c["TILE_M"], BN=c["BLOCK_N"], ROWS=c["BLOCK_M"], GROUP_SIZE_M=8,
              HAS_BIAS=False, ACTIVATION="none", SHIFT=False, INT64_OFFSETS=False)
    sig.update({k: "constexpr" for k in ce if k not in sig})
    return dict(kernel=_splitk_reduce.tail_reduce_kernel, signature=sig, constexprs=ce,
                divisible=["part_ptr", "bias_ptr", "y_ptr", "stride_ym"], options={"num_warps": c["num_warps"]},
                promises=_splitk_reduce.PROMISES, block=None, smem_bound=0)
