"""Split-K in the dense Gluon kernels on the H200 (`pytest -m gpu tests/kernels/test_gluon_split_k.py`).

hopper_host.launch_dense: work ids over splits x tiles, each item one range of K steps, its fp32 partial
tile stored into its split's slab of a workspace, then the split-K reduce (bias, activation, cast). Both
layouts (ping-pong, cooperative), power-of-two and split tiles (96 / 144 / 160 / 192 columns), through the kernels'
launchers and through gemm_a16w16. Reference: float64 on the CPU; outputs poisoned with NaN, every element
checked (tests/_util.within_bound).
"""
import pytest
import torch

import gemmkit
from gemmkit.reference import gemm_a16w16_ref

from _util import check_a16w16 as check
from _util import (assert_sanitizer_clean, check_a16w16_graph_replays, dense_sanitize_script, gpu_target, launch_dense,
                   poisoned, randn, sanitize, within_bound)

pytestmark = pytest.mark.gpu
DEV = "cuda"

PP = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 5}
CFGS = {
    "pp128x128-k3": ("pp", {**PP, "NUM_KSPLIT": 3}),
    "pp64x192-k2": ("pp", {**PP, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 192, "num_stages": 6, "NUM_KSPLIT": 2}),
    "pp64x96-k4": ("pp", {**PP, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 96, "num_stages": 6, "NUM_KSPLIT": 4}),
    "coop128x256-k2": ("coop", {**PP, "BLOCK_SIZE_N": 256, "num_warps": 8, "num_stages": 4, "NUM_KSPLIT": 2}),
    "coop128x192-k3": ("coop", {**PP, "BLOCK_SIZE_N": 192, "num_warps": 8, "NUM_KSPLIT": 3}),
    "coop128x96-k5": ("coop", {**PP, "BLOCK_SIZE_N": 96, "num_warps": 8, "num_stages": 6, "NUM_KSPLIT": 5}),
    # the A + B split tiles on a 16 / 32-column B (configs.SPLIT_N), split as the config model's `long_k_coop` runs them
    "coop128x144-k4": ("coop", {**PP, "BLOCK_SIZE_N": 144, "num_warps": 8, "num_stages": 6, "NUM_KSPLIT": 4}),
    "coop128x160-k6": ("coop", {**PP, "BLOCK_SIZE_N": 160, "num_warps": 8, "num_stages": 6, "NUM_KSPLIT": 6}),
}


def _module(kind):
    from gemmkit.kernels.gluon import hopper_coop, hopper_pingpong

    return hopper_coop if kind == "coop" else hopper_pingpong


def run(name, x, w, bias=None, act="none", out_dtype=None, cus=None):
    """Through the kernel's `launch` (NUM_KSPLIT lowered to one wave by hopper_host.fit_split_k)."""
    kind, cfg = CFGS[name]
    return launch_dense(_module(kind), x, w, bias, act, out_dtype, cfg, cus)


def run_forced(name, x, w, bias=None, act="none", out_dtype=None, cus=None):
    """hopper_host.launch_dense with the config's NUM_KSPLIT as it is (no `fit_split_k`): on a grid of `cus`
    CTAs each takes many (split, tile) items, so the ring wraps across items of different splits."""
    from gemmkit.kernels.gluon import hopper_host as hh
    from gemmkit.kernels.gluon import hopper_pingpong as hp

    kind, cfg = CFGS[name]
    mod, target = _module(kind), gpu_target(cus)
    y = poisoned((x.shape[0], w.shape[0]), out_dtype or x.dtype, x.device)
    plan = mod.derive(cfg, target, x.element_size(), y.element_size())
    ce = mod.kernel_constexprs(plan, has_bias=bias is not None, activation=act)
    y_box = (plan.BM_C, plan.epi_n) if kind == "coop" else hp.y_box(plan)
    hh.launch_dense(mod.hopper_coop_kernel if kind == "coop" else hp.hopper_pingpong_kernel, plan, y_box, x, w, bias,
                    y, act, ce, target, tail=(0, 1))  # (no tail split)
    torch.cuda.synchronize()
    return y


# (M, N, K): M = 1 / 17 (one partial row), ragged M / N (the workspace slabs are whole tiles of rows), K not a
# multiple of splits x BK (the last range runs past K into TMA's zero fill), K of one step (one split), a
# DeepSeek kv_a_proj row.
SHAPES = [(1, 264, 1000), (17, 1000, 520), (300, 392, 2056), (129, 136, 64), (1024, 576, 7168)]


@pytest.mark.parametrize("name", list(CFGS))
@pytest.mark.parametrize("M,N,K", SHAPES, ids=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
def test_shapes(M, N, K, name):
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    check(run(name, x, w), x, w)


@pytest.mark.parametrize("act,out_dtype", [("gelu", torch.bfloat16), ("silu", torch.float16), ("none", torch.float32)],
                         ids=lambda v: str(v).replace("torch.", ""))
@pytest.mark.parametrize("name", ["pp128x128-k3", "pp64x192-k2", "coop128x192-k3", "coop128x144-k4"])
def test_bias_activation_out_dtype(act, out_dtype, name):
    """Bias and activation are the reduce's (the kernel stores fp32 partials whatever the output dtype)."""
    M, N, K = 300, 1032, 1544
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV) / 8
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    y = run(name, x, w, b, act, out_dtype)
    assert y.dtype == out_dtype
    check(y, x, w, b, act)


@pytest.mark.parametrize("name", ["pp128x128-k3", "pp64x192-k2", "coop128x256-k2", "coop128x96-k5"])
def test_fp16_inputs(name):
    """fp16 x and w through split-K (the partials are fp32 whatever the input; the rest of this file runs bf16),
    fp16 output with bias and gelu, and fp32 output without."""
    from gemmkit.kernels.gluon import hopper_host as hh

    M, N, K = 300, 392, 2056
    assert hh.fit_split_k(CFGS[name][1], M, N, K, gpu_target())["NUM_KSPLIT"] > 1  # it does run split-K
    x, w = randn(M, K, dtype=torch.float16, device=DEV), randn(N, K, dtype=torch.float16, device=DEV) / 8
    b = randn(N, dtype=torch.float16, device=DEV)
    y = run(name, x, w, b, "gelu")
    assert y.dtype == torch.float16
    check(y, x, w, b, "gelu")
    y32 = run(name, x, w, None, "none", torch.float32)
    check(y32, x, w)


@pytest.mark.parametrize("cus", [1, 3, 7])
@pytest.mark.parametrize("name", ["pp128x128-k3", "pp64x96-k4", "coop128x256-k2", "coop128x192-k3",
                                  "coop128x160-k6"])
def test_small_persistent_grids(cus, name):
    """Many (split, tile) items per CTA: the ring wraps across items of different splits."""
    M, N, K = 3 * 128 - 5, 4 * 192 - 8, 3000
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV) / 4
    b = randn(N, dtype=torch.bfloat16, device=DEV)
    check(run_forced(name, x, w, b, "gelu", cus=cus), x, w, b, "gelu")


@pytest.mark.parametrize("name", ["pp128x128-k3", "coop128x192-k3"])
def test_deterministic(name):
    """The reduce sums the slabs in split order: bitwise identical run to run and on any grid."""
    x, w = randn(640, 5000, dtype=torch.bfloat16, device=DEV), randn(1000, 5000, dtype=torch.bfloat16, device=DEV)
    first = run_forced(name, x, w)
    check(first, x, w)
    assert torch.equal(run(name, x, w, cus=132), first)  # fit_split_k keeps 3 splits (40 / 30 tiles, 132 CTAs)
    for cus in (None, 5, 1):
        assert torch.equal(run_forced(name, x, w, cus=cus), first)


@pytest.mark.parametrize("name", ["pp64x192-k2", "coop128x96-k5"])
def test_op_runs_gluon_split_k(name):
    """gemm_a16w16 with a "backend": "gluon" split-K config: the Gluon kernel and the reduce, once each."""
    from gemmkit.ops import _common as C

    kind, cfg = CFGS[name]
    kernel = _module(kind).KERNEL_NAME
    M, N, K = 512, 576, 7168
    x, w, b = (randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV),
               randn(N, dtype=torch.bfloat16, device=DEV))
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, b, activation="silu", out=poisoned((M, N), torch.bfloat16, DEV),
                            config={**cfg, "backend": "gluon"})
    torch.cuda.synchronize()
    assert C.LAUNCHES[kernel] == before.get(kernel, 0) + 1
    assert C.LAUNCHES["splitk_reduce_kernel"] == before.get("splitk_reduce_kernel", 0) + 1
    assert C.LAUNCHES["gemm_kernel"] == before.get("gemm_kernel", 0)
    ok, msg = within_bound(y, gemm_a16w16_ref(x, w, b, "silu"), torch.bfloat16)
    assert ok, msg


def test_op_split_k_in_a_cuda_graph():
    """The workspace is allocated inside the capture (the graph's pool) and replays correctly."""
    kind, cfg = CFGS["coop128x192-k3"]
    check_a16w16_graph_replays(256, 576, 7168, {**cfg, "backend": "gluon"})


def test_split_count_leaves_no_empty_range():
    """NUM_KSPLIT larger than the K steps: fewer, non-empty ranges (K = 128, BK 64: 2 steps, 5 asked -> 2)."""
    from gemmkit.kernels.gluon import hopper_host as hh
    from gemmkit.kernels.gluon import hopper_pingpong as hp

    assert hh.split_count(128, 64, 5) == 2
    x, w = randn(40, 128, dtype=torch.bfloat16, device=DEV), randn(264, 128, dtype=torch.bfloat16, device=DEV)
    y = launch_dense(hp, x, w, None, "none", None, {**PP, "NUM_KSPLIT": 5}, None)
    check(y, x, w)


def test_fit_split_k_keeps_one_wave():
    """NUM_KSPLIT is an upper bound: splits x tiles <= SMs; 1 (no workspace, no reduce) where tiles fill the SMs."""
    from gemmkit.kernels.gluon import hopper_host as hh
    from gemmkit.ops import _common as C

    t = gpu_target()
    cfg = {**PP, "BLOCK_SIZE_N": 96, "num_warps": 8, "num_stages": 6, "NUM_KSPLIT": 11}
    assert hh.fit_split_k(cfg, 256, 576, 7168, t)["NUM_KSPLIT"] == min(11, t.num_cus // 12)
    assert hh.fit_split_k(cfg, 300, 576, 7168, t)["NUM_KSPLIT"] == min(11, t.num_cus // 18)
    assert hh.fit_split_k(cfg, 4096, 576, 7168, t)["NUM_KSPLIT"] == 1
    M, N, K = 4096, 576, 1024
    x, w = randn(M, K, dtype=torch.bfloat16, device=DEV), randn(N, K, dtype=torch.bfloat16, device=DEV)
    before = dict(C.LAUNCHES)
    y = gemmkit.gemm_a16w16(x, w, out=poisoned((M, N), torch.bfloat16, DEV), config={**cfg, "backend": "gluon"})
    torch.cuda.synchronize()
    assert C.LAUNCHES["splitk_reduce_kernel"] == before.get("splitk_reduce_kernel", 0)
    check(y, x, w)


# compute-sanitizer over split-K through the kernels' `launch` (fit_split_k keeps 2-3 splits on these grids:
# 6-12 tiles on 12 / 24 CTAs), K ranges past K included (1000 = 16 steps of 64: 6 + 6 + 4)
_SANITIZE = {"hopper_pingpong": [CFGS["pp128x128-k3"][1], {**CFGS["pp64x192-k2"][1], "NUM_KSPLIT": 3}],
             "hopper_coop": [CFGS["coop128x192-k3"][1], CFGS["coop128x96-k5"][1], CFGS["coop128x160-k6"][1]]}
_SANITIZE_CASES = [(12, (256, 264, 1000)), (24, (200, 392, 1544))]


@pytest.mark.parametrize("tool", ["synccheck", "memcheck"])
@pytest.mark.parametrize("module", list(_SANITIZE))
def test_compute_sanitizer(tool, module):
    """No illegal barrier use and no bad accesses (the workspace slabs' TMA stores, the ring across splits)."""
    out = sanitize(tool, dense_sanitize_script(module, _SANITIZE[module], _SANITIZE_CASES))
    assert_sanitizer_clean(out)
