"""Interpreter check behind `gemmkit bench` on a machine without a GPU (run with TRITON_INTERPRET=1).

bf16 and fp16, through the public op exactly as a user calls it: the interpreter computes
what the GPU does because `import gemmkit` fixes its bf16 dot and rounding
(gemmkit/kernels/_interpreter.py).
"""
import torch

# (M, N, K, activation, path, dtype): the table's config (None) or a 32 x 32 x 32 config on one path.
CASES = [(1, 31, 40, None, None, torch.bfloat16), (17, 128, 256, "silu", None, torch.float16),
         (64, 64, 96, "gelu", "tma", torch.bfloat16), (129, 72, 64, "relu", "persistent", torch.float16)]
# ||out - ref|| / ||ref|| bound: twice the output's half-ulp (2^-9 bf16, 2^-12 fp16), as tests/_util.TOL.
TOLERANCE = {torch.bfloat16: 2**-8, torch.float16: 2**-10}


def main():
    import gemmkit
    from gemmkit.ops import _common as C
    from gemmkit.reference import gemm_a16w16_ref, rel_error

    assert C.interpreting(), "run with TRITON_INTERPRET=1"
    torch.manual_seed(0)
    ok, n_ok, kernels = True, 0, []
    print(f"{'M':>4s} {'N':>4s} {'K':>4s} {'dtype':>5s} {'activation':>10s} {'path':>22s} {'rel err':>9s}", flush=True)
    for M, N, K, act, path, dtype in CASES:
        x, w = torch.randn(M, K, dtype=dtype), torch.randn(N, K, dtype=dtype)
        b = torch.randn(N, dtype=dtype)
        cfg = None
        if path:
            cfg = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2,
                   "num_warps": 4, "num_stages": 2, "tma": path == "tma", "persistent": path == "persistent"}
        before = dict(C.LAUNCHES)
        y = gemmkit.gemm_a16w16(x, w, b, activation=act, config=cfg)
        kernel = [k for k in C.LAUNCHES if C.LAUNCHES[k] != before.get(k, 0)]
        err = rel_error(y, gemm_a16w16_ref(x, w, b, act))
        good = err < TOLERANCE[dtype] and len(kernel) == 1
        ok &= good
        n_ok += good
        kernels += [k for k in kernel if k not in kernels]
        print(f"{M:4d} {N:4d} {K:4d} {'bf16' if dtype == torch.bfloat16 else 'fp16':>5s} {str(act):>10s} {kernel[0] if kernel else 'NO KERNEL':>22s} {err:9.2e}"
              f"{'' if good else '  FAIL'}", flush=True)
    # The last line is the verdict `gemmkit bench` repeats in its summary.
    print(f"interpreter check: {'ok' if ok else 'FAILED'}: gemm_a16w16 bf16 / fp16, {n_ok}/{len(CASES)} shapes "
          f"within 2^-8 (bf16) / 2^-10 (fp16) of the float64 reference, kernels run: {', '.join(kernels) or 'none'}", flush=True)
    raise SystemExit(0 if ok else 1)
