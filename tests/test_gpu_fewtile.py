"""Few-tile split-K on the GPU (issue 3, M >= 256; run on the H200: `pytest -m gpu`).

Every shipped sm_90 A16W16 shape-table bucket at M >= 256 that splits K, run at its own (M, N, K)
and at a ragged M inside the bucket, with bias + SiLU, into a NaN-poisoned output: checked
against a float64 reference (every element written, ||y - ref|| / ||ref|| within tests/_util.TOL)
and bitwise identical over reruns (the reduce sums the partials in a fixed order)."""
import json
import re

import pytest
import torch

import gemmkit
from gemmkit import configs
from gemmkit.reference import activation_ref

from _util import TOL

pytestmark = pytest.mark.gpu


def _split_buckets():
    out = []
    for path in sorted((configs.CONFIG_DIR / "sm_90").glob("A16W16-N=*-K=*.json")):
        N, K = map(int, re.search(r"N=(\d+)-K=(\d+)", path.name).groups())
        for key, cfg in json.loads(path.read_text()).items():
            m = re.match(r"M_GEQ_(\d+)$", key)
            if m and int(m.group(1)) >= 256 and cfg.get("NUM_KSPLIT", 1) > 1:
                out.append((int(m.group(1)), N, K, cfg))
    return out


CASES = _split_buckets() + [(300, 577, 7000, {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128,
                                               "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 4,
                                               "NUM_KSPLIT": 8, "tma": tma}) for tma in (True, False)]


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
