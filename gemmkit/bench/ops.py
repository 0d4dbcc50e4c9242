"""What `gemmkit bench` and `gemmkit tune` need to know about each op, in one place.

For each op: how to make fresh inputs for a shape, how to call gemmkit with a
config, what a user would call in torch instead (the vendor reference, timed in
the same process), how to check a result, and which table the tuner writes.

    op                dtypes        vendor reference (what the ratio is against)
    a16w16            bf16, fp16    torch.matmul(x, w.T)                       (cuBLAS)
    a8w8              fp8, int8     fp8:  torch._scaled_mm, rowwise scales     (cuBLASLt, fast accum off)
                                    int8: torch._int_mm, then the scaling in torch
    a8w8_blockscale   fp8           torch._scaled_mm block-scaled (cuBLASLt 1x128 / 128x128 scales)
    batched_a16w16    bf16, fp16    torch.bmm(x, w.transpose(1, 2))            (cuBLAS batched)
    batched_a8w8      fp8, int8     a loop over B of the a8w8 references (torch._scaled_mm / torch._int_mm)
    ffn_gated         bf16, fp16    torch.matmul(x, w_gate_up.T), chunk, F.silu(g) * u, torch.matmul(h, w_down.T)
    a16w16_gated      bf16, fp16    the same without the down projection
    afp4wfp4          fp4           dequantize_mxfp4 (x and w) to bf16, then torch.matmul (no MXFP4
                                    matmul in torch on Hopper; gemmkit's sm_90 kernel is emulated too)
    split_cat         bf16, fp16    torch.matmul, view (M, D, S1 + S2), torch.cat([c[..., :S1], y], -1); c2 a view
    a8w8_blockscale_split_cat  fp8  the same with the block-scaled torch._scaled_mm of a8w8_blockscale
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
    # Tuner hook: live fp32 accumulator tiles of one program (register pruning). The op's candidate
    # configs are the tuner's own (gemmkit/tune/space.py OP_SPACES, keyed by `name`): bench imports nothing
    # from tune (the layers point one way: tune uses bench's timing and op descriptions).
    acc_tiles: Callable = lambda dtype_name, target: 1  # (dtype name, target) -> int

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

    return C.fp8_dtype(C.target_for(_torch().device(device)))  # "cuda" or a torch.device


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
    # x_scale M-major (strides (1, M)), as gemmkit.quant.quantize_fp8_blockwise(x, (1, 128)) returns it
    xs = (torch.rand(kb, M, device=device) / 16 + 1e-3).t()
    ws = torch.rand(nb, kb, device=device) / 16 + 1e-3
    # the vendor's weight scales, prepared once as a user would at load time (not timed): cuBLASLt's 128 x 128
    # layout, (kb, nb) with strides (1, L4), L4 = kb rounded up to a multiple of 4 (16-byte strides; torch checks
    # the size is kb, so where K is no multiple of 512 the padded rows are left out of the view: torch 2.11 takes
    # that at N = 128 and refuses it at larger N, where no layout gives a right product: docs/PERF.md)
    l4 = -(-kb // 4) * 4
    ws_vendor = torch.nn.functional.pad(ws, (0, l4 - kb)).t()[:kb]
    return x, w, xs, ws, ws_vendor, _blockwise_pads_m(x, w, xs, ws_vendor)


def _bs_run(inp, config, out=None):
    import gemmkit

    return gemmkit.gemm_a8w8_blockscale(*inp[:4], block_shape=BLOCK, config=config, out=out)


def _blockwise_scaled_mm(x, w, xs, ws_vendor, pad_m=False):
    """cuBLASLt's block-scaled fp8 GEMM through torch._scaled_mm (torch >= 2.9, CUDA 12.9+, sm_90): activations
    1 x 128 ((M, kb) fp32, strides (1, M)), weights 128 x 128 (`_bs_inputs`' layout), fast accumulation off (it
    refuses it). `pad_m`: this torch / cuBLAS takes only M % 4 == 0, so x and its scales are padded here, per call,
    as a user's code would (`_blockwise_pads_m`)."""
    torch = _torch()
    M = x.shape[0]
    if not pad_m:
        return torch._scaled_mm(x, w.t(), xs, ws_vendor, out_dtype=torch.bfloat16, use_fast_accum=False)
    mp = -(-M // 4) * 4
    xp = torch.empty(mp, x.shape[1], device=x.device, dtype=x.dtype)
    xp[:M] = x
    xp[M:].view(torch.uint8).zero_()
    xsp = torch.ones(xs.shape[1], mp, device=x.device).t()  # (mp, kb), strides (1, mp)
    xsp[:M] = xs
    y = torch._scaled_mm(xp, w.t(), xsp, ws_vendor, out_dtype=torch.bfloat16, use_fast_accum=False)
    return y[:M]


def _blockwise_pads_m(x, w, xs, ws_vendor):
    """Whether cuBLASLt's block-scaled GEMM needs M padded to a multiple of 4 on this shape: tried once, untimed
    (an exception inside a timed CUDA graph capture would spoil it). A shape it takes neither way fails when timed
    (the row records the vendor's error)."""
    if x.shape[0] % 4 == 0 or x.device.type != "cuda":
        return False
    try:
        _blockwise_scaled_mm(x, w, xs, ws_vendor)
        return False
    except RuntimeError:
        return True


def _bs_vendor(inp):
    return _blockwise_scaled_mm(*inp[:3], inp[4], pad_m=inp[5])


def _bs_reference(inp):
    from ..reference import expand_block_scales

    x, w, xs, ws = inp[:4]
    xd = x.float() * expand_block_scales(xs, (1, BLOCK[1]), x.shape)
    wd = w.float() * expand_block_scales(ws, BLOCK, w.shape)
    return xd @ wd.T


def _bs_compile(inp, config):
    from ..ops.gemm_a8w8_blockscale import compile_for

    compile_for(*inp[:4], config, block_shape=BLOCK)


# ----------------------------------------------------------------------------- afp4wfp4 (OCP MXFP4)

def _fp4_inputs(M, N, K, dtype_name, device):
    """Packed MXFP4 x, w and their E8M0 scales, quantized from fresh normal bf16 values."""
    torch = _torch()
    from ..quant import quantize_mxfp4

    xq, xs = quantize_mxfp4(torch.randn(M, K, device=device, dtype=torch.bfloat16))
    wq, ws = quantize_mxfp4(torch.randn(N, K, device=device, dtype=torch.bfloat16))
    return xq, wq, xs, ws


def _fp4_run(inp, config, out=None):
    import gemmkit

    return gemmkit.gemm_afp4wfp4(*inp, config=config, out=out)


def _fp4_vendor(inp):
    """What a user without an MXFP4 matmul writes: dequantize both operands to bf16, then cuBLAS."""
    torch = _torch()
    from ..quant import dequantize_mxfp4

    xq, wq, xs, ws = inp
    x = dequantize_mxfp4(xq, xs).to(torch.bfloat16)
    w = dequantize_mxfp4(wq, ws).to(torch.bfloat16)
    return torch.matmul(x, w.T)


def _fp4_reference(inp):
    from ..quant import dequantize_mxfp4

    xq, wq, xs, ws = inp
    return dequantize_mxfp4(xq, xs) @ dequantize_mxfp4(wq, ws).T


def _fp4_compile(inp, config):
    from ..ops.gemm_afp4wfp4 import compile_for

    compile_for(*inp, config)


def _fp4_min_bytes(M, N, K, dtype_name, batch):
    """Packed operands (K/2 bytes per row), E8M0 scales (K/32 per row), bf16 y."""
    return ((M + N) * (K // 2 + K // 32) + M * N * 2) * batch


# ----------------------------------------------------------------------------- batched_a16w16, batched_a8w8

def _batched_a16w16_inputs(M, N, K, dtype_name, device, batch=1):
    torch = _torch()
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    return torch.randn(batch, M, K, device=device, dtype=dt), torch.randn(batch, N, K, device=device, dtype=dt)


def _batched_a16w16_run(inp, config, out=None):
    import gemmkit

    return gemmkit.batched_gemm_a16w16(*inp, config=config, out=out)


def _batched_a16w16_compile(inp, config):
    from ..ops.batched_gemm import compile_for_a16w16

    compile_for_a16w16(*inp, config)


def _batched_a8w8_inputs(M, N, K, dtype_name, device, batch=1):
    torch = _torch()
    B = batch
    if dtype_name == "int8":
        x = torch.randint(-127, 128, (B, M, K), device=device, dtype=torch.int8)
        w = torch.randint(-127, 128, (B, N, K), device=device, dtype=torch.int8)
        xs = torch.rand(B, M, 1, device=device) / 127 + 1e-3
        ws = torch.rand(B, 1, N, device=device) / 127 + 1e-3
    else:
        f8 = _fp8_dtype(device)
        x = (torch.randn(B, M, K, device=device) * 4).to(f8)
        w = (torch.randn(B, N, K, device=device) * 4).to(f8)
        xs = torch.rand(B, M, 1, device=device) / 16 + 1e-3
        ws = torch.rand(B, 1, N, device=device) / 16 + 1e-3
    return x, w, xs, ws


def _batched_a8w8_run(inp, config, out=None):
    import gemmkit

    return gemmkit.batched_gemm_a8w8(*inp, config=config, out=out)


def _batched_a8w8_vendor(inp):
    """What a user writes in torch without a batched 8-bit GEMM: one cuBLASLt call per batch entry
    into slices of one output (fp8: torch._scaled_mm rowwise; int8: torch._int_mm, then the scaling)."""
    torch = _torch()
    x, w, xs, ws = inp
    B, M, N = x.shape[0], x.shape[1], w.shape[1]
    if x.dtype == torch.int8:
        acc = torch.empty(B, M, N, device=x.device, dtype=torch.int32)
        for b in range(B):
            torch._int_mm(x[b], w[b].T, out=acc[b])
        return (acc.float() * xs * ws).to(torch.bfloat16)
    y = torch.empty(B, M, N, device=x.device, dtype=torch.bfloat16)
    for b in range(B):
        torch._scaled_mm(x[b], w[b].T, scale_a=xs[b], scale_b=ws[b], out_dtype=torch.bfloat16, out=y[b])
    return y


def _batched_a8w8_reference(inp):
    x, w, xs, ws = inp
    return (x.float() @ w.float().transpose(1, 2)) * xs * ws


def _batched_a8w8_compile(inp, config):
    from ..ops.batched_gemm import compile_for_a8w8

    compile_for_a8w8(*inp, config)


BATCHED_SHAPE_DOC = "y (B, M, N) = x (B, M, K) @ w (B, N, K).T per batch entry; B = --batch"


# ----------------------------------------------------------------------------- ffn_gated, a16w16_gated

GATED_SHAPE_DOC = ("ffn_gated: y (M, K) = (silu(x @ Wg.T) * (x @ Wu.T)) @ w_down.T with x (M, K), "
                   "w_gate_up (2N, K) = [Wg; Wu], w_down (K, N): N = I (intermediate), K = hidden")
GATED_GEMM_SHAPE_DOC = ("a16w16_gated: h (M, N) = silu(x @ Wg.T) * (x @ Wu.T) with x (M, K), "
                        "w_gate_up (2N, K) = [Wg; Wu]: N = I (intermediate), K = hidden")


def _gated_inputs(M, N, K, dtype_name, device, down=True):
    torch = _torch()
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    x, w = torch.randn(M, K, device=device, dtype=dt), torch.randn(2 * N, K, device=device, dtype=dt) / K ** 0.5
    # weights scaled by 1/sqrt(fan-in) (as initialised in a model): h and y stay O(1)
    return (x, w, torch.randn(K, N, device=device, dtype=dt) / N ** 0.5) if down else (x, w)


def _ffn_run(inp, config, out=None):
    import gemmkit

    return gemmkit.ffn_gated(*inp, config=config, out=out)


def _gated_run(inp, config, out=None):
    import gemmkit

    return gemmkit.gemm_a16w16_gated(*inp, config=config, out=out)


def _gated_vendor(inp):
    """What a user writes in torch: one matmul for gate and up, then silu(g) * u."""
    import torch.nn.functional as F

    g, u = _torch().matmul(inp[0], inp[1].T).chunk(2, dim=-1)
    return F.silu(g) * u


def _ffn_vendor(inp):
    return _torch().matmul(_gated_vendor(inp), inp[2].T)


def _gated_reference(inp):
    import torch.nn.functional as F

    x, w = inp[0].float(), inp[1].float()
    n = w.shape[0] // 2
    return F.silu(x @ w[:n].T) * (x @ w[n:].T)


def _ffn_reference(inp):
    # h is held in x's dtype between the two GEMMs (ops/ffn.py), as the torch sequence holds it
    return _gated_reference(inp).to(inp[0].dtype).float() @ inp[2].float().T


def _gated_compile(inp, config):
    from ..ops.ffn import compile_for

    compile_for(inp[0], inp[1], config)


def _gated_model_rows(names, m_values=None):
    """(label, M, I, hidden) per model with a fused gate_up layer (2I, hidden) in model_configs.json."""
    from .suite import load_models

    models, default_m = load_models()
    names = list(models) if names in ("all", ["all"]) else ([names] if isinstance(names, str) else list(names))
    rows = []
    for name in names:
        if name not in models:
            raise ValueError(f"--model: unknown model {name!r}; expected one of {sorted(models)} or 'all'")
        for layer, (n2, k) in models[name]["layers"].items():
            if "gate_up" in layer or layer == "expert_w13":
                rows += [(f"{name} {layer}", m, n2 // 2, k) for m in (m_values or default_m)]
    return rows


# ----------------------------------------------------------------------------- split_cat, a8w8_blockscale_split_cat

# DeepSeek-V3 MLA kv_b_proj: each of D heads has S1 = qk_nope 128 rows of w (-> c1, the key, with the
# S3 = qk_rope 64 columns of k_pe after them) and S2 = v_head 128 rows (-> c2, the value).
SPLIT_CAT = (128, 128, 64)
SPLIT_CAT_SHAPE_DOC = ("c = x (M, K) @ w (N, K).T seen as (M, D, S1 + S2); c1 = cat(c[..., :S1], y) (M, D, S1 + S3), "
                       "c2 = c[..., S1:] (M, D, S2); fixed S1 = S2 = 128, S3 = 64 (DeepSeek-V3 qk_nope, v_head, "
                       "qk_rope), D = N / 256 heads; y = k_pe (M, 1, 64) expanded over D (stride 0)")


def _split_cat_dims(M, N):
    s1, s2, s3 = SPLIT_CAT
    if N % (s1 + s2):
        raise ValueError(f"--shape: split_cat needs N a multiple of S1 + S2 = {s1 + s2} (N = D * (S1 + S2)), got N={N}")
    return N // (s1 + s2), s1, s2, s3


def _split_cat_y(M, N, dtype, device):
    D, _s1, _s2, s3 = _split_cat_dims(M, N)
    return _torch().randn(M, 1, s3, device=device, dtype=dtype).expand(M, D, s3)


def _split_cat_inputs(M, N, K, dtype_name, device):
    x, w = _a16w16_inputs(M, N, K, dtype_name, device)
    return x, w, _split_cat_y(M, N, x.dtype, device)


def _split_cat_outs(M, N, y, dtype, out):
    """One flat buffer holding c1 then c2, both contiguous views (so the bench's check and the tuner
    compare one tensor); the op writes the same bytes as into two fresh tensors."""
    D, s1, s2, s3 = _split_cat_dims(M, N)
    n1 = M * D * (s1 + s3)
    buf = out if out is not None else _torch().empty(n1 + M * D * s2, dtype=dtype, device=y.device)
    return buf, buf[:n1].view(M, D, s1 + s3), buf[n1:].view(M, D, s2)


def _split_cat_run(inp, config, out=None):
    import gemmkit

    x, w, y = inp
    buf, c1, c2 = _split_cat_outs(x.shape[0], w.shape[0], y, x.dtype, out)
    gemmkit.gemm_split_cat(x, w, y, SPLIT_CAT[0], SPLIT_CAT[1], out=(c1, c2), config=config)
    return buf


def _split_cat_torch(x, w, y):
    """What a user writes in torch: matmul, view per head, cat the first part with y; c2 stays a view."""
    return _split_cat_of(_torch().matmul(x, w.T), y)


def _split_cat_of(c, y):
    """(c1, c2) of the GEMM's result c (M, N): view per head, cat the first part with y; c2 a view."""
    M, D = c.shape[0], y.shape[1]
    c = c.view(M, D, -1)
    return _torch().cat([c[..., :SPLIT_CAT[0]], y], dim=-1), c[..., SPLIT_CAT[0]:]


def _split_cat_flat_ref(c, y):
    """fp32 (c1, c2) of an fp32 c (M, N), flattened and concatenated as _split_cat_outs lays them out."""
    torch = _torch()
    M, D = c.shape[0], y.shape[1]
    c = c.view(M, D, -1)
    c1 = torch.cat([c[..., :SPLIT_CAT[0]], y.float()], dim=-1)
    return torch.cat([c1.reshape(-1), c[..., SPLIT_CAT[0]:].reshape(-1)])


def _split_cat_compile(inp, config):
    from ..ops.gemm_split_cat import compile_for

    x, w, y = inp
    _buf, c1, c2 = _split_cat_outs(x.shape[0], w.shape[0], y, x.dtype, None)
    compile_for(x, w, y, SPLIT_CAT[0], SPLIT_CAT[1], config, out=(c1, c2))


def _bs_split_cat_inputs(M, N, K, dtype_name, device):
    # fp8 operands and scales, the vendor's weight scales and M padding (as _bs_inputs), then y (bf16)
    return _bs_inputs(M, N, K, dtype_name, device) + (_split_cat_y(M, N, _torch().bfloat16, device),)


def _bs_split_cat_run(inp, config, out=None):
    import gemmkit

    x, w, xs, ws, _ws_vendor, _pad_m, y = inp
    buf, c1, c2 = _split_cat_outs(x.shape[0], w.shape[0], y, y.dtype, out)
    gemmkit.gemm_a8w8_blockscale_split_cat(x, w, xs, ws, y, SPLIT_CAT[0], SPLIT_CAT[1], block_shape=BLOCK,
                                           out=(c1, c2), config=config)
    return buf


def _bs_split_cat_compile(inp, config):
    from ..ops.gemm_split_cat import compile_for_blockscale

    x, w, xs, ws, _ws_vendor, _pad_m, y = inp
    _buf, c1, c2 = _split_cat_outs(x.shape[0], w.shape[0], y, y.dtype, None)
    compile_for_blockscale(x, w, xs, ws, y, SPLIT_CAT[0], SPLIT_CAT[1], config, block_shape=BLOCK, out=(c1, c2))


def _split_cat_min_bytes(operand_bytes):
    def min_bytes(M, N, K, dtype_name, batch):
        D, s1, s2, s3 = _split_cat_dims(M, N)
        scales = (M + -(-N // BLOCK[0])) * -(-K // BLOCK[1]) * 4 if operand_bytes == 1 else 0
        # x and w read once, k_pe (M, S3) read once, c1 and c2 written once (bf16)
        return int((M * K + N * K) * operand_bytes + scales + (M * s3 + M * D * (s1 + s3 + s2)) * 2)
    return min_bytes


def _split_cat_model_rows(names, m_values=None):
    """DeepSeek-V3 kv_b_proj (N = 128 heads x 256, K = kv_lora_rank 512): the layer this op is for."""
    from .suite import load_models

    models, default_m = load_models()
    names = ["deepseek-v3"] if names in ("all", ["all"]) else ([names] if isinstance(names, str) else list(names))
    if any(n != "deepseek-v3" for n in names):
        raise ValueError(f"--model: split_cat has rows for deepseek-v3 (MLA kv_b_proj) only, got {names}")
    n, k = models["deepseek-v3"]["layers"]["kv_b_proj"]
    return [("deepseek-v3 kv_b_proj", m, n, k) for m in (m_values or default_m)]


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
        run=_bs_run, vendor=_bs_vendor,
        vendor_name=lambda d: "torch._scaled_mm block-scaled 1x128 / 128x128 (cuBLASLt, use_fast_accum=False)",
        reference=_bs_reference, operand_bytes=lambda d: 1, compile_for=_bs_compile, peak_key=lambda d: "fp8",
        acc_tiles=lambda d, target: 2),  # the per-step scaled product beside the sum, on every target
    "afp4wfp4": BenchOp(
        name="afp4wfp4", dtypes=("fp4",), table_op=lambda d: "afp4wfp4", inputs=_fp4_inputs, run=_fp4_run,
        vendor=_fp4_vendor, vendor_name=lambda d: "dequantize_mxfp4 -> bf16, torch.matmul (cuBLAS)",
        reference=_fp4_reference, operand_bytes=lambda d: 0.5, compile_for=_fp4_compile, peak_key=lambda d: "fp4",
        shape_doc="y (M, N) = mxfp4 x (M, K) @ mxfp4 w (N, K).T; x, w packed (., K/2) uint8 + E8M0 scales (., K/32)",
        min_bytes=_fp4_min_bytes),
    "batched_a16w16": BenchOp(
        name="batched_a16w16", dtypes=("bf16", "fp16"), table_op=lambda d: "batched_a16w16",
        inputs=_batched_a16w16_inputs, run=_batched_a16w16_run,
        vendor=lambda inp: _torch().bmm(inp[0], inp[1].transpose(1, 2)),
        vendor_name=lambda d: "torch.bmm (cuBLAS batched)",
        reference=lambda inp: inp[0].float() @ inp[1].float().transpose(1, 2), operand_bytes=lambda d: 2,
        compile_for=_batched_a16w16_compile, peak_key=lambda d: d,
        out_dtype=lambda d: {"bf16": _torch().bfloat16, "fp16": _torch().float16}[d],
        shape_doc=BATCHED_SHAPE_DOC, batched=True),
    "batched_a8w8": BenchOp(
        name="batched_a8w8", dtypes=("fp8", "int8"),
        table_op=lambda d: "batched_a8w8_int8" if d == "int8" else "batched_a8w8",
        inputs=_batched_a8w8_inputs, run=_batched_a8w8_run, vendor=_batched_a8w8_vendor,
        vendor_name=lambda d: ("torch._int_mm per batch entry + torch scaling" if d == "int8"
                               else "torch._scaled_mm rowwise per batch entry (cuBLASLt, use_fast_accum=False)"),
        reference=_batched_a8w8_reference, operand_bytes=lambda d: 1, compile_for=_batched_a8w8_compile,
        peak_key=lambda d: d, shape_doc=BATCHED_SHAPE_DOC, batched=True,
        acc_tiles=lambda d, target: 2 if d == "fp8" and target.is_nvidia else 1),
    "ffn_gated": BenchOp(
        name="ffn_gated", dtypes=("bf16", "fp16"), table_op=lambda d: "a16w16_gated",
        inputs=_gated_inputs, run=_ffn_run, vendor=_ffn_vendor,
        vendor_name=lambda d: "torch.matmul, chunk, F.silu(g) * u, torch.matmul (cuBLAS + 2 elementwise)",
        reference=_ffn_reference, operand_bytes=lambda d: 2, compile_for=_gated_compile, peak_key=lambda d: d,
        out_dtype=lambda d: {"bf16": _torch().bfloat16, "fp16": _torch().float16}[d],
        shape_doc=GATED_SHAPE_DOC, flops=lambda M, N, K, b: 6.0 * M * N * K,
        # each weight read once, x read, y written (h is an intermediate: not counted)
        min_bytes=lambda M, N, K, d, b: (M * K + 3 * N * K + M * K) * 2,
        model_rows=_gated_model_rows, acc_tiles=lambda d, target: 2),
    "a16w16_gated": BenchOp(
        name="a16w16_gated", dtypes=("bf16", "fp16"), table_op=lambda d: "a16w16_gated",
        inputs=lambda M, N, K, d, dev: _gated_inputs(M, N, K, d, dev, down=False), run=_gated_run,
        vendor=_gated_vendor, vendor_name=lambda d: "torch.matmul, chunk, F.silu(g) * u (cuBLAS + 2 elementwise)",
        reference=_gated_reference, operand_bytes=lambda d: 2, compile_for=_gated_compile, peak_key=lambda d: d,
        out_dtype=lambda d: {"bf16": _torch().bfloat16, "fp16": _torch().float16}[d],
        shape_doc=GATED_GEMM_SHAPE_DOC, flops=lambda M, N, K, b: 4.0 * M * N * K,
        min_bytes=lambda M, N, K, d, b: (M * K + 2 * N * K + M * N) * 2,
        model_rows=_gated_model_rows, acc_tiles=lambda d, target: 2),
    "split_cat": BenchOp(
        name="split_cat", dtypes=("bf16", "fp16"), table_op=lambda d: "a16w16_split_cat",
        inputs=_split_cat_inputs, run=_split_cat_run, vendor=lambda inp: _split_cat_torch(*inp),
        vendor_name=lambda d: "torch.matmul (cuBLAS), view, torch.cat([c[..., :S1], y]); c2 a view",
        reference=lambda inp: _split_cat_flat_ref(inp[0].float() @ inp[1].float().T, inp[2]),
        operand_bytes=lambda d: 2, compile_for=_split_cat_compile, peak_key=lambda d: d,
        out_dtype=lambda d: {"bf16": _torch().bfloat16, "fp16": _torch().float16}[d],
        shape_doc=SPLIT_CAT_SHAPE_DOC, min_bytes=_split_cat_min_bytes(2), model_rows=_split_cat_model_rows),
    "a8w8_blockscale_split_cat": BenchOp(
        name="a8w8_blockscale_split_cat", dtypes=("fp8",), table_op=lambda d: "a8w8_blockscale_split_cat",
        inputs=_bs_split_cat_inputs, run=_bs_split_cat_run,
        vendor=lambda inp: _split_cat_of(_bs_vendor(inp), inp[6]),
        vendor_name=lambda d: "torch._scaled_mm block-scaled (cuBLASLt), view, torch.cat([c[..., :S1], y]); c2 a view",
        reference=lambda inp: _split_cat_flat_ref(_bs_reference(inp), inp[6]), operand_bytes=lambda d: 1,
        compile_for=_bs_split_cat_compile, peak_key=lambda d: "fp8", shape_doc=SPLIT_CAT_SHAPE_DOC,
        min_bytes=_split_cat_min_bytes(1), model_rows=_split_cat_model_rows, acc_tiles=lambda d, target: 2),
}


def get(name: str) -> BenchOp:
    if name not in BENCH_OPS:
        raise ValueError(f"--op: expected one of {', '.join(BENCH_OPS)}, got {name!r}")
    return BENCH_OPS[name]
