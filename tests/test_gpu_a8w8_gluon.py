"""The Gluon FP8 kernel (kernels/gluon/hopper_pingpong_fp8.py) and gemm_a8w8's "backend": "gluon"
on the H200 (`pytest -m gpu tests/test_gpu_a8w8_gluon.py`).

Reference: float64 on the device from the dequantized operands (fp8 values and fp32 scales are
exact in float64). Every output is poisoned with NaN first. Two bounds, both must hold:
  norm-wise  ||y - ref|| <= TOL * ||ref|| (tests/_util.within_bound; fp32 out: 2**-12, the fp8
             accumulation dominates, as in tests/test_gpu_a8w8.py)
  per element |y - ref| <= 2**-7 |ref| + 2**-10 A + tiny, A = (|x| @ |w|.T) * xs * ws + |bias|: one
             output rounding plus the reduced-precision fp8 adder inside one promotion interval
             (a missing, swapped or misscaled element is off by about |ref| and fails).
The precision test runs the Triton tier's promoted kernel on the same inputs: the Gluon kernel's
error against float64 must match it (and not Triton's unpromoted default, ~16x larger).
"""
import pytest
import torch

from gemmkit import arch

from _util import TOL, poisoned, q8, scales, within_bound

pytestmark = pytest.mark.gpu
DEV = "cuda"
FP8 = torch.float8_e4m3fn


def _cfg(bm, bn, bk, stages, group=8, warps=4):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": group, "num_warps": warps,
            "num_stages": stages}


CFGS = {"128x128x128s3": _cfg(128, 128, 128, 3),  # one shared output tile (c_free hand-off)
        "128x128x128s2": _cfg(128, 128, 128, 2),  # two output tiles
        "64x128x128s4": _cfg(64, 128, 128, 4, group=4),
        "128x64x64s6": _cfg(128, 64, 64, 6),
        # coop (num_warps 8): one 128-row tile, a 64-row half per consumer, one ring read by both
        "coop128x128x128s6": _cfg(128, 128, 128, 6, warps=8),
        "coop128x64x64s3": _cfg(128, 64, 64, 3, group=4, warps=8),  # the ring wraps every 3 K steps
        # BN < 32: the load warp stages 32 w scales a work item (one a lane), the consumers read 16
        "coop128x16x128s4": _cfg(128, 16, 128, 4, warps=8),
        # coop 256: a 128-row half (two slices, one partial, each chain waited) per consumer, one 256-row a a slot
        "coop256x128x128s3": _cfg(256, 128, 128, 3, group=16, warps=8),
        "coop256x64x64s4": _cfg(256, 64, 64, 4, group=4, warps=8)}  # the ring wraps every 4 K steps
TRITON_PROMOTED = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                   "num_warps": 8, "num_stages": 4, "tma": True, "persistent": True}


def _k():
    from gemmkit.kernels.gluon import hopper_pingpong_fp8

    return hopper_pingpong_fp8


def _target(cus=None):
    t = arch.current()
    return t.with_cus(cus) if cus else t


def inputs(M, N, K, bias_dtype=torch.bfloat16):
    x, w = q8(M, K, dtype=FP8, device=DEV), q8(N, K, dtype=FP8, device=DEV)
    xs, ws = scales(M, device=DEV), scales(N, device=DEV)
    b = (torch.randn(N, device=DEV) * 4).to(bias_dtype) if bias_dtype is not None else None
    return x, w, xs, ws, b


def run(x, w, xs, ws, b, out_dtype=torch.bfloat16, cfg=CFGS["128x128x128s3"], cus=None, tail=None):
    y = poisoned((x.shape[0], w.shape[0]), out_dtype, DEV)
    _k().launch(x, w, xs, ws, b, y, cfg, _target(cus), tail=tail)
    torch.cuda.synchronize()
    return y


def ref64(x, w, xs, ws, b):
    """(float64 reference, float64 magnitude A) on the device."""
    xd, wd = x.float().double(), w.float().double()
    s = xs.double().reshape(-1, 1) * ws.double().reshape(1, -1)
    ref = (xd @ wd.T) * s
    mag = (xd.abs() @ wd.abs().T) * s
    if b is not None:
        ref, mag = ref + b.double(), mag + b.double().abs()
    return ref, mag


def check(y, x, w, xs, ws, b):
    ref, mag = ref64(x, w, xs, ws, b)
    assert torch.isfinite(y).all(), "non-finite output (an element never written?)"
    if y.dtype == torch.float32:
        rel = ((y.double() - ref).norm() / ref.norm()).item()
        assert rel <= 2**-12, f"rel err {rel:.3g}"
    else:
        ok, msg = within_bound(y, ref, y.dtype)
        assert ok, msg
    err = (y.double() - ref).abs()
    bound = 2**-7 * ref.abs() + 2**-10 * mag + 1e-30
    bad = (err > bound).nonzero()
    assert bad.numel() == 0, f"{bad.shape[0]} elements out of bound, first {bad[:3].tolist()}: " \
        f"y {y[tuple(bad[0])].item()} ref {ref[tuple(bad[0])].item()}"


SHAPES = [(1, 264, 128), (17, 1000, 528), (4095, 1032, 784), (256, 512, 4096), (64, 8, 16), (129, 136, 80),
          (2048, 2048, 2048)]


@pytest.mark.parametrize("cfg", list(CFGS), ids=list(CFGS))
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, cfg):
    """M = 1, 17, 4095; N, K not multiples of the tile (TMA zero-fills and clips); K < BLOCK_K."""
    x, w, xs, ws, b = inputs(M, N, K)
    check(run(x, w, xs, ws, b, cfg=CFGS[cfg]), x, w, xs, ws, b)


BF, F16, F32 = torch.bfloat16, torch.float16, torch.float32
OUT_BIAS = [(BF, None), (BF, BF), (BF, F32), (F16, F16), (F16, None), (F32, F32), (F32, BF)]


@pytest.mark.parametrize("cfg", ["128x128x128s3", "coop128x128x128s6", "coop256x128x128s3"])
@pytest.mark.parametrize("out_dtype,bias_dtype", OUT_BIAS, ids=[f"{o}-{b}" for o, b in OUT_BIAS])
def test_bias_out_dtypes(out_dtype, bias_dtype, cfg):
    x, w, xs, ws, b = inputs(300, 1024, 1040, bias_dtype)
    y = run(x, w, xs, ws, b, out_dtype, cfg=CFGS[cfg])
    assert y.dtype == out_dtype
    check(y, x, w, xs, ws, b)


@pytest.mark.parametrize("cus", [1, 2, 3, 7])
@pytest.mark.parametrize("cfg", ["128x128x128s3", "128x128x128s2", "coop128x128x128s6", "coop256x128x128s3"])
def test_small_persistent_grids(cus, cfg):
    """Many tiles per CTA (1 CTA: 5 x 8 = 40 tiles, 20 per consumer): both rings wrap many
    times, both consumers run every hand-off of c_free (one shared output tile) or not (two). coop: both
    consumers on all 35 tiles, the one ring's empty barriers take two arrivals each round."""
    M, N, K = 5 * 128 - 3, 7 * 128 + 8, 400
    x, w, xs, ws, b = inputs(M, N, K)
    check(run(x, w, xs, ws, b, cfg=CFGS[cfg], cus=cus), x, w, xs, ws, b)


@pytest.mark.parametrize("cus", [1, 3])
@pytest.mark.parametrize("K", [16, 128])
def test_coop_one_step_work_items(cus, K):
    """coop rowcol with one K step per work item and many items per CTA (1 CTA: 40): the load warp, free to run
    six slots ahead, is held VECTOR_BUFFERS items ahead by the staged scale vectors (vempty); each item's
    epilogue must read its own tile's x / w scales (they differ per row and column), after every wrap."""
    M, N, K = 5 * 128 - 3, 7 * 128 + 8, K
    x, w, xs, ws, b = inputs(M, N, K)
    check(run(x, w, xs, ws, b, cfg=CFGS["coop128x128x128s6"], cus=cus), x, w, xs, ws, b)


@pytest.mark.parametrize("cus", [1, 3])
@pytest.mark.parametrize("bias_dtype", [None, torch.bfloat16], ids=["nobias", "bias"])
@pytest.mark.parametrize("K", [128, 256, 384, 512, 640])
def test_coop_k_steps_many_items(K, bias_dtype, cus):
    """coop 128 with 1-5 K steps a work item (odd and even counts end the mainloop in different partials), with and
    without a bias, many items per CTA (1 CTA: 40), the 6-slot ring wrapping at different offsets across the K
    values."""
    M, N = 5 * 128 - 3, 7 * 128 + 8
    x, w, xs, ws, b = inputs(M, N, K, bias_dtype)
    check(run(x, w, xs, ws, b, cfg=CFGS["coop128x128x128s6"], cus=cus), x, w, xs, ws, b)


@pytest.mark.parametrize("cfg", ["128x128x128s3", "coop128x128x128s6", "coop256x128x128s3"])
def test_deterministic(cfg):
    """Without a tail split each element is one consumer's K-ordered sum: bitwise identical run to run, any grid,
    and the same bits in every layout (the same chains, promotions and epilogue arithmetic per element). With
    one (coop, forced: 128-row tiles, 192 tiles on 132 SMs, 60 tail tiles split in 2; 256-row tiles, 96 tiles on 40
    CTAs, 16 tail tiles split in 2), bitwise identical run to run on one grid."""
    x, w, xs, ws, b = inputs(1000, 3000, 3072)
    first = run(x, w, xs, ws, b, cfg=CFGS[cfg], tail=False)
    check(first, x, w, xs, ws, b)
    for cus in (None, None, 5, 1):
        assert torch.equal(run(x, w, xs, ws, b, cfg=CFGS[cfg], cus=cus, tail=False), first)
    assert torch.equal(run(x, w, xs, ws, b, cfg=CFGS["128x128x128s2"]), first)
    cus = 40 if CFGS[cfg]["BLOCK_SIZE_M"] == 256 else 132
    tailed = run(x, w, xs, ws, b, cfg=CFGS[cfg], cus=cus, tail=True)
    check(tailed, x, w, xs, ws, b)
    assert torch.equal(run(x, w, xs, ws, b, cfg=CFGS[cfg], cus=cus, tail=True), tailed)


@pytest.mark.parametrize("cfg", ["128x128x128s3", "coop128x128x128s6", "coop256x128x128s3"])
def test_precision_matches_the_promoted_triton_kernel(cfg):
    """fp32 out, K = 16384: error against float64 equals the Triton tier's promoted kernel's (promotion
    every 128 products), far under Triton's unpromoted default (2.05e-3 at 8192^3)."""
    import gemmkit

    M, N, K = 512, 512, 16384
    x, w = (torch.randn(M, K, device=DEV) * 4).to(FP8), (torch.randn(N, K, device=DEV) * 4).to(FP8)
    xs, ws = torch.ones(M, device=DEV), torch.ones(N, device=DEV)
    ref, _ = ref64(x, w, xs, ws, None)
    y_g = run(x, w, xs, ws, None, torch.float32, cfg=CFGS[cfg])
    y_t = gemmkit.gemm_a8w8(x, w, xs, ws, out_dtype=torch.float32, config=TRITON_PROMOTED)
    e_g = ((y_g.double() - ref).norm() / ref.norm()).item()
    e_t = ((y_t.double() - ref).norm() / ref.norm()).item()
    print(f"{cfg} K={K}: gluon rel err {e_g:.4g}, triton promoted {e_t:.4g}, bitwise equal {torch.equal(y_g, y_t)}")
    assert e_g <= 1.05 * e_t + 1e-7 and e_g < 4e-4, (e_g, e_t)


@pytest.mark.parametrize("cfg", ["128x128x128s3", "coop128x128x128s6", "coop256x128x128s3"])
@pytest.mark.parametrize("scale_shape", ["2d", "1d"])
@pytest.mark.parametrize("M,N,K", [(1000, 4096, 1024), (256, 576, 7168), (129, 104, 64), (1, 8192, 1024)])
def test_op_backend_gluon(M, N, K, scale_shape, cfg, launches):
    """gemm_a8w8 with a "backend": "gluon" config (either layout) runs this kernel (LAUNCHES) for both
    scale shapes."""
    import gemmkit

    x, w, xs, ws, b = inputs(M, N, K)
    xs_a, ws_a = (xs.reshape(M, 1), ws.reshape(1, N)) if scale_shape == "2d" else (xs, ws)
    before = launches["hopper_pingpong_fp8_kernel"]
    y = gemmkit.gemm_a8w8(x, w, xs_a, ws_a, b, out=poisoned((M, N), torch.bfloat16, DEV),
                          config={**CFGS[cfg], "backend": "gluon"})
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_fp8_kernel"] == before + 1
    check(y, x, w, xs, ws, b)


def test_op_backend_gluon_strided_views(launches):
    """A row-sliced x (row stride 2K, still TMA-aligned) runs on Gluon; a column-major x falls back."""
    import gemmkit

    M, N, K = 300, 512, 1024
    big, _w, xs, ws, b = inputs(M, N, 2 * K)
    x, w = big[:, K:], q8(N, K, dtype=FP8, device=DEV)
    cfg = {**CFGS["128x128x128s3"], "backend": "gluon"}
    before = launches["hopper_pingpong_fp8_kernel"]
    y = gemmkit.gemm_a8w8(x, w, xs, ws, b, out=poisoned((M, N), torch.bfloat16, DEV), config=cfg)
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_fp8_kernel"] == before + 1
    check(y, x, w, xs, ws, b)
    xt = x.contiguous().T.contiguous().T  # same values, stride (1, M)
    y = gemmkit.gemm_a8w8(xt, w, xs, ws, b, out=poisoned((M, N), torch.bfloat16, DEV), config=cfg)
    torch.cuda.synchronize()
    assert launches["hopper_pingpong_fp8_kernel"] == before + 1
    check(y, xt, w, xs, ws, b)


def test_op_backend_gluon_falls_back_to_triton(launches):
    """K % 16 != 0 (fp8 rows not 16-byte aligned), split-K and int8: the same config runs on the
    Triton tier, still correct."""
    import gemmkit
    from gemmkit.reference import gemm_a8w8_ref

    cfg = {**CFGS["64x128x128s4"], "backend": "gluon"}
    for (M, N, K), extra, dtype in [((300, 256, 1000), {}, FP8), ((16, 512, 4096), {"NUM_KSPLIT": 4}, FP8),
                                    ((200, 256, 512), {}, torch.int8)]:
        x, w = q8(M, K, dtype=dtype, device=DEV), q8(N, K, dtype=dtype, device=DEV)
        xs, ws = scales(M, 1, device=DEV), scales(1, N, device=DEV)
        before = dict(launches)
        y = gemmkit.gemm_a8w8(x, w, xs, ws, out=poisoned((M, N), torch.bfloat16, DEV), config={**cfg, **extra})
        torch.cuda.synchronize()
        assert launches["hopper_pingpong_fp8_kernel"] == before.get("hopper_pingpong_fp8_kernel", 0)
        assert sum(launches.values()) > sum(before.values())
        ok, msg = within_bound(y, gemm_a8w8_ref(x, w, xs, ws), torch.bfloat16)
        assert ok, msg


def test_unsupported_inputs_raise():
    k = _k()
    t = _target()
    x, w, xs, ws, _ = inputs(64, 64, 100)  # K % 16 != 0: fp8 row stride not 16-byte aligned
    with pytest.raises(ValueError, match="TMA"):
        k.launch(x, w, xs, ws, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), CFGS["64x128x128s4"], t)
    xi = torch.zeros(64, 64, device=DEV, dtype=torch.int8)
    with pytest.raises(ValueError, match="float8_e4m3fn"):
        k.launch(xi, xi, xs, ws, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16), CFGS["64x128x128s4"], t)
    x, w, xs, ws, _ = inputs(64, 64, 64)
    with pytest.raises(ValueError, match="BLOCK_SIZE_K"):
        k.launch(x, w, xs, ws, None, torch.empty(64, 64, device=DEV, dtype=torch.bfloat16),
                 {**CFGS["64x128x128s4"], "BLOCK_SIZE_K": 256}, t)


def test_tol_is_the_shared_one():
    assert TOL[torch.bfloat16] == 2**-8  # the bound test_gpu_a8w8.py uses for fp8 with bf16 out


# ----------------------------------------------------------------------------- tail split (coop)

# (M, N, K, CTAs): tiles = cdiv(M, 128) * cdiv(N, 128) > CTAs with a partial last round; ragged M, N, K.
TAIL_CASES = [(4096, 2112, 2048, 132),  # 544 tiles on 132 SMs: 16 tail tiles, 8 splits of 2 steps
              (1000, 3000, 3072, 132),  # 192 tiles: 60 tail tiles, 2 splits
              (129, 1000, 384, 7),  # 16 tiles on 7 CTAs: 2 tail tiles, 3 splits of one step each
              (300, 1000, 1040, 4),  # 24 tiles on 4 CTAs: 0 tail -> none; 3 x 8 = 24 % 4 = 0 (a control)
              (300, 1032, 1040, 5),  # 27 tiles on 5 CTAs: 2 tail tiles, 2 splits of 5 / 4 steps
              (129, 1000, 1008, 7),  # 16 tiles on 7 CTAs: 2 tail tiles, 3 splits of 3 / 3 / 2 steps (K % 128 = 112)
              (17, 136, 304, 1)]  # 2 tiles on 1 CTA: 0 tail (tiles % CTAs == 0)


@pytest.mark.parametrize("out_dtype,bias_dtype", [(torch.bfloat16, torch.bfloat16), (torch.float32, torch.float32),
                                                  (torch.float16, None)], ids=["bf16", "fp32", "fp16-nobias"])
@pytest.mark.parametrize("M,N,K,cus", TAIL_CASES, ids=[f"{m}x{n}x{k}-{c}" for m, n, k, c in TAIL_CASES])
def test_tail_split(M, N, K, cus, out_dtype, bias_dtype, launches):
    """The coop layout with its last round split along K (forced on: tail=True), every element against
    float64, the reduce launched exactly when tail_plan splits; the partials carry the scales, the reduce the
    bias."""
    k = _k()
    cfg = CFGS["coop128x128x128s6"]
    x, w, xs, ws, b = inputs(M, N, K, bias_dtype)
    t = _target(cus)
    tail, splits = k.tail_plan(k.derive(cfg, t, 2), M, N, K, min(t.num_cus, -(-M // 128) * -(-N // 128)), True)
    before = launches["tail_reduce_kernel"]
    y = run(x, w, xs, ws, b, out_dtype, cfg=cfg, cus=cus, tail=True)
    assert launches["tail_reduce_kernel"] == before + (tail > 0)
    assert (tail > 0) == ((M, N, K) not in [(300, 1000, 1040), (17, 136, 304)]), (tail, splits)
    check(y, x, w, xs, ws, b)


# (M, N, K, CTAs) for the coop 256 tile: cdiv(M, 256) * cdiv(N, 128) tiles with a partial last round.
TAIL_CASES_256 = [(4096, 2112, 2048, 132),  # 272 tiles on 132 SMs: 8 tail tiles, 8 splits of 2 steps
                  (300, 1032, 1040, 4),  # 18 tiles on 4 CTAs: 2 tail tiles, 2 splits (M = 300: the second half ragged)
                  (257, 1000, 1008, 3)]  # 16 tiles on 3 CTAs: 1 tail tile, 3 splits (K % 128 = 112)


@pytest.mark.parametrize("out_dtype,bias_dtype", [(torch.bfloat16, torch.bfloat16), (torch.float32, torch.float32)],
                         ids=["bf16", "fp32"])
@pytest.mark.parametrize("M,N,K,cus", TAIL_CASES_256, ids=[f"{m}x{n}x{k}-{c}" for m, n, k, c in TAIL_CASES_256])
def test_tail_split_coop256(M, N, K, cus, out_dtype, bias_dtype, launches):
    """The coop 256 tile's tail split: each consumer stores both 64-row slices of its half as partials (with their
    own staged x scales); every element against float64, the reduce launched exactly when tail_plan splits."""
    k = _k()
    cfg = CFGS["coop256x128x128s3"]
    x, w, xs, ws, b = inputs(M, N, K, bias_dtype)
    t = _target(cus)
    tail, splits = k.tail_plan(k.derive(cfg, t, 2), M, N, K, min(t.num_cus, -(-M // 256) * -(-N // 128)), True)
    assert tail > 0 and splits > 1, (tail, splits)
    before = launches["tail_reduce_kernel"]
    y = run(x, w, xs, ws, b, out_dtype, cfg=cfg, cus=cus, tail=True)
    assert launches["tail_reduce_kernel"] == before + 1
    check(y, x, w, xs, ws, b)
