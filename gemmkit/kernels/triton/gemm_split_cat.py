"""Fused split-cat GEMM (DeepSeek MLA's kv_b_proj): the dense GEMM with a store that splits and concatenates.

    c  = x @ w.T                    (M, N), N = D * (S1 + S2), seen as (M, D, S1 + S2)
    c1 = cat(c[..., :S1], y, -1)    (M, D, S1 + S3)     y (M, D, S3), any strides (stride 0 over D is fine)
    c2 = c[..., S1:]                (M, D, S2)

DeepSeek-V3: w = kv_b_proj (32768, 512), D = 128 heads, S1 = qk_nope 128, S2 = v_head 128,
y = k_pe (M, 1, 64) expanded over the heads, S3 = 64: c1 is the key, c2 the value.

Only the store differs from the dense kernels (gemm.py, gemm_tma.py): same schedule
(`tile_coords`), same mainloop (`pointer_mainloop` / the TMA loop of `mma_step`, SCALE =
"none" for 16-bit, "block" for the fp8 block-scale op), same epilogue (bias, cast). Where a
tile column n goes:

      n = d * (S1 + S2) + s          d = n // (S1 + S2), s = n % (S1 + S2)
      s <  S1   ->  c1[m, d, s]
      s >= S1   ->  c2[m, d, s - S1]

          one head d of c (S1 + S2 columns)             c1 row (m, d)               c2 row (m, d)
      +-------------------+-----------------+       +-------------+--------+      +-----------------+
      | s in [0, S1)      | s in [S1, S)    |  -->  | c[.., :S1]  | y[m,d] |      | c[.., S1:]      |
      +-------------------+-----------------+       +-------------+--------+      +-----------------+
        BLOCK_N-wide tiles cut across heads           S1            S3              S2
        anywhere (pointer store: per column)

y's part of c1: the program whose N tile holds a head's first column (n = d * (S1 + S2))
copies y[rows of its M tile, d, :] into c1[.., d, S1:]. Every head's column 0 is in exactly
one N tile and every row in one M tile, so each element of c1 and c2 is written exactly once
(tests poison the outputs with NaN). The pointer kernel copies before its mainloop (after it,
the copy's registers pushed the fp8 block-scale 128 x 128 x 128 / 8-warp config from 0 to 40
bytes of spills on sm_90, static compile); the TMA kernel after its TMA store, which it overlaps.

Stores:
  STORE = "pointer"   masked scatter of the tile (two masked stores: c1 part and c2 part);
                      contiguous runs of a tile row stay contiguous (S1, S2 constexpr), so
                      the stores vectorise when c1 / c2 have unit last stride.
  STORE = "tma_part"  (TMA kernel) BLOCK_N divides S1 and S2: every tile lies inside one head
                      and one part, one TMA store of the tile into c1 or c2 (seen as 2-D
                      (M, D * (S1 + S3)) and (M, D * S2)).
  STORE = "tma_head"  (TMA kernel) BLOCK_N == S1 + S2 and S1 == S2: a tile is one head; its
                      halves go out as two TMA stores (c1 part, c2 part).

Schedule: as the dense kernels (PERSISTENT grid of min(tiles, CUs) programs looping over
tile ids, or one program per tile; the TMA kernel's loop is flattened so the next tile's
loads overlap this tile's epilogue, except with S3 == 0 and the "tma_part" store, where Triton
3.6 cannot flatten it: FLATTEN in the kernel).

Constraints:
  - S1, S2, S3 constexpr (model constants), S1 + S2 >= 1; S3P = next power of two >= S3.
  - SPLIT_K == 1 (no split-K path: the op rejects NUM_KSPLIT > 1).
  - x (M, K), w (N, K) any strides (pointer kernel); c1, c2, y any strides (pointer stores).
  - TMA kernel: sm_90, x and w TMA-aligned (see gemm_tma.py); "tma_*" stores need c1 / c2
    viewable as 2-D with TMA-aligned strides (checked by the op).
  - Row offsets are int64; column offsets within a row (d * stride_d + s * stride_s, K steps,
    block-scale columns) int32 unless INT64_OFFSETS (_offsets.py; the host sets it when a span
    reaches 2**31 elements). M, N, K < 2**31.
"""
import triton
import triton.language as tl

from ._epilogue import epilogue
from ._mainloop import mma_step, pointer_mainloop, scale_rows
from ._offsets import wide
from ._schedule import tile_coords
from .gemm import AMD_POINTER_PROMISES, CP_ASYNC, NO_LOCAL_MEMORY, TILE_PROMISES


_COMMON = TILE_PROMISES + (
    {"promise": "wgmma (HGMMA / QGMMA fp8) for tiles of >= 64 rows", "arch": "sm_90",
     "when": "cfg['BLOCK_SIZE_M'] >= 64", "check": "counts['HGMMA'] + counts['QGMMA'] > 0"},
    NO_LOCAL_MEMORY,
)
# What the compiled code must show (checked by `gemmkit isa` / CI on every shipped config; see gemm.py).
PROMISES = _COMMON + (
    {"promise": "mma.sync (HMMA) for 16/32-row tiles", "arch": "sm_90", "when": "cfg['BLOCK_SIZE_M'] < 64",
     "check": "counts['HMMA'] + counts['QGMMA'] > 0"},
    CP_ASYNC,
) + AMD_POINTER_PROMISES
TMA_PROMISES = _COMMON + (
    {"promise": "TMA loads (UTMALDG)", "check": "counts['UTMALDG'] > 0"},
    {"promise": "TMA store (UTMASTG) of the GEMM part", "when": "cfg.get('STORE', 'pointer') != 'pointer'",
     "check": "counts['UTMASTG'] > 0"},
)


@triton.jit
def split_cat_store(c1_ptr, c2_ptr, out, offs_m, offs_n, M, N,
                    stride_c1m, stride_c1d, stride_c1s, stride_c2m, stride_c2d, stride_c2s,
                    S1: tl.constexpr, S2: tl.constexpr, INT64_OFFSETS: tl.constexpr):
    """Pointer store of an epilogue-processed tile: column n -> c1[m, d, s] (s < S1) or c2[m, d, s - S1]."""
    S: tl.constexpr = S1 + S2
    d = offs_n // S
    s = offs_n % S
    dw = wide(d, INT64_OFFSETS)
    sw = wide(s, INT64_OFFSETS)
    rows = offs_m[:, None].to(tl.int64)
    ok = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if S1 > 0:
        p1 = c1_ptr + rows * stride_c1m + (dw * stride_c1d + sw * stride_c1s)[None, :]
        tl.store(p1, out.to(c1_ptr.dtype.element_ty), mask=ok & (s < S1)[None, :])
    if S2 > 0:
        p2 = c2_ptr + rows * stride_c2m + (dw * stride_c2d + (sw - S1) * stride_c2s)[None, :]
        tl.store(p2, out.to(c2_ptr.dtype.element_ty), mask=ok & (s >= S1)[None, :])


@triton.jit
def copy_y_heads(y_ptr, c1_ptr, off_m, n_lo, n_hi, M, stride_ym, stride_yd, stride_ys,
                 stride_c1m, stride_c1d, stride_c1s, BLOCK_M: tl.constexpr,
                 S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr, S3P: tl.constexpr,
                 INT64_OFFSETS: tl.constexpr):
    """c1[rows, d, S1:] = y[rows, d, :] for the rows [off_m, off_m + BLOCK_M) of this tile and the heads d
    whose first column d * (S1 + S2) lies in its columns [n_lo, n_hi): 0 or 1 heads when
    BLOCK_N <= S1 + S2, else up to BLOCK_N / (S1 + S2). Row offsets are rebuilt here from the scalar
    off_m (not taken from the caller's vectors) so that nothing of it stays live across the mainloop."""
    if S3 > 0:
        S: tl.constexpr = S1 + S2
        for d in range(tl.cdiv(n_lo, S), tl.cdiv(n_hi, S)):
            offs_m = off_m + tl.arange(0, BLOCK_M)
            offs_s = tl.arange(0, S3P)
            rows = offs_m[:, None].to(tl.int64)
            mask = (offs_m[:, None] < M) & (offs_s[None, :] < S3)
            dw = wide(d, INT64_OFFSETS)
            cols = wide(offs_s, INT64_OFFSETS)[None, :]
            v = tl.load(y_ptr + rows * stride_ym + dw * stride_yd + cols * stride_ys, mask=mask)
            tl.store(c1_ptr + rows * stride_c1m + dw * stride_c1d + (S1 + cols) * stride_c1s,
                     v.to(c1_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _split_cat_tile(work_id, x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, c1_ptr, c2_ptr, M, N, K,
                    stride_xm, stride_xk, stride_wn, stride_wk, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                    stride_ym, stride_yd, stride_ys, stride_c1m, stride_c1d, stride_c1s,
                    stride_c2m, stride_c2d, stride_c2s,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                    HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                    SCALE: tl.constexpr, SCALE_BN: tl.constexpr, SCALE_BK: tl.constexpr,
                    ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr,
                    S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr, S3P: tl.constexpr,
                    INT64_OFFSETS: tl.constexpr, W_KN: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = tile_coords(work_id, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # y first: its copy has nothing to do with the GEMM, and done here none of it is live across the mainloop.
    copy_y_heads(y_ptr, c1_ptr, pid_m * BLOCK_M, pid_n * BLOCK_N, tl.minimum(pid_n * BLOCK_N + BLOCK_N, N), M,
                 stride_ym, stride_yd, stride_ys, stride_c1m, stride_c1d, stride_c1s, BLOCK_M, S1, S2, S3, S3P,
                 INT64_OFFSETS)
    rows_x = offs_m % M  # wrapped edge rows, as gemm.py
    rows_w = offs_n % N
    acc = pointer_mainloop(x_ptr, w_ptr, xs_ptr, wsc_ptr, rows_x, rows_w, rows_x < M, rows_w < N, 0,
                           tl.cdiv(K, BLOCK_K), K, stride_xm, stride_xk, stride_wn, stride_wk,
                           stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                           BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, SCALE, SCALE_BN, SCALE_BK, ACC_INT, PROMOTE_K,
                           INT64_OFFSETS, W_KN)
    out = epilogue(acc, xs_ptr, wsc_ptr, bias_ptr, offs_m, offs_n, M, N, SCALE, HAS_BIAS, ACTIVATION)
    split_cat_store(c1_ptr, c2_ptr, out, offs_m, offs_n, M, N, stride_c1m, stride_c1d, stride_c1s,
                    stride_c2m, stride_c2d, stride_c2s, S1, S2, INT64_OFFSETS)


@triton.jit
def gemm_split_cat_kernel(x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, c1_ptr, c2_ptr, M, N, K,
                          stride_xm, stride_xk, stride_wn, stride_wk, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                          stride_ym, stride_yd, stride_ys, stride_c1m, stride_c1d, stride_c1s,
                          stride_c2m, stride_c2d, stride_c2s,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, EVEN_K: tl.constexpr,
                          HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, PERSISTENT: tl.constexpr,
                          SPLIT_K: tl.constexpr, SCALE: tl.constexpr, SCALE_BN: tl.constexpr, SCALE_BK: tl.constexpr,
                          ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr,
                          S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr, S3P: tl.constexpr,
                          INT64_OFFSETS: tl.constexpr, W_KN: tl.constexpr):
    """Pointer path (every target, the interpreter). Same arguments as gemm.py's gemm_kernel, plus y,
    c1, c2 (3-D strides) and S1, S2, S3 (S3P: S3 rounded up to a power of two)."""
    tl.static_assert(SPLIT_K == 1, "gemm_split_cat has no split-K path")
    if PERSISTENT:
        num_work = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for work_id in tl.range(tl.program_id(0), num_work, tl.num_programs(0)):
            _split_cat_tile(work_id, x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, c1_ptr, c2_ptr, M, N, K,
                            stride_xm, stride_xk, stride_wn, stride_wk, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                            stride_ym, stride_yd, stride_ys, stride_c1m, stride_c1d, stride_c1s,
                            stride_c2m, stride_c2d, stride_c2s, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS,
                            EVEN_K, HAS_BIAS, ACTIVATION, SCALE, SCALE_BN, SCALE_BK, ACC_INT, PROMOTE_K,
                            S1, S2, S3, S3P, INT64_OFFSETS, W_KN)
    else:
        _split_cat_tile(tl.program_id(0), x_ptr, w_ptr, xs_ptr, wsc_ptr, bias_ptr, y_ptr, c1_ptr, c2_ptr, M, N, K,
                        stride_xm, stride_xk, stride_wn, stride_wk, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                        stride_ym, stride_yd, stride_ys, stride_c1m, stride_c1d, stride_c1s,
                        stride_c2m, stride_c2d, stride_c2s, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, NUM_XCDS,
                        EVEN_K, HAS_BIAS, ACTIVATION, SCALE, SCALE_BN, SCALE_BK, ACC_INT, PROMOTE_K,
                        S1, S2, S3, S3P, INT64_OFFSETS, W_KN)


@triton.jit
def gemm_split_cat_tma_kernel(x_desc, w_desc, c1_desc, c2_desc, xs_ptr, wsc_ptr, bias_ptr, y_ptr, c1_ptr, c2_ptr,
                              M, N, K, stride_xsm, stride_xsk, stride_wsn, stride_wsk,
                              stride_ym, stride_yd, stride_ys, stride_c1m, stride_c1d, stride_c1s,
                              stride_c2m, stride_c2d, stride_c2s,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                              GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr,
                              HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, SPLIT_K: tl.constexpr,
                              SCALE: tl.constexpr, SCALE_BN: tl.constexpr, SCALE_BK: tl.constexpr,
                              ACC_INT: tl.constexpr, PROMOTE_K: tl.constexpr,
                              S1: tl.constexpr, S2: tl.constexpr, S3: tl.constexpr, S3P: tl.constexpr,
                              STORE: tl.constexpr, INT64_OFFSETS: tl.constexpr):
    """Hopper TMA-load path: gemm_tma.py's loop (x_desc [BLOCK_M, BLOCK_K], w_desc [BLOCK_N, BLOCK_K]);
    c1_desc / c2_desc: 2-D descriptors of c1 (M, D * (S1 + S3)) and c2 (M, D * S2) for the TMA
    stores (None when STORE == "pointer"); y always through pointers."""
    tl.static_assert(SPLIT_K == 1, "gemm_split_cat has no split-K path")
    S: tl.constexpr = S1 + S2
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    # Flattened (the next tile's loads under this epilogue) unless S3 == 0 with the "tma_part" store: then
    # the loop body ends in the store's if / else, which Triton 3.6's TritonGPUFuseNestedLoops rejects on
    # sm_90 ("'scf.if' op region control flow edge ..."; static compile, tests/ops/test_split_cat.py).
    FLATTEN: tl.constexpr = S3 > 0 or STORE != "tma_part"
    for work_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0), flatten=FLATTEN):
        pid_m, pid_n = tile_coords(work_id, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        offs_m = off_m + tl.arange(0, BLOCK_M)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        xs_rows, ws_rows = scale_rows(xs_ptr, wsc_ptr, offs_m, offs_n, stride_xsm, stride_wsn, SCALE_BN)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32 if ACC_INT else tl.float32)
        for ki in range(k_tiles):
            a = x_desc.load([off_m, ki * BLOCK_K])
            b = w_desc.load([off_n, ki * BLOCK_K])
            acc = mma_step(acc, a, b, ki * BLOCK_K, xs_rows, ws_rows, offs_m < M, offs_n < N,
                           stride_xsk, stride_wsk, SCALE, SCALE_BK, PROMOTE_K, INT64_OFFSETS)
        out = epilogue(acc, xs_ptr, wsc_ptr, bias_ptr, offs_m, offs_n, M, N, SCALE, HAS_BIAS, ACTIVATION)
        if STORE == "tma_part":  # the tile is inside one head and one part
            d = off_n // S
            s = off_n % S
            if s < S1:
                c1_desc.store([off_m, d * (S1 + S3) + s], out.to(c1_desc.dtype))
            else:
                c2_desc.store([off_m, d * S2 + s - S1], out.to(c2_desc.dtype))
        elif STORE == "tma_head":  # the tile is one head: halves [0, S1) -> c1, [S1, 2 S1) -> c2
            lo, hi = out.reshape(BLOCK_M, 2, S1).permute(0, 2, 1).split()
            c1_desc.store([off_m, pid_n * (S1 + S3)], lo.to(c1_desc.dtype))
            c2_desc.store([off_m, pid_n * S2], hi.to(c2_desc.dtype))
        else:
            tl.static_assert(STORE == "pointer", "unknown STORE")
            split_cat_store(c1_ptr, c2_ptr, out, offs_m, offs_n, M, N, stride_c1m, stride_c1d, stride_c1s,
                            stride_c2m, stride_c2d, stride_c2s, S1, S2, INT64_OFFSETS)
        copy_y_heads(y_ptr, c1_ptr, off_m, off_n, tl.minimum(off_n + BLOCK_N, N), M,
                     stride_ym, stride_yd, stride_ys, stride_c1m, stride_c1d, stride_c1s, BLOCK_M, S1, S2, S3, S3P,
                     INT64_OFFSETS)
