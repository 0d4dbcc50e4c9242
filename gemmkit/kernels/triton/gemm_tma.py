"""Dense GEMM, Hopper TMA path: y = epilogue(x @ w.T) with host-built tensor descriptors.

Same ops, math (SCALE = "none" | "rowcol" | "block", _mainloop.py), schedule
and epilogue as gemm.py; only the data movement
differs: the copy engine (TMA) moves x and w tiles into shared memory and the
output tile back out, so the kernel computes no addresses and masks nothing
(TMA zero-fills out-of-bounds reads and clips out-of-bounds writes). x's descriptor may hold more rows than M
(ops/dispatch.py pad_m: zero rows to whole boxes, since boxes past the last row load slowly); M is y's.

    x_desc [BLOCK_M, K_BOX] --TMA--> smem --+
                                            +--> wgmma --> acc (fp32 / int32, registers)
    w_desc [BLOCK_N, K_BOX] --TMA--> smem --+        (num_stages K steps in flight;
                                                      block scales per scale block, loaded a
                                                      box ahead: block_scales / scaled_step)
    X_KM / W_KN (16-bit operands): x / w transposed in memory (unit stride along M / N: a (K, N) weight passed as
    W.t()): its descriptor is over the (K, M) / (K, N) storage, boxes of [K_BOX, BLOCK_M] / [K_BOX, BLOCK_N], and
    wgmma reads that shared-memory tile as its MN-major operand (no copy, no transpose through registers).
    K_BOX = BLOCK_K (one box a K step), or SCALE_BK where block scales meet BLOCK_K = SUB x SCALE_BK: SUB boxes a
    step, each product scaled with its own scale block's scales (dense.step_boxes).
                                                        |
                           epilogue (scales, bias, activation, cast; _epilogue.py)
                                                        |
                     y_desc [BLOCK_M, BLOCK_N] <--TMA-- smem

Schedule: the persistent loop over tile ids (`tile_coords`, _schedule.py)
with `flatten=True`, so the pipeliner overlaps the next tile's first loads
with this tile's epilogue. Non-persistent launches use a grid of one program
per tile and run the loop body once.

Split-K (SPLIT_K > 1) works as in gemm.py: work ids cover
tiles x splits, each split stores an fp32 partial to part, the reduce kernel
adds them in a fixed order and runs the epilogue.

Constraints:
  - sm_90 only (the op picks this path when the config says "tma": true).
  - TMA alignment, checked by the op before it picks this path: every base
    address 16-byte aligned, last dim contiguous, other strides multiples of
    16 bytes (K % 8 == 0 for 16-bit x and w, K % 16 for 8-bit; N % 8 == 0 for
    a bf16/fp16 y, N % 4 for fp32). X_KM / W_KN: the same of the (K, M) / (K, N) storage (M % 8 / N % 8 == 0),
    16-bit operands only (sm_90's fp8 / int8 wgmma reads K-major operands alone).
  - BLOCK_M, BLOCK_N, BLOCK_K powers of two >= 16, at most 256 elements per TMA box dim. Block scales: BLOCK_K
    divides SCALE_BK, or is SUB x SCALE_BK (boxes of SCALE_BK; a box past K loads zeros, its scales the last
    block's: block_scales clamps the scale column, so no scale read leaves the tensor).
  - Offsets: TMA coordinates are int32 per dim (M, N, K < 2**31; the descriptors' strides are
    64-bit); the pointer reads and stores (block-scale columns kb * stride, the split-K slab) are
    int64 in rows and int32 in columns unless INT64_OFFSETS (_offsets.py; set by the host when a
    span reaches 2**31 elements).
  - Shared memory: num_stages * (BLOCK_M + BLOCK_N) * BLOCK_K * element bytes + the
    BLOCK_M x BLOCK_N output staging tile, within the target's 227 KiB.
"""
import triton
import triton.language as tl

from ._epilogue import apply_scales, epilogue, store_tile
from ._mainloop import block_scales, scale_rows, scaled_step
from ._schedule import split_k_range, tile_coords
from .gemm import TILE_PROMISES


# Checked by `gemmkit isa` / CI on every shipped sm_90 config (see gemm.py).
PROMISES = TILE_PROMISES + (
    {"promise": "TMA loads (UTMALDG)", "check": "counts['UTMALDG'] > 0"},
    {"promise": "TMA store (UTMASTG) of the output tile", "when": "cfg['NUM_KSPLIT'] == 1",
     "check": "counts['UTMASTG'] > 0"},
    {"promise": "wgmma (HGMMA / QGMMA fp8 / IGMMA int8) for tiles of >= 64 rows", "when": "cfg['BLOCK_SIZE_M'] >= 64",
     "check": "counts['HGMMA'] + counts['QGMMA'] + counts['IGMMA'] > 0"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
)


@triton.jit
def gemm_tma_kernel(x_desc, w_desc, y_desc, xs_ptr, wsc_ptr, bias_ptr, part_ptr, M, N, K,
                    stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr,
                    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, SPLIT_K: tl.constexpr,
                    SCALE: tl.constexpr, SCALE_BN: tl.constexpr, SCALE_BK: tl.constexpr,
                    ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr, INT64_OFFSETS: tl.constexpr,
                    K_BOX: tl.constexpr, SUB: tl.constexpr, X_KM: tl.constexpr, W_KN: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    kb_last = tl.cdiv(K, SCALE_BK) - 1  # the last block-scale column
    for work_id in tl.range(tl.program_id(0), num_tiles * SPLIT_K, tl.num_programs(0), flatten=True):
        split = work_id // num_tiles
        pid_m, pid_n = tile_coords(work_id % num_tiles, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
        k_first, k_steps = split_k_range(split, k_tiles, SPLIT_K)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        xs_rows, ws_rows = scale_rows(xs_ptr, wsc_ptr, offs_m, offs_n, stride_xsm, stride_wsn, SCALE_BN)
        mask_x = offs_m < M
        mask_w = offs_n < N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
        # Block scales are loaded a box ahead: each box's product is scaled with scales whose load was issued
        # while the box before it computed (block_scales clamps the one past the last box to the last block)
        xs = 1.0
        ws = 1.0
        if SCALE == "block":
            xs, ws = block_scales(k_first * BLOCK_K, xs_rows, ws_rows, mask_x, mask_w, stride_xsk, stride_wsk,
                                  kb_last, SCALE_BK, INT64_OFFSETS)
        for ki in range(k_steps):
            # A K step is SUB boxes of K_BOX columns: one of BLOCK_K, or (block scales, BLOCK_K a multiple of
            # SCALE_BK) one a scale block, each product scaled with its own block's scales (`step_boxes`; a box
            # past K loads zeros)
            for s in tl.static_range(SUB):
                k = (k_first + ki) * BLOCK_K + s * K_BOX
                if X_KM:  # x's descriptor is over x.T (K, M): the (K_BOX, BLOCK_M) box, read transposed
                    a = x_desc.load([k, off_m]).T
                else:
                    a = x_desc.load([off_m, k])
                if W_KN:  # w's descriptor is over w.T (K, N): the (K_BOX, BLOCK_N) box is the dot's b as it is
                    b = w_desc.load([k, off_n])
                else:
                    b = w_desc.load([off_n, k])
                xs_next = xs
                ws_next = ws
                if SCALE == "block":
                    xs_next, ws_next = block_scales(k + K_BOX, xs_rows, ws_rows, mask_x, mask_w, stride_xsk,
                                                    stride_wsk, kb_last, SCALE_BK, INT64_OFFSETS)
                acc = scaled_step(acc, a, b, xs, ws, SCALE, PROMOTE_K, W_KN)
                xs = xs_next
                ws = ws_next
        if SPLIT_K == 1:
            out = epilogue(acc, xs_ptr, wsc_ptr, bias_ptr, offs_m, offs_n, M, N, SCALE, HAS_BIAS, ACTIVATION)
            y_desc.store([off_m, off_n], out.to(y_desc.dtype))
        else:  # scaled fp32 partial sum to part[split]; _splitk_reduce.py finishes (see gemm.py)
            part = apply_scales(acc, xs_ptr, wsc_ptr, offs_m, offs_n, M, N, SCALE)
            store_tile(part_ptr + split.to(tl.int64) * M * N, part, offs_m, offs_n, M, N, N, 1)
