"""NVIDIA compute-sanitizer memcheck over every kernel family, through the public ops (GPU tests).

One subprocess per family runs a small driver (`_DRIVER` below, argv[1] = the family) under
`compute-sanitizer --tool memcheck`: small shapes with edge tiles (1, 17, 129, 255, 300 rows; K not a multiple
of the K tile, not a multiple of 8 (TMA refused: the pointer kernels), partial scale blocks), every
representative config of the family's shipped sm_90 tables forced with `config=` (one per kind: Triton
pointer / TMA / persistent / split-K, Gluon ping-pong / cooperative / swap-AB / split tile), plus the table's
own choice (config=None). A config whose Gluon kernel cannot take a call runs on the Triton tier, so both
tiers are exercised. Outputs are NaN-poisoned and loosely checked against torch (the property tests check
the numbers exactly; this checks memory accesses). The driver prints "sanitized run done" at its end;
the test asserts that and "ERROR SUMMARY: 0 errors". A missing compute-sanitizer fails the test.

Budget: the families together take a few minutes on an H100 / H200 (memcheck slows kernels, and each
config is compiled once per shape class); run `pytest -m gpu tests/kernels/test_sanitizer.py -k a16w16` for one.
"""
import os
import subprocess
import sys

import pytest
import torch

from _util import ROOT, _sanitizer_exe, assert_sanitizer_clean

pytestmark = pytest.mark.gpu

FAMILIES = ["a16w16", "a8w8", "a8w8_blockscale", "afp4wfp4", "batched", "ffn", "split_cat", "quant"]

_DRIVER = r'''
import sys
import torch
import gemmkit
from gemmkit import configs, quant
from gemmkit.configs import SPLIT_N
from gemmkit.reference import expand_block_scales

torch.backends.cuda.matmul.allow_tf32 = False
fam = sys.argv[1]
dev = "cuda"
torch.manual_seed(0)
bf16, fp8 = torch.bfloat16, torch.float8_e4m3fn
SHAPES = [(1, 130, 72), (17, 257, 200), (129, 64, 127), (300, 392, 136)]  # (M, N, K): edges, K % 8 != 0


def reps(op, limit=6):
    """None (the table) and one shipped sm_90 config of each kind (backend, warps, swap-AB, split-K, TMA,
    persistence, split tile)."""
    seen = {}
    for p in configs.shipped_tables(op):
        if p.parent.name != "sm_90":
            continue
        t = configs.load_table(str(p))
        for _, cfg in configs.bucket_configs(t):
            key = (cfg.get("backend", "triton"), cfg["num_warps"], bool(cfg.get("swap_ab")),
                   cfg.get("NUM_KSPLIT", 1) > 1, bool(cfg.get("tma")), bool(cfg.get("persistent")),
                   cfg["BLOCK_SIZE_N"] in SPLIT_N)
            seen.setdefault(key, dict(cfg))
    return [None] + list(seen.values())[:limit]


def nan(*shape, dtype=bf16):
    return torch.full(shape, float("nan"), device=dev, dtype=dtype)


def check(y, ref, what, tol=2**-6):
    torch.cuda.synchronize()
    y, ref = y.double(), ref.double()
    assert torch.isfinite(y).all(), f"{what}: non-finite output"
    err = ((y - ref).norm() / ref.norm().clamp_min(1e-30)).item()
    assert err <= tol or ref.norm().item() == 0, f"{what}: rel err {err:.3g}"


def q8(*shape, dtype):
    if dtype == torch.int8:
        return torch.randint(-128, 128, shape, device=dev, dtype=torch.int8)
    return (torch.randn(*shape, device=dev) * 8).to(dtype)


if fam == "a16w16":
    for cfg in reps("a16w16", 8):
        for M, N, K in SHAPES:
            x, w, b = (torch.randn(M, K, device=dev, dtype=bf16), torch.randn(N, K, device=dev, dtype=bf16),
                       torch.randn(N, device=dev, dtype=bf16))
            y = gemmkit.gemm_a16w16(x, w, b, activation="silu", out=nan(M, N), config=cfg)
            check(y, torch.nn.functional.silu(x.float() @ w.float().T + b.float()), (cfg, M, N, K))
            y = gemmkit.gemm_a16w16(x, w, out_dtype=torch.float32, config=cfg)
            check(y, x.float() @ w.float().T, (cfg, M, N, K, "fp32"))
elif fam == "a8w8":
    for dtype, op in ((fp8, "a8w8"), (torch.int8, "a8w8_int8")):
        for cfg in reps(op):
            for M, N, K in SHAPES:
                K = max(K, 32)
                x, w = q8(M, K, dtype=dtype), q8(N, K, dtype=dtype)
                xs, ws = torch.rand(M, 1, device=dev) + 0.1, torch.rand(1, N, device=dev) + 0.1
                b = torch.randn(N, device=dev, dtype=bf16)
                y = gemmkit.gemm_a8w8(x, w, xs, ws, b, out=nan(M, N), config=cfg)
                check(y, (x.float() @ w.float().T) * xs * ws + b.float(), (dtype, cfg, M, N, K))
elif fam == "a8w8_blockscale":
    for cfg in reps("a8w8_blockscale"):
        for M, N, K in SHAPES + [(64, 256, 300)]:
            x, w = q8(M, K, dtype=fp8), q8(N, K, dtype=fp8)
            xs = torch.rand(M, -(-K // 128), device=dev) + 0.5
            ws = torch.rand(-(-N // 128), -(-K // 128), device=dev) + 0.5
            ref = (x.float() * expand_block_scales(xs, (1, 128), x.shape)) @ \
                (w.float() * expand_block_scales(ws, (128, 128), w.shape)).T
            for xs_l in (xs, xs.T.contiguous().T):  # row-major, M-major
                y = gemmkit.gemm_a8w8_blockscale(x, w, xs_l, ws, out=nan(M, N), config=cfg)
                check(y, ref, (cfg, M, N, K))
elif fam == "afp4wfp4":
    for cfg in reps("afp4wfp4"):
        for M, N, K in [(1, 130, 64), (17, 257, 224), (129, 64, 96), (300, 392, 160)]:
            (xq, xs), (wq, ws) = quant.quantize_mxfp4(torch.randn(M, K, device=dev)), \
                quant.quantize_mxfp4(torch.randn(N, K, device=dev))
            y = gemmkit.gemm_afp4wfp4(xq, wq, xs, ws, out=nan(M, N), config=cfg)
            ref = quant.dequantize_mxfp4(xq, xs) @ quant.dequantize_mxfp4(wq, ws).T
            check(y, ref, (cfg, M, N, K))
elif fam == "batched":
    for cfg in reps("batched_a16w16"):
        for B, M, N, K in [(2, 17, 130, 72), (16, 300, 264, 136), (3, 129, 64, 127)]:
            x, w = torch.randn(B, M, K, device=dev, dtype=bf16), torch.randn(B, N, K, device=dev, dtype=bf16)
            b = torch.randn(B, N, device=dev, dtype=bf16)
            y = gemmkit.batched_gemm_a16w16(x, w, b, activation="gelu", out=nan(B, M, N), config=cfg)
            check(y, torch.nn.functional.gelu(torch.bmm(x.float(), w.float().transpose(1, 2)) + b.float()[:, None]),
                  (cfg, B, M, N, K))
    for dtype, op in ((fp8, "batched_a8w8"), (torch.int8, "batched_a8w8_int8")):
        for cfg in reps(op, 3):
            for B, M, N, K in [(2, 17, 130, 72), (3, 129, 64, 160)]:
                x, w = q8(B, M, K, dtype=dtype), q8(B, N, K, dtype=dtype)
                xs, ws = torch.rand(B, M, 1, device=dev) + 0.1, torch.rand(B, 1, N, device=dev) + 0.1
                y = gemmkit.batched_gemm_a8w8(x, w, xs, ws, out=nan(B, M, N), config=cfg)
                check(y, torch.bmm(x.float(), w.float().transpose(1, 2)) * xs * ws, (dtype, cfg, B, M, N, K))
elif fam == "ffn":
    for cfg in reps("a16w16_gated"):
        # (9, 131, 127) and (16, 40, 75): K % 8 != 0 at a few tokens, the gated rows kernel (w read where it lies);
        # I % 8 != 0 too, so ffn's down GEMM takes the rows kernel as well
        for M, I, K in [(1, 130, 72), (17, 257, 200), (129, 64, 127), (300, 200, 136), (9, 131, 127), (16, 40, 75)]:
            x = torch.randn(M, K, device=dev, dtype=bf16)
            wgu, wd = torch.randn(2 * I, K, device=dev, dtype=bf16), torch.randn(K, I, device=dev, dtype=bf16)
            h = gemmkit.gemm_a16w16_gated(x, wgu, out=nan(M, I), config=cfg)
            href = torch.nn.functional.silu(x.float() @ wgu[:I].float().T) * (x.float() @ wgu[I:].float().T)
            check(h, href, (cfg, M, I, K))
            y = gemmkit.ffn_gated(x, wgu, wd, out=nan(M, K), config=cfg)
            check(y, href.to(bf16).float() @ wd.float().T, (cfg, M, I, K, "ffn"))
elif fam == "split_cat":
    for cfg in reps("a16w16_split_cat"):
        for M, K, D, S1, S2, S3 in [(1, 72, 4, 128, 128, 64), (17, 200, 3, 32, 32, 16), (129, 127, 5, 12, 20, 8),
                                    (300, 136, 2, 24, 40, 16)]:
            x, w = torch.randn(M, K, device=dev, dtype=bf16), torch.randn(D * (S1 + S2), K, device=dev, dtype=bf16)
            y = torch.randn(M, 1, S3, device=dev, dtype=bf16).expand(M, D, S3)
            c1, c2 = gemmkit.gemm_split_cat(x, w, y, S1, S2, out=(nan(M, D, S1 + S3), nan(M, D, S2)), config=cfg)
            c = (x.float() @ w.float().T).view(M, D, S1 + S2)
            check(c1, torch.cat([c[..., :S1], y.float()], -1), (cfg, M, K, D))
            check(c2, c[..., S1:], (cfg, M, K, D, "c2"))
    for cfg in reps("a8w8_blockscale_split_cat"):
        for M, K, D, S1, S2, S3 in [(1, 512, 2, 128, 128, 64), (129, 300, 3, 32, 32, 16), (17, 200, 5, 12, 20, 8)]:
            N = D * (S1 + S2)
            x, w = q8(M, K, dtype=fp8), q8(N, K, dtype=fp8)
            xs, ws = torch.rand(M, -(-K // 128), device=dev) + 0.5, torch.rand(-(-N // 128), -(-K // 128), device=dev) + 0.5
            y = torch.randn(M, 1, S3, device=dev, dtype=bf16).expand(M, D, S3)
            c1, c2 = gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, S1, S2,
                                                            out=(nan(M, D, S1 + S3), nan(M, D, S2)), config=cfg)
            c = ((x.float() * expand_block_scales(xs, (1, 128), x.shape)) @
                 (w.float() * expand_block_scales(ws, (128, 128), w.shape)).T).view(M, D, S1 + S2)
            check(c1, torch.cat([c[..., :S1], y.float()], -1), (cfg, M, K, D))
            check(c2, c[..., S1:], (cfg, M, K, D, "c2"))
elif fam == "quant":
    for M, K in [(1, 1), (17, 127), (129, 129), (300, 256), (5, 4100)]:
        for dt in (bf16, torch.float16, torch.float32):
            x = torch.randn(M, K, device=dev, dtype=dt)
            x[0, 0] = float("inf")
            if M > 2:
                x[1] = 0
                x[2, -1] = float("nan")
            for fn in (quant.quantize_fp8_per_token, quant.quantize_fp8_per_channel, quant.quantize_int8_per_token):
                q, s = fn(x)
                torch.cuda.synchronize()
            for block in ((1, 128), (128, 128)):
                q, s = quant.quantize_fp8_blockwise(x, block)
                torch.cuda.synchronize()
            xt = x.T.contiguous().T  # a column-major input
            quant.quantize_fp8_per_token(xt)
            if K % 32 == 0:
                p, s = quant.quantize_mxfp4(x)
                y = quant.dequantize_mxfp4(p, s)
                torch.cuda.synchronize()
    for M, K in [(1, 32), (17, 96), (129, 4096)]:
        p = torch.randint(0, 256, (M, K // 2), device=dev, dtype=torch.uint8)
        s = torch.randint(0, 256, (M, K // 32), device=dev, dtype=torch.uint8)
        quant.dequantize_mxfp4(p, s)
        torch.cuda.synchronize()
else:
    raise SystemExit(f"unknown family {fam}")
print("sanitized run done")
'''


def _run_memcheck(family, timeout=600):
    exe = _sanitizer_exe()
    # a GPU test: the H200 image has the tool, and a missing one is a failure there, as in _util.sanitize
    assert exe, "compute-sanitizer not found (looked on PATH and at /usr/local/cuda/bin/compute-sanitizer)"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TRITON_INTERPRET", None)
    r = subprocess.run([exe, "--tool", "memcheck", "--leak-check", "no", sys.executable, "-c", _DRIVER, family],
                       capture_output=True, text=True, env=env, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("family", FAMILIES)
def test_memcheck(family):
    """No out-of-bounds or misaligned global / shared access, no invalid free, in any kernel the family's
    ops launch for the shipped configs' kinds and the edge shapes above."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    rc, out = _run_memcheck(family)
    assert "sanitized run done" in out, f"the driver did not finish (exit {rc}):\n{out[-4000:]}"
    assert_sanitizer_clean(out)
    assert rc == 0, out[-4000:]
