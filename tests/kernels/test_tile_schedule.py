"""The tile schedule (_schedule.py) is a bijection onto the tiles, for any grid, XCD count and group size.

The @triton.jit helpers run in the interpreter, vectorised over tile ids, inside a
probe kernel laid out exactly like the persistent kernels: program p of a grid
of G takes tile ids p, p + G, p + 2G, ...

hypothesis runs derandomized and without a deadline, as the property tests (tests/properties): the same examples
every run, and no timing verdict on a loaded CI machine.
"""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gemmkit.kernels.triton._schedule import (div_magic, group_magic, grouped_tile_magic, persistent_grid, remap_xcd,
                                              tail_item, tile_coords)

pytestmark = pytest.mark.interpreter


@triton.jit
def _probe(remapped_ptr, pid_m_ptr, pid_n_ptr, num_pid_m, num_pid_n,
           GROUP_SIZE_M: tl.constexpr, NUM_XCDS: tl.constexpr, BLOCK: tl.constexpr):
    num_tiles = num_pid_m * num_pid_n
    tile_ids = tl.program_id(0) + tl.arange(0, BLOCK) * tl.num_programs(0)
    valid = tile_ids < num_tiles
    pid_m, pid_n = tile_coords(tile_ids, num_pid_m, num_pid_n, GROUP_SIZE_M, NUM_XCDS)
    tl.store(remapped_ptr + tile_ids, remap_xcd(tile_ids, num_tiles, NUM_XCDS), mask=valid)
    tl.store(pid_m_ptr + tile_ids, pid_m, mask=valid)
    tl.store(pid_n_ptr + tile_ids, pid_n, mask=valid)


def run_schedule(num_pid_m, num_pid_n, group, xcds, grid):
    n = num_pid_m * num_pid_n
    remapped, pm, pn = (torch.full((n,), -1, dtype=torch.int32) for _ in range(3))
    per_program = triton.next_power_of_2(triton.cdiv(n, grid))
    _probe[(grid,)](remapped, pm, pn, num_pid_m, num_pid_n, GROUP_SIZE_M=group, NUM_XCDS=xcds, BLOCK=per_program)
    return remapped.numpy(), pm.numpy(), pn.numpy()


@settings(max_examples=50, deadline=None, derandomize=True)
@given(num_pid_m=st.integers(1, 40), num_pid_n=st.integers(1, 40), group=st.integers(1, 12),
       xcds=st.integers(1, 16), grid=st.integers(1, 48))
def test_bijection(num_pid_m, num_pid_n, group, xcds, grid):
    """Persistent grids from 1 program up to 48 (capped at the tile count; the
    interpreter runs programs one by one, so larger grids only cost time)."""
    n = num_pid_m * num_pid_n
    grid = min(n, grid)
    remapped, pm, pn = run_schedule(num_pid_m, num_pid_n, group, xcds, grid)
    # Every tile id was visited (persistent loop covers [0, n)) ...
    assert (remapped >= 0).all() and (pm >= 0).all()
    # ... the XCD remap is a permutation of the ids ...
    assert np.array_equal(np.sort(remapped), np.arange(n))
    # ... and (pid_m, pid_n) is a permutation of the tiles.
    assert (pm < num_pid_m).all() and (pn < num_pid_n).all()
    assert np.array_equal(np.sort(pm.astype(np.int64) * num_pid_n + pn), np.arange(n))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.integers(1, 300), xcds=st.sampled_from([2, 4, 8]))
def test_xcd_remap_makes_contiguous_ranges(n, xcds):
    """The ids the hardware deals to one XCD (pid % xcds) cover one contiguous range of tiles."""
    remapped, _, _ = run_schedule(n, 1, 1, xcds, min(n, 8))
    for x in range(xcds):
        mine = np.sort(remapped[x::xcds])
        if len(mine):
            assert np.array_equal(mine, np.arange(mine[0], mine[0] + len(mine)))


def test_grouped_order_example():
    """The docstring's picture: GROUP_SIZE_M = 2 on 4 x 3 tiles."""
    _, pm, pn = run_schedule(4, 3, 2, 1, 12)
    order = np.full((4, 3), -1)
    order[pm, pn] = np.arange(12)
    assert order.tolist() == [[0, 2, 4], [1, 3, 5], [6, 8, 10], [7, 9, 11]]


def test_xcd_remap_example():
    remapped, _, _ = run_schedule(11, 1, 1, 4, 11)
    assert remapped.tolist() == [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8]


@settings(deadline=None, derandomize=True)
@given(tiles=st.integers(1, 5000), cus=st.integers(1, 400), xcds=st.sampled_from([1, 8]))
def test_persistent_grid(tiles, cus, xcds):
    g = persistent_grid(tiles, cus, xcds)
    assert 1 <= g <= min(tiles, cus)
    if xcds > 1 and min(tiles, cus) > xcds:
        assert g % xcds == 0


@triton.jit
def _magic_probe(pid_m_ptr, pid_n_ptr, ref_m_ptr, ref_n_ptr, num_pid_m, num_pid_n, group_m, group_s, last_m, last_s,
                 GROUP_SIZE_M: tl.constexpr, BLOCK: tl.constexpr):
    tile_ids = tl.arange(0, BLOCK)
    valid = tile_ids < num_pid_m * num_pid_n
    pid_m, pid_n = grouped_tile_magic(tile_ids, num_pid_m, num_pid_n, GROUP_SIZE_M, group_m, group_s, last_m, last_s)
    ref_m, ref_n = tile_coords(tile_ids, num_pid_m, num_pid_n, GROUP_SIZE_M, 1)
    tl.store(pid_m_ptr + tile_ids, pid_m, mask=valid)
    tl.store(pid_n_ptr + tile_ids, pid_n, mask=valid)
    tl.store(ref_m_ptr + tile_ids, ref_m, mask=valid)
    tl.store(ref_n_ptr + tile_ids, ref_n, mask=valid)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(num_pid_m=st.integers(1, 40), num_pid_n=st.integers(1, 40), group=st.sampled_from([1, 2, 3, 4, 8, 16]))
def test_grouped_tile_magic_is_the_grouped_order(num_pid_m, num_pid_n, group):
    """The Gluon dense kernels' tile order without runtime divisions (`grouped_tile_magic`, the host's
    `group_magic`) gives every tile id the tile `tile_coords` gives it."""
    n = num_pid_m * num_pid_n
    out = [torch.full((n,), -1, dtype=torch.int32) for _ in range(4)]
    _magic_probe[(1,)](*out, num_pid_m, num_pid_n, *group_magic(num_pid_m, num_pid_n, group), GROUP_SIZE_M=group,
                       BLOCK=triton.next_power_of_2(n))
    pm, pn, rm, rn = (t.numpy() for t in out)
    assert (rm >= 0).all() and np.array_equal(pm, rm) and np.array_equal(pn, rn)


@pytest.mark.parametrize("d", [1, 2, 3, 7, 8, 9, 127, 128, 129, 1000, 65535, 65536, 65537, 2**30 - 1, 2**30,
                               2**30 + 1, 2**31 - 1])
def test_div_magic_exact(d):
    """n // d == (n * m) >> s for the ids a launch can hold (0 <= n < 2**31), at the edges of every quotient step
    near 0 and near 2**31, with the multiplier a u32 (the kernels' signature)."""
    m, s = div_magic(d)
    assert 2**31 <= m < 2**32 and 31 <= s <= 62
    rng = np.random.default_rng(d)
    ns = {0, 1, d - 1, d, d + 1, 2**31 - 1, 2**31 - 2, 2**31 - 1 - (2**31 - 1) % d, 2**31 - 2 - (2**31 - 1) % d}
    ns |= {int(v) for v in rng.integers(0, 2**31, 2000)} | {q * d + r for q in range(5) for r in (0, d - 1)}
    for n in ns:
        if 0 <= n < 2**31:
            assert (n * m) >> s == n // d, (n, d)
    with pytest.raises(ValueError):
        div_magic(0)


@triton.jit
def _tail_probe(tile_ptr, k0_ptr, nk_ptr, part_ptr, local_ptr, num_tiles, TAIL, SPLITS, k_steps):
    # this program's items, one at a time (scalar ids), as the persistent kernels walk them
    local = 0
    for w in range(tl.program_id(0), num_tiles + TAIL * (SPLITS - 1), tl.num_programs(0)):
        tile_id, k0, nk, part = tail_item(w, num_tiles, TAIL, SPLITS, k_steps)
        tl.store(tile_ptr + w, tile_id)
        tl.store(k0_ptr + w, k0)
        tl.store(nk_ptr + w, nk)
        tl.store(part_ptr + w, part)
        tl.store(local_ptr + w, local)
        local += 1


@settings(max_examples=60, deadline=None, derandomize=True)
@given(ctas=st.integers(1, 40), tiles=st.integers(2, 200), k_steps=st.integers(2, 60))
def test_tail_items_cover_the_tail(ctas, tiles, k_steps):
    """A tail split's work items (`tail_item`, on the R S of configs/model/tail.py tail_split): the whole tiles,
    then every K step of each of the last R = tiles % CTAs tiles exactly once, split s of tail tile r into workspace
    tile r S + s (as the reduce reads them); and a CTA's split, if any, is its last item, so a CTA's ring position
    at its j-th item is j whole tiles' K steps (the bf16 ping-pong's explicit phase)."""
    from gemmkit.configs.model import tail_split

    tail, splits = tail_split(tiles, ctas, k_steps)
    assume(tail)
    items = tiles + tail * (splits - 1)
    grid = min(items, ctas)
    out = [torch.full((items,), -7, dtype=torch.int32) for _ in range(5)]
    _tail_probe[(grid,)](*out, tiles, tail, splits, k_steps)
    tile_id, k0, nk, part, local = (t.numpy().astype(np.int64) for t in out)
    first = tiles - tail
    assert np.array_equal(tile_id[:first], np.arange(first)) and (k0[:first] == 0).all()
    assert (nk[:first] == k_steps).all() and (part[:first] == -1).all()
    covered = np.zeros((tail, k_steps), dtype=np.int64)
    q = -(-k_steps // splits)
    for w in range(first, items):
        r = tile_id[w] - first
        assert 0 <= r < tail and 1 <= nk[w] <= k_steps - k0[w] and part[w] == r * splits + k0[w] // q
        assert k0[w] % q == 0
        covered[r, k0[w]:k0[w] + nk[w]] += 1
    assert (covered == 1).all()
    assert np.array_equal(np.sort(part[first:]), np.arange(tail * splits))
    for c in range(grid):
        mine = np.arange(c, items, grid)
        assert np.array_equal(local[mine], np.arange(len(mine)))
        assert (part[mine][:-1] == -1).all()  # every item but the CTA's last a whole tile
        assert np.array_equal(local[mine] * k_steps, np.concatenate([[0], np.cumsum(nk[mine])[:-1]]))
