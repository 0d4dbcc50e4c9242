"""The coop FP8 kernel's tail split (configs/model/tail.py tail_split, hopper_pingpong_fp8.tail_plan) and its
reduce (kernels/triton/_splitk_reduce.tail_reduce_kernel, kernels/triton/dense.launch_tail_reduce), on the CPU.

The rule is pure host arithmetic; the reduce is a Triton kernel, run here in the interpreter against torch on a
workspace laid out as the Gluon kernel writes it (partial j = r * S + s of tail tile r, whole BM x BN fp32 tiles).
The Gluon kernel's side (work items, partial stores) runs on the H200 only: the "tail" tests of
tests/kernels/test_hopper_pingpong_fp8.py and test_hopper_pingpong_fp8_blockscale.py.
"""
import pytest
import torch

from gemmkit import arch
from gemmkit.configs import model

from _util import poisoned, within_bound


def test_tail_split_rule():
    # DeepSeek-V3 (2112, 7168) at M = 4096, 128 x 128 tiles, 132 SMs: 4 rounds + 16 tiles; 8 splits of 7 steps.
    assert model.tail_split(32 * 17, 132, 56, 8) == (16, 8)
    # at most one split a K step, at most MAX_TAIL_SPLITS
    assert model.tail_split(133, 132, 7) == (1, 7)
    assert model.tail_split(136, 132, 7) == (4, 7)
    # every split's K range starts below K: 26 tail tiles, 5 splits wanted of 7 steps: 2 steps each, so 4 splits
    assert model.tail_split(132 + 26, 132, 7) == (26, 4)
    assert model.tail_split(138, 132, 5) == (6, 5)
    assert model.tail_split(137, 132, 9) == (5, 5)  # 26 wanted, capped at 8: 2 steps each, so 5 start below K
    assert model.tail_split(140, 132, 7) == (8, 7)
    assert model.tail_split(4096, 132, 64) == (4, 8)  # fp8 8192³: 4 tail tiles, 8 splits (not 32) of 8 steps
    # no partial round after a full one, or too big a tail for 2 splits, or K too short
    assert model.tail_split(132, 132, 56) == (0, 1)
    assert model.tail_split(264, 132, 56) == (0, 1)
    assert model.tail_split(100, 132, 56) == (0, 1)
    assert model.tail_split(132 + 67, 132, 56) == (0, 1)  # 132 // 67 = 1
    assert model.tail_split(132 + 66, 132, 56) == (66, 2)
    assert model.tail_split(140, 132, 7, 8) == (0, 1)
    assert model.tail_split(140, 132, 1) == (0, 1)
    for tiles in range(1, 600, 7):
        for k_steps in (1, 2, 3, 8, 56):
            tail, splits = model.tail_split(tiles, 132, k_steps)
            if tail:
                q = -(-k_steps // splits)
                assert tiles > 132 and tail == tiles % 132 and tail * splits <= 132
                assert 2 <= splits <= min(k_steps, model.MAX_TAIL_SPLITS)
                assert (splits - 1) * q < k_steps  # the last split starts below K


def test_tail_reduce_rows():
    """Rows of a tail tile a reduce program sums: halved until there are 2 x SMs programs (or 1 row)."""
    from gemmkit.kernels.triton import dense as _gemm

    assert [_gemm.tail_reduce_rows(128, t, 2 * 132) for t in (16, 4, 66, 1, 300)] == [4, 1, 32, 1, 128]
    assert _gemm.tail_reduce_rows(64, 3, 4) == 32


def test_tail_plan_coop_only():
    from gemmkit.kernels.gluon import hopper_pingpong_fp8 as k

    cfg = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 8,
           "num_stages": 5}
    t = arch.ARCHS["sm_90"]
    coop = k.derive(cfg, t, 2, (128, 128))
    assert k.tail_plan(coop, 4096, 2112, 7168, 132) == (16, 8)
    assert k.tail_plan(coop, 4096, 2112, 7168, 132, tail=False) == (0, 1)
    # K = 512, below the rule's MIN_TAIL_K; forced, it splits
    assert k.tail_plan(coop, 4096, 2112, 512, 132) == (0, 1)
    assert k.tail_plan(coop, 4096, 2112, 512, 132, tail=True) == (16, 4)
    # the rule's threshold (MIN_TAIL_K = 4096, in K, not in steps): K = 2048 stays whole, K = 4096 splits; the
    # same with 64-wide K steps
    assert k.MIN_TAIL_K == 4096
    assert k.tail_plan(coop, 4096, 2112, 2048, 132) == (0, 1)
    assert k.tail_plan(coop, 4096, 2112, 4096, 132) == (16, 8)
    coop64 = k.derive({**cfg, "BLOCK_SIZE_K": 64}, t, 2, (128, 128))
    assert k.tail_plan(coop64, 4096, 2112, 2048, 132) == (0, 1)
    assert k.tail_plan(coop64, 4096, 2112, 4096, 132) == (16, 8)
    assert k.tail_plan(coop, 4096, 2112, 7168, 132, tail=0) == (0, 1)  # any false value: off
    pingpong = k.derive({**cfg, "BLOCK_SIZE_M": 64, "num_warps": 4}, t, 2, (128, 128))
    assert k.tail_plan(pingpong, 4096, 2112, 7168, 132, tail=True) == (0, 1)


def _grouped(tid, pm, pn, group):
    """The schedule's grouped order, in plain Python: tile id -> (pid_m, pid_n)."""
    width = group * pn
    g = tid // width
    gm = min(pm - g * group, group)
    return g * group + (tid % width) % gm, (tid % width) // gm


@pytest.mark.interpreter
@pytest.mark.parametrize("cus", [132, 2], ids=["rows1", "rows32"])  # 1-row programs, and 32-row ones
@pytest.mark.parametrize("M,N,group,bias", [(300, 520, 2, True), (257, 200, 8, False), (64, 1000, 1, True)])
def test_tail_reduce(M, N, group, bias, cus):
    """y's last `tail` tiles (in the grouped order) = the in-order sum of their splits + bias; every other
    element untouched (poisoned stays poisoned: the reduce writes only the tail tiles, clipped to M x N)."""
    from gemmkit.kernels.triton import dense as _gemm

    BM, BN = 64, 128
    pm, pn = -(-M // BM), -(-N // BN)
    tiles = pm * pn
    tail, splits = 3, 5
    first = tiles - tail
    part = torch.randn(tail * splits * BM, BN)
    b = torch.randn(N).to(torch.bfloat16) if bias else None
    y = poisoned((M, N), torch.bfloat16)
    _gemm.launch_tail_reduce(part, first, tail, splits, BM, BN, group, b, y, arch.ARCHS["sm_90"].with_cus(cus))

    ref = torch.full((M, N), float("nan"), dtype=torch.float64)
    for r in range(tail):
        pid_m, pid_n = _grouped(first + r, pm, pn, group)
        acc = torch.zeros(BM, BN)
        for s in range(splits):
            acc += part[(r * splits + s) * BM:(r * splits + s + 1) * BM]
        acc = acc.double()
        if b is not None:
            acc += b.double()[pid_n * BN:(pid_n + 1) * BN].reshape(1, -1) if (pid_n + 1) * BN <= N else \
                torch.nn.functional.pad(b.double()[pid_n * BN:], (0, (pid_n + 1) * BN - N)).reshape(1, -1)
        rows, cols = min(BM, M - pid_m * BM), min(BN, N - pid_n * BN)
        ref[pid_m * BM:pid_m * BM + rows, pid_n * BN:pid_n * BN + cols] = acc[:rows, :cols]
    written = ~ref.isnan()
    assert written.sum() > 0
    assert y.isnan().eq(~written).all(), "the reduce wrote outside the tail tiles or missed one"
    ok, msg = within_bound(y[written].reshape(1, -1), ref[written].reshape(1, -1), torch.bfloat16)
    assert ok, msg


@pytest.mark.interpreter
@pytest.mark.parametrize("M,N,group", [(300, 520, 2), (257, 1000, 8)])
def test_tail_reduce_shifted_with_activation(M, N, group):
    """The bf16 ping-pong's tail split (kernels/gluon/hopper_pingpong.tail_plan): the kernel shifts its last row /
    column of tiles back to end at M / N (_schedule.tile_origin, rounded up to 8), and the reduce applies the
    activation as the kernel's epilogue would: each tail tile's sum lands at the shifted origin, gelu(sum + bias), its
    own rows and columns only (the shared ones stay the neighbour's: poisoned here)."""
    from gemmkit.kernels.triton import dense as _gemm

    BM, BN = 64, 128
    pm, pn = -(-M // BM), -(-N // BN)
    tail, splits = 4, 3
    first = pm * pn - tail
    part = torch.randn(tail * splits * BM, BN)
    b = torch.randn(N).to(torch.bfloat16)
    y = poisoned((M, N), torch.bfloat16)
    _gemm.launch_tail_reduce(part, first, tail, splits, BM, BN, group, b, y, arch.ARCHS["sm_90"], activation="gelu",
                             shift=True)

    def origin(pid, size, block):
        return max(min(pid * block, -(-(size - block) // 8) * 8), 0)

    ref = torch.full((M, N), float("nan"), dtype=torch.float64)
    for r in range(tail):
        pid_m, pid_n = _grouped(first + r, pm, pn, group)
        r0, c0 = origin(pid_m, M, BM), origin(pid_n, N, BN)
        acc = sum(part[(r * splits + s) * BM:(r * splits + s + 1) * BM] for s in range(splits)).double()
        rows, cols = min(BM, M - r0), min(BN, N - c0)
        acc = torch.nn.functional.gelu(acc[:rows, :cols] + b.double()[c0:c0 + cols].reshape(1, -1))
        # only the tile's own rows / columns (from pid * BM / BN): those before are its neighbour's
        own_m, own_n = pid_m * BM - r0, pid_n * BN - c0
        ref[r0 + own_m:r0 + rows, c0 + own_n:c0 + cols] = acc[own_m:, own_n:]
    assert any(origin(p, M, BM) % BM for p in range(pm)) or any(origin(p, N, BN) % BN for p in range(pn))
    written = ~ref.isnan()
    assert y.isnan().eq(~written).all(), "the reduce wrote outside the tail tiles or missed one"
    ok, msg = within_bound(y[written].reshape(1, -1), ref[written].reshape(1, -1), torch.bfloat16)
    assert ok, msg
