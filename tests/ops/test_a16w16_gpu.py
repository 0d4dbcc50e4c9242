"""gemm_a16w16 on the GPU (run on the H200: `pytest -m gpu`).

Reference: float64 on the CPU (gemmkit.reference.gemm_a16w16_ref) on the same inputs. Each output is checked
norm-wise (tests/_util.within_bound: 2x half an ulp of its dtype) and element by element
(tests/_util.within_every_element: 2 half-ulps of each element plus the fp32 accumulation's error, which grows with
K), so one wrong tile or row of a large output fails (`check`, tests/_util.check_a16w16).
"""
import os
import shutil
import subprocess
import sys

import pytest
import torch

import gemmkit
from gemmkit.reference import activation_ref
from gemmkit.ops import dispatch as D

from _util import ROOT, TOL, assert_sanitizer_clean, check_a16w16, dispatch_copies

pytestmark = pytest.mark.gpu
DEV = "cuda"


def ref_fp32(x, w, bias=None, act=None):
    y = x.float().reshape(-1, x.shape[-1]) @ w.float().T
    if bias is not None:
        y = y + bias.float()
    return activation_ref(y, act).reshape(*x.shape[:-1], w.shape[0])


def rel(y, ref):
    assert torch.isfinite(y).all(), "non-finite output (unwritten element?)"
    return ((y.float() - ref).norm() / ref.norm()).item()


def check(y, x, w, bias=None, act=None):
    """y = act(x @ w.T + bias) against the float64 reference, norm-wise and every element (_util.check_a16w16)."""
    check_a16w16(y, x, w, bias, act or "none")


SHAPES = [(8192, 8192, 8192), (4095, 4097, 1000), (1, 8192, 8192), (16, 10240, 8192), (128, 57344, 8192),
          (1024, 8192, 28672), (17, 31, 40), (333, 1000, 777), (2048, 2048, 2048), (64, 4096, 4096),
          (1, 4096, 4095), (16, 5000, 7001), (9, 333, 129), (32, 333, 129),
          (1, 10240, 5120), (32, 10240, 5120), (8, 8704, 3072), (48, 10240, 5120),
          (1000, 1000, 1000), (384, 384, 4096), (625, 230, 13164), (1414, 118, 6483), (5555, 4444, 3333),
          (65, 5120, 5120), (96, 9216, 3072), (23, 528, 22448), (59, 1088, 12080), (207, 1856, 1168),
          (235, 1600, 4256), (319, 1696, 23680), (2733, 256, 26640), (1067, 600, 22112),
          (370, 6208, 22240), (2532, 984, 2464), (1809, 640, 4720), (842, 1416, 9016), (1182, 4096, 448),
          (1195, 1968, 384), (98, 1827, 4153), (23, 1191, 16414)]
# K % 8 != 0: w read where it lies (M = 1: gemm_rows, M = 16: gemm_rows_tma, its partials in y's order); (1, 10240,
# 5120) to (48, 10240, 5120) take the config model's wide swap-AB tile (`swap_wide`); from (1000, 1000, 1000)
# `few_tiles`' ping-pong tiles, split (384 x 384, with y's workspace and pitch copies at 625 x 230 x 13164, one tile
# column at N = 118) or not, the Gluon "any" bucket above M = 4096 (shifted, on pitch copies); the last two
# `m128_tile`'s; then `decode_split`'s Triton tier tiles split along K (32- and 64-row), `few_tiles` at M = 129-256
# and its 64 x 192; `long_k_split`'s coop split along K (128 x 256 split 6; 256 x 128 split 5 on a partial last
# column); `coop_widths`' 128 x 144 on three rows of tiles (M = 370) in the 64-row split tile's place, and its 128 x
# 192 on one wave at 77%; `narrow_wide`'s 64 x 160 in the 64 x 192's place, on whole columns and on a partial last one
# with x's pitch copy; `short_k_rounds`' 64 x 128 in the 128 x 128's and in the coop's place; the last two: K and N
# off 16 bytes under a Triton split-K tile, the TMA kernel on x's and w's copies into y's workspace
# (dispatch._y_workspace)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, dtype, launches):
    x = torch.randn(M, K, device=DEV, dtype=dtype)
    w = torch.randn(N, K, device=DEV, dtype=dtype)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=dtype)
    before = dict(launches)
    gemmkit.gemm_a16w16(x, w, out=out)
    torch.cuda.synchronize()
    ran = {k for k in launches if launches[k] != before.get(k, 0)}
    # At a few tokens with K % 8 != 0 the rows kernel (w read where it lies); else the kernel the dispatch names below,
    # the split-K reduce kernel exactly when its config splits K.
    from gemmkit import configs
    from gemmkit.kernels.gluon import hopper_coop, hopper_pingpong

    from gemmkit.ops import _common as C

    target = C.target_for(x.device)
    cfg = configs.serve("a16w16", target, M, N, K)[0]  # the default buckets fitted (configs/model/)
    from gemmkit.kernels.triton import gemm_rows

    choice = D.dense(cfg, target, x, w, out)
    if choice.kernel == D.TRITON_ROWS:  # a few tokens (gemm_rows_tma declining): w read where it lies, no copy
        assert K % 8 and M <= gemm_rows.MAX_M and cfg.get("tma"), choice
        want = {"gemm_rows_kernel"} | ({"splitk_reduce_kernel"} if
                                       gemm_rows.tile(M, N, K, 2, target.num_cus)["SPLIT_K"] > 1 else set())
        assert ran == want
        check(out, x, w)
        return
    # the kernel the dispatch names (the Gluon kernel for a "gluon" config, on copies where x / w rows or y's break
    # TMA's rules: dispatch.pad_k / pitch / pitch_y; x to whole boxes of rows: pad_m), and one pad_rows_kernel per copy
    if cfg.get("backend") == "gluon" and (N * 2) % 16 == 0 and K % 8 == 0:
        assert choice.kernel == (hopper_coop.KERNEL_NAME if hopper_pingpong.is_coop(cfg) else
                                 hopper_pingpong.KERNEL_NAME)
    want = {choice.kernel} | ({"shift_rows_kernel"} if choice.kernel == D.TRITON_ROWS_TMA else set())
    copies = dispatch_copies(choice)
    if copies:
        want.add("pad_rows_kernel")
        assert launches["pad_rows_kernel"] == before.get("pad_rows_kernel", 0) + copies
    if choice.kernel == D.TRITON_ROWS_TMA and choice.config["CLASS_MAJOR"]:  # its partials always, its own reduce
        want.add("rows_reduce_kernel")
    elif choice.config.get("NUM_KSPLIT", 1) > 1:
        want.add("splitk_reduce_kernel")
    assert ran == want
    check(out, x, w)


@pytest.mark.parametrize("M,N,K", [(8, 4096, 4095), (16, 4096, 4095), (12, 1536, 7001), (17, 4096, 4095),
                                   (64, 4096, 4095), (100, 14336, 4095), (200, 28672, 8191), (48, 4096, 2054)])
def test_rows_tma(M, N, K, launches):
    """kernels/triton/gemm_rows_tma.py: w's rows off 16 bytes read where they lie by TMA, every element against
    float64; a w whose rows are views of wider ones with inf in the gaps, a bias and silu. Its tiles: swapped (M <=
    64; at M = 8 its partials in y's order, from 12 class-major and rows_reduce_kernel's smaller blocks), 64 x 128
    (100 x 14336), 128 x 256 (200 x 28672: gemm_rows_tma.WIDE_PROGRAMS)."""
    x = torch.randn(M, K, device=DEV, dtype=torch.bfloat16)
    full = torch.randn(N, K + 3, device=DEV, dtype=torch.bfloat16)
    for w, bias, act in ((full[:, :K].contiguous(), None, None),
                         (full.index_fill(1, torch.arange(K, K + 3, device=DEV), float("inf"))[:, :K],
                          torch.randn(N, device=DEV, dtype=torch.bfloat16), "silu")):
        out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
        # NaN in the allocator's free blocks: x's shifted copies leave their rows past M unwritten and the partials
        # come from torch.empty; those rows and any partial left unwritten would reach y as NaN
        torch.full((1 << 26,), float("nan"), device=DEV)  # freed at once: its block back in the cache, NaN
        before = dict(launches)
        gemmkit.gemm_a16w16(x, w, bias=bias, activation=act or "none", out=out)
        torch.cuda.synchronize()
        ran = {k for k in launches if launches[k] != before.get(k, 0)}
        assert {"gemm_rows_tma_kernel", "shift_rows_kernel"} <= ran and "pad_rows_kernel" not in ran, ran
        check(out, x, w, bias, act)


@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh", "silu"], ids=str)
@pytest.mark.parametrize("M,N,K", [(300, 1024, 512), (77, 1001, 96)], ids=["tma", "pointer"])
def test_bias_activation(M, N, K, act):
    dtype = torch.bfloat16
    x, w = torch.randn(M, K, device=DEV, dtype=dtype), torch.randn(N, K, device=DEV, dtype=dtype) / 8
    b = torch.randn(N, device=DEV, dtype=dtype)
    for out_dtype in (torch.bfloat16, torch.float32):
        y = gemmkit.gemm_a16w16(x, w, b, activation=act, out_dtype=out_dtype)
        assert y.dtype == out_dtype
        check(y, x, w, b, act)


def test_strided_and_batched_inputs():
    dtype = torch.bfloat16
    K, N = 512, 384
    w_t = torch.randn(K, N, device=DEV, dtype=dtype).t()  # transposed weight
    x3 = torch.randn(4, 33, K, device=DEV, dtype=dtype)
    x_cm = torch.randn(K, 70, device=DEV, dtype=dtype).t()  # (K, 70) storage off TMA: copied (dispatch)
    x_km = torch.randn(K, 64, device=DEV, dtype=dtype).t()  # (K, 64) storage: the TMA kernel reads it in place
    w_c = torch.randn(N, K, device=DEV, dtype=dtype)
    for x, w in [(x3, w_t), (x_cm, w_t), (x_km, w_t), (x_km, w_c), (x_cm, w_c),
                 (x3[:, ::2], torch.randn(N, 2 * K, device=DEV, dtype=dtype)[:, ::2])]:
        y = gemmkit.gemm_a16w16(x, w)
        check(y, x, w)


def test_every_shipped_sm90_config():
    """One shape in every bucket of the sm_90 table, with the table's own config."""
    from gemmkit import configs

    table = configs.load_table(str(configs.table_path("a16w16", "sm_90")))
    ms = [b for b, _, _ in table["leq"]] + [b for b, _, _ in table["geq"]] + [3000]
    for M in ms:
        x = torch.randn(M, 1536, device=DEV, dtype=torch.bfloat16)
        w = torch.randn(2048, 1536, device=DEV, dtype=torch.bfloat16)
        check(gemmkit.gemm_a16w16(x, w), x, w)


def test_torch_compile_fullgraph():
    dtype = torch.bfloat16
    x, w = torch.randn(64, 256, device=DEV, dtype=dtype), torch.randn(512, 256, device=DEV, dtype=dtype)
    b = torch.randn(512, device=DEV, dtype=dtype)

    def f(x, w, b):
        return gemmkit.gemm_a16w16(x * 2, w, b, activation="silu") + 1

    y = torch.compile(f, fullgraph=True)(x, w, b)
    assert rel(y, ref_fp32(x * 2, w, b, "silu") + 1) <= 2 * TOL[dtype]


def test_opcheck_cuda():
    x, w = torch.randn(33, 64, device=DEV, dtype=torch.bfloat16), torch.randn(48, 64, device=DEV, dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.gemmkit.gemm_a16w16.default, (x, w, None, "gelu", torch.bfloat16, ""))
    out = torch.empty(33, 48, device=DEV, dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.gemmkit.gemm_a16w16_out.default, (x, w, None, "none", "", out))


def test_cuda_graph_replay():
    dtype = torch.bfloat16
    x = torch.randn(16, 4096, device=DEV, dtype=dtype)
    w = torch.randn(8192, 4096, device=DEV, dtype=dtype)
    out = torch.empty(16, 8192, device=DEV, dtype=dtype)
    gemmkit.gemm_a16w16(x, w, out=out)  # warm up: compile outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.gemm_a16w16(x, w, out=out)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        check(out, x, w)


_SANITIZE_SCRIPT = """
import torch, gemmkit
for M, N, K, act in [(4095, 4097, 1000, "gelu"), (17, 8192, 512, None), (512, 1024, 256, "silu"), (3, 33, 7, "relu"),
                   (300, 1024, 1001, "relu"), (300, 3001, 3000, None), (100, 2000, 2888, "gelu")]:
    # (300, 1024, 1001): K % 8 != 0, x and w copied to 16-byte rows first; the last two: x copied to a 128-byte row
    # pitch, y through a workspace of 16-byte rows (dispatch.pitch / pitch_y); 4095 x 4097: both, last tiles shifted
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    gemmkit.gemm_a16w16(x, w, b, activation=act)
# K % 8 != 0 at a few tokens: w read where it lies (kernels/triton/gemm_rows.py); w's last row is the one whose last
# chunk could read past w
for M, N, K in [(1, 4096, 4095), (9, 333, 129), (3, 5, 37), (16, 40, 75)]:
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    gemmkit.gemm_a16w16(x, w)
# the ping-pong's split tiles A + B (configs.SPLIT_N), A = 2, 4, 8 B, N not a multiple of the tile
for bn in (96, 144, 160, 80):
    cfg = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
           "num_stages": 6, "backend": "gluon"}
    x = torch.randn(130, 512, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1000, 512, device="cuda", dtype=torch.bfloat16)
    gemmkit.gemm_a16w16(x, w, config=cfg)
    gemmkit.gemm_a16w16(x, w, config=dict(cfg, BLOCK_SIZE_M=128, num_warps=8))  # the cooperative kernel's
torch.cuda.synchronize()
print("sanitized run done")
"""


def _sanitizer():
    found = shutil.which("compute-sanitizer")
    for cand in ("/usr/local/cuda/bin/compute-sanitizer", "/opt/nvidia/compute-sanitizer/compute-sanitizer"):
        if not found and os.path.exists(cand):
            found = cand
    return found


def test_compute_sanitizer_memcheck():
    tool = _sanitizer()
    assert tool, "compute-sanitizer not found (it is on the H200 image)"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([tool, "--tool", "memcheck", sys.executable, "-c", _SANITIZE_SCRIPT],
                       capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0 and "sanitized run done" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    assert_sanitizer_clean(r.stdout + r.stderr)


@pytest.mark.parametrize("M", [1, 16])
@pytest.mark.parametrize("tma", [True, False], ids=["tma", "pointer"])
def test_split_k_deterministic(tma, M):
    """Split-K reduces in a fixed order: bitwise identical results run to run (M = 1 is
    specialised to a constant by Triton: the reduce kernel must compile for it)."""
    dtype = torch.bfloat16
    x = torch.randn(M, 8192, device=DEV, dtype=dtype)
    w = torch.randn(8192, 8192, device=DEV, dtype=dtype)
    b = torch.randn(8192, device=DEV, dtype=dtype)
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
           "num_stages": 4, "NUM_KSPLIT": 4, "tma": tma}
    first = gemmkit.gemm_a16w16(x, w, b, activation="gelu", config=cfg)
    check(first, x, w, b, "gelu")
    for _ in range(5):  # each into a NaN-poisoned out: a call that left elements unwritten cannot pass
        out = torch.full_like(first, float("nan"))
        gemmkit.gemm_a16w16(x, w, b, activation="gelu", config=cfg, out=out)
        assert torch.equal(out, first)


def test_tuner_smoke(tmp_path):
    """`gemmkit tune` end to end on one small shape: candidates time, a valid table is written."""
    from gemmkit import configs
    from gemmkit.tune import tune_shapes, write_tables

    best = tune_shapes([("smoke", 16, 1024, 512)], tmp_path, max_candidates=4, rep_ms=5, log=lambda *a: None)
    assert (16, 1024, 512) in best
    (path,) = write_tables(best, tmp_path, "sm_90")
    assert [m for m, _, _ in configs.load_table(str(path))["geq"]] == [16]
    # resumable: a second run measures nothing new
    lines = (tmp_path / "tune_progress.jsonl").read_text().splitlines()
    tune_shapes([("smoke", 16, 1024, 512)], tmp_path, max_candidates=4, rep_ms=5, log=lambda *a: None)
    assert (tmp_path / "tune_progress.jsonl").read_text().splitlines() == lines


@pytest.mark.parametrize("bn", [48, 80, 96, 144, 160, 192])
@pytest.mark.parametrize("M, N, K, split", [(200, 4648, 1000, 1), (512, 4608, 4096, 1), (256, 5160, 8192, 4)])
def test_pingpong_split_tiles(M, N, K, split, bn, launches):
    """The ping-pong's split tiles BN = A + B (configs.SPLIT_N) with bias + gelu (unsplit) or split-K: every element
    of a NaN-poisoned output written and right; N not a multiple of the tile (TMA clips the last tile's columns)."""
    from gemmkit import configs

    cfg = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
           "num_stages": 6, "backend": "gluon", "NUM_KSPLIT": split}
    assert configs.split_tail(bn)
    x, w = torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
    bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = launches.get(D.GLUON_BF16, 0)
    gemmkit.gemm_a16w16(x, w, bias, activation="gelu", out=out, config=cfg)
    torch.cuda.synchronize()
    assert launches[D.GLUON_BF16] == before + 1
    check(out, x, w, bias, "gelu")


@pytest.mark.parametrize("bm, bn", [(128, 48), (128, 80), (128, 96), (128, 144), (128, 160), (128, 192), (256, 80),
                                    (256, 96)])
@pytest.mark.parametrize("M, N, K, split", [(200, 4648, 1000, 1), (1000, 3000, 2000, 1), (256, 5160, 8192, 4)])
def test_coop_split_tiles(M, N, K, split, bm, bn, launches):
    """The cooperative kernel's split tiles BN = A + B (two consumers, each BM / 2 rows of both accumulators) with
    bias + gelu or split-K: every element of a NaN-poisoned output written and right; N not a multiple of the tile."""
    from gemmkit import configs

    cfg = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
           "num_stages": 6, "backend": "gluon", "NUM_KSPLIT": split}
    assert configs.split_tail(bn)
    x, w = torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
    bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
    act = "gelu" if split == 1 else "none"
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = launches.get(D.GLUON_COOP, 0)
    gemmkit.gemm_a16w16(x, w, bias, activation=act, out=out, config=cfg)
    torch.cuda.synchronize()
    assert launches[D.GLUON_COOP] == before + 1
    check(out, x, w, bias, act)


NARROW_WAVE = [(4000, 128, 2880), (8192, 8, 4096), (7800, 64, 4096), (4096, 256, 7168), (8000, 256, 4096),
               (16384, 96, 4096), (1900, 256, 2880), (4096, 160, 4096), (2048, 200, 3072), (8192, 200, 3072),
               (6000, 40, 2048)]  # the last five (and N = 8 / 96): w copied to whole columns first (dispatch.pad_n)


@pytest.mark.parametrize("M,N,K", NARROW_WAVE, ids=[f"{m}x{n}x{k}" for m, n, k in NARROW_WAVE])
def test_narrow_wave_shapes(M, N, K, launches):
    """The config model's `narrow_wave` tiles as served (no config=): one wave of ping-pong tiles on routers' narrow
    N, with bias + silu; M off the tile (4000, 7800, 1900, 6000) and N past the tile's columns (8, 96, 160, 200,
    40: w copied to whole columns, the bias read for N only) included; every element of a NaN-poisoned output
    written and right."""
    from gemmkit import configs
    from gemmkit.ops import _common as C

    cfg, source = configs.serve("a16w16", C.target_for(torch.device(DEV)), M, N, K)
    assert f"N = {N}: one wave" in source and cfg["backend"] == "gluon", source
    x, w = torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
    bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = dict(launches)
    gemmkit.gemm_a16w16(x, w, bias, activation="silu", out=out)
    torch.cuda.synchronize()
    assert launches[D.GLUON_BF16] == before.get(D.GLUON_BF16, 0) + 1
    padded = D.pad_n(D.GLUON_BF16, cfg, M, N, K, 2, 2)  # N under one tile; past it the last column shifts back
    assert bool(padded) == bool(N % cfg["BLOCK_SIZE_N"] and N < cfg["BLOCK_SIZE_N"])
    assert launches.get("pad_rows_kernel", 0) == before.get("pad_rows_kernel", 0) + bool(padded)
    check(out, x, w, bias, "silu")


# x copied to whole TMA boxes of rows (ops/dispatch.py pad_m) for each bf16 Gluon kernel: the ping-pong, its swap-AB
# (the tokens are the boxes' rows), split-K (fp32 slabs of whole tiles), the cooperative 128- and 256-row tiles.
ROW_PAD_CONFIGS = {
    "pingpong": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
                 "num_stages": 6, "backend": "gluon"},
    "swap_ab": {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
                "num_stages": 8, "backend": "gluon", "swap_ab": True},
    "pingpong_split": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                       "num_warps": 4, "num_stages": 6, "NUM_KSPLIT": 4, "backend": "gluon"},
    "coop_128": {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
                 "num_stages": 4, "backend": "gluon"},
    "coop_256": {"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 8,
                 "num_stages": 4, "backend": "gluon"},
}


def _silu_call(M, N, K, cfg, kernel, launches):
    """One bias + silu call of `cfg` on fresh (M, N, K) operands into a NaN-poisoned output, checked to have launched
    `kernel` once: (x, w, bias, out, the launch counts before it)."""
    x, w = torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
    bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
    out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
    before = dict(launches)
    gemmkit.gemm_a16w16(x, w, bias, activation="silu", out=out, config=cfg)
    torch.cuda.synchronize()
    assert launches[kernel] == before.get(kernel, 0) + 1
    return x, w, bias, out, before


# M under one tile of rows (at or past one, the last row of tiles shifts back instead: test_shifted_last_tiles): the
# tokens loaded in boxes of only their rows (kernels/_host.x_boxes), or with those off, x copied to whole boxes
ROW_PAD_CASES = [("pingpong", 17), ("pingpong", 80), ("swap_ab", 17), ("pingpong_split", 17), ("pingpong_split", 40),
                 ("coop_128", 17), ("coop_128", 80), ("coop_256", 80), ("coop_256", 200)]


@pytest.mark.parametrize("name,M", ROW_PAD_CASES, ids=[f"{n}-{m}" for n, m in ROW_PAD_CASES])
def test_row_padded_x(M, name, launches, monkeypatch):
    """No copy of x where its boxes hold M; with kernels/_host.TRIM_X_BOX off, x copied to whole boxes (pad_m), the
    same rows summed in the same order: bitwise the same output."""
    from gemmkit import callplan
    from gemmkit.kernels import _host as H

    N, K = 8192, 4096
    cfg = ROW_PAD_CONFIGS[name]
    kernel = D.GLUON_COOP if cfg["num_warps"] == 8 else D.GLUON_BF16
    assert not D.pad_m(kernel, cfg, M, N, K, 2, 2)
    x, w, bias, out, before = _silu_call(M, N, K, cfg, kernel, launches)
    assert launches["pad_rows_kernel"] == before.get("pad_rows_kernel", 0)
    check(out, x, w, bias, "silu")
    monkeypatch.setattr(H, "TRIM_X_BOX", False)
    monkeypatch.setattr(callplan, "ENABLED", False)  # (the first call's plan would replay its launches)
    assert D.pad_m(kernel, cfg, M, N, K, 2, 2), "no copy: the test misses"  # every M here leaves a partial box
    padded = torch.full_like(out, float("nan"))
    gemmkit.gemm_a16w16(x, w, bias, activation="silu", out=padded, config=cfg)
    torch.cuda.synchronize()
    assert launches["pad_rows_kernel"] == before.get("pad_rows_kernel", 0) + 1
    assert torch.equal(padded, out)



# The last row and column of tiles shifted back to end at M / N (kernels/gluon/hopper_parts.py `tile_origin`), for
# each bf16 Gluon kernel and tile kind: M and N off every tile and at least one tile each, so nothing is copied.
SHIFT_CONFIGS = dict(ROW_PAD_CONFIGS,
                     pingpong_64={"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8,
                                  "num_warps": 4, "num_stages": 6, "backend": "gluon"},
                     pingpong_192={"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                                   "num_warps": 4, "num_stages": 6, "backend": "gluon"},
                     coop_144={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 144, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                               "num_warps": 8, "num_stages": 6, "backend": "gluon"},
                     coop_split_k={"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
                                   "num_warps": 8, "num_stages": 4, "backend": "gluon", "NUM_KSPLIT": 3})
# last tiles of 8-104 rows / columns beside a whole one; K = 1000 / 2888 / 40: a last K step of 40 or 104 / 8 or 72
# / 40 columns (TMA's zero fill; the 3-way split-K's last range runs past K)
SHIFT_SHAPES = [(300, 1000, 1000), (1000, 2056, 4096), (640, 1024, 2888), (300, 1000, 40)]


@pytest.mark.parametrize("name", list(SHIFT_CONFIGS))
@pytest.mark.parametrize("M,N,K", SHIFT_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHIFT_SHAPES])
def test_shifted_last_tiles(M, N, K, name, launches):
    """Every element of a NaN-poisoned output written and right (bias + silu); no copy of x or w; and bitwise the
    result of the same config on zero-padded copies of x and w (whole tiles, so unshifted; K as it is): the rows
    and columns a shifted tile shares with its neighbour are computed twice and must come out the same both times."""
    cfg = SHIFT_CONFIGS[name]
    kernel = D.GLUON_COOP if cfg["num_warps"] == 8 else D.GLUON_BF16
    assert not D.pad_m(kernel, cfg, M, N, K, 2, 2) and not D.pad_n(kernel, cfg, M, N, K, 2, 2)
    x, w, bias, out, before = _silu_call(M, N, K, cfg, kernel, launches)
    choice = D.dense(cfg, gemmkit.arch.current(), x, w, out)  # K % 16 != 0: copies at a 128-byte row pitch only
    copies = bool(choice.pitch_x) + bool(choice.pitch_w)
    assert launches.get("pad_rows_kernel", 0) == before.get("pad_rows_kernel", 0) + copies
    check(out, x, w, bias, "silu")
    # whole tiles of this config: the same tile count, so the same split count (hopper_host.fit_split_k)
    bm, bn = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]  # y's tile (swap-AB's too)
    mp, np_ = -(-M // bm) * bm, -(-N // bn) * bn
    xp = torch.zeros(mp, K, device=DEV, dtype=x.dtype)
    wp = torch.zeros(np_, K, device=DEV, dtype=w.dtype)
    bp = torch.zeros(np_, device=DEV, dtype=bias.dtype)
    xp[:M], wp[:N], bp[:N] = x, w, bias
    whole = gemmkit.gemm_a16w16(xp, wp, bp, activation="silu", config=cfg)[:M, :N]
    assert torch.equal(out, whole)


# each loads at least D.PITCH_MIN_LOADS of the copied operand on every config below (smaller calls keep their rows)
PITCH_SHAPES = [(1500, 704, 3000), (304, 8000, 1000), (100, 6000, 2888), (8000, 96, 3000), (17, 8192, 20008)]


PITCH_CONFIGS = dict(SHIFT_CONFIGS, triton_tma={"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128,
                                                "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 4, "tma": True})


# the Triton tier's kernel copies from D.PITCH_TRITON_MIN_MACS (2^31) multiply-adds
PITCH_CASES = [(name, shape) for name in ("pingpong", "swap_ab", "pingpong_split", "coop_128", "coop_144")
               for shape in PITCH_SHAPES] + [("triton_tma", s) for s in ((1500, 704, 3000), (100, 8000, 2888))]


@pytest.mark.parametrize("name,M,N,K", [(n, *s) for n, s in PITCH_CASES],
                         ids=[f"{n}-{s[0]}x{s[1]}x{s[2]}" for n, s in PITCH_CASES])
def test_pitch_copies(M, N, K, name, launches, monkeypatch):
    """x and / or w copied to a 128-byte row pitch (ops/dispatch.py `pitch`: K % 16 != 0, the operand no larger than
    the other, its tiles loading PITCH_MIN_LOADS of it; with pad_n's copy at 8000 x 96 on the ping-pong): every element
    of a NaN-poisoned output written and right, one pad_rows_kernel launch per copy, and bitwise the result on the
    operands as given (dispatch.PITCH off); the Gluon kernels and the Triton tier's TMA kernel (its M_LEQ_128 bucket's
    tile)."""
    cfg = PITCH_CONFIGS[name]
    kernel = D.TRITON_TMA if "backend" not in cfg else D.GLUON_COOP if cfg["num_warps"] == 8 else D.GLUON_BF16
    x, w, bias, out, before = _silu_call(M, N, K, cfg, kernel, launches)
    choice = D.dense(cfg, gemmkit.arch.current(), x, w, out)
    px, pw = choice.pitch_x, choice.pitch_w
    assert px or pw, "no pitch copy: the test misses"
    assert launches["pad_rows_kernel"] == before.get("pad_rows_kernel", 0) + bool(px) + bool(pw)
    check(out, x, w, bias, "silu")
    from gemmkit import callplan

    monkeypatch.setattr(callplan, "ENABLED", False)  # the full path (a plan would repeat the copies)
    monkeypatch.setattr(D, "PITCH", False)
    assert torch.equal(gemmkit.gemm_a16w16(x, w, bias, activation="silu", config=cfg), out)


@pytest.mark.parametrize("M,N,K", [(1500, 704, 3000), (300, 3001, 3000), (4095, 4097, 1000), (80, 5480, 7032)],
                         ids=["pitch_w", "pitch_x_and_y", "pitch_x_y_shift", "triton_tma_pitch_x"])
def test_copies_replay(M, N, K):
    """A call whose dispatch copies operands to a 128-byte pitch and / or writes y through a workspace: its call plan
    (callplan.py: the copies' launches, the workspace views, the TMA maps over them) replays on fresh inputs with
    every element right, and the second call is a replay."""
    from gemmkit import callplan

    for i in range(2):
        replays = callplan.STATS["replays"]
        x, w = torch.randn(M, K, device=DEV, dtype=torch.bfloat16), torch.randn(N, K, device=DEV, dtype=torch.bfloat16)
        bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
        y = gemmkit.gemm_a16w16(x, w, bias, activation="gelu")
        torch.cuda.synchronize()
        check(y, x, w, bias, "gelu")
        assert callplan.STATS["replays"] == replays + i


# The ping-pong's swap-AB tile on a weight passed as W.t() ((K, N) storage): read where it lies (X_KM, wgmma's
# MN-major A). Tokens x weight rows x K step; shapes with tokens under a tile (boxes of their rows), N off the tile
# (the last weight tile shifted back along the storage's rows), K off the step (TMA's zero fill).
# (the kernel's own tests: tests/kernels/test_gluon_swap_ab.py `test_transposed_w`)
W_KN_CONFIGS = [(16, 64, 128, 8), (128, 128, 64, 4)]
W_KN_SHAPES = [(5, 4104, 1000), (17, 1000, 4096), (64, 8192, 2888), (100, 2056, 40), (128, 4096, 4096)]


@pytest.mark.parametrize("tokens,rows,bk,stages", W_KN_CONFIGS, ids=[f"{t}x{r}x{k}" for t, r, k, _ in W_KN_CONFIGS])
@pytest.mark.parametrize("M,N,K", W_KN_SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in W_KN_SHAPES])
def test_swap_ab_reads_transposed_w(M, N, K, tokens, rows, bk, stages, launches):
    """Every element of a NaN-poisoned output (bias + silu) written and right, one Gluon launch and no copy of w;
    bitwise the same config on the weight's contiguous copy (the same products summed in the same order); and the
    call's plan replays on fresh inputs."""
    from gemmkit import callplan

    cfg = {"BLOCK_SIZE_M": tokens, "BLOCK_SIZE_N": rows, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 1, "num_warps": 4,
           "num_stages": stages, "backend": "gluon", "swap_ab": True}
    for i in range(2):
        replays = callplan.STATS["replays"]
        x = torch.randn(M, K, device=DEV, dtype=torch.bfloat16)
        w = torch.randn(K, N, device=DEV, dtype=torch.bfloat16).t()  # (N, K), unit stride along N
        bias = torch.randn(N, device=DEV, dtype=torch.bfloat16)
        out = torch.full((M, N), float("nan"), device=DEV, dtype=torch.bfloat16)
        before = dict(launches)
        gemmkit.gemm_a16w16(x, w, bias, activation="silu", out=out, config=cfg)
        torch.cuda.synchronize()
        assert launches[D.GLUON_BF16] == before.get(D.GLUON_BF16, 0) + 1
        choice = D.dense(cfg, gemmkit.arch.current(), x, w, out)  # (K % 16 == 8: x copied to a 128-byte pitch)
        assert (choice.pad_n, choice.pitch_w, bool(choice.pad_k)) == (0, 0, False), choice  # w read where it lies
        copies = bool(choice.pad_m or choice.pitch_x)
        assert launches.get("pad_rows_kernel", 0) == before.get("pad_rows_kernel", 0) + copies
        assert callplan.STATS["replays"] == replays + i
        check(out, x, w, bias, "silu")
    assert torch.equal(out, gemmkit.gemm_a16w16(x, w.contiguous(), bias, activation="silu", config=cfg))


def test_decode_on_transposed_w_takes_the_swap_tile(launches):
    """gemm_a16w16(x, W.t()) at decode sizes, served by the config model: the Gluon swap-AB tile, right."""
    K, N = 4096, 4096
    w = torch.randn(K, N, device=DEV, dtype=torch.bfloat16).t()
    for M in (1, 8, 16, 64, 128):
        x = torch.randn(M, K, device=DEV, dtype=torch.bfloat16)
        cfg = gemmkit.configs.serve("a16w16", gemmkit.arch.current(), M, N, K)[0]
        before = launches.get(D.GLUON_BF16, 0)
        y = gemmkit.gemm_a16w16(x, w)
        torch.cuda.synchronize()
        assert launches.get(D.GLUON_BF16, 0) == before + bool(cfg.get("swap_ab")), (M, cfg)
        check(y, x, w)
