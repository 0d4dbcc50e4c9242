"""Config sweep on the GPU (the batched GEMMs; gemm_split_cat at M = 1; gemm_a8w8 fp8; gemm_a16w16's split tiles,
against the table's own config: the SERVED candidate): a short hand-picked candidate list per op
(instead of the tuner's random 40), every candidate checked against an fp32 reference and
timed with the bench method (CUDA-graph replays, inputs rotated past the L2), the vendor
reference (bench/ops.py) timed in the same process.

Usage (repo root, on the H200):
  PYTHONPATH=. python benchmarks/sweep_batched.py --op batched_a16w16 --dtype bf16 \
      --shapes 8x512,64x512,8x1024,64x1024,8x2048,64x2048 --json OUT.json \
      [--write-table gemmkit/configs/sm_90/BATCHED_A16W16.json --bench-json RESULTS.json]
Shapes are BxS (M = N = K = S) or BxMxNxK. The table is looked up by M, so a bucket's winner
should be the config with the best geomean ratio over the B values sharing that M.

The vendor is timed before and after the candidates of each shape (its spread is the noise
floor of that shape's ratios; the ratio uses the mean). Triton and Gluon ("backend": "gluon",
kernels/gluon/hopper_pingpong_batched.py) candidates are timed in the same process: an A/B.
--bench-json: after --write-table, `gemmkit bench`'s rows (bench/run_gpu, table configs, CUDA
graph and eager) for the same shapes in this process, merged into one results file.
"""
import argparse
import json
import math
import time


def cfg(bm, bn, bk, warps, stages, group=8, persistent=False, tma=True):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group,
            "num_warps": warps, "num_stages": stages, "persistent": persistent, "tma": tma}


def gluon(bm, bn, bk, stages, group=8):
    """A Gluon ping-pong config (num_warps 4 = warps per consumer; num_stages an upper bound, see
    hopper_pingpong.derive); "tma" / "persistent" are what the Triton tier runs where Gluon cannot."""
    return dict(cfg(bm, bn, bk, 4, stages, group, persistent=True, tma=True), backend="gluon")


def ks(c, split):
    """`c` with split-K (the dense Gluon kernels: hopper_host.launch_dense)."""
    return dict(c, NUM_KSPLIT=split)


def coop(bm, bn, bk, stages, group=8, direct=False):
    """A Gluon cooperative config (num_warps 8: two consumer warpgroups share each tile).
    direct=True: launched through kernels/gluon/hopper_pingpong_batched.launch itself, past the op's
    one-wave rule (ops/batched_gemm.gluon_unsupported), to measure whether that rule holds for it."""
    c = dict(cfg(bm, bn, bk, 8, stages, group, persistent=True, tma=True), backend="gluon")
    return dict(c, _direct=True) if direct else c


SERVED = {"_served": True}  # a candidate that stands for the shipped table's config of each shape (config=None)

CANDIDATES = {
    # gemm_a16w16: the cooperative kernel's split tiles (128 x 192 = 128 + 64 columns; 128 x 96)
    # against the table's config on the M >= 256 rows where a power-of-two width leaves SMs idle
    # (docs/PERF.md: cuBLAS runs 192- and 168-wide tiles there)
    "a16w16_split": [
        SERVED,
        coop(128, 192, 64, 4),
        coop(128, 192, 64, 5),
        coop(128, 192, 64, 5, group=16),
        coop(128, 96, 64, 6),
        coop(128, 128, 64, 6),
    ],
    # split-K in the dense Gluon kernels (fp32 partial tiles, a fixed-order reduce) against the table's
    # config on the rows where every tiling leaves SMs idle (DeepSeek N = 576 / 1536, N = 7168 at M = 256 / 512)
    "a16w16_splitk": [
        SERVED,
        ks(coop(128, 192, 64, 5), 2), ks(coop(128, 192, 64, 5), 3), ks(coop(128, 192, 64, 5), 4),
        ks(coop(128, 96, 64, 6), 2), ks(coop(128, 96, 64, 6), 3),
        ks(coop(128, 128, 64, 6), 2), ks(coop(128, 128, 64, 6), 3),
        ks(gluon(64, 192, 64, 6), 2), ks(gluon(64, 192, 64, 6), 3),
        ks(gluon(128, 128, 64, 5), 2), ks(gluon(64, 96, 64, 6), 2),
    ],
    # every tile of the tuner's Gluon split-K space with the splits that fill one wave (tune.fill_splits:
    # fixed splits 2 / 3 / 4 switched 3 of 19 rows; at M = 256 they made 12-48 items for 132 SMs)
    "a16w16_splitk_fit": [SERVED, {"_gluon_split_k_space": True}],
    # the ping-pong's split tiles (64 x 192, 64 x 96: a consumer owns a whole tile) on every
    # model row at M = 256 ... 4096
    "a16w16_split_pp": [
        SERVED,
        gluon(64, 192, 64, 5),
        gluon(64, 192, 64, 6),
        gluon(64, 192, 64, 6, group=16),
        gluon(64, 96, 64, 6),
    ],
    # the split-tile winners on every model row at M = 256 ... 4096
    "a16w16_split_all": [
        SERVED,
        coop(128, 192, 64, 5),
        coop(128, 192, 64, 5, group=16),
        coop(128, 96, 64, 6),
        coop(128, 128, 64, 6),
    ],
    "batched_a16w16": [
        # the cooperative layout's batched form against the ping-pong split tiles' winners
        coop(128, 256, 64, 3),
        coop(128, 256, 64, 4),
        coop(128, 256, 64, 3, group=16),
        coop(256, 128, 64, 3),
        coop(256, 128, 64, 4),
        coop(128, 128, 64, 5),
        coop(128, 128, 64, 6),
        coop(128, 128, 64, 5, direct=True),
        coop(128, 128, 128, 3, direct=True),
        # round 3 (issue 5, 2026-11-22 afternoon): the Gluon batched ping-pong against the shipped
        # Triton configs (128x128x64 w4 s5 P at M = 512 / any, 128x256x64 w8 s3 g16 P at M = 1024)
        gluon(128, 128, 64, 4),
        gluon(128, 128, 64, 5),
        gluon(128, 128, 64, 6),
        gluon(128, 128, 64, 6, group=16),
        gluon(64, 256, 64, 4),
        gluon(128, 128, 128, 3),
        cfg(128, 128, 64, 4, 5, persistent=True),
        cfg(128, 256, 64, 8, 3, group=16, persistent=True),
        # dropped after the first run of round 3 (last in every cell or far behind): Gluon 64x128x64 s8,
        # 128x64x64 s8 (0.59-0.93x), Triton 128x128x128 w8 s3 P (0.87-0.92x)
    ],
    "batched_a8w8": [
        cfg(128, 128, 128, 8, 4, persistent=True),
        cfg(128, 128, 128, 8, 4),
        cfg(128, 128, 64, 8, 5, persistent=True),
        cfg(64, 128, 128, 4, 5),
        # int8: one int32 accumulator fits, and it was the fastest in the first sweep, but not shipped:
        # 255 registers on the TMA path and 48 bytes of spills on the pointer fallback (gemmkit isa)
        cfg(128, 256, 128, 8, 3, persistent=True),
        cfg(128, 128, 128, 8, 4, persistent=True, tma=False),
    ],
    # gemm_split_cat at M = 1 (kv_b_proj, N = 32768, K = 512; issue 5's bar 1.2x, session 7: 1.16-1.18x with
    # 16 x 64 x 256 w4 s2). benchmarks/read_floor.py found the fastest pure read of that weight with the
    # smallest programs it tried (16 KB each), so this list goes smaller than the tuner's M <= 16 space
    # (BLOCK_SIZE_N >= 32, num_warps >= 4): N tiles of 16-128, one to four warps, the whole K in one step.
    # Run with --shapes 1x1x32768x512. Round 1 (80 configs, `split_cat_m1_sweep_round1.json`): nothing beat the
    # table's 16 x 64 x 256 w4 s2 by more than 0.6%; cuBLAS's own M = 1 kernel there (benchmarks/vendor_kernels.py)
    # is nvjet 256x8_64x6: 256 weight rows a CTA, 64-wide K steps, a 6-deep ring, 128 CTAs. Round 2 (deep rings,
    # one tile a CTA, `split_cat_m1_sweep_round2.json`): all slower (1.08-1.17x; 8 stages 0.86-0.93x). Round 3: the
    # persistent TMA kernel (grid = SMs, its flattened loop keeps one ring streaming across a CTA's tiles, as
    # cuBLAS's kernel does), which the tuner never offers at M <= 16. Outcome (`split_cat_m1_sweep_round3.json`):
    # 0.55-1.06x, all slower than the table's 1.17x.
    "split_cat": [
        cfg(16, bn, bk, 4, stages, persistent=True)
        for bn in (32, 64, 128) for bk in (128, 256) for stages in (3, 4, 6)
    ] + [cfg(16, 64, 128, 2, 3), cfg(16, 128, 128, 4, 3), cfg(16, 64, 256, 4, 2)],  # round 1's best three
}
# Round 2's split_cat list (one tile a CTA, deep rings), kept as the record of what was tried; not run.
ROUND2_SPLIT_CAT = [
    cfg(16, bn, bk, warps, stages)
    for bn, bk, stages in ((128, 64, 4), (128, 64, 6), (128, 64, 8), (256, 64, 4), (256, 64, 6),
                           (128, 128, 4), (256, 128, 3), (64, 64, 4), (64, 64, 8))
    for warps in (4, 8)
]

def fp8(bm, bn, bk, warps, stages, group=8):
    """A gemm_a8w8 Gluon config as the A8W8 tables write them (num_warps 4: ping-pong, 8: cooperative)."""
    return dict(cfg(bm, bn, bk, warps, stages, group, persistent=False, tma=False), backend="gluon")


# gemm_a8w8 fp8 per-token x per-channel: the A8W8 tables at 4096^3 / 8192^3 and the Llama-3-70B rows
# run the ping-pong (num_warps 4: each consumer its own 128 x 128 tile, 2-3 stages a ring); cuBLAS's kernel
# there is the cooperative 128 x 128 x 128 tile with a 6-deep ring (vendor_kernels.json), which our kernel has
# (num_warps 8: session 6 built it for the block-scale op, with one chain in flight) but these tables never tried.
CANDIDATES["a8w8"] = [
    fp8(128, 128, 128, 8, 6), fp8(128, 128, 128, 8, 5), fp8(128, 128, 128, 8, 4),
    fp8(128, 128, 128, 8, 6, 16), fp8(128, 128, 128, 8, 6, 4),
    fp8(128, 128, 128, 4, 3), fp8(128, 128, 128, 4, 2),  # the ping-pong configs the tables have now
    fp8(64, 128, 128, 4, 4),  # the tables' M = 256 choice
]
# Round 1 of that list (`a8w8_coop_sweep.json`): the cooperative 128 x 128 x 128, 6 stages, group 16 was the best
# or within the vendor's spread on all 14 rows (geomean 1.002x against the served configs' 0.943x); it now serves
# those rows' M >= 256 buckets. Round 2 (`--candidates a8w8_any`): the same config against A8W8.json's "any"
# bucket (the Triton tier), on the other models' rows that bucket serves.
CANDIDATES["a8w8_any"] = [
    fp8(128, 128, 128, 8, 6, 16),
    cfg(128, 128, 128, 8, 4, persistent=True, tma=True),  # A8W8.json "any" as it is
]

# gemm_a8w8_blockscale at M = 4096: DeepSeek-V3 (2112, 7168) runs 32 x 17 = 544 tiles of 128 x 128 on
# 132 SMs (4.12 waves: the fifth round is 12% full) and the 17th tile column is half empty; 128 x 64 tiles make
# 32 x 33 = 1056 = 8 x 132, full rounds, at 1.5x the L2 -> shared bytes per FLOP and ~1.4x the shared-memory
# traffic of the 128 x 128 tile (wgmma reads each consumer's a slice per n64 instruction). The other five rows
# run 13+ waves of 128 x 128, where 128 x 64 should only lose.
CANDIDATES["a8w8_blockscale_bn64"] = [
    SERVED,
    fp8(128, 64, 128, 8, 8), fp8(128, 64, 128, 8, 6), fp8(128, 64, 128, 8, 8, 16),
]

# gemm_a8w8_blockscale between M = 128 and 4096: DeepSeek-V3's shape files have buckets M_GEQ_64 (the
# Triton tier, 64 x 64 / 16 x 64 tiles, split-K on some) and M_GEQ_4096 (the coop Gluon kernel), so M = 256-4095
# runs the Triton tier. The coop kernel now splits a partial last round (configs/model/tail.py tail_split), so few-round
# M should suit it too: the served config against the coop 128 x 128 x 128 (group 8 and 16).
CANDIDATES["a8w8_blockscale_mid"] = [
    SERVED,
    fp8(128, 128, 128, 8, 5), fp8(128, 128, 128, 8, 5, 16),
]

# the two M = 4096 block-scale rows short of issue 4's bars, (7168, 16384) at 1.592x bf16 (bar 1.6x) and
# (7168, 2048) at 999 TFLOP/s / 1.526x: the ring depth the 33408-byte slot of session 15 allows (5; the table's
# (7168, 16384) bucket says 4), the tile order's group, and the ping-pong layout (whole 64 x 128 tiles a consumer:
# one consumer's epilogue under the other's mainloop, for 1.5x the smem bytes a FLOP of the 128 x 128 coop tile).
# Run with --shapes 1x4096x7168x16384,1x4096x7168x2048.
CANDIDATES["a8w8_blockscale_s16"] = [
    SERVED,
    fp8(128, 128, 128, 8, 5), fp8(128, 128, 128, 8, 4, 16), fp8(128, 128, 128, 8, 5, 16), fp8(128, 128, 128, 8, 5, 32),
    fp8(128, 128, 128, 8, 5, 4),
    fp8(64, 128, 128, 4, 6), fp8(64, 128, 128, 4, 4), fp8(64, 128, 128, 4, 6, 16),
]

# Its confirmation (run 1: s5 beat the served s4 by 3-6% on (7168, 16384); the ping-pong lost 13-30%): the coop tile
# at 5 stages and three groups, 5 passes.
CANDIDATES["a8w8_blockscale_s16b"] = [
    SERVED, fp8(128, 128, 128, 8, 5), fp8(128, 128, 128, 8, 5, 16), fp8(128, 128, 128, 8, 5, 4),
]

# the per-token rows of issue 4's bar (4096^3, 8192^3, Llama-3-70B at M >= 256) against the tables, which
# were tuned before the epilogue scales were staged: the same list as "a8w8", and group 32.
CANDIDATES["a8w8_s16"] = [SERVED] + CANDIDATES["a8w8"] + [fp8(128, 128, 128, 8, 6, 32)]

# the coop 256 x 128 tile (num_warps 8, BLOCK_SIZE_M 256: a 128-row half per consumer, one partial, each
# chain waited while the other consumer's wgmma runs): the shared 128 x BK w tile serves 256 rows, so 25% fewer
# L2 -> shared bytes a FLOP than the 128 x 128 tile (cuBLAS's fp8 tile; its promotion needs a second full-size
# accumulator, so it cannot run 256 x 128). Per-token rows and the block-scale rows of issue 4's bars.
CANDIDATES["a8w8_s17"] = [SERVED, fp8(256, 128, 128, 8, 3, 8), fp8(256, 128, 128, 8, 3, 16),
                          fp8(256, 128, 128, 8, 3, 32), fp8(256, 128, 64, 8, 6, 16)]
CANDIDATES["a8w8_blockscale_s17"] = [SERVED, fp8(256, 128, 128, 8, 3, 8), fp8(256, 128, 128, 8, 3, 16),
                                     fp8(256, 128, 64, 8, 6, 16)]
# Round 1 (`bs_sweep_s17.json`, `a8w8_sweep_s17.json`): 256 x 128 x 128 won on the short-K block rows ((24576, 1536)
# +3.8%, (32768, 512) +2.9%, (7168, 2048) +1.3-3.1% against the served tile's time) and lost 6-9% on K >= 7168; on
# per-token it won 4096^3 (+6%) and lost or tied elsewhere. The confirmation: those rows, longer timing, more passes.
CANDIDATES["a8w8_blockscale_s17b"] = [SERVED, fp8(256, 128, 128, 8, 3, 8), fp8(256, 128, 128, 8, 3, 16)]
CANDIDATES["a8w8_s17b"] = CANDIDATES["a8w8_blockscale_s17b"]

# the block-scale coop 128 tile with 6 slots (one 64 x 128 staging buffer shared by the two consumers,
# their epilogues alternating on c_free) against the served 5 slots beside two buffers; session 16 measured +2.3-6%
# from the fourth slot to the fifth on (7168, 16384). Measured with hopper_fp8_plan.derive trading the second buffer
# for the sixth slot (logs/session18/ctiles_rule.patch, `bs_sweep_s18.json`: no gain at K >= 7168, -3-10% at short K);
# that rule was not kept, so without the patch the num_stages 6 candidates run 5 slots.
CANDIDATES["a8w8_blockscale_s18"] = [SERVED, fp8(128, 128, 128, 8, 6, 16), fp8(128, 128, 128, 8, 6, 8),
                                     fp8(128, 128, 128, 8, 5, 16)]

# swap-AB (the Gluon ping-pong's transposed tile, "swap_ab": true; BLOCK_SIZE_M = tokens, BLOCK_SIZE_N =
# weight rows) against the tables at decode sizes (M = 1 ... 64) on the model layers. swap_ab_probe.py measured the
# swapped kernel 4-8% faster than the table on Llama-3-8B down at every M <= 64, 0-4% elsewhere, and slower on
# kv_b_proj (K = 512).
def swap(bm, bn, bk, stages, group=1):
    return dict(gluon(bm, bn, bk, stages, group), swap_ab=True)


CANDIDATES["a16w16_swap"] = [
    SERVED,
    swap(16, 64, 128, 8), swap(16, 128, 128, 6), swap(32, 64, 128, 8), swap(64, 64, 128, 8), swap(64, 128, 64, 8),
]
# The buckets' other ends (M = 15, 31, 63: the tables' M_GEQ_1 / 16 / 32 buckets), after the first sweep's winners.
CANDIDATES["a16w16_swap_ends"] = [SERVED, swap(16, 64, 128, 8), swap(32, 64, 128, 8), swap(64, 64, 128, 8),
                                  swap(16, 128, 128, 6)]
# The default table as shipped (swap-AB: 16 x 64 x 128 / 8 at M <= 16, 64 x 64 x 128 / 6 at 17-64; round 2 measured
# the latter with 8 stages, which plans 6 with one shared staging tile) against its buckets before (git 8805d30).
CANDIDATES["a16w16_default_ab"] = [SERVED, cfg(16, 64, 256, 4, 3), cfg(64, 64, 128, 4, 4)]
# Round 3: the M_GEQ_32 / M_GEQ_64 buckets at both ends (32 / 63, 64 / 127) where the decode bench still trails.
CANDIDATES["a16w16_swap_mid"] = [SERVED, swap(32, 64, 128, 8), swap(64, 64, 128, 6), swap(64, 128, 64, 8),
                                 swap(16, 64, 128, 8), swap(128, 64, 64, 8)]

# gemm_a16w16: M between the rows session 10's split-K sweep measured. The six buckets it switched
# serve a range of M (M_GEQ_256: 256-511), where `hopper_host.fit_split_k` lowers NUM_KSPLIT to keep one wave;
# the served config (SERVED) against each bucket's config before session 10 (git 0317955^), same process.
_OLD_TRITON = {"tma": True, "GROUP_SIZE_M": 8, "num_warps": 4}
CANDIDATES["a16w16_splitk_between"] = [
    SERVED,
    dict(_OLD_TRITON, BLOCK_SIZE_M=128, BLOCK_SIZE_N=64, BLOCK_SIZE_K=64, num_stages=3, NUM_KSPLIT=8),  # kv_a 256-1023
    dict(gluon(64, 96, 64, 6)),  # kv_a M_GEQ_1024
    dict(_OLD_TRITON, BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, num_stages=4, NUM_KSPLIT=2),  # q_a 256
    dict(_OLD_TRITON, BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, num_stages=4),  # q_a 512
    dict(_OLD_TRITON, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, num_warps=8, num_stages=5,
         NUM_KSPLIT=2),  # 8B down 256
]

# gemm_a16w16: the Triton tier's split-K buckets run NUM_KSPLIT exactly, whatever M in the bucket. The
# served config against itself with the split halved and quartered (`_served_split_div`) at the bottom and the top of
# the ten M_GEQ_64 / M_GEQ_128 buckets that carry NUM_KSPLIT > 1: does the count tuned at the bottom hold at the top?
CANDIDATES["a16w16_triton_split_range"] = [SERVED, {"_served_split_div": 2}, {"_served_split_div": 4}]

# Round 1's split_cat list, kept as the record of what was tried; not run.
ROUND1_SPLIT_CAT = [
    cfg(16, bn, bk, warps, stages, tma=tma)
    for bn, warps in ((16, 1), (16, 2), (32, 1), (32, 2), (32, 4), (64, 2), (64, 4), (128, 4))
    for bk in (128, 256, 512)
    for stages in sorted({1, min(512 // bk, 3)})
    for tma in (True, False)
]


# Round 2's batched_a16w16 list (the Triton tier only), kept as the record of what was tried; not run.
ROUND2_A16W16 = [
    # round 2 (after the first H200 sweep, 2026-11-22: 128x256x64 g16 P best at M >= 1024,
    # 128x128x128 P at M = 512): the winners, their group sizes, and the runners-up
    cfg(128, 256, 64, 8, 3, persistent=True),
    cfg(128, 256, 64, 8, 3, group=16, persistent=True),
    cfg(128, 256, 64, 8, 3, group=32, persistent=True),
    cfg(128, 256, 64, 8, 3, group=64, persistent=True),
    cfg(256, 128, 64, 8, 3, group=16, persistent=True),
    cfg(128, 128, 128, 8, 3, persistent=True),
    cfg(128, 128, 128, 8, 3, group=16, persistent=True),
    cfg(128, 128, 64, 4, 4, persistent=True),
    cfg(128, 128, 64, 4, 5),
    cfg(128, 128, 64, 4, 5, persistent=True),
    cfg(64, 256, 64, 4, 4, persistent=True),
    cfg(128, 256, 64, 8, 3, group=16, persistent=True, tma=False),  # the pointer path, same tiles
]


def _direct_run(c, target):
    """x, w -> y through the Gluon batched launcher itself (no op rules), for a `_direct` candidate."""
    import torch

    from gemmkit.kernels.gluon import hopper_pingpong_batched as hb

    cfg_ = {k: v for k, v in c.items() if k != "_direct"}

    def run(inp):
        x, w = inp[0], inp[1]
        y = torch.empty(x.shape[0], x.shape[1], w.shape[1], device=x.device, dtype=x.dtype)
        hb.launch(x, w, None, y, "none", cfg_, target)
        return y
    return run


def parse_shape(s):
    parts = [int(p) for p in s.lower().split("x")]
    return (parts[0], parts[1], parts[1], parts[1]) if len(parts) == 2 else tuple(parts)


def write_table(path, best):
    """Buckets M_LEQ_512, M_LEQ_1024 and any <- the winners at M = 512, 1024, 2048; the buckets for
    smaller M stay; one line per bucket, as the hand-written tables."""
    from gemmkit import configs as _configs

    with open(path) as f:
        table = json.load(f)
    for bucket, m in (("M_LEQ_512", 512), ("M_LEQ_1024", 1024), ("any", 2048)):
        if m in best:
            table.pop(bucket, None)
            table[bucket] = {k: v for k, v in best[m]["config"].items()
                             if _configs.DEFAULTS.get(k, object()) != v and not k.startswith("_")}
    order = sorted((k for k in table if k != "any"), key=lambda k: int(k.split("_")[-1])) + ["any"]
    lines = [f'  "{k}": ' + json.dumps(table[k]) for k in order]
    with open(path, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    _configs.clear_cache()
    _configs.load_table(path)  # validate
    print(f"wrote {path}: " + ", ".join(f"{k}" for k in order))


def bench(op, dtype, shapes, path, table):
    """gemmkit bench's rows (bench/run_gpu: the table's configs through the op, vendor in the same
    process, CUDA graph and eager) for every shape, merged into one results file."""
    from gemmkit.bench import run_gpu

    by_b = {}
    for B, M, N, K in map(parse_shape, shapes.split(",")):
        by_b.setdefault(B, []).append((f"{M}x{N}x{K}", M, N, K))
    merged, clocks = None, {}
    for graph in (True, False):
        for B, rows in by_b.items():
            res = run_gpu(rows, dtype, cuda_graph=graph, op=op, batch=B)
            clocks[f"{op}_B{B}_{'graph' if graph else 'eager'}"] = res["sm_clock_mhz"]
            if merged is None:
                merged = res
            else:
                merged["rows"] += res["rows"]
    merged["sm_clock_mhz_per_invocation"] = clocks
    merged["method"] = merged["method"].split(";")[0] + (
        "; rows with timing 'cuda_graph': one CUDA graph replayed (one call per input set), time per call; rows "
        "with timing 'eager': plain Python calls (host overhead included, both sides). Config: the sm_90 "
        f"{table.rsplit('/', 1)[-1]} table written by benchmarks/sweep_batched.py --write-table in the same process")
    with open(path, "w") as f:
        json.dump(merged, f, indent=1)
    print(f"wrote {path}")


def main():
    import torch
    from concurrent.futures import ThreadPoolExecutor

    from triton.runtime._async_compile import AsyncCompileMode

    from gemmkit import configs as _configs
    from gemmkit.bench import stamp
    from gemmkit.bench.ops import get
    from gemmkit.bench.timing import rotation_count, time_graph
    from gemmkit.ops import _common as C

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default="batched_a16w16")
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--shapes", default="8x512,64x512,8x1024,64x1024,8x2048,64x2048")
    ap.add_argument("--candidates", default=None, help="a key of CANDIDATES (default: --op)")
    ap.add_argument("--rep-ms", type=int, default=30)
    ap.add_argument("--passes", type=int, default=2, help="timing passes over the candidates (median kept)")
    ap.add_argument("--json")
    ap.add_argument("--write-table", help="a table file: its M_LEQ_512 / M_LEQ_1024 / any buckets become the "
                                          "best configs at M = 512 / 1024 / 2048 (geomean over B)")
    ap.add_argument("--bench-json", help="after --write-table: gemmkit bench rows (table configs, CUDA graph and "
                                         "eager) for the same shapes, one results file (DESIGN.md format)")
    args = ap.parse_args()
    bop = get(args.op)
    dtype = args.dtype or bop.dtypes[0]
    dev = torch.device("cuda")
    target = C.target_for(dev)
    base_cands = [c for c in CANDIDATES[args.candidates or args.op]
                  if not (dtype == "fp8" and c.get("BLOCK_SIZE_N") == 256)]
    rows = []
    t0 = time.time()
    for B, M, N, K in map(parse_shape, args.shapes.split(",")):
        _f, nbytes = bop.work(M, N, K, dtype, B)
        # SERVED: the table's config for this shape, run as the op serves it (config=None)
        served = _configs.select(bop.table_op(dtype), target.arch, M, N, K)[0]
        cands = [dict(served, _served=True) if c.get("_served") else
                 dict(served, NUM_KSPLIT=max(1, served.get("NUM_KSPLIT", 1) // c["_served_split_div"]))
                 if "_served_split_div" in c else c for c in base_cands]
        # a divided split equal to the served one (or to another candidate's) is not a second candidate
        seen = set()
        cands = [c for c in cands if not (key := (json.dumps({k: v for k, v in c.items() if k != "_served"},
                                                             sort_keys=True))) in seen and not seen.add(key)]
        if any(c.get("_gluon_split_k_space") for c in cands):  # the tuner's per-shape split-K candidates
            from gemmkit.tune import gluon_split_k_space

            cands = [c for c in cands if not c.get("_gluon_split_k_space")] + gluon_split_k_space(M, N, K, target)
        sets = [bop.make_inputs(M, N, K, dtype, dev, B) for _ in range(rotation_count(nbytes, target.l2_bytes))]
        tc = time.time()
        with AsyncCompileMode(ThreadPoolExecutor(16), ignore_errors=True):
            for c in cands:
                try:
                    bop.compile_for(sets[0], {k: v for k, v in c.items() if not k.startswith("_")})
                except Exception:
                    pass
        t_compile = time.time() - tc
        ref = bop.reference(sets[0])
        flops = 2.0 * B * M * N * K
        print(f"B={B} {M}x{N}x{K} (compile {t_compile:.0f}s)", flush=True)
        shape_rows = []
        run = {}
        for c in cands:
            run[id(c)] = (_direct_run(c, target) if c.get("_direct") else
                          (lambda inp: bop.run(inp, None)) if c.get("_served") else (lambda inp, c=c: bop.run(inp, c)))
        for c in cands:  # correctness first, every candidate once
            row = {"op": args.op, "dtype": dtype, "B": B, "M": M, "N": N, "K": K, "config": c}
            try:
                y = run[id(c)](sets[0])
                err = ((y.float() - ref).norm() / ref.norm()).item()
                row["rel_err"] = err
                if not err <= 2**-8:
                    row["error"] = f"wrong result: rel err {err:.3g}"
            except Exception as e:
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            rows.append(row)
            shape_rows.append(row)
        # Timing: the vendor between every two candidates, so each candidate's ratio is against the mean
        # of the vendor timings right before and after it (the clock drifts by up to 10% over a shape's
        # candidates under sustained load); `--passes` passes, alternate ones in reverse order; the
        # row keeps the median ratio and the median time.
        timed = [r for r in shape_rows if "error" not in r]
        vendor = lambda: time_graph(lambda *inp: bop.vendor(inp), sets, 10, args.rep_ms)  # noqa: E731
        v_all = [vendor()]
        for p in range(args.passes):
            for row in (timed if p % 2 == 0 else timed[::-1]):
                c = row["config"]
                try:
                    ms = time_graph(lambda *inp, c=c: run[id(c)](inp), sets, 10, args.rep_ms)
                except Exception as e:
                    row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                    continue
                v_all.append(vendor())
                row.setdefault("ms_all", []).append(ms)
                row.setdefault("ref_ms_all", []).append((v_all[-2] + v_all[-1]) / 2)
        med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1]) / 2  # noqa: E731
        print(f"   vendor {med(v_all) * 1e3:8.1f} us median of {len(v_all)}, min {min(v_all) * 1e3:.1f} max "
              f"{max(v_all) * 1e3:.1f} ({(max(v_all) - min(v_all)) / med(v_all):.1%} spread)", flush=True)
        for row in shape_rows:
            c = row["config"]
            desc = (f"{'served ' if c.get('_served') else ''}{'gluon ' if c.get('backend') == 'gluon' else ''}"
                    f"{'direct ' if c.get('_direct') else ''}"
                    f"{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}x{c['BLOCK_SIZE_K']} w{c['num_warps']} s{c['num_stages']} "
                    f"g{c['GROUP_SIZE_M']}{' P' if c.get('persistent') else ''}{' tma' if c.get('tma') else ' ptr'}"
                    f"{' ks%d' % c['NUM_KSPLIT'] if c.get('NUM_KSPLIT', 1) > 1 else ''}")
            if "error" not in row and row.get("ms_all"):
                row["ratios"] = [r / m for r, m in zip(row["ref_ms_all"], row["ms_all"])]
                row.update(ms=med(row["ms_all"]), ref_ms=med(row["ref_ms_all"]), ratio=med(row["ratios"]))
                print(f"   {desc:40s} {row['ms'] * 1e3:8.1f} us {flops / row['ms'] / 1e9:6.0f} TF/s "
                      f"ratio {row['ratio']:.3f} ({', '.join(f'{r:.3f}' for r in row['ratios'])})", flush=True)
            else:
                print(f"   {desc:40s} {row.get('error', 'not timed')[:100]}", flush=True)
        del sets, ref
        torch.cuda.empty_cache()
    # Best per M (geomean ratio over the B values that share the M bucket).
    by_m = {}
    for r in rows:
        if "ratio" in r and not r["config"].get("_direct"):  # a direct launch is not what the op would serve
            by_m.setdefault(r["M"], {}).setdefault(json.dumps(r["config"], sort_keys=True), []).append(r["ratio"])
    print("best per M (geomean ratio over B):")
    best = {}
    for M, per in sorted(by_m.items()):
        n = max(len(v) for v in per.values())
        scored = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in per.items() if len(v) == n}
        k = max(scored, key=scored.get)
        best[M] = {"config": json.loads(k), "geomean_ratio": scored[k]}
        print(f"  M={M}: {scored[k]:.3f}  {k}")
    # Best per cell, and the best of each backend (the A/B the issue asks for).
    print("best per shape (gluon / triton / overall):")
    for key in dict.fromkeys((r["B"], r["M"], r["N"], r["K"]) for r in rows):
        cell = [r for r in rows if (r["B"], r["M"], r["N"], r["K"]) == key and "ratio" in r]
        by = {b: max((r for r in cell if r["config"].get("backend", "triton") == b), key=lambda r: r["ratio"],
                     default=None) for b in ("gluon", "triton")}
        print(f"  B={key[0]:3d} {key[1]}x{key[2]}x{key[3]}: " + "  ".join(
            f"{b} {r['ratio']:.3f}" if r else f"{b} -" for b, r in by.items()))
    print(f"sweep took {time.time() - t0:.0f}s")
    if args.write_table:
        write_table(args.write_table, best)
        if args.bench_json:
            bench(args.op, dtype, args.shapes, args.bench_json, args.write_table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**stamp(), "op": args.op, "dtype": dtype,
                       "method": "CUDA-graph replay, do_bench median, inputs rotated past 4x L2",
                       "rows": rows, "best_per_M": best}, f, indent=1)


if __name__ == "__main__":
    main()
