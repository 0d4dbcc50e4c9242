"""The tuner's few-tile extension (M >= 256): split-K 2-8 and 64-wide tiles where a tiling leaves the
132 SMs of an H200 under two waves of tiles, nothing added where tiles are many.

On the GPU (gpu-marked, the last section): every shipped sm_90 A16W16 shape-table bucket at M >= 256
that splits K, run at its own (M, N, K) and at a ragged M inside the bucket, with bias + SiLU, into a
NaN-poisoned output: checked against a float64 reference (every element written, ||y - ref|| / ||ref||
within tests/_util.TOL) and bitwise identical over reruns (the reduce sums the partials in a fixed
order)."""
import json
import re

import pytest
import torch

from _util import TOL
import gemmkit
from gemmkit import arch, configs
from gemmkit.reference import activation_ref
from gemmkit.tune import FEW_TILE_WAVES, few_tile_space, prune, search_space

H200 = arch.get("sm_90")
LIMIT = FEW_TILE_WAVES * H200.num_cus  # 264 work units


def _tiles(c, M, N):
    return -(-M // c["BLOCK_SIZE_M"]) * -(-N // c["BLOCK_SIZE_N"])


def _kept(M, N, K, op="a16w16"):
    return prune(search_space(M, N, K, H200, op), M, N, K, H200)


def test_skinny_shape_offers_split_k_and_64_wide_tiles():
    """DeepSeek-V3 kv_a_proj (N = 576, K = 7168) at M = 512: 64 x 64 tiles split 2 / 4, 128 x 128
    split up to 8, BLOCK_SIZE_N 64 and BLOCK_SIZE_M 64 all survive pruning."""
    M, N, K = 512, 576, 7168
    kept = _kept(M, N, K)
    tilings = {(c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["NUM_KSPLIT"]) for c in kept}
    assert {(64, 64, 2), (64, 64, 4), (128, 64, 4), (128, 128, 8), (64, 128, 4)} <= tilings
    assert (64, 64, 8) not in tilings  # 72 tiles x 4 already fill two waves: split 8 not offered
    for c in kept:
        if c["NUM_KSPLIT"] > 1 and c.get("backend") != "gluon":  # the Gluon kernels are always persistent
            assert not c["persistent"]
            assert _tiles(c, M, N) < LIMIT and -(-K // c["BLOCK_SIZE_K"]) // c["NUM_KSPLIT"] >= 2


def test_gluon_split_k_fills_one_wave():
    """The Gluon split-K candidates (tune.gluon_split_k_space): splits s, s - 1 with tiles x s <= SMs, >= 4 K
    steps a range; none where a tiling already fills the SMs (N = 7168 at M = 256: 2 x 56 tiles of 128 x 128)."""
    from gemmkit.tune import fill_splits, gluon_split_k_space

    assert fill_splits(40, 112, 132) == [3, 2] and fill_splits(6, 112, 132) == [16, 15]
    assert fill_splits(6, 40, 132) == [10, 9] and fill_splits(66, 112, 132) == [2] and fill_splits(100, 112, 132) == []
    kept = [c for c in _kept(1024, 576, 7168) if c.get("backend") == "gluon" and c["NUM_KSPLIT"] > 1]
    assert {(c["num_warps"], c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["NUM_KSPLIT"]) for c in kept} >= {
        (8, 128, 128, 3), (8, 128, 192, 5), (4, 64, 192, 2)}
    assert all(_tiles(c, 1024, 576) * c["NUM_KSPLIT"] <= H200.num_cus for c in kept)
    assert gluon_split_k_space(256, 7168, 16384, H200) == []


def test_large_m_skinny_n_gets_64_wide_rows_and_split_k():
    """At M = 4096 the base space has BLOCK_SIZE_M 128 / 256 and no split-K; N = 576 leaves 128 x 128
    at 32 x 5 = 160 tiles: split 2 is offered there, BLOCK_SIZE_M 64 where its tiles stay few."""
    M, N, K = 4096, 576, 7168
    kept = _kept(M, N, K)
    splits = {(c["BLOCK_SIZE_M"], c["BLOCK_SIZE_N"], c["NUM_KSPLIT"]) for c in kept if c["NUM_KSPLIT"] > 1}
    assert (128, 128, 2) in splits and (256, 128, 4) in splits
    assert all(_tiles({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn}, M, N) * (s // 2) < LIMIT for bm, bn, s in splits)
    assert any(c["BLOCK_SIZE_M"] == 64 and c["BLOCK_SIZE_N"] == 256 for c in kept)  # 64 x 3 = 192 tiles


def test_many_tile_shapes_keep_their_space():
    """Llama-3-70B gate_up (N = 57344) at M = 4096, and 2048 x 8192: every tiling already has >= 2
    waves (2048 x 8192 in 256 x 256 tiles: 256, but that tile's accumulator is pruned): pruning keeps
    no split-K, no 64-wide tile."""
    assert few_tile_space(4096, 57344, 8192, H200) == []
    for M, N, K in ((4096, 57344, 8192), (2048, 8192, 8192)):
        kept = _kept(M, N, K)
        assert kept and all(c["NUM_KSPLIT"] == 1 for c in kept)
        assert all(c["BLOCK_SIZE_N"] >= 128 for c in kept if c.get("backend") != "gluon")


def test_extension_is_a16w16_above_m_64_only():
    """Decode (M <= 64) and the 8-bit ops keep their spaces: the extension is a16w16 at M > 64."""
    for M in (1, 16, 64):
        assert {c["BLOCK_SIZE_M"] for c in search_space(M, 576, 7168, H200)} <= {16, 32, 64}
    for op in ("a8w8", "a8w8_blockscale"):
        assert all(c["NUM_KSPLIT"] == 1 for c in search_space(512, 576, 7168, H200, op))
    assert any(c["NUM_KSPLIT"] == 8 for c in search_space(512, 576, 7168, H200))


def test_space_has_no_duplicates_and_prune_drops_short_splits():
    M, N, K = 256, 576, 512  # 4 K steps of 128: split 4 / 8 would leave < 2 per split
    space = search_space(M, N, K, H200)
    keys = [json.dumps(c, sort_keys=True) for c in space]
    assert len(keys) == len(set(keys))
    for c in prune(space, M, N, K, H200):
        assert -(-K // c["BLOCK_SIZE_K"]) // c["NUM_KSPLIT"] >= 2


# ----------------------------------------------------------------------------- on the GPU (gpu-marked: `pytest -m gpu`)

def _split_buckets():
    out = []
    for path in sorted((configs.CONFIG_DIR / "sm_90").glob("A16W16-N=*-K=*.json")):
        N, K = map(int, re.search(r"N=(\d+)-K=(\d+)", path.name).groups())
        for key, cfg in json.loads(path.read_text()).items():
            m = re.match(r"M_GEQ_(\d+)$", key)
            if m and int(m.group(1)) >= 256 and cfg != configs.MODEL and cfg.get("NUM_KSPLIT", 1) > 1:
                out.append((int(m.group(1)), N, K, cfg))
    return out


CASES = _split_buckets() + [(300, 577, 7000, {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128,
                                               "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 4,
                                               "NUM_KSPLIT": 8, "tma": tma}) for tma in (True, False)]


@pytest.mark.gpu
@pytest.mark.parametrize("M,N,K,cfg", CASES, ids=[f"{m}x{n}x{k}-s{c['NUM_KSPLIT']}-{i}"
                                                  for i, (m, n, k, c) in enumerate(CASES)])
def test_split_k_bucket(M, N, K, cfg):
    for m in (M, M + 37):
        x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        ref = activation_ref(x.double() @ w.double().T + b.double(), "silu")
        out = torch.full((m, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        gemmkit.gemm_a16w16(x, w, b, activation="silu", out=out, config=cfg)
        assert torch.isfinite(out).all(), "unwritten (NaN) elements"
        err = ((out.double() - ref).norm() / ref.norm()).item()
        assert err <= TOL[torch.bfloat16], (m, N, K, err)
        for _ in range(3):
            assert torch.equal(gemmkit.gemm_a16w16(x, w, b, activation="silu", config=cfg), out)
