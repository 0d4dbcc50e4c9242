"""A16W16 GEMM, Hopper TMA path: y = act(x @ w.T + bias) with host-built tensor descriptors.

Same math, schedule and epilogue as gemm_a16w16.py; only the data movement
differs: the copy engine (TMA) moves x and w tiles into shared memory and the
output tile back out, so the kernel computes no addresses and masks nothing
(TMA zero-fills out-of-bounds reads and clips out-of-bounds writes).

    x_desc [BLOCK_M, BLOCK_K] --TMA--> smem --+
                                              +--> wgmma --> acc (fp32, registers)
    w_desc [BLOCK_N, BLOCK_K] --TMA--> smem --+        (num_stages tiles in flight)
                                                        |
                           epilogue (bias, activation, cast; _epilogue.py)
                                                        |
                     y_desc [BLOCK_M, BLOCK_N] <--TMA-- smem

Schedule: the persistent loop over tile ids (`tile_coords`, _schedule.py)
with `flatten=True`, so the pipeliner overlaps the next tile's first loads
with this tile's epilogue. Non-persistent launches use a grid of one program
per tile and run the loop body once.

Split-K (SPLIT_K > 1) works as in gemm_a16w16.py: work ids cover
tiles x splits, each split stores an fp32 partial to ws, the reduce kernel
adds them in a fixed order and runs the epilogue.

Constraints:
  - sm_90 only (the op picks this path when the config says "tma": true).
  - TMA alignment, checked by the op before it picks this path: every base
    address 16-byte aligned, last dim contiguous, other strides multiples of
    16 bytes (K % 8 == 0 for x and w, N % 8 == 0 for a bf16/fp16 y, N % 4 for fp32).
  - BLOCK_M, BLOCK_N, BLOCK_K powers of two >= 16; a box row of BLOCK_K * 2
    bytes (at most 256 elements per TMA box dim).
  - Shared memory: num_stages * (BLOCK_M + BLOCK_N) * BLOCK_K * 2 + the
    BLOCK_M x BLOCK_N output staging tile, within the target's 227 KiB.
"""
import triton
import triton.language as tl

from ._epilogue import bias_activation, store_tile
from ._schedule import split_k_range, tile_coords


# Checked by `gemmkit isa` / CI on every shipped sm_90 config (see gemm_a16w16.py).
PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "shared memory within the target", "check": "lds_bytes <= target.shared_mem_bytes"},
    {"promise": "shared memory within the op's bound (smem_bytes)", "check": "lds_bytes <= smem_bound"},
    {"promise": "matrix work per K step = tile arithmetic", "check": "mma_k_steps >= 1 and mma_k_steps % 1 == 0"},
    {"promise": "TMA loads (UTMALDG)", "check": "counts['UTMALDG'] > 0"},
    {"promise": "TMA store (UTMASTG) of the output tile", "when": "cfg['NUM_KSPLIT'] == 1",
     "check": "counts['UTMASTG'] > 0"},
    {"promise": "wgmma (HGMMA) for tiles of >= 64 rows", "when": "cfg['BLOCK_SIZE_M'] >= 64",
     "check": "counts['HGMMA'] > 0"},
    {"promise": "no local-memory traffic", "check": "counts['LDL'] + counts['STL'] == 0"},
)


@triton.jit
def gemm_a16w16_tma_kernel(x_desc, w_desc, y_desc, bias_ptr, ws_ptr, M, N, K,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr,
                           HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, SPLIT_K: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for work_id in tl.range(tl.program_id(0), num_tiles * SPLIT_K, tl.num_programs(0), flatten=True):
        split = work_id // num_tiles
        pid_m, pid_n = tile_coords(work_id % num_tiles, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
        k_first, k_steps = split_k_range(split, k_tiles, SPLIT_K)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_steps):
            a = x_desc.load([off_m, (k_first + ki) * BLOCK_K])
            b = w_desc.load([off_n, (k_first + ki) * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        offs_n = off_n + tl.arange(0, BLOCK_N)
        if SPLIT_K == 1:
            acc = bias_activation(acc, bias_ptr, offs_n, N, HAS_BIAS, ACTIVATION)
            y_desc.store([off_m, off_n], acc.to(y_desc.dtype))
        else:  # fp32 partial sum to ws[split]; _splitk_reduce.py finishes (see gemm_a16w16.py)
            offs_m = off_m + tl.arange(0, BLOCK_M)
            store_tile(ws_ptr + split.to(tl.int64) * M * N, acc, offs_m, offs_n, M, N, N, 1)
