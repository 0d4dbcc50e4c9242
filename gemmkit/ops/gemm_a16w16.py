"""gemm_a16w16: y = act(x @ w.T + bias) for bf16 / fp16, the nn.Linear convention.

The public entry `gemm_a16w16` and its custom ops (gemmkit::gemm_a16w16, returning a new tensor, and
gemmkit::gemm_a16w16_out, writing `out`), each with a fake for torch.compile, come from one `Op`
(ops/_registry.py: checks once per call signature, call plans, the eager path without the dispatcher).

Which kernel serves a call is ops/dispatch.py's rule, shared by every dense GEMM op: a config with
"backend": "gluon" (sm_90 tables, where it wins) runs the Gluon ping-pong or cooperative kernel
(kernels/gluon/hopper_pingpong.py, hopper_coop.py), on gfx942 / gfx950 the CDNA ping-pong (kernels/gluon/
cdna_pingpong.py, never run on AMD hardware), and the Triton tier (kernels/triton/dense.py) with
the same tile sizes when that kernel cannot take the call.
"""
from __future__ import annotations

import torch

from ..kernels.triton._epilogue import ACTIVATIONS
from . import _common as C
from . import dispatch as D
from ._registry import Op
from ..kernels.triton import dense as G
# The kernel-facing pieces, re-exported where the tuner and tests have always found them.
from ..kernels.triton.dense import check_feasible, smem_bytes, static_spec  # noqa: F401

OP = "a16w16"


# ----------------------------------------------------------------------------- validation

def _normalize_activation(activation):
    act = "none" if activation is None else activation
    if not isinstance(act, str) or act not in ACTIVATIONS:
        raise ValueError(f"activation: expected None or one of {ACTIVATIONS[1:]}, got {activation!r}")
    return act


def _check_inputs(x, w, bias, activation, out_dtype, out=None):
    C.check_tensor("x", x, dtypes=C.FLOAT16_DTYPES, min_ndim=1)
    C.check_tensor("w", w, ndim=2)
    if w.dtype != x.dtype:
        raise TypeError(f"w: expected dtype {x.dtype} (the dtype of x), got {w.dtype}")
    K = x.shape[-1]
    if w.shape[1] != K:
        raise ValueError(f"w: expected shape (N, {K}) to match x's last dim K={K}, got {tuple(w.shape)}")
    N = w.shape[0]
    if bias is not None:
        C.check_tensor("bias", bias, ndim=1)
        if bias.dtype != x.dtype:
            raise TypeError(f"bias: expected dtype {x.dtype} (the dtype of x), got {bias.dtype}")
        if bias.shape[0] != N:
            raise ValueError(f"bias: expected shape ({N},) (N = w.shape[0]), got {tuple(bias.shape)}")
    _normalize_activation(None if activation == "none" else activation)
    C.check_out_dtype(out_dtype)
    if out is not None:
        C.check_tensor("out", out)
        want = tuple(x.shape[:-1]) + (N,)
        if tuple(out.shape) != want:
            raise ValueError(f"out: expected shape {want}, got {tuple(out.shape)}")
        if out.dtype != out_dtype:
            raise TypeError(f"out: expected dtype {out_dtype} (out_dtype), got {out.dtype}")
        C.check_no_overlap("out", out)
    C.check_same_device(x=x, w=w, bias=bias, out=out)
    C.check_out_disjoint("out", out, x=x, w=w, bias=bias)
    return N, K


# ----------------------------------------------------------------------------- implementation

def _run(x, w, bias, activation, out_dtype, config, y_full, compile_only=False):
    N, K = w.shape
    M = x.shape[:-1].numel()
    y = y_full.view(M, N) if y_full.dim() != 2 else y_full
    C.check_device_supported(x)  # first: a CPU call without the interpreter raises, empty or not
    if M == 0 or N == 0:
        return
    if K == 0:  # the empty sum: act(0 + bias) in every row
        row = bias.float() if bias is not None else torch.zeros(N, device=x.device)
        y.copy_(_torch_activation(row, activation).expand(M, N))
        return
    target = C.target_for(x.device)
    dtype = "bf16" if x.dtype == torch.bfloat16 else "fp16"
    cfg, _source = C.resolve_config(OP, config, target, M, N, K, tune_as=("a16w16", dtype, x.device))
    launch(x.reshape(M, K), w, bias.contiguous() if bias is not None else None,
           y, activation, cfg, target, compile_only=compile_only)


def launch(x2, w2, bias, y, activation, cfg, target, compile_only=False):
    """gemm_a16w16's kernels for one call on 2-D operands (also ffn_gated's down projection): the kernel
    ops/dispatch.py chooses for the config and these tensors."""
    x2, w2 = G.matrix_operand(x2), G.matrix_operand(w2)
    choice = D.dense(cfg, target, x2, w2, y, epilogue=D.Epilogue(bias is not None, activation))
    D.launch_dense(choice, x2, w2, bias, y, activation, target, compile_only=compile_only)


def compile_for(x, w, config: dict, bias=None, activation=None, out_dtype=None):
    """Compile (no launch) the kernels `gemm_a16w16(x, w, ..., config=config)` would run.
    Used by the tuner inside triton's AsyncCompileMode to compile candidates in parallel."""
    activation = _normalize_activation(activation)
    out_dtype = out_dtype or x.dtype
    N, _K = _check_inputs(x, w, bias, activation, out_dtype)
    _run(x, w, bias, activation, out_dtype, C.config_to_str(config), _new_output(x, N, out_dtype), compile_only=True)


def _torch_activation(v, activation):
    from ..reference import activation_ref

    return activation_ref(v, activation)


def _out_view_ok(out, N):
    try:
        out.view(out.shape[:-1].numel(), N)  # not view(-1, N): -1 is ambiguous for an empty out
        return True
    except RuntimeError:
        return False


def _new_output(x, N, out_dtype):
    return torch.empty(tuple(x.shape[:-1]) + (N,), dtype=out_dtype, device=x.device)


def _check(x, w, bias, activation, *, out_dtype, out):
    """The op's checks (Op: eager, custom op and fake alike); the output's shape."""
    N, _K = _check_inputs(x, w, bias, activation, out_dtype, out)
    if out is not None and not _out_view_ok(out, N):
        raise ValueError(f"out: expected a tensor viewable as (M, {N}), got strides {out.stride()}")
    return tuple(x.shape[:-1]) + (N,)


def _execute(x, w, bias, activation, *, config, y):
    _run(x, w, bias, activation, y.dtype, config, y)


GEMM_A16W16 = Op("gemm_a16w16", "Tensor x, Tensor w, Tensor? bias, str activation", 3, _check, _execute,
                 default_out_dtype=lambda x, out: getattr(x, "dtype", None))


def gemm_a16w16(x, w, bias=None, *, activation=None, out_dtype=None, out=None, config=None):
    """y = act(x @ w.T + bias) for bf16 / fp16 inputs (nn.Linear's convention).

    Args:
      x: (..., K) bf16 or fp16. Flattened to (M, K) like nn.Linear.
      w: (N, K), same dtype as x. Any strides with unit stride on one dim run
         in place (a transposed weight is fine); other layouts are copied.
      bias: optional (N,), same dtype as x.
      activation: None, "relu", "gelu", "gelu_tanh" or "silu", applied after the bias.
      out_dtype: bf16, fp16 or fp32; defaults to x.dtype.
      out: optional preallocated (..., N) tensor of out_dtype, viewable as (M, N); written and returned.
      config: optional dict overriding the config table (keys as in gemmkit/configs).

    Returns (..., N) of out_dtype. M or N == 0 gives an empty result; K == 0 gives act(bias) (or zeros).
    No backward yet: inputs that require grad (with grad mode on) raise NotImplementedError.
    """
    return GEMM_A16W16.call(x, w, bias, _normalize_activation(activation), out_dtype=out_dtype, out=out,
                            config=config)


# ----------------------------------------------------------------------------- static cases (gemmkit isa)

def isa_cases(archs):
    """Every bucket of every shipped table (gemm kernels, bf16), plus the split-K reduce once per target, and for
    sm_90 the operand copy of unaligned K (kernels/triton/pad.py) and the kernel that reads such rows where they
    lie at a few tokens (kernels/triton/gemm_rows.py: its two M tiles, split and not) and past them by TMA
    (kernels/triton/gemm_rows_tma.py: its swapped and unswapped tiles, split and not); for gfx942 / gfx950 the copy
    and gemm_rows (ops/dispatch._vector_rows: rows off the pointer kernel's 16-byte vectors)."""
    yield from G.table_cases(OP, archs)
    rbm, rbn = G.reduce_tile(2**20, 2**20)
    for arch in archs:
        yield {"kernel": "splitk_reduce_kernel", "op": OP, "arch": arch, "table": "-", "bucket": "-",
               "config": {"SPLIT_K": 4, "BLOCK_M": rbm, "BLOCK_N": rbn, "num_warps": G.REDUCE_WARPS},
               "path": "reduce"}
    for arch in (a for a in archs if a != "sm_90"):
        yield from amd_rows_cases(OP, arch, ("bf16",))
    if "sm_90" in archs:  # the copy of operands whose rows TMA cannot address (ops/dispatch.py `_padded`)
        from ..kernels.triton import pad

        for dtype in ("bf16", "fp8e4nv"):
            yield {"kernel": "pad_rows_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": dtype,
                   "config": {"BLOCK_R": pad.BLOCK_R, "BLOCK_K": pad.BLOCK_K, "num_warps": pad.WARPS}, "path": "pad"}
        from .. import arch as _arch
        from ..kernels.triton import gemm_rows

        sm90 = _arch.ARCHS["sm_90"]  # the M tiles the dispatch can ask for (M <= MAX_M), on the target's SMs
        for bm in sorted({gemm_rows.tile(M, 4096, 4095, 2, sm90.num_cus)["BLOCK_M"] for M in (1, gemm_rows.MAX_M)}):
            for split in (1, 3):
                yield {"kernel": "gemm_rows_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": "bf16",
                       "config": {"BLOCK_M": bm, "BLOCK_N": gemm_rows.BLOCK_N, "num_warps": gemm_rows.WARPS,
                                  "SPLIT_K": split}, "path": "rows"}
        from ..kernels.triton import gemm_rows_tma

        # its swapped tile (at 8 tokens its partials in y's order, at 16 / 32 class-major), two unswapped ones (to
        # ROWS_TMA_MAX_M) and the wide one (a long w)
        for M, N in ((8, 4096), (16, 4096), (32, 4096), (128, 4096), (256, 4096), (200, 28672)):
            t = gemm_rows_tma.tile(M, N, 4095, 2, sm90.num_cus)
            for split in (1, 3):
                yield {"kernel": "gemm_rows_tma_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": "bf16",
                       "config": {"M": M, "N": N, "BLOCK_M": t["BLOCK_M"], "BLOCK_N": t["BLOCK_J"],
                                  "num_warps": t["num_warps"], "SPLIT_K": split}, "path": "rows_tma"}
        yield {"kernel": "shift_rows_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": "bf16",
               "config": {"BLOCK_R": pad.BLOCK_R, "BLOCK_K": pad.BLOCK_K, "num_warps": pad.WARPS}, "path": "shift"}
        for split in (1, 3):  # its partials' reduce (class-major: the columns put in order), its largest and least
            for bm, bj in ((gemm_rows_tma.REDUCE_M, gemm_rows_tma.REDUCE_J), (1, gemm_rows_tma.REDUCE_MIN_J)):
                yield {"kernel": "rows_reduce_kernel", "op": OP, "arch": "sm_90", "table": "-", "bucket": "bf16",
                       "config": {"BLOCK_M": bm, "BLOCK_N": bj * gemm_rows_tma.vec(2),
                                  "num_warps": gemm_rows_tma.REDUCE_WARPS, "SPLIT_K": split}, "path": "rows_reduce"}


def amd_rows_cases(op: str, arch: str, buckets):
    """The AMD cases of unaligned K (ops/dispatch._vector_rows): the copy of x and w (`pad_rows_kernel`) and
    gemm_rows at its M tile, split and not, for each operand bucket (bf16, or the target's fp8 / i8)."""
    from .. import arch as _arch
    from ..kernels.triton import gemm_rows, pad

    t = _arch.ARCHS[arch]
    for bucket in buckets:
        es = 2 if bucket == "bf16" else 1
        dtype = {"bf16": "bf16", "i8": "int8"}.get(bucket, "fp8")  # (the table cases' operand names)
        yield {"kernel": "pad_rows_kernel", "op": op, "arch": arch, "table": "-", "bucket": bucket, "dtype": dtype,
               "config": {"BLOCK_R": pad.BLOCK_R, "BLOCK_K": pad.BLOCK_K, "num_warps": pad.WARPS}, "path": "pad"}
        bm = gemm_rows.tile(1, 4096, 4095, es, t.num_cus)["BLOCK_M"]  # (M <= MAX_M: one M tile size)
        for split in (1, 3):
            yield {"kernel": "gemm_rows_kernel", "op": op, "arch": arch, "table": "-", "bucket": bucket,
                   "dtype": dtype, "path": "rows",
                   "config": {"BLOCK_M": bm, "BLOCK_N": gemm_rows.BLOCK_N, "num_warps": gemm_rows.WARPS,
                              "SPLIT_K": split}}


def isa_spec(case):
    from ..kernels.triton import gemm_rows_tma

    spec = gemm_rows_tma.isa_spec(case)  # the kernels of unaligned K: the copy, those that read w's rows where they
    if spec is not None:                 # lie, x's shifted copies
        return spec
    if case["path"] != "reduce":
        return G.table_spec(case)
    from .. import arch as _arch
    from ..kernels.triton import _splitk_reduce

    kernel, sig, ce, div, opts = G.reduce_static_spec(_arch.ARCHS[case["arch"]], split_k=case["config"]["SPLIT_K"])
    return dict(kernel=kernel, signature=sig, constexprs=ce, divisible=div, options=opts,
                promises=_splitk_reduce.SPLITK_PROMISES, block=None, smem_bound=0)
