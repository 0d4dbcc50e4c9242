"""OCP MXFP4 GEMM: y = (dequant(x) @ dequant(w).T) with x, w packed E2M1 and E8M0 block scales.

    x  (M, K/2)  uint8   two E2M1 codes per byte: element 2i in bits 0-3, 2i + 1 in bits 4-7
    w  (N, K/2)  uint8   same packing (nn.Linear layout, y = x @ w.T)
    xs (M, K/32) uint8   E8M0: x[m, 32j .. 32j + 31] is scaled by 2^(xs[m, j] - 127)
    ws (N, K/32) uint8   E8M0, one per 32 elements of a row of w
    y[m, n] = sum_k  e2m1(x[m, k]) 2^(xs[m, k/32] - 127) * e2m1(w[n, k]) 2^(ws[n, k/32] - 127)

What differs from the dense kernel (gemm.py) is the mainloop only: the operands
are packed bytes, each K step carries its own scale tiles, and the product is
`tl.dot_scaled`. The schedule (`split_tile`: `tile_coords`, `split_k_range`),
the epilogue (`epilogue`, `store_tile`) and the split-K reduce
(_splitk_reduce.py) are the shared ones.

Tile layout (one program = one BLOCK_M x BLOCK_N tile of y; one K step = BLOCK_K elements):

            packed K (bytes) ------------------>     scale columns ------->
         +------------------------------+          +----------------+
  x      | BLOCK_M x BLOCK_K/2 uint8    |   xs     | BLOCK_M x      |   rows offs_m % M
 (M,K/2) +------------------------------+  (M,K/32)| BLOCK_K/32     |   (wrapped: no M mask)
         +------------------------------+          +----------------+
  w      | BLOCK_N x BLOCK_K/2 uint8    |   ws     | BLOCK_N x      |   rows offs_n % N
 (N,K/2) +------------------------------+  (N,K/32)| BLOCK_K/32     |
                          |                                 |
                          v                                 v
       acc[BLOCK_M, BLOCK_N] = tl.dot_scaled(x_tile, xs_tile, "e2m1", w_tile.T, ws_tile, "e2m1", acc)
                          |     gfx950: native scaled MFMA (v_mfma_scale_f32_16x16x128_f8f6f4)
                          |     sm_90: emulated -- Triton decodes the codes and scales them to
                          |     bf16 in registers, then bf16 wgmma (HGMMA) / mma.sync (HMMA)
                          |     gfx942: Triton 3.6 cannot lower it (the op refuses gfx942)
                          v
       epilogue (cast; no scales left: they were applied per K step) -> masked store y[offs_m, offs_n]

Schedule: as gemm.py. Work ids go through `split_tile` (`tile_coords`: XCD remap +
grouped order); PERSISTENT launches min(work, CUs) programs looping over work ids;
SPLIT_K > 1 gives split s the K steps `split_k_range` assigns and stores its fp32
partial sum to part[s], which `_splitk_reduce.py` adds in a fixed order:

      split 0: K steps [0, k0)  --> part[0] --+
      split 1: K steps [k0, k1) --> part[1] --+--> y = cast(part[0] + part[1] + ...)

Precision: every E2M1 value times a power of two is exact in bf16 (2 significant
bits) unless the scale leaves bf16's exponent range, and the products are summed
in fp32, so y differs from the float64 product of the dequantized operands by
fp32 summation and the final cast only.

Constraints:
  - K % 32 == 0 (one E8M0 scale per 32 elements; the op validates it). K is the
    unpacked length: x and w have K/2 bytes per row.
  - BLOCK_K a power of two >= 64 (tl.dot_scaled's minimum; 32 packed bytes and 2
    scales per row per step); BLOCK_M, BLOCK_N powers of two >= 16.
  - K tail masked unless EVEN_K (K % BLOCK_K == 0): masked bytes read as 0x00
    (two +0 codes) and masked scales as 127 (2^0), so the tail adds exact zeros
    (never 0 * NaN from the E8M0 NaN byte 255).
  - Any row strides; the K strides of x, w, xs, ws are the stride_*k arguments
    (1 is the fast case Triton specialises). Row offsets are int64; column offsets and K steps
    int32 unless INT64_OFFSETS (_offsets.py; the host sets it when a span reaches 2**31 elements).
    M, N, K < 2**31.
  - A scale byte of 255 (E8M0 NaN) makes its 32 products NaN, as the format says.
  - M, N, K >= 1 (the op handles empty shapes and K == 0 without a launch).
  - Emulated targets (sm_90): Triton upcasts the scaled operands to bf16 before the MMA (its
    tl.dot_scaled docs), so scaled values must lie in bf16's range (|v| < ~3.4e38).
  - SPLIT_K > 1 needs part: a contiguous fp32 (SPLIT_K, M, N) buffer; y is then untouched.
"""
import triton
import triton.language as tl

from ._epilogue import epilogue, store_tile
from ._offsets import wide
from ._schedule import split_tile

# E8M0 scale groups: one scale per MX_GROUP elements along K (OCP MX v1.0).
MX_GROUP = tl.constexpr(32)

# What the compiled code must show (checked by `gemmkit isa` on every shipped config).
PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "shared memory within the target", "check": "lds_bytes <= target.shared_mem_bytes"},
    {"promise": "shared memory within the op's bound (smem_bytes)", "check": "lds_bytes <= smem_bound"},
    {"promise": "no local-memory traffic", "arch": "sm_90", "check": "counts['LDL'] + counts['STL'] == 0"},
    {"promise": "emulated: bf16 wgmma (HGMMA) for tiles of >= 64 rows", "arch": "sm_90",
     "when": "cfg['BLOCK_SIZE_M'] >= 64", "check": "counts['HGMMA'] > 0"},
    {"promise": "emulated: bf16 mma.sync (HMMA) for 16/32-row tiles", "arch": "sm_90",
     "when": "cfg['BLOCK_SIZE_M'] < 64", "check": "counts['HMMA'] > 0"},
    # gfx950 emits v_mfma_scale_f32_16x16x128_f8f6f4 here (Triton 3.6): every MFMA is the scaled form.
    {"promise": "native scaled MFMA on gfx950 (every v_mfma is v_mfma_scale), every K step's work",
     "arch": "gfx950",
     "check": "counts['v_mfma_scale'] > 0 and counts['v_mfma_scale'] == counts['v_mfma'] "
              "and mma_k_steps >= 1 and mma_k_steps % 1 == 0"},
    {"promise": "waves_per_eu honoured", "arch": "amd", "when": "cfg.get('waves_per_eu', 0) > 0",
     "check": "occupancy >= cfg['waves_per_eu']"},
)


@triton.jit
def mxfp4_mainloop(x_ptr, w_ptr, xs_ptr, ws_ptr, rows_x, rows_w, k_first, k_steps, K,
                   stride_xm, stride_xk, stride_wn, stride_wk, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,
                   INT64_OFFSETS: tl.constexpr):
    """acc[BLOCK_M, BLOCK_N] = sum over K steps [k_first, k_first + k_steps) of the MXFP4 product of
    x[rows_x] and w[rows_w] (row indices all in bounds; the caller wraps edge rows)."""
    BK_BYTES: tl.constexpr = BLOCK_K // 2
    BK_SCALES: tl.constexpr = BLOCK_K // MX_GROUP
    offs_b = wide(k_first * BK_BYTES + tl.arange(0, BK_BYTES), INT64_OFFSETS)  # packed byte columns, first step
    offs_s = wide(k_first * BK_SCALES + tl.arange(0, BK_SCALES), INT64_OFFSETS)  # scale columns
    x_ptrs = x_ptr + rows_x[:, None].to(tl.int64) * stride_xm + offs_b[None, :] * stride_xk
    w_ptrs = w_ptr + rows_w[:, None].to(tl.int64) * stride_wn + offs_b[None, :] * stride_wk
    xs_ptrs = xs_ptr + rows_x[:, None].to(tl.int64) * stride_xsm + offs_s[None, :] * stride_xsk
    ws_ptrs = ws_ptr + rows_w[:, None].to(tl.int64) * stride_wsn + offs_s[None, :] * stride_wsk
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, k_steps):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
            sa = tl.load(xs_ptrs)
            sb = tl.load(ws_ptrs)
        else:
            k_left = K - (k_first + k) * BLOCK_K  # elements left, a multiple of 32
            in_b = tl.arange(0, BK_BYTES)[None, :] < k_left // 2
            in_s = tl.arange(0, BK_SCALES)[None, :] < k_left // MX_GROUP
            a = tl.load(x_ptrs, mask=in_b, other=0)
            b = tl.load(w_ptrs, mask=in_b, other=0)
            sa = tl.load(xs_ptrs, mask=in_s, other=127)
            sb = tl.load(ws_ptrs, mask=in_s, other=127)
        acc = tl.dot_scaled(a, sa, "e2m1", b.T, sb, "e2m1", acc)
        x_ptrs += wide(BK_BYTES, INT64_OFFSETS) * stride_xk
        w_ptrs += wide(BK_BYTES, INT64_OFFSETS) * stride_wk
        xs_ptrs += wide(BK_SCALES, INT64_OFFSETS) * stride_xsk
        ws_ptrs += wide(BK_SCALES, INT64_OFFSETS) * stride_wsk
    return acc


@triton.jit
def _afp4wfp4_tile(work_id, x_ptr, w_ptr, xs_ptr, ws_ptr, y_ptr, part_ptr, M, N, K,
                   stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                   stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                   SPLIT_K: tl.constexpr, INT64_OFFSETS: tl.constexpr):
    split, offs_m, offs_n, k_first, k_steps = split_tile(work_id, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M,
                                                         NUM_XCDS, SPLIT_K)
    # Edge tiles re-read valid rows (wrapped, as in gemm.py); the masked store discards them.
    acc = mxfp4_mainloop(x_ptr, w_ptr, xs_ptr, ws_ptr, offs_m % M, offs_n % N, k_first, k_steps, K,
                         stride_xm, stride_xk, stride_wn, stride_wk, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                         BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, INT64_OFFSETS)
    if SPLIT_K == 1:
        out = epilogue(acc, xs_ptr, ws_ptr, y_ptr, offs_m, offs_n, M, N, "none", False, "none")
        store_tile(y_ptr, out, offs_m, offs_n, M, N, stride_ym, stride_yn, INT64_OFFSETS)
    else:  # fp32 partial sum; _splitk_reduce.py adds the splits in order
        store_tile(part_ptr + split.to(tl.int64) * M * N, acc, offs_m, offs_n, M, N, N, 1)


@triton.jit
def gemm_afp4wfp4_kernel(x_ptr, w_ptr, xs_ptr, ws_ptr, y_ptr, part_ptr, M, N, K,
                         stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                         stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                         PERSISTENT: tl.constexpr, SPLIT_K: tl.constexpr, INT64_OFFSETS: tl.constexpr):
    if PERSISTENT:
        num_work = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N) * SPLIT_K
        for work_id in tl.range(tl.program_id(0), num_work, tl.num_programs(0)):
            _afp4wfp4_tile(work_id, x_ptr, w_ptr, xs_ptr, ws_ptr, y_ptr, part_ptr, M, N, K,
                           stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                           stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                           BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, SPLIT_K, INT64_OFFSETS)
    else:
        _afp4wfp4_tile(tl.program_id(0), x_ptr, w_ptr, xs_ptr, ws_ptr, y_ptr, part_ptr, M, N, K,
                       stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                       stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                       BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS, EVEN_K, SPLIT_K, INT64_OFFSETS)
