"""Split-K reduction: y = epilogue(ws[0] + ws[1] + ... + ws[SPLIT_K - 1]), in that order.

    ws: SPLIT_K slabs of fp32 rows of N,      y (M, N), any strides, output dtype
        split_stride elements apart (the Triton tier: (SPLIT_K, M, N) contiguous; the Gluon kernels: slabs
        of whole tiles of rows, cdiv(M, BM) * BM; kernels/triton/dense.py launch_reduce)
    +---------+
    | ws[0]   |--+
    | ws[1]   |--+--> sum over s = 0..SPLIT_K-1 (static, fixed order: bitwise
    | ...     |--+    reproducible run to run) --> + bias, activation, cast --> y
    +---------+

One program per BLOCK_M x BLOCK_N block of y. The epilogue is the shared one
(_epilogue.py), so a split-K result equals the unsplit one up to the fp32
summation order.

`tail_reduce_kernel` is the same sum for the tail split of a persistent Gluon kernel (configs/model/tail.py tail_split:
only the last, partial round's R tiles are split, S ways each): the workspace holds R * S whole BM x BN fp32
tiles, partial j = r * S + s of tail tile r (tile id first_tile + r, in the kernel's tile order), and one
program sums ROWS rows of one tail tile, splits in order, then bias, activation and cast, at the tile's origin
(SHIFT: the last row / column of tiles shifted back as the kernel placed it, _schedule.tile_origin; of such a tile
only its own rows / columns, from pid * BM / BN, are stored: those before are its neighbour's)::

    part[(r * S + s) * BM + i, j]  ──  sum over s = 0..S-1  ──► + bias, act ──► y[row0 + i, col0 + j]

Constraints:
  - tail_reduce_kernel: ROWS divides BM; BM, BN, ROWS powers of two; SPLITS >= 1 (constexpr: the loop is unrolled,
    configs/model/tail.py MAX_TAIL_SPLITS bounds compiles; a runtime loop left one load in flight at a time: 10 us for
    32 splits of 4 tiles).
  - SPLIT_K >= 2 (constexpr; the loop is unrolled).
  - split_stride (>= M * N) is a host integer (64-bit when large); M and N may be
    specialised to constants (M == 1 in decode), so no tensor method is called on them.
  - BLOCK_M, BLOCK_N powers of two.
  - VEC divides N and split_stride, Y_VEC divides N and stride_ym (the host's `reduce_alignment`; 1 always
    holds). Without them a row of N % 16 == 8 loaded 4 bytes a thread: the reduce of 7 x 376, 16 splits, ran
    10.4 us against 1.85 at N = 384 (H200).
  - Offsets: workspace and y rows int64; y's column offsets (offs_n * stride_yn) int32 unless INT64_OFFSETS
    (_offsets.py; set by the host when a span reaches 2**31 elements).
"""
import triton
import triton.language as tl

from ._epilogue import bias_activation, store_tile
from ._schedule import tile_coords, tile_origin


PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "no local-memory traffic", "arch": "sm_90", "check": "counts['LDL'] + counts['STL'] == 0"},
)
SPLITK_PROMISES = PROMISES + (  # splitk_reduce_kernel's (the tail reduce's are PROMISES)
    {"promise": "16-byte workspace loads and y stores (VEC / Y_VEC)", "arch": "sm_90",
     "check": "counts['LDG128'] > 0 and counts['STG128'] > 0"},
)


@triton.jit
def splitk_reduce_kernel(ws_ptr, bias_ptr, y_ptr, M, N, split_stride, stride_ym, stride_yn,
                         SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, INT64_OFFSETS: tl.constexpr,
                         VEC: tl.constexpr = 1, Y_VEC: tl.constexpr = 1):
    # VEC (Y_VEC): elements that N and split_stride (N and stride_ym) are known by the host to be multiples of. Triton
    # specialises an integer argument on divisibility by 16 only, and ignores tl.multiple_of on a scalar; `// v * v`
    # (the same value) is what tells it, so rows of N % 16 == 8 still load and store 16 bytes a thread.
    # The masks take the hinted N too: a vector's lanes must share their mask.
    row, slab, y_row = N // VEC * VEC, split_stride // VEC * VEC, stride_ym // Y_VEC * Y_VEC
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < row)
    ptrs = ws_ptr + offs_m[:, None].to(tl.int64) * row + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(ptrs + s * slab.to(tl.int64), mask=mask, other=0.0)
    acc = bias_activation(acc, bias_ptr, offs_n, N, HAS_BIAS, ACTIVATION)
    store_tile(y_ptr, acc, offs_m, offs_n, M, N // Y_VEC * Y_VEC, y_row, stride_yn, INT64_OFFSETS)


@triton.jit
def tail_reduce_kernel(part_ptr, bias_ptr, y_ptr, M, N, stride_ym, stride_yn, first_tile,
                       SPLITS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, ROWS: tl.constexpr,
                       GROUP_SIZE_M: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                       SHIFT: tl.constexpr, INT64_OFFSETS: tl.constexpr):
    r = tl.program_id(0)  # tail tile r: partials r * SPLITS .. r * SPLITS + SPLITS - 1
    pid_m, pid_n = tile_coords(first_tile + r, tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_SIZE_M, 1)
    rows = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BN)
    ptrs = part_ptr + (r * SPLITS * BM + rows)[:, None].to(tl.int64) * BN + cols[None, :]
    acc = tl.zeros((ROWS, BN), dtype=tl.float32)
    for s in tl.static_range(SPLITS):  # unrolled: every split's load in flight at once
        acc += tl.load(ptrs + s * BM * BN)
    offs_m = tile_origin(pid_m, M, BM, SHIFT) + rows  # where the kernel put the tile (its last ones shifted back)
    offs_n = tile_origin(pid_n, N, BN, SHIFT) + cols
    acc = bias_activation(acc, bias_ptr, offs_n, N, HAS_BIAS, ACTIVATION)
    if SHIFT:  # a shifted tile's rows / columns before pid * BM / BN are its neighbour's, which stored them: not
        # stored here, so y is bitwise what the unshifted tiles give (the neighbour may be unsplit)
        own = (offs_m[:, None] >= pid_m * BM) & (offs_n[None, :] >= pid_n * BN)
        store_tile(y_ptr, acc, offs_m, offs_n, M, N, stride_ym, stride_yn, INT64_OFFSETS, own)
    else:
        store_tile(y_ptr, acc, offs_m, offs_n, M, N, stride_ym, stride_yn, INT64_OFFSETS)
