"""The Gluon FP8 kernel's block-scale mode (kernels/gluon/hopper_pingpong_fp8.py, SCALE = "block") and
gemm_a8w8_blockscale's "backend": "gluon" on the H200 (`pytest -m gpu tests/kernels/test_hopper_pingpong_fp8_blockscale.py`).

Reference: float64 on the device from the dequantized operands (x * x_scale per (1, bk) block, w *
w_scale per (bn, bk) block; fp8 values and fp32 scales are exact in float64). Every output is
poisoned with NaN first. Bounds as tests/kernels/test_hopper_pingpong_fp8.py: norm-wise (tests/_util) and per
element |y - ref| <= 2**-7 |ref| + 2**-10 A + tiny, A = |xd| @ |wd|.T. The scales span 2**-8..2**8
(a power of two times a random mantissa), so a scale read from the wrong row, column or K block
moves an element by far more than the bound.
"""
import pytest
import torch

from gemmkit import arch
from gemmkit.reference import expand_block_scales

from _util import assert_sanitizer_clean, poisoned, q8, scales, within_bound

pytestmark = pytest.mark.gpu
DEV = "cuda"
FP8 = torch.float8_e4m3fn


def _cfg(bm, bn, bk, stages, group=8, warps=4):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group, "num_warps": warps,
            "num_stages": stages}


CFGS = {"64x128x128s4": _cfg(64, 128, 128, 4),
        "64x64x128s6": _cfg(64, 64, 128, 6, group=4),
        "64x128x64s6": _cfg(64, 128, 64, 6),  # BK < bk: two promotions per scale block
        "128x128x128s2": _cfg(128, 128, 128, 2),  # pingpong 128-row tile: two slices, one partial
        # coop (num_warps 8): one 128-row tile, a 64-row half (and its 64 scales) per consumer, one ring
        "coop128x128x128s5": _cfg(128, 128, 128, 5, warps=8),
        "coop128x128x64s3": _cfg(128, 128, 64, 3, group=16, warps=8),  # BK < bk; the ring wraps every 3 steps
        # coop 256: a 128-row half (two slices and their scales, one partial) per consumer
        "coop256x128x128s3": _cfg(256, 128, 128, 3, group=16, warps=8)}


def _k():
    from gemmkit.kernels.gluon import hopper_pingpong_fp8

    return hopper_pingpong_fp8


def _target(cus=None):
    t = arch.current()
    return t.with_cus(cus) if cus else t


def wide_scales(*shape):
    """Positive fp32 scales over 2**-8 .. 2**8: a misindexed scale is off by a large factor."""
    e = torch.randint(-8, 9, shape, device=DEV).float()
    return (torch.rand(shape, device=DEV) + 0.5) * torch.exp2(e)


def inputs(M, N, K, block=(128, 128), xs_layout="row"):
    """x, w, x_scale, w_scale; x_scale row-major (M, KB) ("row": the load warp copies it by cp.async) or M-major
    ("mmajor", strides (1, M) as gemmkit.quant makes it: by TMA)."""
    bn, bk = block
    x, w = q8(M, K, dtype=FP8, device=DEV), q8(N, K, dtype=FP8, device=DEV)
    xs = wide_scales(M, -(-K // bk))
    if xs_layout == "mmajor":
        xs = xs.T.contiguous().T
    return x, w, xs, wide_scales(-(-N // bn), -(-K // bk))


XS_LAYOUTS = ["row", "mmajor"]


def run(x, w, xs, ws, out_dtype=torch.bfloat16, cfg=CFGS["64x128x128s4"], cus=None, block=(128, 128), tail=None,
        scale_tma=None, pair=None):
    y = poisoned((x.shape[0], w.shape[0]), out_dtype, DEV)
    _k().launch(x, w, xs, ws, None, y, cfg, _target(cus), block_shape=block, tail=tail, scale_tma=scale_tma,
                pair=pair)
    torch.cuda.synchronize()
    return y


def check(y, x, w, xs, ws, block=(128, 128)):
    bn, bk = block
    xd = x.double() * expand_block_scales(xs.double(), (1, bk), x.shape)
    wd = w.double() * expand_block_scales(ws.double(), (bn, bk), w.shape)
    ref, mag = xd @ wd.T, xd.abs() @ wd.abs().T
    assert torch.isfinite(y).all(), "non-finite output (an element never written?)"
    if y.dtype == torch.float32:
        rel = ((y.double() - ref).norm() / ref.norm()).item()
        assert rel <= 2**-12, f"rel err {rel:.3g}"
    else:
        ok, msg = within_bound(y, ref, y.dtype)
        assert ok, msg
    err = (y.double() - ref).abs()
    bad = (err > 2**-7 * ref.abs() + 2**-10 * mag + 1e-30).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} elements out of bound, first {bad[:3].tolist()}: " \
        f"y {y[tuple(bad[0])].item()} ref {ref[tuple(bad[0])].item()}"


# M = 1, 17, 4095; N and K ragged (K % 128 != 0: the last scale block is partial; K < 128; K < BK).
SHAPES = [(1, 264, 128), (17, 1000, 304), (4095, 1032, 784), (64, 8, 16), (129, 136, 80), (300, 2112, 1040),
          (256, 512, 4096)]


@pytest.mark.parametrize("xs_layout", XS_LAYOUTS)
@pytest.mark.parametrize("cfg", list(CFGS), ids=list(CFGS))
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, cfg, xs_layout):
    """Every config and shape, the x scales copied by cp.async (row-major x_scale; M-major with M % 4 != 0) and by
    TMA (M-major with M % 4 == 0; one K block in either layout)."""
    x, w, xs, ws = inputs(M, N, K, xs_layout=xs_layout)
    # TMA: M-major with M % 4 == 0 (each K block's box on a 16-byte boundary), or one K block in either layout
    assert _k().scale_tma_ok(xs) == ((xs_layout == "mmajor" and M % 4 == 0) or xs.shape[1] == 1)
    check(run(x, w, xs, ws, cfg=CFGS[cfg]), x, w, xs, ws)


@pytest.mark.parametrize("xs_layout", XS_LAYOUTS)
@pytest.mark.parametrize("cfg", ["64x64x128s6", "64x128x64s6", "coop128x128x128s5", "coop256x128x128s3"])
def test_x_boxes_of_its_rows(cfg, xs_layout, monkeypatch):
    """Under one row of tiles x loaded in boxes of only its rows (kernels/_host.x_boxes), the x scales by TMA or
    cp.async beside them: every element against float64, bitwise equal to the launch loading one whole box."""
    from gemmkit.kernels import _host as H

    c = CFGS[cfg]
    for M in (1, 9, 17, 24, 32, 40, 48, 56, 72, 100, 200):
        if M >= c["BLOCK_SIZE_M"]:
            continue
        x, w, xs, ws = inputs(M, 520, 4160, xs_layout=xs_layout)
        y = run(x, w, xs, ws, cfg=c)
        check(y, x, w, xs, ws)
        monkeypatch.setattr(H, "TRIM_X_BOX", False)
        assert torch.equal(run(x, w, xs, ws, cfg=c), y), M
        monkeypatch.setattr(H, "TRIM_X_BOX", True)


def _nan_padded(M, KB, pad, offset=0):
    """An M-major (M, KB) x_scale view whose storage has `pad` NaN elements after each column (stride (1, M +
    pad)) and starts `offset` elements into its allocation: a TMA box of x scales that runs past row M reads NaN.
    (M + pad) % 4 == 0 and offset % 4 == 0 keep every box on a 16-byte boundary (scale_tma_ok)."""
    store = torch.full((offset + KB * (M + pad),), float("nan"), device=DEV)
    view = store[offset:].view(KB, M + pad)[:, :M].T
    view.copy_(wide_scales(M, KB))
    return view


@pytest.mark.parametrize("cfg", ["64x128x128s4", "coop128x128x128s5", "coop128x128x64s3", "coop256x128x128s3"])
@pytest.mark.parametrize("M,N,K", [(1, 264, 1024), (17, 1000, 304), (200, 640, 1152), (300, 2112, 1040),
                                   (4095, 1032, 784)], ids=lambda v: str(v))
def test_scale_tma_matches_cpasync(M, N, K, cfg):
    """The two copies of the x scales read the same values: TMA (M-major x_scale, its storage NaN past each
    column's M rows, which the box reads for the last row tile) and cp.async (scale_tma=False; and a row-major
    copy) give bitwise equal outputs, right against float64: NaN read past row M (rows of y never stored) reaches
    no output. w_scale (always a TMA box of 4) is a column slice with NaN in the skipped columns, which the box
    copies beside the scale; the consumers read only the scale's element (_w_pick's j)."""
    k = _k()
    x, w, _, ws = inputs(M, N, K)
    xs = _nan_padded(M, ws.shape[1], 4 - M % 4)
    ws_store = torch.full((ws.shape[0], 2 * ws.shape[1]), float("nan"), device=DEV)
    ws_v = ws_store[:, ::2]
    ws_v.copy_(ws)
    assert k.scale_tma_ok(xs)
    y = run(x, w, xs, ws_v, cfg=CFGS[cfg])
    check(y, x, w, xs, ws_v)
    assert torch.equal(y, run(x, w, xs, ws_v, cfg=CFGS[cfg], scale_tma=False))
    assert torch.equal(y, run(x, w, xs.contiguous(), ws_v.contiguous(), cfg=CFGS[cfg]))  # row-major: cp.async


def test_scale_tma_needs_aligned_m_major_scales():
    """A TMA box must start on a 16-byte boundary: an M-major x_scale 4 bytes past one (base), or one whose K-block
    stride is not a multiple of 4 elements (M = 201 dense), runs by cp.async, right, and scale_tma=True is refused;
    a row-major x_scale (M > 1, KB > 1) is not one box a K step at all. A w_scale off one is copied."""
    k = _k()
    M, N, K = 200, 512, 1024
    x, w, _, ws = inputs(M, N, K)
    xs = _nan_padded(M, ws.shape[1], 4, offset=1)
    assert xs.data_ptr() % 16 == 4 and not k.scale_tma_ok(xs)
    assert not k.scale_tma_ok(xs.contiguous()) and k.scale_tma_ok(xs.T.contiguous().T)
    check(run(x, w, xs, ws, cfg=CFGS["coop128x128x128s5"]), x, w, xs, ws)
    with pytest.raises(ValueError, match="scale_tma"):
        run(x, w, xs, ws, cfg=CFGS["coop128x128x128s5"], scale_tma=True)
    x, w, xs, ws = inputs(201, N, K, xs_layout="mmajor")
    assert xs.stride() == (1, 201) and not k.scale_tma_ok(xs)
    check(run(x, w, xs, ws, cfg=CFGS["coop128x128x128s5"]), x, w, xs, ws)
    # a w_scale 4 bytes past a 16-byte boundary: the launch copies it (its w scales always come by TMA)
    ws_off = _nan_padded(*ws.shape, 4, offset=1)
    ws_off.copy_(ws)
    assert ws_off.data_ptr() % 16 == 4
    for cfg in ("coop128x128x128s5", "64x128x128s4"):
        check(run(x, w, xs.T.contiguous().T, ws_off, cfg=CFGS[cfg]), x, w, xs, ws)


@pytest.mark.parametrize("cfg", ["64x128x128s4", "coop128x128x128s5", "coop256x128x128s3"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_out_dtypes(out_dtype, cfg):
    x, w, xs, ws = inputs(300, 1024, 1040)
    xs, ws = scales(*xs.shape, device=DEV), scales(*ws.shape, device=DEV)  # within fp16's range
    y = run(x, w, xs, ws, out_dtype, cfg=CFGS[cfg])
    assert y.dtype == out_dtype
    check(y, x, w, xs, ws)


@pytest.mark.parametrize("cfg", ["64x128x128s4", "coop128x128x128s5"])
def test_strided_scales(cfg):
    """x_scale M-major (stride (1, M), torch._scaled_mm's layout) and w_scale a column slice."""
    M, N, K = 200, 640, 1152
    x, w, xs, ws = inputs(M, N, K)
    xs_t = xs.T.contiguous().T
    ws_big = wide_scales(ws.shape[0], 2 * ws.shape[1])
    ws_v = ws_big[:, ::2]
    assert xs_t.stride() == (1, M) and ws_v.stride(1) == 2
    check(run(x, w, xs_t, ws_v, cfg=CFGS[cfg]), x, w, xs_t, ws_v)


@pytest.mark.parametrize("cfg", ["64x128x128s4", "coop128x128x128s5", "coop256x128x128s3"])
@pytest.mark.parametrize("cus", [1, 3])
def test_small_persistent_grids(cus, cfg):
    """Many tiles per CTA: the rings (and their scale slots) wrap many times."""
    M, N, K = 5 * 64 - 3, 7 * 128 + 8, 400
    x, w, xs, ws = inputs(M, N, K)
    check(run(x, w, xs, ws, cus=cus, cfg=CFGS[cfg]), x, w, xs, ws)


@pytest.mark.parametrize("cus", [1, 3])
@pytest.mark.parametrize("K", [128, 256, 384, 512, 640])
def test_coop_k_steps_many_items(K, cus):
    """coop 128 with block scales: 1-5 K steps (= scale blocks) a work item, many items per CTA (1 CTA: 40), the
    5-slot ring wrapping at different offsets across the K values; each chain's scales read from its own slot."""
    M, N = 5 * 128 - 3, 7 * 128 + 8
    x, w, xs, ws = inputs(M, N, K)
    check(run(x, w, xs, ws, cus=cus, cfg=CFGS["coop128x128x128s5"]), x, w, xs, ws)


def test_other_block_shapes():
    """(256, 256) and (128, 64) blocks: BLOCK_SIZE_N | bn and BLOCK_SIZE_K | bk (the launcher's rule)."""
    for block, cfg in [((256, 256), CFGS["64x128x128s4"]), ((128, 64), CFGS["64x128x64s6"]),
                       ((256, 256), CFGS["coop128x128x128s5"]), ((128, 64), CFGS["coop128x128x64s3"])]:
        x, w, xs, ws = inputs(257, 520, 1000 - 1000 % 16, block)
        check(run(x, w, xs, ws, cfg=cfg, block=block), x, w, xs, ws, block)


def test_deterministic():
    """Without a tail split: bitwise identical run to run, any grid, and in both layouts (the same chains and
    FFMAs per element). With one (coop, forced, 5 CTAs: 2 tail tiles split in 2): identical run to run on that grid."""
    x, w, xs, ws = inputs(1000, 3000, 3072)
    first = run(x, w, xs, ws)
    check(first, x, w, xs, ws)
    for cus in (None, 5):
        assert torch.equal(run(x, w, xs, ws, cus=cus), first)
        assert torch.equal(run(x, w, xs, ws, cus=cus, cfg=CFGS["coop128x128x128s5"], tail=False), first)
    tailed = run(x, w, xs, ws, cus=5, cfg=CFGS["coop128x128x128s5"], tail=True)
    check(tailed, x, w, xs, ws)
    assert torch.equal(run(x, w, xs, ws, cus=5, cfg=CFGS["coop128x128x128s5"], tail=True), tailed)


# (M, N, K, CTAs, pair): the rule's case (the TP-2 Llama-3-70B down shard at decode: 128 tiles of 64 x 64, 112 K
# steps, halves of 56), forced pairs on small grids (exchange phases wrap; a ragged last scale block in the second
# half: K = 304 is 3 steps of 128, 2 + 1), and BK < the scale block's K (two promotions per block, halves of 9 / 8).
# (The 128-row pingpong tile does not pair in block mode: its exchange buffer leaves 1 slot a ring.)
PAIR_CASES = [(64, 8192, 14336, None, None, "64x64x128s6"), (17, 1000, 304, 2, True, "64x128x128s4"),
              (129, 520, 1040, 3, True, "64x64x128s6"), (64, 384, 1088, 1, True, "64x128x64s6")]


@pytest.mark.parametrize("xs_layout", XS_LAYOUTS)
@pytest.mark.parametrize("M,N,K,cus,pair,cfg", PAIR_CASES, ids=[f"{c[0]}x{c[1]}x{c[2]}-{c[5]}" for c in PAIR_CASES])
def test_pair(M, N, K, cus, pair, cfg, xs_layout):
    """The paired pingpong in block mode (`pair_plan`): each half's load warp copies the scales of its own K blocks,
    consumer 0 adds consumer 1's promoted partial; every element against float64; the same bits run to run."""
    x, w, xs, ws = inputs(M, N, K, xs_layout=xs_layout)
    assert _k().launch_plan(CFGS[cfg], _target(cus), 2, (128, 128), M, N, K, pair).pair
    y = run(x, w, xs, ws, cfg=CFGS[cfg], cus=cus, pair=pair)
    check(y, x, w, xs, ws)
    assert torch.equal(run(x, w, xs, ws, cfg=CFGS[cfg], cus=cus, pair=pair), y)


@pytest.mark.parametrize("cfg", ["64x128x128s4", "coop128x128x128s5", "coop256x128x128s3"])
@pytest.mark.parametrize("M,N,K", [(4096, 2112, 7168), (64, 7168, 2048), (1, 24576, 1536), (17, 136, 304)])
def test_op_backend_gluon(M, N, K, cfg, launches):
    """gemm_a8w8_blockscale with a "backend": "gluon" config (either layout) runs this kernel (LAUNCHES)."""
    import gemmkit

    x, w, xs, ws = inputs(M, N, K)
    before = launches["hopper_pingpong_fp8_kernel"]
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=poisoned((M, N), torch.bfloat16, DEV),
                                     config={**CFGS[cfg], "backend": "gluon"})
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_fp8_kernel"] == before + 1
    check(y, x, w, xs, ws)


def test_op_backend_gluon_falls_back_to_triton(launches):
    """block_shape (64, 128) with BLOCK_SIZE_N 128, split-K, an output whose rows are not 16-byte multiples (with
    K % 16 != 0: no copy of x and w helps either): the Triton tier runs, correct."""
    import gemmkit

    cfg = {**CFGS["64x128x128s4"], "backend": "gluon"}
    for (M, N, K), extra, block in [((100, 256, 512), {}, (64, 128)), ((16, 512, 4096), {"NUM_KSPLIT": 4}, (128, 128)),
                                    ((300, 256, 1000), {}, (128, 128))]:
        x, w, xs, ws = inputs(M, N, K, block)
        before = dict(launches)
        out = poisoned((M, N + 1), torch.bfloat16, DEV)[:, :N] if K % 16 else poisoned((M, N), torch.bfloat16, DEV)
        y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, block_shape=block, out=out, config={**cfg, **extra})
        torch.cuda.synchronize()
        assert launches["hopper_pingpong_fp8_kernel"] == before.get("hopper_pingpong_fp8_kernel", 0)
        assert sum(launches.values()) > sum(before.values())
        check(y, x, w, xs, ws, block)


def test_shape_errors():
    x, w, xs, ws = inputs(64, 128, 256)
    with pytest.raises(ValueError, match="shapes"):
        _k().launch(x, w, xs[:, :1], ws, None, torch.empty(64, 128, device=DEV, dtype=torch.bfloat16),
                    CFGS["64x128x128s4"], _target(), block_shape=(128, 128))
    x, w, xs, ws = inputs(64, 128, 256, (64, 128))
    with pytest.raises(ValueError, match="BLOCK_SIZE_N"):
        _k().launch(x, w, xs, ws, None, torch.empty(64, 128, device=DEV, dtype=torch.bfloat16),
                    CFGS["64x128x128s4"], _target(), block_shape=(64, 128))


def test_op_tables_pick_gluon(launches):
    """The sm_90 A8W8_BLOCKSCALE tables send DeepSeek-V3's (7168, 2048) at M = 4096, 1024 (the shape file's
    M_GEQ_256), 200 (the default table's `any`, coop), 128 and 17 (the shape file hands M <= 63 to the config model:
    its `decode_pingpong`, 112 tiles of 64 x 64; at M = 8-16 the same from 8 rows) to this kernel (config=None), and
    M = 7 (the shape file's M_LEQ_7: its split 16-row Triton tile) to the Triton tier."""
    import gemmkit

    for M, gluon in [(4096, True), (1024, True), (200, True), (128, True), (17, True), (16, True), (8, True),
                     (7, False)]:
        x, w, xs, ws = inputs(M, 7168, 2048)
        before = launches["hopper_pingpong_fp8_kernel"]
        y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=poisoned((M, 7168), torch.bfloat16, DEV))
        torch.cuda.synchronize()
        assert launches["hopper_pingpong_fp8_kernel"] == before + gluon
        check(y, x, w, xs, ws)


@pytest.mark.parametrize("M, N, K, gluon", [
    (8, 8192, 1024, True), (12, 8192, 1152, True), (16, 4608, 2048, True), (16, 8320, 640, True),
    (7, 8192, 1024, False), (16, 4096, 1024, False),
])
def test_op_blockscale_decode_pingpong_from_8_rows(launches, M, N, K, gluon):
    """The config model's `decode_pingpong` from 8 rows (block scale): at M = 8-16 on 66-264 tiles of 64 x 64 the op
    (config=None) launches this kernel with x in boxes of its own rows (no copy to 64 rows), every element within
    the bound of the float64 reference; under 8 rows or on 64 tiles the Triton tier."""
    import gemmkit
    from gemmkit import callplan

    x, w, xs, ws = inputs(M, N, K)
    before = launches["hopper_pingpong_fp8_kernel"]
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=poisoned((M, N), torch.bfloat16, DEV))
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_fp8_kernel"] == before + gluon
    check(y, x, w, xs, ws)
    if gluon:  # the same call through a replayed plan
        assert callplan.ENABLED
        y2 = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=poisoned((M, N), torch.bfloat16, DEV))
        torch.cuda.synchronize()
        assert torch.equal(y, y2)


# ----------------------------------------------------------------------------- compute-sanitizer
#
# The block mode's full[s] barrier completes, where the x scales come by cp.async (row-major x_scale here), on
# two kinds of arrivals: the load warp's expect-tx arrive (with the TMA bytes of x, w and the w scale's box) and
# one per load-warp lane when its cp.async copies of the slot's x scales have landed
# (`cp.async.mbarrier.arrive.noinc`; count 1 + 32); where they come by TMA ("block-tma": M-major), on the
# expect-tx arrive alone (count 1). The consumers read the slot from shared memory right after their full wait. (The first run of these tests found the incrementing arrive on a count-1 barrier:
# synccheck "Barrier overflow".) K = 128 / 256 / 384 is
# k_steps 1 / 2 / 3 (ring wraps, the coop layout's peeled step, its two-a-trip loop and its tail), on 1-2
# persistent CTAs with several tiles each; rowcol runs the same loop without scale copies.

_SANITIZE_FP8 = """
import sys, torch
from gemmkit import arch
from gemmkit.kernels.gluon.hopper_pingpong_fp8 import launch
from gemmkit.reference import expand_block_scales
t = arch.current()
fp8 = torch.float8_e4m3fn
layout = sys.argv[1]
cfg = {"BLOCK_SIZE_M": {"coop": 128, "coop256": 256}.get(layout, 64), "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128,
       "GROUP_SIZE_M": 2, "num_warps": 8 if layout.startswith("coop") else 4, "num_stages": 2}
for mode in ("block", "block-tma", "rowcol"):
    # (4, 300 x 264 x 1024, coop): 9 tiles on 4 CTAs, the last one split 4 ways (tail=True: partials + reduce)
    for cus, (M, N, K) in [(1, (129, 256, 128)), (2, (200, 264, 256)), (1, (300, 136, 384)), (2, (64, 512, 384)),
                           (4, (300, 264, 1024))]:
        x = (torch.randn(M, K, device="cuda") * 4).to(fp8)
        w = (torch.randn(N, K, device="cuda") * 4).to(fp8)
        if mode.startswith("block"):
            xs = torch.rand(M, -(-K // 128), device="cuda") + 0.5
            if mode == "block-tma":  # M-major: the load warp copies the scales by TMA
                xs = xs.T.contiguous().T
            ws = torch.rand(-(-N // 128), -(-K // 128), device="cuda") + 0.5
            xd = x.double() * expand_block_scales(xs.double(), (1, 128), x.shape)
            wd = w.double() * expand_block_scales(ws.double(), (128, 128), w.shape)
            kw = dict(block_shape=(128, 128))
        else:
            xs, ws = torch.rand(M, device="cuda") + 0.5, torch.rand(N, device="cuda") + 0.5
            xd, wd = x.double() * xs.double()[:, None], w.double() * ws.double()[:, None]
            kw = {}
        y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        launch(x, w, xs, ws, None, y, cfg, t.with_cus(cus), tail=True, **kw)
        torch.cuda.synchronize()
        ref = xd @ wd.T
        assert torch.isfinite(y).all() and ((y.double() - ref).norm() / ref.norm()).item() < 2**-7, (mode, M, N, K)
print("sanitized run done")
"""


@pytest.mark.parametrize("tool", ["synccheck", "memcheck"])
@pytest.mark.parametrize("layout", ["coop", "coop256", "pingpong"])
def test_compute_sanitizer(tool, layout):
    """No illegal barrier use (synccheck) and no bad access (memcheck), both scale modes (block scales copied by
    cp.async and by TMA), k_steps 1-3."""
    from _util import sanitize

    out = sanitize(tool, _SANITIZE_FP8, layout)
    assert_sanitizer_clean(out)


def _race_pairs(out):
    """{((file, line), (file, line))} of every hazard pair racecheck reports (first access, other access)."""
    import re

    loc = re.compile(r"(Read|Write) access at \S+ in (\S+\.py):(\d+)")
    pairs, first, reports = set(), None, 0
    for line in out.splitlines():
        if "Race reported between" in line:
            reports += 1
            first = None  # never pair this report's accesses with the previous report's
        elif "access at" not in line:
            continue
        m = loc.search(line)
        assert m, f"racecheck line not understood: {line!r}"
        here = (m.group(2), int(m.group(3)))
        if "Race reported between" in line:
            first = here
        else:
            assert first is not None, f"an access before any report: {line!r}"
            pairs.add((first, here))
    shown = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed", out)
    assert shown and int(shown.group(1)) == reports, (reports, shown and shown.group(0))
    return pairs


def _lines_with(path_module, needle):
    import inspect

    src = inspect.getsource(path_module).splitlines()
    return {i + 1 for i, line in enumerate(src) if needle in line}


@pytest.mark.parametrize("layout", ["coop", "coop256", "pingpong"])
def test_racecheck_hazards_only_where_racecheck_cannot_see_the_order(layout):
    """racecheck (CUDA 13.0) sees only generic-proxy shared-memory accesses (not TMA or wgmma): here the
    scale slots (cp.async, LDS), the output staging stores and the mbarriers. It reports two kinds, both
    allowed here and nothing else:
      - Triton 3.6's warp-specialize dispatch (as for the BF16 ping-pong, tests/kernels/test_hopper_pingpong.py):
        accesses attributed to the kernel's `def`, its `gl.warp_specialize` lines or the `if` choosing one;
      - the x-scale slots (s_ring): the load warp's cp.async writes (hopper_fp8_parts.py) against the consumers' reads
        of the slot (hopper_fp8_mainloop.py). Those reads follow a wait on full[s], whose phase needs every
        load lane's cp.async.mbarrier.arrive.noinc (fired when that lane's copies have completed), and the
        next write into the slot follows a wait on empty[s] (the consumers' warpgroup bar.sync, then one
        arrive). A standalone probe (docs/kernels/hopper_pingpong_fp8.md) isolates it: one phase of that barrier, alone or
        with the expect-tx arrive and a TMA load (modes 0, 3): no hazard; the same pattern as a 2-slot ring
        over 8 steps (mode 5): the same hazard report, with every value right. racecheck's report is the
        ring pattern's, not this kernel's (docs/kernels/hopper_pingpong_fp8.md, "Sanitizers"). A real race
        on the slot would look the same to racecheck (mode 2 reports as many hazards): what guards the
        slot's ordering is the outputs, e.g. test_shapes at K = 4096 (32 K steps, a 3-slot coop ring
        wrapping ten times, scales 2**-8..2**8 per (row, K block), every element checked);
      - (rowcol coop) the staged epilogue scales, the same pattern on another barrier pair: the load warp's cp.async
        into vx_smem / vw_smem (hopper_fp8_parts._stage_vectors, tracked by vfull's noinc arrivals) against the
        consumers' reads (hopper_pingpong_fp8.py) after a wait on vfull, the next write after a wait on vempty.
        Guarded by the outputs:
        tests/kernels/test_hopper_pingpong_fp8.py test_coop_one_step_work_items (40 one-step items on one CTA, each of the
        two buffers used 20 times, per-row and per-column scales, every element checked)."""
    from _util import sanitize

    from gemmkit.kernels.gluon import hopper_fp8_mainloop as ml
    from gemmkit.kernels.gluon import hopper_fp8_parts as parts

    k = _k()
    fp8, mainloop = k.__file__.rsplit("/", 1)[-1], ml.__file__.rsplit("/", 1)[-1]
    loader = parts.__file__.rsplit("/", 1)[-1]  # the load partition (its cp.async copies)
    import inspect

    src, first = inspect.getsourcelines(k.hopper_pingpong_fp8_kernel.fn)
    dispatch = {first + i for i, line in enumerate(src)
                if line.lstrip().startswith(("def ", "gl.warp_specialize(", "if LAYOUT =="))}
    # the cp.async x-scale copy (the TMA copies are unseen by racecheck)
    copy_lines = _lines_with(parts, "cp_async_load(s_ring")
    read_lines = _lines_with(ml, "s_slot.slice(ROW0, 64).load(row_layout)")
    assert len(copy_lines) == 1 and len(read_lines) == 1, (copy_lines, read_lines)
    vec_copies = _lines_with(parts, "cp_async_load(vx_smem") | \
        _lines_with(parts, "cp_async_load(vw_smem")
    vec_reads = _lines_with(k, "_smem.index(vs)")  # xs, (coop 256) xs1, ws
    assert len(vec_copies) == 2 and len(vec_reads) == 3, (vec_copies, vec_reads)
    out = sanitize("racecheck", _SANITIZE_FP8, layout)
    assert "RACECHECK SUMMARY" in out, out[-4000:]

    def allowed(pair):
        (fa, la), (fb, lb) = pair
        if fa == fb == fp8 and la in dispatch and lb in dispatch:
            return True
        ends = {(fa, la), (fb, lb)}
        if any(e[0] == loader and e[1] in vec_copies for e in ends) and \
                any(e[0] == fp8 and e[1] in vec_reads for e in ends):
            return True
        return any(e[0] == loader and e[1] in copy_lines for e in ends) and \
            any(e[0] == mainloop and e[1] in read_lines for e in ends)
    bad = sorted(p for p in _race_pairs(out) if not allowed(p))
    assert not bad, f"hazards outside the dispatch, the scale slot and the staged vectors: {bad[:8]}\n{out[-3000:]}"


# ----------------------------------------------------------------------------- tail split (coop)

# (M, N, K, CTAs, block): a partial last round after full ones; ragged M, N, K; BK < bk (64-wide steps, two a
# scale block: a split may start mid-block); (256, 256) blocks (a w scale row spans two tiles).
TAIL_CASES = [(4096, 2112, 7168, 132, (128, 128)),  # the DeepSeek-V3 row: 16 tail tiles, 8 splits of 7 steps
              (300, 1032, 1040, 5, (128, 128)),  # 27 tiles on 5 CTAs: 2 tail tiles, 2 splits
              (129, 1000, 1008, 7, (128, 128)),  # 16 tiles on 7 CTAs: 2 tail tiles, 3 splits of 3 / 3 / 2 steps
              (129, 1000, 384, 7, (128, 128)),  # 3 splits of one step each (k0 = 1, 2)
              (129, 1000, 1136, 7, (256, 256)),  # split 1 starts at step 3, inside a 256-wide scale block
              (257, 520, 992, 4, (256, 256)),  # 15 tiles on 4 CTAs: 3 tail tiles, 4 // 3 = 1 split: none
              (512, 512, 1136, 7, (256, 256)),  # M % 4 == 0 (TMA x scales): 2 tail tiles, 3 splits from k0 = 0, 3, 6
              (300, 1032, 1040, 5, "bk64")]


@pytest.mark.parametrize("xs_layout", XS_LAYOUTS)
@pytest.mark.parametrize("M,N,K,cus,block", TAIL_CASES, ids=[f"{m}x{n}x{k}-{c}-{b}" for m, n, k, c, b in TAIL_CASES])
def test_tail_split(M, N, K, cus, block, xs_layout, launches):
    """The coop layout with its last round split along K (tail=True), every element against float64 (a split's
    load warp copies the scales of its own K blocks, from k0), the reduce launched exactly when tail_plan splits;
    the x scales by cp.async (row-major x_scale) and by TMA (M-major, on the rows with M % 4 == 0: 4096, 300, 512;
    M = 129 / 257 take cp.async either way)."""
    k = _k()
    cfg = CFGS["coop128x128x64s3"] if block == "bk64" else CFGS["coop128x128x128s5"]
    block = (128, 128) if block == "bk64" else block
    x, w, xs, ws = inputs(M, N, K, block, xs_layout)
    t = _target(cus)
    plan = k.derive(cfg, t, 2, block)
    tail, splits = k.tail_plan(plan, M, N, K, min(t.num_cus, -(-M // 128) * -(-N // 128)), True)
    before = launches["tail_reduce_kernel"]
    y = run(x, w, xs, ws, cfg=cfg, cus=cus, block=block, tail=True)
    assert launches["tail_reduce_kernel"] == before + (tail > 0)
    assert (tail > 0) == ((M, N, K) != (257, 520, 992)), (tail, splits)
    check(y, x, w, xs, ws, block)


@pytest.mark.parametrize("xs_layout", XS_LAYOUTS)
@pytest.mark.parametrize("M,N,K,cus", [(4096, 2112, 2048, 132), (300, 1032, 1040, 4), (257, 1000, 1008, 3)])
def test_tail_split_coop256(M, N, K, cus, xs_layout, launches):
    """The coop 256 tile's tail split in block mode: each consumer promotes its two slices with their own x scales
    (K blocks from the split's k0) and stores both as partials; every element against float64."""
    k = _k()
    cfg = CFGS["coop256x128x128s3"]
    x, w, xs, ws = inputs(M, N, K, (128, 128), xs_layout)
    t = _target(cus)
    tail, splits = k.tail_plan(k.derive(cfg, t, 2, (128, 128)), M, N, K, min(t.num_cus, -(-M // 256) * -(-N // 128)),
                               True)
    assert tail > 0 and splits > 1, (tail, splits)
    before = launches["tail_reduce_kernel"]
    y = run(x, w, xs, ws, cfg=cfg, cus=cus, tail=True)
    assert launches["tail_reduce_kernel"] == before + 1
    check(y, x, w, xs, ws)

def test_op_tail_split_on_the_deepseek_row(launches):
    """gemm_a8w8_blockscale at M = 4096 on (2112, 7168) with its shipped table (coop 128 x 128) splits the last
    round by the rule (tail=None): the kernel and one tail reduce run (on 132 SMs: 544 tiles, 16 in the last round)."""
    import gemmkit

    M, N, K = 4096, 2112, 7168
    if arch.current().num_cus != 132:
        pytest.skip("the expectation is for the H200's 132 SMs")
    x, w, xs, ws = inputs(M, N, K)
    before = launches["hopper_pingpong_fp8_kernel"], launches["tail_reduce_kernel"]
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=poisoned((M, N), torch.bfloat16, DEV))
    torch.cuda.synchronize()
    assert (launches["hopper_pingpong_fp8_kernel"], launches["tail_reduce_kernel"]) == (before[0] + 1, before[1] + 1)
    check(y, x, w, xs, ws)


@pytest.mark.parametrize("M", [4096, 1024])
def test_op_tail_split_in_cuda_graph_and_compile(M, launches):
    """The op's tail split (its fp32 workspace allocated inside the op, a second launch) captured in a CUDA graph
    and replayed on new inputs, and under torch.compile(fullgraph=True): DeepSeek-V3 (2112, 7168) at M = 4096
    (544 tiles: 16 x 8) and M = 1024 (136 tiles: 4 x 8), both split by the rule on 132 SMs."""
    import gemmkit

    N, K = 2112, 7168
    x, w, xs, ws = inputs(M, N, K)
    out = poisoned((M, N), torch.bfloat16, DEV)
    gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=out)  # compile outside the capture
    torch.cuda.synchronize()
    before = launches["tail_reduce_kernel"]
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=out)
    if arch.current().num_cus == 132:
        assert launches["tail_reduce_kernel"] == before + 1, "the captured call did not split its last round"
    x2, _, xs2, _ = inputs(M, N, K)
    x.copy_(x2)
    xs.copy_(xs2)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    check(out, x, w, xs, ws)

    def f(x, w, xs, ws):
        return gemmkit.gemm_a8w8_blockscale(x, w, xs, ws) * 2

    y = torch.compile(f, fullgraph=True)(x, w, xs, ws)
    torch.cuda.synchronize()
    check(y / 2, x, w, xs, ws)
