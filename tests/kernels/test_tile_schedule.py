"""The tile schedule (_schedule.py) is a bijection onto the tiles, for any grid, XCD count and group size.

The @triton.jit helpers run in the interpreter, vectorised over tile ids, inside a
probe kernel laid out exactly like the persistent kernels: program p of a grid
of G takes tile ids p, p + G, p + 2G, ...
"""
import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from hypothesis import given, settings
from hypothesis import strategies as st

from gemmkit.kernels.triton._schedule import persistent_grid, remap_xcd, tile_coords

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


@settings(max_examples=50, deadline=None)
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


@settings(max_examples=30, deadline=None)
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


@given(tiles=st.integers(1, 5000), cus=st.integers(1, 400), xcds=st.sampled_from([1, 8]))
def test_persistent_grid(tiles, cus, xcds):
    g = persistent_grid(tiles, cus, xcds)
    assert 1 <= g <= min(tiles, cus)
    if xcds > 1 and min(tiles, cus) > xcds:
        assert g % xcds == 0
