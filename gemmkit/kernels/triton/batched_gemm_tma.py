"""Batched GEMM, Hopper TMA path: y[b] = epilogue(x[b] @ w[b].T) with 3-D host tensor descriptors.

Same ops, math (SCALE = "none" | "rowcol"), work space (B x tiles, `batched_tile_coords`)
and epilogue as batched_gemm.py; the data movement is gemm_tma.py's, with the batch as
the descriptors' outer dimension. TMA clips each box to its own batch entry (zero-fill
on reads past M / N / K, clipped writes), so edge tiles never touch a neighbour entry:

    x_desc (B, M, K) box [1, BLOCK_M, BLOCK_K] --TMA--> smem --reshape--+
                                                                       +--> wgmma --> acc
    w_desc (B, N, K) box [1, BLOCK_N, BLOCK_K] --TMA--> smem --reshape--+   (num_stages in flight)
      W_KN (16-bit w transposed in memory, attention's probs @ V with V (B, K, N) passed as V.transpose(1, 2)):
      w_desc over the (B, K, N) storage, box [1, BLOCK_K, BLOCK_N], read by wgmma as its MN-major operand
                                                                               |
            epilogue (x_scale[b], w_scale[b], bias[b], activation, cast; _epilogue.py)
                                                                               |
    y_desc (B, M, N) box [1, BLOCK_M, BLOCK_N] <--TMA-- smem <--reshape--------+

(The reshape drops the unit batch dim of the box; the shared-memory tile is the 2-D
one gemm_tma.py's wgmma reads, see the static compile in `gemmkit isa`.)

Schedule: one flattened `tl.range` over work ids (persistent: min(work, SMs) programs; else
one program per id), so the pipeliner issues the next tile's first loads under this
tile's epilogue, as in gemm_tma.py. For B = 64 small matrices this is where the
persistent form pays: thousands of short tiles, one launch, no tail per matrix.

Constraints:
  - sm_90 only (the op picks this path when the config says "tma": true).
  - TMA rules, checked by the op (else the pointer kernel runs the same config): every base
    16-byte aligned, K (x, w) and N (y) contiguous, row and batch strides multiples of 16 bytes,
    batch stride >= rows x row stride (no broadcast or interleaved batch dims), no empty dim; W_KN: the same of
    w.transpose(1, 2) (N contiguous), 16-bit w only (sm_90's fp8 / int8 wgmma reads K-major operands alone).
  - BLOCK_M, BLOCK_N, BLOCK_K powers of two >= 16, at most 256 per TMA box dim.
  - Shared memory: num_stages * (BLOCK_M + BLOCK_N) * BLOCK_K * element bytes + the output
    staging tile, within the target's 227 KiB (kernels/triton/dense.smem_bytes).
  - No split-K.
  - Offsets: TMA coordinates int32 per dim (B, M, N, K < 2**31; the descriptors' strides are 64-bit);
    the pointer reads (scales, bias) are an int64 batch offset plus a unit-stride index, so this
    kernel has no int32 offset product to widen and takes no INT64_OFFSETS (_offsets.py).
"""
import triton
import triton.language as tl

from ._epilogue import epilogue
from ._mainloop import mma_step
from ._schedule import batched_tile_coords
from .gemm import TILE_PROMISES


# Checked by `gemmkit isa` on every shipped sm_90 config with "tma": true.
PROMISES = TILE_PROMISES + (
    {"promise": "TMA loads (UTMALDG)", "check": "counts['UTMALDG'] > 0"},
    {"promise": "TMA store (UTMASTG) of the output tile", "check": "counts['UTMASTG'] > 0"},
    {"promise": "wgmma (HGMMA / QGMMA fp8 / IGMMA int8) for tiles of >= 64 rows", "when": "cfg['BLOCK_SIZE_M'] >= 64",
     "check": "counts['HGMMA'] + counts['QGMMA'] + counts['IGMMA'] > 0"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
)


@triton.jit
def batched_gemm_tma_kernel(x_desc, w_desc, y_desc, xs_ptr, wsc_ptr, bias_ptr, B, M, N, K,
                            stride_xsb, stride_wsb, stride_bb,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr,
                            HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                            SCALE: tl.constexpr, ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr,
                            W_KN: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_work = B * num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for work_id in tl.range(tl.program_id(0), num_work, tl.num_programs(0), flatten=True):
        b, pid_m, pid_n = batched_tile_coords(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
        for ki in range(k_tiles):
            a = x_desc.load([b, off_m, ki * BLOCK_K]).reshape(BLOCK_M, BLOCK_K)
            if W_KN:  # w's descriptor is over w.transpose(1, 2) (B, K, N): its box is the dot's b as it is
                w = w_desc.load([b, ki * BLOCK_K, off_n]).reshape(BLOCK_K, BLOCK_N)
            else:
                w = w_desc.load([b, off_n, ki * BLOCK_K]).reshape(BLOCK_N, BLOCK_K)
            # SCALE is "none" or "rowcol": mma_step's block-scale arguments are unused.
            acc = mma_step(acc, a, w, ki * BLOCK_K, xs_ptr, wsc_ptr, offs_m < M, offs_n < N, 0, 0,
                           SCALE, 1, PROMOTE_K, False, W_KN)
        b64 = b.to(tl.int64)
        out = epilogue(acc, xs_ptr + b64 * stride_xsb, wsc_ptr + b64 * stride_wsb, bias_ptr + b64 * stride_bb,
                       offs_m, offs_n, M, N, SCALE, HAS_BIAS, ACTIVATION)
        y_desc.store([b, off_m, off_n], out.to(y_desc.dtype).reshape(1, BLOCK_M, BLOCK_N))


# ----------------------------------------------------------------------------- host side

def tma_compatible_3d(t) -> bool:
    """TMA's rules for a (B, R, C) tensor read as a 3-D box [1, rows, cols]: 16-byte aligned base,
    unit last stride, row and batch strides multiples of 16 bytes, rows not overlapping, batch
    entries outermost and not overlapping (a broadcast or interleaved batch dim takes the pointer path);
    a batch of one ignores its batch stride. The one rule for this kernel's descriptors and the Gluon
    batched ping-pong's (kernels/gluon/hopper_pingpong_batched.py)."""
    if t.dim() != 3 or 0 in t.shape or t.stride(2) != 1 or t.data_ptr() % 16:
        return False
    es = t.element_size()
    B, R, Cn = t.shape
    if (t.stride(1) * es) % 16 or t.stride(1) < Cn:
        return False
    return B == 1 or ((t.stride(0) * es) % 16 == 0 and t.stride(0) >= R * t.stride(1))
