"""Tile schedule: program id -> output tile, written once and used by every kernel.

Two steps, each a bijection on [0, num_tiles):

1. XCD remap (AMD; identity when NUM_XCDS == 1). The hardware deals program
   ids to the XCDs round-robin (pid % NUM_XCDS), and each XCD has its own L2.
   The remap makes the ids that land on one XCD a contiguous range, so tiles
   that share operands share an L2::

       pid      : 0  1  2  3  4  5  6  7  8  9 10 ...     (NUM_XCDS = 4, 11 tiles)
       xcd      : 0  1  2  3  0  1  2  3  0  1  2
       remapped : 0  3  6  9  1  4  7 10  2  5  8
                  XCD0 runs tiles 0,1,2; XCD1 3,4,5; XCD2 6,7,8; XCD3 9,10
       (the first `tall` XCDs get ceil(tiles/NUM_XCDS) ids, the rest one fewer)

2. Grouped order (L2 reuse on every target): walk GROUP_SIZE_M tile rows
   column by column, so a group of consecutive ids reuses GROUP_SIZE_M rows of
   x and a few columns of w::

       GROUP_SIZE_M = 2, 4x3 tiles:   pid_n ->
                          pid_m 0:  0  2  4
                                1:  1  3  5
                                2:  6  8 10
                                3:  7  9 11      (last group may be shorter)

Batched form (batched_gemm.py): work ids cover B x tiles; `batched_tile_coords` remaps the
whole id space across XCDs, then takes the batch entry as id // tiles (batch-major) and the
grouped order inside it.

Split-K form (the pointer kernels gemm.py, gemm_gated.py, gemm_afp4wfp4.py): work id = split * tiles +
tile; `split_tile` gives the split, the tile's rows and columns (`tile_coords`) and the split's K steps
(`split_k_range`).

Persistent form: the grid is min(num_tiles, CUs x occupancy) and program p
takes tiles p, p + grid, p + 2*grid, ... (a `tl.range` loop in the kernel);
each tile id then goes through `tile_coords` as above. When grid % NUM_XCDS
== 0, tile p + i*grid stays on p's XCD, so the remap keeps its meaning.

The helpers use `tl.where`/`tl.minimum` instead of Python branches, so they
work on scalars (kernels) and on vectors of ids (the property tests).

Division by a launch's counts (the Gluon dense kernels' `grouped_tile_magic`): the grouped order divides by two
runtime values, G x num_pid_n and the last group's rows; a GPU divides an int32 in ~20 dependent instructions
(~200 cycles on the uniform datapath, before the load warp's first TMA load). The host gives each divisor d a
multiplier m and shift s (`div_magic`) with n // d == (n * m) >> s for every 0 <= n < 2**31: s = 31 + ceil(log2 d),
m = ceil(2**s / d) (2**31 <= m < 2**32; exact since n * (m - 2**s / d) / 2**s < 2**31 / 2**s <= 1 / d), one 64-bit
multiply and shift in the kernel.

Constraints:
  - ids, counts and results are int32: num_tiles < 2**31.
  - NUM_XCDS and GROUP_SIZE_M are constexpr >= 1.
  - `grouped_tile_magic`: the magic pairs of `group_magic` for the same num_pid_m, num_pid_n and GROUP_SIZE_M; it
    returns `grouped_tile`'s (pid_m, pid_n).
"""
import triton
import triton.language as tl


@triton.jit
def remap_xcd(pid, num_tiles, NUM_XCDS: tl.constexpr):
    """Make the ids dealt to one XCD a contiguous block of tiles (seed 004)."""
    if NUM_XCDS == 1:
        out = pid
    else:
        pids_per_xcd = (num_tiles + NUM_XCDS - 1) // NUM_XCDS
        tall_xcds = num_tiles % NUM_XCDS
        tall_xcds = tl.where(tall_xcds == 0, NUM_XCDS, tall_xcds)
        xcd = pid % NUM_XCDS
        local_pid = pid // NUM_XCDS
        out = tl.where(
            xcd < tall_xcds,
            xcd * pids_per_xcd + local_pid,
            tall_xcds * pids_per_xcd + (xcd - tall_xcds) * (pids_per_xcd - 1) + local_pid,
        )
    return out


@triton.jit
def grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr):
    """Tile id -> (pid_m, pid_n), GROUP_SIZE_M tile rows at a time, column-major inside a group."""
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    in_group = tile_id % num_pid_in_group
    pid_m = first_pid_m + in_group % group_size_m
    pid_n = in_group // group_size_m
    return pid_m, pid_n


def div_magic(d: int) -> tuple[int, int]:
    """(m, s) with n // d == (n * m) >> s for 0 <= n < 2**31 (module docstring), d >= 1."""
    if not 1 <= d < 2**31:
        raise ValueError(f"div_magic: divisor {d} out of [1, 2**31)")
    s = 31 + (d - 1).bit_length()
    return -(-(1 << s) // d), s


def group_magic(num_pid_m: int, num_pid_n: int, group_size_m: int) -> tuple[int, int, int, int]:
    """`grouped_tile_magic`'s divisors' magic pairs: G x num_pid_n, and the last group's rows (num_pid_m % G, or G)."""
    last = num_pid_m % group_size_m or group_size_m
    return (*div_magic(max(1, group_size_m * num_pid_n)), *div_magic(last))


@triton.jit
def magic_div(n, m, s):
    """n // d for 0 <= n < 2**31, (m, s) = div_magic(d)."""
    return ((n.to(tl.int64) * m.to(tl.int64)) >> s).to(tl.int32)


@triton.jit
def grouped_tile_magic(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr, group_m, group_s, last_m, last_s):
    """`grouped_tile` with its two runtime divisions as multiplies (`group_magic`'s pairs)."""
    group_id = magic_div(tile_id, group_m, group_s)
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    in_group = tile_id - group_id * (GROUP_SIZE_M * num_pid_n)
    pid_n = tl.where(group_size_m == GROUP_SIZE_M, in_group // GROUP_SIZE_M, magic_div(in_group, last_m, last_s))
    return first_pid_m + in_group - pid_n * group_size_m, pid_n


@triton.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr):
    """The schedule every kernel uses: XCD remap, then grouped order."""
    tile_id = remap_xcd(tile_id, num_pid_m * num_pid_n, NUM_XCDS)
    return grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M)


@triton.jit
def batched_tile_coords(work_id, num_work, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr,
                        NUM_XCDS: tl.constexpr):
    """Work id in [0, B * tiles) -> (batch, pid_m, pid_n): XCD remap over the whole id space,
    then batch-major, grouped order inside a batch entry (batched_gemm.py)."""
    work_id = remap_xcd(work_id, num_work, NUM_XCDS)
    tiles = num_pid_m * num_pid_n
    pid_m, pid_n = grouped_tile(work_id % tiles, num_pid_m, num_pid_n, GROUP_SIZE_M)
    return work_id // tiles, pid_m, pid_n


@triton.jit
def tile_origin(pid, size, BLOCK: tl.constexpr, SHIFT: tl.constexpr):
    """A tile's first row (column) along a dim of `size`: pid * BLOCK, but a last tile that would reach past `size`
    starts at size - BLOCK rounded up to a multiple of 8 instead, so its TMA boxes end at the tensor's end, or at
    most 7 rows past it (a box reaching far past it loads about twice as slowly: the hardware's out-of-bounds
    fill, docs/PERF.md "Operands the TMA kernels load slowly"; 8: a box's start in global memory must lie on 16 bytes, and the
    tile's origin is a column of y, or of the swap-AB tile's y); the rows it shares with the tile before are
    computed again, the same values, and stored twice. 0 where size < BLOCK (one tile, which reaches past the end:
    there the Gluon kernels load only x's rows, kernels/_host.x_boxes). SHIFT off (the batched kernels; kernels/_host.shift_last_tiles: switched off, or a full accumulator on
    Triton 3.9, kernels/_budgets.shift_ok): pid * BLOCK. The Gluon dense kernels place their tiles with it, and
    the tail split's reduce (_splitk_reduce.tail_reduce_kernel) finds their tail tiles with it."""
    if SHIFT:
        return tl.maximum(tl.minimum(pid * BLOCK, tl.cdiv(size - BLOCK, 8) * 8), 0)
    else:
        return pid * BLOCK


@triton.jit
def tail_item(w, num_tiles, TAIL, SPLITS, k_steps):
    """(tile id, first K step, K steps, partial) of work item w of a persistent launch with a tail split
    (configs/model/tail.py tail_split): items below num_tiles - TAIL are whole tiles (partial -1: the epilogue
    stores y); the TAIL * SPLITS after them are the K splits of the last TAIL tiles, item num_tiles - TAIL + j being
    split j % SPLITS of tail tile j // SPLITS, whose fp32 partial goes to workspace tile j::

       work id  0 .. T-R-1: tile = id, K steps 0 .. k_steps-1  ──► y
                T-R + j:     tile T-R + j // S, K steps [(j % S) q, (j % S + 1) q) ──► part[j] ──► tail reduce ──► y
                             (q = cdiv(k_steps, S); the host makes every split start below K)

    TAIL * SPLITS <= CTAs (the host's rule), so a CTA runs at most one split, and it is its last item: the ring
    positions of its whole tiles before it are unchanged. The FP8 kernel's coop layout, the bf16 ping-pong and the
    bf16 cooperative kernel."""
    first_tail = num_tiles - TAIL
    tile_id = w
    k0 = w * 0
    nk = k_steps
    part = w * 0 - 1
    if w >= first_tail:
        j = w - first_tail
        q = tl.cdiv(k_steps, SPLITS)
        tile_id = first_tail + j // SPLITS
        k0 = (j % SPLITS) * q
        nk = tl.minimum(q, k_steps - k0)
        part = j
    return tile_id, k0, nk, part


@triton.jit
def split_k_range(split, k_tiles, SPLIT_K: tl.constexpr):
    """(first K step, number of K steps) of split `split`: ceil-sized contiguous chunks,
    so the last splits may get fewer (or zero: their partial sum is then zero)."""
    per_split = tl.cdiv(k_tiles, SPLIT_K)
    first = split * per_split
    return first, tl.maximum(tl.minimum(per_split, k_tiles - first), 0)


@triton.jit
def split_tile(work_id, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, SPLIT_K: tl.constexpr):
    """Work id split * tiles + tile of a pointer kernel's split-K launch -> (split, offs_m, offs_n, first K step,
    K steps): the tile's rows and columns of y (`tile_coords`) and the split's K steps (`split_k_range`)."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    split = work_id // num_tiles
    pid_m, pid_n = tile_coords(work_id % num_tiles, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
    k_first, k_steps = split_k_range(split, tl.cdiv(K, BLOCK_K), SPLIT_K)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    return split, offs_m, offs_n, k_first, k_steps


def persistent_grid(num_tiles: int, num_cus: int, num_xcds: int = 1) -> int:
    """Programs of a persistent launch: one per CU, rounded down to whole XCD rounds."""
    grid = min(num_tiles, num_cus)
    if num_xcds > 1 and grid > num_xcds:
        grid -= grid % num_xcds
    return max(grid, 1)
