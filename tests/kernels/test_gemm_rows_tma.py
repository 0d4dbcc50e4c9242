"""kernels/triton/gemm_rows_tma.py: weight rows TMA cannot address (K % 8 != 0 in bf16, K % 16 != 0 in fp8 / int8)
read where they lie by TMA, past gemm_rows' few tokens. Through the ops a user calls (gemm_a16w16; gemm_a8w8 with its
scales), in the interpreter: every element against the float64 reference, into poisoned outputs (N large enough that
x's shifted copies pass the dispatch's share; at the small K the interpreter affords, under the dispatch's K floors,
with the floors lowered: `small_k`); the kernels the dispatch says (x's shifted copies, no copy of w); the row
classes and their shifts, the masked first and last chunks, split-K, the swapped and unswapped tiles, a strided w
whose gaps hold inf (NaN in fp8), a transposed x; and the host's refusals."""
import pytest
import torch
import triton
from _util import poisoned, randn, within_bound

from gemmkit import arch, launcher
from gemmkit.kernels.triton import gemm_rows_tma as R
from gemmkit.kernels.triton import pad
from gemmkit.ops import dispatch as D
from gemmkit.ops.gemm_a16w16 import gemm_a16w16

pytestmark = pytest.mark.interpreter
BF16 = torch.bfloat16


@pytest.fixture
def small_k(monkeypatch):
    """The kernel at the small K the interpreter can afford: the dispatch's K floors (a speed rule: below them the
    copy of w ran faster on the GPU; ROWS_TMA_MIN_K*) lowered so these calls reach it. The kernel's sums do not
    depend on them; test_as_shipped and test_the_dispatch_takes_it_where_it_pays run with the floors as shipped."""
    monkeypatch.setattr(D, "ROWS_TMA_MIN_K", 0)
    monkeypatch.setattr(D, "ROWS_TMA_MIN_K_UNSWAPPED", 0)


def _check(x, w, bias=None, activation="none", dtype=BF16):
    M, N = x.shape[0], w.shape[0]
    before = launcher.LAUNCHES.copy()
    y = gemm_a16w16(x, w, bias, activation=activation, out=poisoned((M, N), dtype))
    launched = launcher.LAUNCHES - before
    assert launched["gemm_rows_tma_kernel"] == 1 and launched["shift_rows_kernel"] == 1, launched
    assert "pad_rows_kernel" not in launched, launched
    ref = x.double() @ w.double().t()
    if bias is not None:
        ref = ref + bias.double()
    if activation == "silu":
        ref = torch.nn.functional.silu(ref)
    ok, msg = within_bound(y, ref, dtype)
    assert ok, msg
    return launched


@pytest.mark.usefixtures("small_k")
@pytest.mark.parametrize("M, N, K", [
    (17, 2048, 129),  # K odd: eight classes, eight shifts; the swapped tile (32 tokens), K unsplit (3 chunks)
    (64, 4096, 1031),  # the swapped tile at its most tokens; K split (17 chunks), the reduce after
    (100, 8192, 203),  # the unswapped 64 x 128 tile, a partial M tile
    (200, 16384, 70),  # the unswapped 128 x 128 tile; K just past one chunk: chunk 0 and the last, nothing between
    (33, 4096, 1030),  # K % 8 == 6: classes pairwise alike (shifts 0, 6, 4, 2)
])
def test_rows_tma_matches_float64(M, N, K):
    launched = _check(randn(M, K, dtype=BF16), randn(N, K, dtype=BF16))
    assert launched["rows_reduce_kernel"] == 1 and "splitk_reduce_kernel" not in launched, launched  # class-major


@pytest.mark.usefixtures("small_k")
@pytest.mark.parametrize("M, N, K", [(17, 2048, 129), (100, 8192, 203), (5, 2048, 1001)])
def test_rows_past_m_hold_anything(monkeypatch, M, N, K):
    """x's shifted copies leave their rows past M unwritten (pad.shift_rows) and the partials are torch.empty: every
    floating allocation of the call filled with NaN first, y must still match float64 (the rows past M feed only
    outputs the stores drop; every partial read was written)."""
    empty = torch.empty

    def nan_empty(*args, **kwargs):
        t = empty(*args, **kwargs)
        return t.fill_(float("nan")) if t.is_floating_point() else t

    monkeypatch.setattr(torch, "empty", nan_empty)
    _check(randn(M, K, dtype=BF16), randn(N, K, dtype=BF16))


@pytest.mark.usefixtures("small_k")
def test_rows_tma_bias_activation_fp16():
    x, w = randn(20, 299, dtype=torch.float16), randn(2048, 299, dtype=torch.float16)
    _check(x, w, bias=randn(2048, dtype=torch.float16), activation="silu", dtype=torch.float16)


@pytest.mark.usefixtures("small_k")
def test_rows_tma_reads_nothing_outside_the_rows():
    """w a view of rows of 133 elements (266 bytes, off 16-byte multiples), K = 129: the four elements after each row
    hold inf, and the boxes of each class start up to 7 elements before its rows (the row before's tail) and end past
    them: the masked first and last chunks must keep them out of the sums (inf x 0 would be NaN); x transposed."""
    N, K = 2048, 129
    full = randn(N, K + 4, dtype=BF16)
    full[:, K:] = float("inf")
    w = full[:, :K]
    x = randn(K, 24, dtype=BF16).t()  # unit stride along M
    _check(x, w)


@pytest.mark.usefixtures("small_k")
def test_rows_tma_inf_in_a_row_stays_in_its_column():
    """inf in weight row 9: column 9 is inf / nan, its neighbours in memory (rows 8, 10; and row 1, same class) not."""
    M, N, K = 24, 2048, 135
    x, w = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16)
    w[9, :] = float("inf")
    y = gemm_a16w16(x, w, out=poisoned((M, N), BF16))
    assert not torch.isfinite(y[:, 9]).any()
    keep = torch.ones(N, dtype=torch.bool)
    keep[9] = False
    assert torch.isfinite(y[:, keep]).all()


def test_shift_rows_copies():
    x = randn(5, 13, dtype=BF16)
    xs = pad.shift_rows(x, 13, 8, 24)  # pitch 13: the eight shifts (13 q) mod 8 = 0, 5, 2, 7, 4, 1, 6, 3
    assert xs.shape == (64, 24)
    for q in range(8):
        s = (13 * q) % 8
        block = xs[8 * q:8 * q + 8]
        assert torch.equal(block[:5, s:s + 13], x)  # rows 5 .. 7 unwritten (test_rows_past_m_hold_anything)
        assert not block[:5, :s].any() and not block[:5, s + 13:].any()
    with pytest.raises(ValueError):
        pad.shift_rows(x, 13, 8, 16)  # 13 + 7 columns do not fit 16


@pytest.mark.parametrize("M, N, K", [
    (5, 2048, 1001),  # gemm_rows' few tokens (from dispatch.ROWS_TMA_MIN_M): the partials in y's order; K split
    (12, 2048, 1001),  # past Y_ORDER_MAX_M: class-major, rows_reduce_kernel's small blocks (`reduce_block`)
    (17, 2048, 1001),  # the swapped tile just past its K floor; K split
    (65, 8192, 1281),  # the unswapped 64 x 128 tile just past its floor, two M tiles
])
def test_as_shipped(M, N, K):
    """Through the op with the dispatch as shipped: every element against float64, no copy of w."""
    _check(randn(M, K, dtype=BF16), randn(N, K, dtype=BF16))


def test_the_dispatch_takes_it_where_it_pays():
    sm90 = arch.get("H100")
    meta = lambda *s: torch.empty(*s, dtype=BF16, device="meta")  # noqa: E731
    cfg = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, NUM_KSPLIT=1, num_warps=4,
               num_stages=4, tma=True, persistent=False, backend="triton")
    y = lambda M, N: meta(M, N)  # noqa: E731
    take = lambda M, N, K: D.dense(cfg, sm90, meta(M, K), meta(N, K), y(M, N), interpreting=False).kernel  # noqa: E731
    assert take(64, 4096, 4095) == D.TRITON_ROWS_TMA
    assert take(256, 14336, 4095) == D.TRITON_ROWS_TMA
    assert take(16, 4096, 4095) == D.TRITON_ROWS_TMA  # gemm_rows' few tokens too, from ROWS_TMA_MIN_M
    assert take(1, 4096, 4095) == D.TRITON_ROWS  # one: gemm_rows
    assert take(2, 4096, 999) == D.TRITON_ROWS  # a few tokens under the K floor: gemm_rows
    assert not R.tile(8, 4096, 4095, 2, 132)["CLASS_MAJOR"] and R.tile(9, 4096, 4095, 2, 132)["CLASS_MAJOR"]
    assert take(300, 4096, 4095) != D.TRITON_ROWS_TMA  # past ROWS_TMA_MAX_M: the copy
    assert take(64, 576, 7001) != D.TRITON_ROWS_TMA  # x's eight copies past a quarter of w's bytes
    assert take(64, 4100, 4095) != D.TRITON_ROWS_TMA  # N % 8 != 0: the last octet would pass w's end
    assert take(64, 4096, 4096) != D.TRITON_ROWS_TMA  # rows TMA can address: the TMA kernels as they are
    assert take(64, 8192, 999) != D.TRITON_ROWS_TMA  # under the swapped tile's K floor: the copy
    assert take(64, 8192, 1001) == D.TRITON_ROWS_TMA
    assert take(100, 8192, 1273) != D.TRITON_ROWS_TMA  # under the unswapped tile's: its reduce costs as much at any K
    assert take(100, 8192, 1281) == D.TRITON_ROWS_TMA
    from gemmkit.kernels.triton import dense as G

    def take8(M, N, K):  # fp8 with its scales: the K floors count bytes (twice the 16-bit elements)
        rowcol = G.Scaling("rowcol", torch.empty(M, device="meta"), torch.empty(N, device="meta"))
        x8, w8 = (torch.empty(*s, dtype=torch.float8_e4m3fn, device="meta") for s in ((M, K), (N, K)))
        return D.dense(cfg, sm90, x8, w8, y(M, N), rowcol, interpreting=False).kernel

    assert take8(64, 8192, 1999) != D.TRITON_ROWS_TMA and take8(64, 8192, 2001) == D.TRITON_ROWS_TMA
    assert take8(100, 8192, 2559) != D.TRITON_ROWS_TMA and take8(100, 8192, 2561) == D.TRITON_ROWS_TMA
    assert take8(1, 8192, 4095) == D.TRITON_ROWS  # one token: gemm_rows


def test_unsupported_says_why():
    sm90, gfx = arch.get("H100"), arch.get("MI300X")
    x, w = torch.empty(32, 4095, dtype=BF16, device="meta"), torch.empty(4096, 4095, dtype=BF16, device="meta")
    assert R.unsupported(x, w, sm90) is None
    assert "sm_90" in R.unsupported(x, w, gfx)
    assert "K <" in R.unsupported(x[:, :63], w[:, :63], sm90)
    assert "N %" in R.unsupported(x, w[:4095], sm90)
    assert "contiguous" in R.unsupported(x, torch.empty(4095, 4096, dtype=BF16, device="meta").t(), sm90)
    from gemmkit.kernels.triton import dense as G

    x8, w8 = torch.empty(32, 4095, dtype=FP8, device="meta"), torch.empty(4096, 4095, dtype=FP8, device="meta")
    rowcol = G.Scaling("rowcol", torch.empty(32, device="meta"), torch.empty(4096, device="meta"))
    assert R.unsupported(x8, w8, sm90, rowcol) is None  # 8-bit with per-token x per-channel scales
    assert "block scales" in R.unsupported(x8, w8, sm90, G.Scaling("block", None, None, 128, 128))
    assert "none scales" in R.unsupported(x8, w8, sm90)
    assert "K <" in R.unsupported(x8[:, :127], w8[:, :127], sm90, rowcol)  # one 128-element box row at least
    assert "N % 16" in R.unsupported(x8, w8[:4088], sm90, rowcol)  # 16 rows a class run


FP8 = torch.float8_e4m3fn


def _check8(x, w, xs, ws, bias=None, out_dtype=BF16):
    from _util import a8w8_launched

    launched = a8w8_launched(x, w, xs, ws, bias, out_dtype)
    assert launched["gemm_rows_tma_kernel"] == 1 and launched["shift_rows_kernel"] == 1, launched
    assert "pad_rows_kernel" not in launched, launched
    return launched


@pytest.mark.usefixtures("small_k")
@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("M, N, K", [
    (17, 4096, 301),  # K odd: sixteen classes, sixteen shifts; the swapped tile, class-major, its reduce
    (5, 4096, 1001),  # a few tokens: the partials in y's order, K split (8 chunks of 128), the split-K reduce
    (24, 4096, 1032),  # K % 16 == 8: classes pairwise alike (shifts 0 and 8)
    (100, 16384, 203),  # the unswapped 64 x 128 tile, two M tiles (the second partial)
])
def test_rows_tma_8bit_matches_float64(dtype, M, N, K):
    """gemm_a8w8 (fp8 / int8, per-token x per-channel scales) with K % 16 != 0 past one token: w read where it lies by
    TMA (16 row classes, 128-element box rows, x's 16 shifted copies), the scales on each partial (linear) or in the
    epilogue, int32 sums for int8; a bias and an fp32 y on the split call."""
    from _util import q8, scales

    x, w, xs, ws = q8(M, K, dtype=dtype), q8(N, K, dtype=dtype), scales(M, 1), scales(1, N)
    split = R.tile(M, N, K, 1, 132)["SPLIT_K"] > 1
    _check8(x, w, xs, ws, randn(N, dtype=torch.float32) if split else None, torch.float32 if split else BF16)


@pytest.mark.usefixtures("small_k")
def test_rows_tma_8bit_reads_nothing_outside_the_rows():
    """fp8 w a view of rows of 305 elements (off 16-byte multiples), K = 301: the four elements after each row hold NaN
    (e4m3fn has no inf); the masked first and last chunks keep them out. x transposed (unit stride along M)."""
    from _util import fp8_rows_with_nan_gaps, q8, scales

    N, K = 4096, 301
    x = q8(K, 20, dtype=FP8).t()
    _check8(x, fp8_rows_with_nan_gaps(N, K, 4), scales(20, 1), scales(1, N))


@pytest.mark.usefixtures("small_k")
def test_rows_tma_replays():
    """The call plan replays it (x's copies a workspace, w's descriptor over a view of w) with new tensors."""
    from gemmkit import callplan

    w = randn(2048, 131, dtype=BF16)
    replays = callplan.STATS["replays"]
    for _ in range(2):
        _check(randn(20, 131, dtype=BF16), w)
    assert callplan.STATS["replays"] == replays + 1, "the call's plan was not replayed"
    _check(randn(20, 131, dtype=BF16), randn(2048, 131, dtype=BF16))  # another w: its own descriptor


@pytest.mark.parametrize("class_major", [True, False], ids=["class_major", "y_order"])
@pytest.mark.parametrize("M, N, K", [
    (20, 2056, 299),  # swapped, 257 octets: the last weight block and the last reduce block partial; K split
    (100, 1032, 203),  # unswapped, two M tiles (the second partial), K unsplit
])
def test_partials_layouts(M, N, K, class_major):
    """Both layouts of the output: class-major partials (the default; rows_reduce_kernel puts the columns in order and
    applies bias and silu) and y's order (the `partials` callers' and the A/B's other variant): every element against
    float64, into a poisoned y."""
    target = arch.get("H100")
    x, w, bias = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16), randn(N, dtype=BF16)
    t = dict(R.tile(M, N, K, 2, target.num_cus), CLASS_MAJOR=class_major)
    before = launcher.LAUNCHES.copy()
    y = poisoned((M, N), BF16)
    R.launch(x, w, bias, y, "silu", target, t=t)
    launched = launcher.LAUNCHES - before
    if class_major:
        assert launched["rows_reduce_kernel"] == 1 and "splitk_reduce_kernel" not in launched, launched
    else:
        assert "rows_reduce_kernel" not in launched, launched
        assert ("splitk_reduce_kernel" in launched) == (t["SPLIT_K"] > 1), launched
    ref = torch.nn.functional.silu(x.double() @ w.double().t() + bias.double())
    ok, msg = within_bound(y, ref, BF16)
    assert ok, msg


def test_reduce_block():
    """rows_reduce_kernel's block: 16 rows x 32 octets where that makes REDUCE_PROGRAMS programs an SM, else the
    octets (down to REDUCE_MIN_J), then the rows halved until it does; never past y's rows (rounded to a power of 2)."""
    sms = arch.get("H100").num_cus
    goal = R.REDUCE_PROGRAMS * sms
    assert R.reduce_block(4096, 3584, sms) == (R.REDUCE_M, R.REDUCE_J)  # 256 x 112 programs
    assert R.reduce_block(17, 512, sms) == (4, R.REDUCE_MIN_J)  # 17 x 4096: 5 x 64 programs (the fixed block: 2 x 16)
    assert R.reduce_block(2, 192, sms) == (1, R.REDUCE_MIN_J)  # 2 x 1536: 48 programs, as many as it gets
    for M in (1, 2, 3, 16, 17, 64, 100, 256, 4096):
        for octets in (1, 8, 72, 192, 512, 1792, 3584):
            bm, bj = R.reduce_block(M, octets, sms)
            programs = -(-M // bm) * -(-octets // bj)
            assert 1 <= bm <= min(R.REDUCE_M, triton.next_power_of_2(M)) and R.REDUCE_MIN_J <= bj <= R.REDUCE_J
            assert programs >= goal or (bm, bj) == (1, R.REDUCE_MIN_J), (M, octets, bm, bj)


@pytest.mark.parametrize("M, I, K, act", [
    (20, 1032, 299, "silu"),  # swapped, 129 octets of h: the last reduce block partial; K split
    (3, 1032, 299, "silu"),  # a few tokens, where the tile's partials are in y's order: class-major for the reduce
    (100, 520, 203, "gelu"),  # unswapped, two M tiles (the second partial), K unsplit
])
def test_gated(M, I, K, act):
    """The gated GEMM's reduce (kernels/triton/gated.launch_rows): w's rows [gate | up], class-major partials,
    rows_reduce_kernel sums both halves and writes act(g) * u; every element against float64, into a poisoned h."""
    target = arch.get("H100")
    x, w = randn(M, K, dtype=BF16), randn(2 * I, K, dtype=BF16) / K ** 0.5
    before = launcher.LAUNCHES.copy()
    y = poisoned((M, I), BF16)
    R.launch(x, w, None, y, act, target, gated=True)
    launched = launcher.LAUNCHES - before
    assert launched["rows_reduce_kernel"] == 1 and "splitk_reduce_kernel" not in launched, launched
    gu = x.double() @ w.double().t()
    g, u = gu[:, :I], gu[:, I:]
    ref = (torch.nn.functional.silu(g) if act == "silu" else torch.nn.functional.gelu(g)) * u
    ok, msg = within_bound(y, ref, BF16)
    assert ok, msg


def test_gated_refuses_what_its_reduce_cannot_pair():
    """I not whole octets puts u's columns in other classes than g's: `launch(gated=True)` refuses (gated.launch_rows
    then takes the partials in y's order and the gated reduce), as it does a bias."""
    target = arch.get("H100")
    assert not R.gated_takes(1028, 2) and R.gated_takes(1032, 2)
    x, w = randn(24, 203, dtype=BF16), randn(2056, 203, dtype=BF16)
    with pytest.raises(ValueError, match="multiple of 8"):
        R.launch(x, w, None, torch.empty(24, 1028, dtype=BF16), "silu", target, gated=True)
    w = randn(2064, 203, dtype=BF16)
    with pytest.raises(ValueError, match="no bias"):
        R.launch(x, w, randn(2064, dtype=BF16), torch.empty(24, 1032, dtype=BF16), "silu", target, gated=True)


@pytest.mark.parametrize("split", [1, 2])
def test_wide_tile(split):
    """The 128 x WIDE_J tile (a long w past SWAP_MAX_M tokens: `tile` takes it where its programs reach WIDE_PROGRAMS
    of the SMs): every element against float64 at a shape small enough for the interpreter, its last weight block
    partial (257 octets), the second M tile partial, K split or not; and where `tile` takes it."""
    target = arch.get("H100")
    wide = R.tile(96, 28672, 8191, 2, target.num_cus)
    assert (wide["BLOCK_M"], wide["BLOCK_J"], wide["num_warps"]) == (128, R.WIDE_J, 8), wide
    assert R.tile(128, 14336, 4095, 2, target.num_cus)["BLOCK_J"] == 128  # 56 programs: the 64 x 128 tile
    M, N, K = 130, 2056, 299
    x, w, bias = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16), randn(N, dtype=BF16)
    t = dict(R.tile(M, N, K, 2, target.num_cus), BLOCK_M=128, BLOCK_J=R.WIDE_J, num_warps=8, SPLIT_K=split)
    y = poisoned((M, N), BF16)
    before = launcher.LAUNCHES.copy()
    R.launch(x, w, bias, y, "silu", target, t=t)
    assert (launcher.LAUNCHES - before)["rows_reduce_kernel"] == 1
    ref = torch.nn.functional.silu(x.double() @ w.double().t() + bias.double())
    ok, msg = within_bound(y, ref, BF16)
    assert ok, msg
