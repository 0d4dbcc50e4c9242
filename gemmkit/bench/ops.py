"""What `gemmkit bench` and `gemmkit tune` need to know about each op, in one place.

For each op: how to make fresh inputs for a shape, how to call gemmkit with a
config, what a user would call in torch instead (the vendor reference, timed in
the same process), how to check a result, and which table the tuner writes.

    op                dtypes        vendor reference (what the ratio is against)
    a16w16            bf16, fp16    torch.matmul(x, w.T)                       (cuBLAS)
    a8w8              fp8, int8     fp8:  torch._scaled_mm, rowwise scales     (cuBLASLt, fast accum off)
                                    int8: torch._int_mm, then the scaling in torch
    a8w8_blockscale   fp8           torch.matmul in bf16 on the same shape (the issue's bar)
"""
from __future__ import annotations

import dataclasses
from typing import Callable

__all__ = ["BenchOp", "BENCH_OPS", "get"]


@dataclasses.dataclass(frozen=True)
class BenchOp:
    name: str
    dtypes: tuple
    table_op: Callable  # dtype name -> config table op name
    inputs: Callable  # (M, N, K, dtype_name, device) -> tuple of tensors
    run: Callable  # (inputs, config or None, out=None) -> y
    vendor: Callable  # (inputs) -> y, what a user would write in torch
    vendor_name: Callable  # dtype name -> str
    reference: Callable  # (inputs) -> fp32 result on the device (correctness check)
    operand_bytes: Callable  # dtype name -> bytes per operand element
    compile_for: Callable  # (inputs, config) -> None (compile only)
    peak_key: Callable  # dtype name -> key of Target.peak_tflops
    out_dtype: Callable = lambda dtype_name: _torch().bfloat16  # dtype name -> torch dtype of y
    # Ops whose shape is more than (M, N, K) say what M, N, K mean for them (`shape_doc`) and
    # override the work they do (`flops`, `min_bytes`: the floor of bytes moved) and the rows
    # `--model` gives (`model_rows`: (model names, M values) -> (label, M, N, K) rows).
    # `batch` (bench/tune --batch) is the batch count B of the batched ops; 1 for the others.
    shape_doc: str = "y (M, N) = x (M, K) @ w (N, K).T"
    flops: Callable | None = None  # (M, N, K, batch) -> float
    min_bytes: Callable | None = None  # (M, N, K, dtype_name, batch) -> int
    model_rows: Callable | None = None  # (names, m_values or None) -> [(label, M, N, K)]
    batched: bool = False  # inputs(...) takes batch=B
    # Tuner hooks: live fp32 accumulator tiles of one program (register pruning), and the
    # candidate configs (default: tune.search_space; an op whose kernel lacks a path filters it).
    acc_tiles: Callable = lambda dtype_name, target: 1  # (dtype name, target) -> int
    search_space: Callable | None = None  # (M, N, K, target) -> [config]

    def make_inputs(self, M, N, K, dtype_name, device, batch=1):
        if self.batched:
            return self.inputs(M, N, K, dtype_name, device, batch=batch)
        return self.inputs(M, N, K, dtype_name, device)

    def work(self, M, N, K, dtype_name, batch=1):
        """(flops, minimum bytes moved) of one call: the two numbers behind TFLOP/s and GB/s."""
        flops = self.flops(M, N, K, batch) if self.flops else 2.0 * M * N * K * batch
        nbytes = self.min_bytes(M, N, K, dtype_name, batch) if self.min_bytes else \
            ((M * K + N * K) * self.operand_bytes(dtype_name) + M * N * self.out_dtype(dtype_name).itemsize) * batch
        return flops, nbytes

    def rows_for_models(self, names, m_values=None):
        if self.model_rows:
            return self.model_rows(names, m_values)
        from .suite import model_suite

        return model_suite(names, m_values)


def _torch():
    import torch

    return torch


# ----------------------------------------------------------------------------- a16w16

def _a16w16_inputs(M, N, K, dtype_name, device):
    torch = _torch()
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    return torch.randn(M, K, device=device, dtype=dt), torch.randn(N, K, device=device, dtype=dt)


def _a16w16_run(inp, config, out=None):
    import gemmkit

    return gemmkit.gemm_a16w16(*inp, config=config, out=out)


def _a16w16_compile(inp, config):
    from ..ops.gemm_a16w16 import compile_for

    compile_for(*inp, config)


# ----------------------------------------------------------------------------- a8w8

def _fp8_dtype(device):
    from ..ops import _common as C

    return C.fp8_dtype(C.target_for(device))


def _a8w8_inputs(M, N, K, dtype_name, device):
    torch = _torch()
    if dtype_name == "int8":
        x = torch.randint(-127, 128, (M, K), device=device, dtype=torch.int8)
        w = torch.randint(-127, 128, (N, K), device=device, dtype=torch.int8)
        xs = torch.rand(M, 1, device=device) / 127 + 1e-3
        ws = torch.rand(1, N, device=device) / 127 + 1e-3
    else:
        f8 = _fp8_dtype(device)
        x = (torch.randn(M, K, device=device) * 4).to(f8)
        w = (torch.randn(N, K, device=device) * 4).to(f8)
        xs = torch.rand(M, 1, device=device) / 16 + 1e-3
        ws = torch.rand(1, N, device=device) / 16 + 1e-3
    return x, w, xs, ws


def _a8w8_run(inp, config, out=None):
    import gemmkit

    return gemmkit.gemm_a8w8(*inp, config=config, out=out)


def _a8w8_vendor(inp):
    torch = _torch()
    x, w, xs, ws = inp
    if x.dtype == torch.int8:
        # torch._int_mm needs M > 16 (cuBLASLt int8); a user would then scale in torch.
        return (torch._int_mm(x, w.T).float() * xs * ws).to(torch.bfloat16)
    return torch._scaled_mm(x, w.T, scale_a=xs, scale_b=ws, out_dtype=torch.bfloat16)


def _a8w8_reference(inp):
    x, w, xs, ws = inp
    return (x.float() @ w.float().T) * xs * ws


def _a8w8_compile(inp, config):
    from ..ops.gemm_a8w8 import compile_for

    compile_for(*inp, config)


# ----------------------------------------------------------------------------- a8w8_blockscale

BLOCK = (128, 128)


def _bs_inputs(M, N, K, dtype_name, device):
    torch = _torch()
    f8 = _fp8_dtype(device)
    kb, nb = -(-K // BLOCK[1]), -(-N // BLOCK[0])
    x = (torch.randn(M, K, device=device) * 4).to(f8)
    w = (torch.randn(N, K, device=device) * 4).to(f8)
    xs = torch.rand(M, kb, device=device) / 16 + 1e-3
    ws = torch.rand(nb, kb, device=device) / 16 + 1e-3
    # bf16 copies of the same shape for the vendor bar (not part of the op's inputs)
    return x, w, xs, ws, torch.randn(M, K, device=device, dtype=torch.bfloat16), \
        torch.randn(N, K, device=device, dtype=torch.bfloat16)


def _bs_run(inp, config, out=None):
    import gemmkit

    return gemmkit.gemm_a8w8_blockscale(*inp[:4], block_shape=BLOCK, config=config, out=out)


def _bs_vendor(inp):
    torch = _torch()
    return torch.matmul(inp[4], inp[5].T)


def _bs_reference(inp):
    from ..reference import expand_block_scales

    x, w, xs, ws = inp[:4]
    xd = x.float() * expand_block_scales(xs, (1, BLOCK[1]), x.shape)
    wd = w.float() * expand_block_scales(ws, BLOCK, w.shape)
    return xd @ wd.T


def _bs_compile(inp, config):
    from ..ops.gemm_a8w8_blockscale import compile_for

    compile_for(*inp[:4], config, block_shape=BLOCK)


BENCH_OPS = {
    "a16w16": BenchOp(
        name="a16w16", dtypes=("bf16", "fp16"), table_op=lambda d: "a16w16", inputs=_a16w16_inputs,
        run=_a16w16_run, vendor=lambda inp: _torch().matmul(inp[0], inp[1].T),
        vendor_name=lambda d: "torch.matmul (cuBLAS)", reference=lambda inp: inp[0].float() @ inp[1].float().T,
        operand_bytes=lambda d: 2, compile_for=_a16w16_compile, peak_key=lambda d: d,
        out_dtype=lambda d: {"bf16": _torch().bfloat16, "fp16": _torch().float16}[d]),
    "a8w8": BenchOp(
        name="a8w8", dtypes=("fp8", "int8"), table_op=lambda d: "a8w8_int8" if d == "int8" else "a8w8",
        inputs=_a8w8_inputs, run=_a8w8_run, vendor=_a8w8_vendor,
        vendor_name=lambda d: ("torch._int_mm + torch scaling" if d == "int8"
                               else "torch._scaled_mm rowwise (cuBLASLt, use_fast_accum=False)"),
        reference=_a8w8_reference, operand_bytes=lambda d: 1, compile_for=_a8w8_compile, peak_key=lambda d: d,
        # fp8 on NVIDIA: the promoted sum beside the wgmma's partial one (kernels/triton/_mainloop.py)
        acc_tiles=lambda d, target: 2 if d == "fp8" and target.is_nvidia else 1),
    "a8w8_blockscale": BenchOp(
        name="a8w8_blockscale", dtypes=("fp8",), table_op=lambda d: "a8w8_blockscale", inputs=_bs_inputs,
        run=_bs_run, vendor=_bs_vendor, vendor_name=lambda d: "torch.matmul bf16 (cuBLAS), same shape",
        reference=_bs_reference, operand_bytes=lambda d: 1, compile_for=_bs_compile, peak_key=lambda d: "fp8",
        acc_tiles=lambda d, target: 2),  # the per-step scaled product beside the sum, on every target
}


def get(name: str) -> BenchOp:
    if name not in BENCH_OPS:
        raise ValueError(f"--op: expected one of {', '.join(BENCH_OPS)}, got {name!r}")
    return BENCH_OPS[name]
