"""Interpreter check behind `gemmkit bench` on a machine without a GPU (run with TRITON_INTERPRET=1).

fp16 only: Triton 3.6's interpreter multiplies bf16 dot operands as raw bits
(triton issue 11584); the test suite patches that in tests/conftest.py, this
user-facing check does not patch Triton.
"""
import torch


def main():
    import gemmkit
    from gemmkit.ops import _common as C
    from gemmkit.reference import gemm_a16w16_ref, rel_error

    assert C.interpreting(), "run with TRITON_INTERPRET=1"
    torch.manual_seed(0)
    ok = True
    print(f"{'M':>4s} {'N':>4s} {'K':>4s} {'activation':>10s} {'path':>22s} {'rel err':>9s}")
    cases = [(1, 31, 40, None, None), (17, 128, 256, "silu", None), (64, 64, 96, "gelu", "tma"),
             (129, 72, 64, "relu", "persistent")]
    for M, N, K, act, path in cases:
        x, w = torch.randn(M, K, dtype=torch.float16), torch.randn(N, K, dtype=torch.float16)
        b = torch.randn(N, dtype=torch.float16)
        cfg = None
        if path:
            cfg = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2,
                   "num_warps": 4, "num_stages": 2, "tma": path == "tma", "persistent": path == "persistent"}
        before = dict(C.LAUNCHES)
        y = gemmkit.gemm_a16w16(x, w, b, activation=act, config=cfg)
        kernel = [k for k in C.LAUNCHES if C.LAUNCHES[k] != before.get(k, 0)]
        err = rel_error(y, gemm_a16w16_ref(x, w, b, act))
        good = err < 2**-10 and len(kernel) == 1
        ok &= good
        print(f"{M:4d} {N:4d} {K:4d} {str(act):>10s} {kernel[0] if kernel else 'NO KERNEL':>22s} {err:9.2e}"
              f"{'' if good else '  FAIL'}")
    print("interpreter check:", "ok" if ok else "FAILED")
    raise SystemExit(0 if ok else 1)
