"""Stream-K for the Hopper cooperative kernel (hopper_coop.py): the device parts (`@gluon.jit` helpers, inlined
where they are called; no kernel here). The host side (how many tiles go to stream-K, the flags) is
hopper_host.py's `stream_k_tiles` / `stream_k_segments` / `stream_k_flags`.

Why: a persistent launch of T whole tiles on C CTAs takes ceil(T / C) rounds; T = 96 tiles on 132 SMs (DeepSeek
kv_a 576 x 7168 at M = 4096, 128 x 192) leaves 36 SMs idle, T = 480 (3000 x 5000 x 7000, 128 x 256) runs a fourth
round at 64%. Stream-K gives every CTA the same number of K steps instead of the same number of tiles.

Schedule (the "data-parallel + stream-K" hybrid): the first DP = T - SK tiles (a multiple of C) run whole, round
robin as before; the last SK tiles (`stream_k_tiles`: T % C + C, or all T when T < 2 C) are one range of
I = SK x Q K steps (Q = steps per tile), cut into C contiguous ranges, CTA p taking steps [p I / C, (p + 1) I / C)
after its DP tiles. A range crosses tiles: it is a list of segments (tile, k0, k1)::

    SK steps:  |  tile 0 (Q steps)   |   tile 1            |   tile 2  ...
    CTA p:     [ p ─────────────┐ )
    CTA p + 1:                  [ p + 1 ─────────────┐ )
                tile 0 = CTA p's k 0..k1  +  CTA p + 1's k1..Q

Roles of a segment: whole (k0 = 0, k1 = Q): stored as any tile. A piece with k0 > 0 (only ever a CTA's first
SK segment): its fp32 partial goes to the CTA's workspace slot, then the CTA's flag is released. The piece with
k0 = 0, k1 < Q (only ever a CTA's last segment) owns the tile: it waits for the flags of the CTAs p + 1 ... c(end)
holding the rest of the tile (c(i) = ((i + 1) C - 1) // I, the CTA whose range holds step i), adds their partials
to its accumulator in K order, and runs the epilogue (bias, activation, cast, TMA store). A CTA publishes before
it waits (its first segment is done before its last), and waits only on higher CTAs: no cycle. The owner's sum is
its own steps then each later CTA's: a fixed order, bitwise reproducible for a given shape and SM count.

Flags: one int32 per (CTA, consumer warpgroup), zero between launches: the owner's consumer resets each flag it
consumed (every published piece has exactly one owner), so the buffer a stream keeps (`stream_k_flags`) is zero
again when the kernel ends. Publish: partial stores, a barrier of the warpgroup, one release exchange (gpu
scope); wait: one thread spins on an acquire load, a barrier of the warpgroup, then every thread loads the
partial through L2 (`.cg`).

Constraints:
  - Every CTA of the grid resident at once (a CTA waits for higher CTAs): grid = min(SMs, ...) CTAs of one CTA
    per SM (the cooperative kernel's shared memory), and no other kernel that spins on our SMs. Two stream-K
    launches run concurrently on one GPU only from two streams, each with its own flags.
  - SK x Q >= C (every CTA gets a step: `stream_k_tiles` returns 0 otherwise); steps < 2**31.
  - The workspace holds C slots of BM x BN fp32 (row-major, consumer c's rows at c * BM / 2).
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def sk_space(num_tiles, k_steps, SK_TILES):
    """(DP items, all items, DP tiles, first SK step, end SK step) of this CTA: its round-robin whole tiles, then
    its range [s0, s1) of the SK steps (int64: SK x Q x C may pass 2**31)."""
    p = gl.program_id(0)
    c = gl.num_programs(0)
    dp_tiles = num_tiles - SK_TILES
    n_dp = (dp_tiles - p + c - 1) // c  # dp_tiles is a multiple of c (or 0)
    steps = SK_TILES.to(gl.int64) * k_steps
    s0 = p * steps // c
    s1 = (p + 1) * steps // c
    n_sk = ((s1 + k_steps - 1) // k_steps - s0 // k_steps).to(gl.int32)
    return n_dp, n_dp + n_sk, dp_tiles, s0, s1


@gluon.jit
def sk_item(i, n_dp, dp_tiles, s0, s1, k_steps):
    """(tile id, k0, k1) of this CTA's item i (`sk_space`): a whole DP tile, or the i - n_dp-th segment of its SK
    range (tile ids dp_tiles ... in the kernel's tile order)."""
    p = gl.program_id(0)
    c = gl.num_programs(0)
    t = s0 // k_steps + (i - n_dp)  # SK tile (int64)
    first = t * k_steps
    k0 = gl.maximum(s0 - first, 0).to(gl.int32)
    k1 = gl.minimum(s1 - first, k_steps).to(gl.int32)
    dp = i < n_dp
    tile = gl.where(dp, p + i * c, dp_tiles + t.to(gl.int32))
    return tile, gl.where(dp, 0, k0), gl.where(dp, k_steps, k1)


@gluon.jit
def sk_last_peer(tile, dp_tiles, SK_TILES, k_steps):
    """The last CTA holding a piece of SK tile `tile` (the CTA whose range holds its last step): the owner waits
    for CTAs p + 1 ... this one."""
    c = gl.num_programs(0)
    steps = SK_TILES.to(gl.int64) * k_steps
    last = (tile - dp_tiles + 1).to(gl.int64) * k_steps - 1
    return (((last + 1) * c - 1) // steps).to(gl.int32)


@gluon.jit
def _slot_ptrs(ws, slot, acc, ROW0, COL0, BM: gl.constexpr, BN: gl.constexpr):
    """Pointers of acc's elements (rows ROW0 .., columns COL0 .. of a BM x BN fp32 slot), in acc's layout."""
    layout: gl.constexpr = acc.type.layout
    rows = ROW0 + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, layout))
    cols = COL0 + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, layout))
    return ws + slot * (BM * BN) + rows[:, None] * BN + cols[None, :]


@gluon.jit
def sk_store(ws, slot, acc, ROW0, COL0, BM: gl.constexpr, BN: gl.constexpr):
    """Store a piece's fp32 partial (acc) into workspace slot `slot` (call `sk_publish` after the last part)."""
    gl.store(_slot_ptrs(ws, slot, acc, ROW0, COL0, BM, BN), acc)


@gluon.jit
def sk_publish(flags, flag):
    """Release flag `flag` once every thread of the warpgroup has stored its part of the partial."""
    gl.thread_barrier()
    gl.atomic_xchg(flags + flag, 1, sem="release", scope="gpu")


@gluon.jit
def sk_acquire(flags, flag):
    """Wait until flag `flag` is released (its partial visible to the whole warpgroup after this), then zero it
    for the next launch."""
    while gl.atomic_add(flags + flag, 0, sem="acquire", scope="gpu") == 0:
        pass
    gl.atomic_xchg(flags + flag, 0, sem="relaxed", scope="gpu")


@gluon.jit
def sk_add(acc, ws, slot, ROW0, COL0, BM: gl.constexpr, BN: gl.constexpr):
    """acc + the partial in slot `slot` (after `sk_acquire`), read through L2."""
    return acc + gl.load(_slot_ptrs(ws, slot, acc, ROW0, COL0, BM, BN), cache_modifier=".cg")
