"""Index math of the CDNA ping-pong kernel (cdna_pingpong.py), in one place, in plain Python.

Everything here is derived from the target and the tile, and is what the kernel hands to Gluon
as layouts; the functions that evaluate those layouts element by element (`load_rows`,
`lds_offset`, `mfma_*_fragment`, `wave_tile`) let a CPU test run the whole tile through
NumPy and compare with a plain matmul (tests/kernels/test_cdna_pingpong.py).

    block 256 x 256, 8 waves as a 2 x 4 grid (warp_id_m = wave // 4, warp_id_n = wave % 4),
    each wave 128 x 64 of C; MFMA 16x16x32 bf16 on gfx950, 16x16x16 on gfx942.
    BK from the LDS of the target: two stages of A (BM x BK) and B (BN x BK) in bf16 must fit:
        2 * (256 + 256) * BK * 2 B <= LDS  ->  gfx950 (160 KiB): BK = 64 (128 KiB)
                                               gfx942 (64 KiB):  BK = 32 (64 KiB)
"""
from __future__ import annotations

from dataclasses import dataclass

BM = BN = 256
WARPS_M, WARPS_N = 2, 4  # the 2 x 4 wave grid; warp_id_m is the wave group
NUM_WARPS = WARPS_M * WARPS_N
WAVE = 64
ELEM_BYTES = 2  # bf16
VEC_BYTES = 16  # one direct-to-LDS load / one ds_read_b128 per lane
LDS_BANKS, BANK_BYTES = 64, 4
# Buffer ops (the kernel's global loads and stores) address a tensor through a resource whose range Triton sets to
# num_records = 2**31 - 2 bytes (BufferEmitter::createResourceDescriptor), with a 32-bit byte offset per lane,
# compared unsigned: a byte offset in [2**31 - 2, 2**32) is out of range, so a load returns 0 and a store is
# dropped. An operand's span must therefore stay below BUFFER_BYTES (the host checks it). ROW_OOB, the element
# offset the kernel gives a row past M or N, is 2**31 bytes in: out of range, and so is ROW_OOB + any k < 2**30.
BUFFER_BYTES = 2**31 - 2
ROW_OOB = 2**31 // ELEM_BYTES


@dataclass(frozen=True)
class TileConfig:
    arch: str
    BM: int
    BN: int
    BK: int
    mfma: tuple  # (M, N, K) of one MFMA
    mfma_version: int  # Gluon's AMDMFMALayout version: 3 = gfx942, 4 = gfx950
    vec: int  # elements per 16-byte vector (MFMA k_width, swizzle unit)
    load_vec: int  # elements per lane of one direct-to-LDS load (16 B on gfx950, 4 B on gfx942)
    per_phase: int  # swizzle: rows that share one XOR phase
    max_phase: int  # swizzle: distinct phases
    lds_bytes: int


def tile_config(target) -> TileConfig:
    """Tile and swizzle for `target` (a gemmkit.arch.Target): the one home of derived parameters."""
    if target.arch not in ("gfx942", "gfx950"):
        raise ValueError(f"target: the CDNA ping-pong kernel is for gfx942/gfx950, got {target.arch}")
    # K depth per stage: the largest power of two <= 64 with two stages of A and B in LDS.
    bk = 64
    while 2 * (BM + BN) * bk * ELEM_BYTES > target.shared_mem_bytes:
        bk //= 2
    mfma = (16, 16, 32) if target.arch == "gfx950" else (16, 16, 16)
    vec = VEC_BYTES // ELEM_BYTES  # 8 bf16
    if bk % mfma[2] or bk % vec:
        raise ValueError(f"BK={bk} does not hold whole MFMA K steps ({mfma[2]}) of {vec}-element vectors")
    # Swizzle, derived from the read the MFMA operand makes (as 001 §7 derives it from the load):
    # ds_read_b128 serves 16 lanes per LDS cycle (16 x 16 B = 64 banks x 4 B); in an A/B fragment
    # those 16 lanes read 16 consecutive rows at the same k. A row is BK * 2 bytes, so one bank row
    # (256 B) holds 256 / (BK * 2) tile rows: rows that far apart start on the same banks. Give
    # every `per_phase` rows their own XOR of the 16-byte chunk index, for as many phases as the 16
    # rows of one read need (and a row has chunks to permute): 16 distinct (bank row, chunk) slots.
    per_phase = max(1, LDS_BANKS * BANK_BYTES // (bk * ELEM_BYTES))
    max_phase = min(bk // vec, 16 // per_phase)
    # direct-to-LDS width: gfx950 (CDNA4) loads 16 bytes per lane, gfx942 (CDNA3) only 4
    load_vec = vec if target.arch == "gfx950" else 4 // ELEM_BYTES
    return TileConfig(target.arch, BM, BN, bk, mfma, 4 if target.arch == "gfx950" else 3, vec, load_vec,
                      per_phase, max_phase,
                      2 * (BM + BN) * bk * ELEM_BYTES)


# ---- global -> LDS: BlockedLayout([1, load_vec], [WAVE*load_vec/BK rows, BK/load_vec lanes], [NUM_WARPS, 1])

def load_threads(cfg: TileConfig) -> tuple:
    """Lanes of one wave along (rows, k): a load instruction covers rows x BK of LDS, contiguous."""
    lanes_k = cfg.BK // cfg.load_vec
    return (WAVE // lanes_k, lanes_k)


def load_rows(cfg: TileConfig, wave: int, rows: int = BM) -> list:
    """Tile rows a wave loads: (its instruction i covers rows r0 + i * per_cta .. + rows_per_instr)."""
    rpi = load_threads(cfg)[0]
    per_cta = rpi * NUM_WARPS
    return [r for i in range(rows // per_cta) for r in range(i * per_cta + wave * rpi, i * per_cta + (wave + 1) * rpi)]


def lds_offset(cfg: TileConfig, r, c):
    """Element offset of tile element (r, c) in its LDS buffer: Triton's SwizzledSharedLayout(vec,
    per_phase, max_phase, order=[1, 0]): chunk c // vec of row r is XOR-ed with the row's phase.
    Works on NumPy arrays."""
    phase = (r // cfg.per_phase) % cfg.max_phase
    return r * cfg.BK + ((c // cfg.vec) ^ phase) * cfg.vec + c % cfg.vec


# ---- LDS -> registers -> MFMA, and the wave grid

def wave_tile(wave: int) -> tuple:
    """(row0, col0) of the 128 x 64 piece of C that a wave owns; warp_id_m = wave // 4 is its group."""
    wm, wn = wave // WARPS_N, wave % WARPS_N
    return wm * (BM // WARPS_M), wn * (BN // WARPS_N)


def mfma_a_fragment(cfg: TileConfig, lane: int) -> tuple:
    """(row, k indices) lane `lane` holds of a 16 x K_mfma A operand: row lane % 16, k_width = vec
    consecutive k from 8 * (lane // 16); B is the same with column for row."""
    m, _, k = cfg.mfma
    kw = k // (WAVE // m)  # 8 on gfx950 (16x16x32), 4 on gfx942 (16x16x16)
    k0 = (lane // m) * kw
    return lane % m, list(range(k0, k0 + kw))


def mfma_c_fragment(cfg: TileConfig, lane: int) -> list:
    """(row, col) pairs of a 16 x 16 C tile in lane `lane` (four rows of one column)."""
    m, n, _ = cfg.mfma
    return [((lane // n) * 4 + i, lane % n) for i in range(4)]


def mfma_per_wave_per_k_tile(cfg: TileConfig) -> int:
    m, n, k = cfg.mfma
    return (BM // WARPS_M // m) * (BN // WARPS_N // n) * (cfg.BK // k)


def read_bank_slots(cfg: TileConfig, swizzled: bool = True) -> int:
    """Distinct 16-byte bank slots the first 16 lanes of one A-fragment ds_read_b128 touch (16 = no
    conflict): rows 0..15 at k chunk 0."""
    import numpy as np

    rows = np.arange(16)
    off = lds_offset(cfg, rows, np.zeros(16, int)) if swizzled else rows * cfg.BK
    byte = off * ELEM_BYTES
    return len({(b % (LDS_BANKS * BANK_BYTES)) // VEC_BYTES for b in byte})
