"""kernels/triton/gemm_rows.py: a few tokens against weight rows TMA cannot address (K % 8 != 0 in bf16, K % 16 != 0
in fp8 / int8), w read where it lies. Through the ops a user calls (gemm_a16w16, gemm_a8w8), in the interpreter:
every element against the float64 reference, into poisoned outputs; the kernel the dispatch says (no operand copy);
the row classes, the masked first and last chunks, split-K, a strided w whose gaps hold inf (NaN in fp8), a
transposed x, the 8-bit scales, and the call plan's replay."""
import pytest
import torch
from _util import a8w8_launched, fp8_rows_with_nan_gaps, poisoned, q8, randn, scales, within_bound

from gemmkit import callplan, launcher
from gemmkit.kernels.triton import gemm_rows as R
from gemmkit.ops.gemm_a16w16 import gemm_a16w16

pytestmark = pytest.mark.interpreter
BF16 = torch.bfloat16


def _act(y, activation):
    f = {"none": lambda t: t, "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu}[activation]
    return f(y)


def _check(x, w, bias=None, activation="none", dtype=BF16):
    M, N = x.shape[0], w.shape[0]
    before = launcher.LAUNCHES.copy()
    y = gemm_a16w16(x, w, bias, activation=activation, out=poisoned((M, N), dtype))
    launched = launcher.LAUNCHES - before
    assert launched["gemm_rows_kernel"] == 1 and "pad_rows_kernel" not in launched, launched
    ref = x.double() @ w.double().t()
    if bias is not None:
        ref = ref + bias.double()
    ok, msg = within_bound(y, _act(ref, activation), dtype)
    assert ok, msg
    return launched


@pytest.mark.parametrize("M, N, K", [
    (1, 40, 75),  # K odd: all eight row classes, each its own offset from 16-byte boundaries
    (16, 70, 1030),  # K % 8 == 6: classes pairwise alike; N not a multiple of 8
    (12, 9, 5),  # one chunk: the first and last chunk are the same
    (3, 5, 37),  # N < 8: classes without rows
    (5, 200, 2055),  # K split 2 ways (9 chunks), the reduce after
])
def test_rows_kernel_matches_float64(M, N, K):
    launched = _check(randn(M, K, dtype=BF16), randn(N, K, dtype=BF16))
    if R.tile(M, N, K, 2, 132)["SPLIT_K"] > 1:
        assert launched["splitk_reduce_kernel"] == 1


@pytest.mark.parametrize("activation", ["gelu", "silu"])
def test_rows_kernel_bias_activation_fp16(activation):
    x, w = randn(4, 299, dtype=torch.float16), randn(48, 299, dtype=torch.float16)
    _check(x, w, bias=randn(48, dtype=torch.float16), activation=activation, dtype=torch.float16)


def test_rows_kernel_reads_no_byte_outside_the_rows():
    """w a view of rows of 78 elements (156 bytes, off 16-byte multiples), K = 75: the three elements after each row
    hold inf. The masked first and last chunks must not let them into the sums (inf x 0 would be NaN), and the
    last row's last chunk must not read past w's storage; x transposed."""
    N, K = 64, 75
    full = randn(N, K + 3, dtype=BF16)
    full[:, K:] = float("inf")
    w = full[:, :K]
    x = randn(K, 6, dtype=BF16).t()  # unit stride along M
    _check(x, w)


def test_rows_kernel_replays():
    x, w = randn(2, 301, dtype=BF16), randn(96, 301, dtype=BF16)
    replays = callplan.STATS["replays"]
    for _ in range(2):
        _check(randn(2, 301, dtype=BF16), w)
    assert callplan.STATS["replays"] == replays + 1, "the call's plan was not replayed"
    _check(x, w)


def test_tile_splits_to_two_programs_an_sm():
    t = R.tile(1, 4096, 4095, 2, 132)  # 8 classes x 16 blocks of 32 rows = 128 programs: split 3 (17 chunks)
    assert (t["BLOCK_M"], t["BLOCK_N"], t["BLOCK_K"], t["SPLIT_K"]) == (16, 32, 256, 3)
    assert R.tile(R.MAX_M, 4096, 4095, 2, 132)["BLOCK_M"] == 16
    assert R.tile(1, 40, 75, 2, 132)["SPLIT_K"] == 1  # one chunk a split at least 4: K too short to split


FP8 = torch.float8_e4m3fn


def _check8(x, w, xs, ws, bias=None, out_dtype=BF16):
    launched = a8w8_launched(x, w, xs, ws, bias, out_dtype)
    assert launched["gemm_rows_kernel"] == 1 and "pad_rows_kernel" not in launched, launched
    return launched


@pytest.mark.parametrize("dtype", [FP8, torch.int8], ids=["fp8", "int8"])
@pytest.mark.parametrize("M, N, K", [
    (1, 48, 75),  # K odd: all sixteen row classes, each its own offset from 16-byte boundaries
    (16, 70, 1030),  # K % 16 == 6: classes pairwise alike (eight offsets); N not a multiple of 16
    (3, 9, 5),  # one chunk, N < 16: classes without rows
    (5, 200, 4105),  # K split 2 ways (9 chunks of 512): each split's partial scaled, the reduce after
])
def test_rows_kernel_8bit_matches_float64(dtype, M, N, K):
    """gemm_a8w8 (per-token x per-channel scales) on rows off 16 bytes: the scales in the epilogue (on each split's
    partial), int32 sums for int8; a bias and an fp32 output on the split call."""
    x, w, xs, ws = q8(M, K, dtype=dtype), q8(N, K, dtype=dtype), scales(M, 1), scales(1, N)
    split = R.tile(M, N, K, 1, 132)["SPLIT_K"] > 1
    launched = _check8(x, w, xs, ws, randn(N, dtype=torch.float32) if split else None,
                       torch.float32 if split else BF16)
    assert (launched["splitk_reduce_kernel"] == 1) == split, launched


def test_rows_kernel_8bit_reads_no_byte_outside_the_rows():
    """fp8 w a view of rows of 77 elements (off 16-byte multiples), K = 75: the two elements after each row hold NaN
    (e4m3fn has no inf); the masked chunks keep them out of every sum. x transposed (unit stride along M)."""
    N, K = 64, 75
    x = q8(K, 6, dtype=FP8).t()
    _check8(x, fp8_rows_with_nan_gaps(N, K, 2), scales(6, 1), scales(1, N))


def test_rows_kernel_8bit_replays():
    """The call plan's replay takes each call's own x, scales and bias (fp8, one weight, three calls)."""
    w = q8(64, 75, dtype=FP8)
    replays = callplan.STATS["replays"]
    for _ in range(3):
        _check8(q8(4, 75, dtype=FP8), w, scales(4, 1), scales(1, 64), randn(64, dtype=torch.float32))
    assert callplan.STATS["replays"] == replays + 2, "the call's plan was not replayed"


def test_rows_kernel_declines_block_scales():
    """Block scales (128 K columns a scale) are not this kernel's: a chunk starts s_r columns before a scale block."""
    x, w = torch.empty(4, 75, dtype=FP8), torch.empty(64, 75, dtype=FP8)
    from gemmkit.kernels.triton import dense as G

    block = G.Scaling("block", torch.empty(4, 1), torch.empty(1, 1), 128, 128)
    assert "block scales" in R.unsupported(x, w, block)
    assert R.unsupported(x, w, G.Scaling("rowcol", torch.empty(4), torch.empty(64))) is None
    assert R.unsupported(x, w) is not None  # 8-bit without scales: not a call any op makes
