"""The host side of the CDNA ping-pong (cdna_pingpong.py): what a call may pass, the variant it compiles, the grid and
the arguments in the kernel's order. No device code, and no import of the kernel: cdna_pingpong.launch and
cdna_pingpong.signature put these together (the kernel file imports this one, never the other way).

    op (ops/gemm_a16w16.py) ──► ops/dispatch.dense: "backend": "gluon" on gfx942 / gfx950
                                   │ unsupported(cfg, x2, w, y, ...)  why this call cannot run here (None: it can)
                                   ▼
                                cdna_pingpong.launch(x2, w, bias, y, activation, cfg, target)
                                   │ variant(M, N, K)   EDGE (M or N not whole tiles), MASK_K (K % 2 BK != 0)
                                   │ cdna_pingpong.kernel_constexprs: tile, op lists, epilogue of that variant
                                   │ arguments(...)     (a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K): the kernel's order
                                   ▼ grid(M, N)         one program per BM x BN tile of y
                                launcher.launcher(cdna_pingpong_kernel, grid)(*arguments, **constexprs, num_warps=8)

Constraints (the kernel's own are in its file):
  - an AMD GPU of gfx942 / gfx950; x (M, K), w (N, K), y (M, N) row-major with rows of exactly K / K / N elements
    (no views of wider rows: the kernel computes row * K + k), 16-byte aligned bases, K % 16 == 0 and N % 16 == 0
    (what the static compile declares, and 16-byte rows for the direct-to-LDS loads);
  - bf16 / fp16 x and w of one dtype, bias of that dtype, y bf16 / fp16 / fp32;
  - every tensor's byte span below cdna_layout.BUFFER_BYTES (buffer ops: 32-bit byte offsets, Triton's range);
  - the config's tile is the kernel's (cdna_layout.tile_config: 256 x 256 x BK, 8 warps), no split-K;
  - the fused epilogue is one the installed Triton compiles without spilling for the call's variant
    (`spill_free()`, measured per release: a 256 x 256 accumulator over 8 waves leaves no room for some).
"""
from __future__ import annotations

from . import cdna_layout as L

KERNEL = "cdna_pingpong_kernel"
NUM_WARPS = L.NUM_WARPS
TARGETS = ("gfx942", "gfx950")
IN_DTYPES = ("bf16", "fp16")
OUT_DTYPES = ("bf16", "fp16", "fp32")
OUT_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
DIVISIBLE = ("a_ptr", "b_ptr", "c_ptr", "N", "K")  # 16-element / 16-byte facts the host guarantees (`unsupported`)

# The fused epilogues (has_bias, activation) the kernel compiles with 0 spills, per Triton release and (arch, EDGE,
# MASK_K, out dtype), for bf16 and fp16 operands alike (both measured; an epilogue is listed only where both are
# spill-free). Measured by tests/data/measure_cdna_pingpong.py (every arch x operand x output x bias x activation x
# variant: 480 static compiles a release; tests/data/cdna_pingpong_spills-<release>.json). The accumulator is 128
# fp32 registers of a lane's 256 (8 waves, 2 a SIMD); what fits beside it is the compiler's call, not an order of
# epilogue weight, and it moves between releases (3.7 reads gfx950's K tiles in halves, kernels/_budgets
# CDNA_K_HALVES; 3.8 and 3.9 fail to compile the EDGE variant at all: LLVM translation, `unrealized_conversion_cast`). A
# call outside its release's table runs on the Triton tier (ops/dispatch.py says why); a release newer than the
# newest measured gets the newest's table (kernels/_budgets' convention), `gemmkit isa` compiles each gfx950 / gfx942
# Gluon bucket's widest variant with its heaviest listed epilogue on the installed one.
# key: (arch, EDGE, MASK_K, out dtype) -> {has_bias: activations}; a variant missing takes no epilogue at all.
SPILL_FREE_BY_RELEASE = {
    (3, 6): {
        ('gfx942', False, False, 'bf16'): {False: ('none', 'relu'), True: ('none', 'relu')},
        ('gfx942', False, False, 'fp16'): {False: ('none', 'relu'), True: ('relu',)},
        ('gfx942', False, False, 'fp32'): {False: ('none', 'relu', 'gelu'), True: ('relu', 'gelu')},
        ('gfx950', False, False, 'bf16'): {False: ('none', 'relu'), True: ('none', 'relu')},
        ('gfx950', False, False, 'fp16'): {False: ('none', 'relu'), True: ('none', 'relu')},
        ('gfx950', False, False, 'fp32'): {False: ('none',), True: ('none', 'relu', 'gelu')},
        ('gfx950', False, True, 'bf16'): {False: ('none', 'relu', 'silu'), True: ('none', 'relu')},
        ('gfx950', False, True, 'fp16'): {False: ('none', 'relu', 'silu'), True: ('none', 'relu')},
        ('gfx950', False, True, 'fp32'): {False: ('none',), True: ('none', 'relu', 'gelu')},
        ('gfx950', True, False, 'bf16'): {False: ('none',), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', True, False, 'fp16'): {False: ('none',), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', True, False, 'fp32'): {False: ('none',), True: ('relu',)},
        ('gfx950', True, True, 'bf16'): {False: ('none',), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', True, True, 'fp16'): {False: ('none',), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', True, True, 'fp32'): {False: ('none',), True: ('none', 'relu')},
    },
    (3, 7): {
        ('gfx942', False, False, 'bf16'): {False: ('none', 'relu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', False, False, 'fp16'): {False: ('none', 'relu', 'gelu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', False, False, 'fp32'): {False: ('none', 'relu'), True: ('none', 'relu')},
        ('gfx942', False, True, 'bf16'): {False: ('none', 'relu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', False, True, 'fp16'): {False: ('none', 'relu', 'gelu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', False, True, 'fp32'): {False: ('none', 'relu'), True: ('none', 'relu')},
        ('gfx942', True, False, 'bf16'): {False: ('none', 'relu', 'gelu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', True, False, 'fp16'): {False: ('none', 'relu', 'gelu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', True, False, 'fp32'): {False: ('none', 'relu'), True: ('relu',)},
        ('gfx942', True, True, 'bf16'): {False: ('none', 'relu', 'gelu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', True, True, 'fp16'): {False: ('none', 'relu', 'gelu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', True, True, 'fp32'): {False: ('none',), True: ('relu',)},
        ('gfx950', False, False, 'bf16'): {False: ('none', 'relu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, False, 'fp16'): {False: ('none', 'relu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, False, 'fp32'): {False: ('none', 'relu'), True: ('relu',)},
        ('gfx950', False, True, 'bf16'): {False: ('none', 'relu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, True, 'fp16'): {False: ('none', 'relu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, True, 'fp32'): {False: ('relu',), True: ('relu',)},
        ('gfx950', True, False, 'bf16'): {False: ('none', 'relu'), True: ('gelu', 'gelu_tanh', 'silu')},
        ('gfx950', True, False, 'fp16'): {False: ('none', 'relu'), True: ('gelu', 'gelu_tanh', 'silu')},
        ('gfx950', True, False, 'fp32'): {False: ('none', 'relu')},
        ('gfx950', True, True, 'bf16'): {False: ('none', 'relu'), True: ('gelu', 'gelu_tanh', 'silu')},
        ('gfx950', True, True, 'fp16'): {False: ('none', 'relu'), True: ('gelu', 'gelu_tanh', 'silu')},
        ('gfx950', True, True, 'fp32'): {False: ('relu',)},
    },
    (3, 8): {
        ('gfx942', False, False, 'bf16'): {False: ('none', 'relu')},
        ('gfx942', False, False, 'fp16'): {False: ('relu', 'gelu')},
        ('gfx942', False, False, 'fp32'): {False: ('none', 'relu', 'gelu', 'silu')},
        ('gfx942', False, True, 'bf16'): {False: ('gelu_tanh', 'silu')},
        ('gfx942', False, True, 'fp16'): {False: ('gelu_tanh', 'silu')},
        ('gfx942', False, True, 'fp32'): {False: ('gelu_tanh', 'silu')},
        ('gfx950', False, False, 'bf16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, False, 'fp16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, False, 'fp32'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, True, 'bf16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, True, 'fp16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, True, 'fp32'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
    },
    (3, 9): {
        ('gfx942', False, False, 'bf16'): {False: ('none', 'relu', 'gelu_tanh', 'silu')},
        ('gfx942', False, False, 'fp16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', False, False, 'fp32'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx942', False, True, 'bf16'): {False: ('relu', 'silu')},
        ('gfx942', False, True, 'fp16'): {False: ('relu', 'gelu_tanh', 'silu')},
        ('gfx942', False, True, 'fp32'): {False: ('gelu_tanh',)},
        ('gfx950', False, False, 'bf16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, False, 'fp16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, False, 'fp32'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, True, 'bf16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, True, 'fp16'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
        ('gfx950', False, True, 'fp32'): {False: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu'), True: ('none', 'relu', 'gelu', 'gelu_tanh', 'silu')},
    },
}


def _measured_release(version=None) -> tuple:
    """The measured release `version` ((major, minor); default: the installed Triton, as kernels/_budgets reads it)
    takes its table from: the newest measured at or below it (the first measured for anything older)."""
    from .. import _budgets

    v = _budgets._v(version)
    return max([r for r in SPILL_FREE_BY_RELEASE if r <= v] or [min(SPILL_FREE_BY_RELEASE)])


def spill_free(version=None) -> dict:
    """The spill-free table of `version` (`_measured_release`)."""
    return SPILL_FREE_BY_RELEASE[_measured_release(version)]


def spill_free_release(version=None) -> str:
    """"Triton 3.7": the release whose measurement `spill_free(version)` is."""
    from .. import _budgets

    return _budgets.version_name(_measured_release(version))


def tile(target) -> tuple:
    cfg = L.tile_config(target)
    return cfg.BM, cfg.BN, cfg.BK


def variant(M: int, N: int, K: int, target) -> tuple[bool, bool]:
    """(EDGE, MASK_K) of a call: EDGE where M or N is not a multiple of the tile (rows past the end load as 0, the
    edge tiles' stores are masked), MASK_K where K is not a multiple of 2 * BK (the last stage pair's columns past
    K load as 0). Whole-tile calls compile the code without either."""
    bm, bn, bk = tile(target)
    return bool(M % bm or N % bn), bool(K % (2 * bk))


def epilogue_unsupported(target, in_dtype: str, out_dtype: str, has_bias: bool, activation: str, edge: bool,
                         mask_k: bool) -> str | None:
    """Why this epilogue cannot run in this variant on `target` (None: it can): the installed release's
    `spill_free` table."""
    ok = spill_free().get((target.arch, edge, mask_k, out_dtype), {})
    if activation in ok.get(bool(has_bias), ()):
        return None
    what = ("bias + " if has_bias else "") + activation + f", {out_dtype} out"
    where = ", ".join(n for n, on in (("edge tiles", edge), ("K % (2 * BK) != 0", mask_k)) if on) or "whole tiles"
    return (f"the epilogue ({what}) spills or does not compile on {target.arch} ({where}; measured with "
            f"{spill_free_release()}, kernels/gluon/cdna_host.SPILL_FREE_BY_RELEASE)")


def config_unsupported(cfg: dict, target) -> str | None:
    """Why `cfg` is not the kernel's tile (None: it is): the tile is derived from the target, not chosen."""
    bm, bn, bk = tile(target)
    got = (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"], cfg["num_warps"])
    if got != (bm, bn, bk, NUM_WARPS):
        return (f"the CDNA ping-pong's tile on {target.arch} is {bm} x {bn} x {bk} with {NUM_WARPS} warps "
                f"(cdna_layout.tile_config), the config asks for {got[0]} x {got[1]} x {got[2]} with {got[3]}")
    if cfg.get("NUM_KSPLIT", 1) != 1:
        return "split-K configs run on the Triton tier"
    return None


def _dtype_name(t) -> str | None:
    return {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32"}.get(str(t.dtype))


def _span_bytes(t) -> int:
    return (sum((s - 1) * st for s, st in zip(t.shape, t.stride())) + 1) * t.element_size() if t.numel() else 0


def operands_unsupported(x2, w, y, bias, target) -> str | None:
    """Why the kernel cannot take these tensors on `target` (None: it can). Meta tensors stand for a GPU call."""
    import torch

    if target.arch not in TARGETS:
        return f"needs gfx942 or gfx950, not {target.arch}"
    for name, t in (("x", x2), ("w", w), ("y", y), ("bias", bias)):
        if t is None:
            continue
        if t.device.type == "meta":
            continue
        if t.device.type != "cuda" or not getattr(torch.version, "hip", None):
            return f"{name}: the CDNA ping-pong runs on an AMD GPU (a ROCm build of torch), got a tensor on {t.device}"
    din, dout = _dtype_name(x2), _dtype_name(y)
    if din not in IN_DTYPES or w.dtype != x2.dtype:
        return f"needs bf16 / fp16 x and w of one dtype, got {x2.dtype} and {w.dtype}"
    if dout not in OUT_DTYPES:
        return f"needs a bf16, fp16 or fp32 output, got {y.dtype}"
    if bias is not None and (bias.dtype != x2.dtype or bias.dim() != 1 or bias.stride(0) != 1):
        return "bias: needs a contiguous (N,) vector of x's dtype"
    M, K = x2.shape
    N = w.shape[0]
    if M == 0 or N == 0 or K == 0:
        return "empty operands are the op's to handle"
    for name, t, cols in (("x", x2, K), ("w", w, K), ("y", y, N)):
        if t.dim() != 2 or t.stride(1) != 1 or (t.shape[0] > 1 and t.stride(0) != cols):
            return f"{name}: needs a row-major tensor with rows of exactly {cols} elements, got strides {t.stride()}"
        if t.data_ptr() % 16:
            return f"{name}: needs a 16-byte aligned base"
    if K % 16 or N % 16:
        return f"needs K and N multiples of 16 (16-byte rows for the direct-to-LDS loads), got K = {K}, N = {N}"
    for name, t in (("x", x2), ("w", w), ("y", y), ("bias", bias)):
        if t is not None and _span_bytes(t) > L.BUFFER_BYTES:
            return f"{name}: spans {_span_bytes(t)} bytes, more than a buffer op addresses ({L.BUFFER_BYTES})"
    return None


def unsupported(cfg: dict, x2, w, y, bias, activation: str, target, has_bias: bool | None = None) -> str | None:
    """Why the CDNA ping-pong cannot serve this call with `cfg` (None: it can). `has_bias`: whether the call adds a
    bias, where `bias` is not at hand (the dispatch asks with the call's epilogue)."""
    if target.arch not in TARGETS:
        return f"needs gfx942 or gfx950, not {target.arch}"
    why = config_unsupported(cfg, target) or operands_unsupported(x2, w, y, bias, target)
    if why:
        return why
    M, K = x2.shape
    edge, mask_k = variant(M, w.shape[0], K, target)
    return epilogue_unsupported(target, _dtype_name(x2), _dtype_name(y), bias is not None if has_bias is None
                                else has_bias, activation, edge, mask_k)


def grid(M: int, N: int, target) -> tuple:
    """One program per BM x BN tile of y: (cdiv(M, BM), cdiv(N, BN)); program (i, j) writes rows i * BM.. and
    columns j * BN.. (the last ones masked at M / N)."""
    bm, bn, _ = tile(target)
    return (-(-M // bm), -(-N // bn))


def arguments(x2, w, bias, y) -> tuple:
    """The kernel's runtime arguments, in its order: (a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K). Without a bias the
    kernel is compiled with HAS_BIAS False and never reads bias_ptr (x stands in)."""
    M, K = x2.shape
    return (x2, w, y, bias if bias is not None else x2, M, w.shape[0], K)
