"""The bf16 Gluon dense kernels (hopper_pingpong.py, hopper_coop.py) under one row of tiles: the tokens' operand (x;
swap-AB: the kernel's w, the tokens) loaded in boxes of only its rows (kernels/_host.x_boxes through
gluon/hopper_host.token_boxes), the rest of each ring slot never written. The FP8 kernel's own tests of the same are
in test_hopper_pingpong_fp8.py / test_hopper_pingpong_fp8_blockscale.py (`test_x_boxes_of_its_rows`).

On the CPU: which boxes a launch takes, and that the dispatch makes no copy of x where they hold M. On the GPU
(gpu-marked): every element against the float64 reference (NaN-poisoned outputs, a bias and an activation), and
bitwise equal to the same launch with one whole box (kernels/_host.TRIM_X_BOX off: the rows past M zero-filled), whose
rows are summed in the same order: plain tiles, a split tile (its w in two rings), split-K, the swap-AB tiles on 16 /
32 / 64 tokens, the cooperative 128- and 256-row tiles.
"""
import pytest
import torch

from _util import check_a16w16 as check
from _util import launch_dense, randn
from gemmkit import arch
from gemmkit.kernels import _host as H
from gemmkit.kernels.gluon import hopper_host as hh
from gemmkit.kernels.gluon import hopper_pingpong as hp
from gemmkit.ops import dispatch as D

PP = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
      "num_stages": 5}
SWAP = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4,
        "num_stages": 6, "swap_ab": True}
COOP = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
        "num_stages": 4}
CFGS = {
    "pp128x128": ("pingpong", PP),
    "pp64x256": ("pingpong", {**PP, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "num_stages": 4}),
    "pp64x192": ("pingpong", {**PP, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "num_stages": 6}),  # split tile
    "pp128x128-split3": ("pingpong", {**PP, "NUM_KSPLIT": 3}),
    "swap16": ("pingpong", {**SWAP, "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "num_stages": 8}),
    "swap32": ("pingpong", SWAP),
    "swap64": ("pingpong", {**SWAP, "BLOCK_SIZE_M": 64}),
    "coop128x256": ("coop", COOP),
    "coop256x128": ("coop", {**COOP, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "GROUP_SIZE_M": 4}),
}
# tokens: one box of 8 / 16 / 32 rows, several boxes, one row short of a tile, and past 64 (the 128- / 256-row tiles)
MS = [1, 5, 9, 16, 17, 24, 31, 32, 40, 48, 56, 63, 72, 100, 127, 129, 200]


def test_token_boxes():
    """The tokens' operand: x's boxes on an unswapped tile, the kernel's w (y's tile's rows: the tokens) on a swap-AB
    one; whole boxes from one tile of tokens up."""
    t = arch.get("sm_90")
    pp = hp.derive(PP, t, 2, 2)
    assert hh.token_boxes(pp, 100) == (16, 128, 7) and hh.token_boxes(pp, 128) == (128, 128, 1)
    sw = hp.derive(SWAP, t, 2, 2)
    assert (sw.BM, sw.BN) == (128, 32)  # the kernel's tile: 128 weight rows x 32 tokens
    assert hh.token_boxes(sw, 24) == (128, 8, 3) and hh.token_boxes(sw, 32) == (128, 32, 1)
    split = hp.derive({**PP, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "num_stages": 6}, t, 2, 2)
    assert hh.token_boxes(split, 48, split.w_box) == (16, split.w_box, 3)


@pytest.mark.parametrize("M", [17, 40, 100])
def test_no_copy_of_x_where_its_boxes_hold_m(M):
    """ops/dispatch.py pad_m: no copy for the Gluon dense kernels under one row of tiles (the boxes hold M), as
    before for the others; with TRIM_X_BOX off the copy comes back (w of 8192 x 8192 bf16: past the floors)."""
    cfg = {**PP, "backend": "gluon"}
    assert D.pad_m(D.GLUON_BF16, cfg, M, 8192, 8192, 2, 2) == 0
    assert D.pad_m(D.GLUON_COOP, {**COOP, "backend": "gluon"}, M, 8192, 8192, 2, 2) == 0
    assert D.pad_m(D.TRITON_TMA, {**cfg, "BLOCK_SIZE_M": 128}, M, 8192, 8192, 2, 2) == 128
    old = H.TRIM_X_BOX
    try:
        H.TRIM_X_BOX = False
        assert D.pad_m(D.GLUON_BF16, cfg, M, 8192, 8192, 2, 2) == 128
    finally:
        H.TRIM_X_BOX = old


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(CFGS))
def test_boxes_of_the_tokens_rows(name, monkeypatch):
    from gemmkit.kernels.gluon import hopper_coop

    kind, cfg = CFGS[name]
    mod = hopper_coop if kind == "coop" else hp
    tile = cfg["BLOCK_SIZE_M"]  # the tokens' tile (swap-AB: y's rows, the kernel's N)
    N, K = 1000, 1032
    for M in MS:
        if M >= tile:
            continue
        x, w = randn(M, K, dtype=torch.bfloat16, device="cuda"), randn(N, K, dtype=torch.bfloat16, device="cuda")
        b = randn(N, dtype=torch.bfloat16, device="cuda")
        y = launch_dense(mod, x, w, b, "gelu", None, cfg, None)
        check(y, x, w, b, "gelu")
        monkeypatch.setattr(H, "TRIM_X_BOX", False)
        assert torch.equal(launch_dense(mod, x, w, b, "gelu", None, cfg, None), y), M
        monkeypatch.setattr(H, "TRIM_X_BOX", True)
