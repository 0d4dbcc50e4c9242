"""The dispatch rule: which kernel serves a call, and why each kernel ahead of it cannot.

A config names a tile and a tier ("backend"); the call's operands and the target decide which kernel of
that tier can run it. The kernels are tried in one order, and the first that can take the call serves it:

  dense GEMMs (gemm_a16w16 and ffn_gated's down projection, gemm_a8w8, gemm_a8w8_blockscale)

    "backend": "gluon"  ─► hopper_pingpong_kernel      bf16 / fp16, num_warps 4 (a tile per consumer warpgroup)
                           hopper_coop_kernel          bf16 / fp16, num_warps 8 (two warpgroups on one tile)
                           hopper_pingpong_fp8_kernel  fp8 e4m3fn, per-token x per-channel or block scales
                           cdna_pingpong_kernel        gfx942 / gfx950: bf16 / fp16, the target's 256 x 256 tile
                              │ cannot take the call (interpreter, another target, TMA / buffer rules, split-K,
                              │ an epilogue that spills, ...)
                              ▼ the same config on the Triton tier (dense.triton_tile: its power-of-two tile)
    any config          ─► gemm_tma_kernel   "tma": true, sm_90, TMA-compatible x / w / y, its staging fits
                           gemm_kernel       always (a config that cannot fit here is the caller's ValueError)
                           + splitk_reduce_kernel after either Triton kernel when NUM_KSPLIT > 1
    x / w rows off 16-byte multiples (K % 8 != 0 in bf16, K % 16 != 0 in fp8 / int8), where a TMA or Gluon kernel
    would otherwise serve (16-bit without scales; fp8 / int8 with per-token x per-channel scales):
                           gemm_rows_tma_kernel  M = ROWS_TMA_MIN_M .. ROWS_TMA_MAX_M (`_rows_tma_kernel`): w read
                              where it lies by TMA, x's shifted copies (kernels/triton/gemm_rows_tma.py)
                           gemm_rows_kernel  where that one declines, M <= gemm_rows.MAX_M: w read where it lies
                           else the config's kernel on padded copies of x and (where its own rows are off,
                           or K % 8 != 0) w (kernels/triton/pad.py)

  the gated GEMM (gemm_a16w16_gated and ffn_gated's gate / up): "backend": "gluon" ─► the Gluon gated tile
  (hopper_coop_kernel at num_warps 8, hopper_pingpong_kernel at 4: GATED), unsplit, on sm_90 TMA operands; then the
  Triton tier in the same order: its gemm_gated_tma_kernel, gemm_gated_kernel; where w's rows are off 16 bytes
  gemm_rows_tma_kernel where `_rows_tma_kernel` takes the call (+ its rows_reduce_kernel, which applies the
  activation), else at M <= gemm_rows.MAX_M gemm_rows_kernel into fp32 partials (+ gated_splitk_reduce_kernel),
  else the TMA kernel on padded copies of x and (where its own rows are off) w; a 4-byte h's TMA kernel on a
  shorter ring (gated.fit_stages)

`dense` returns a `Choice`: the kernel, the config it runs, and (kernel, why) for each kernel passed over.
The ops launch `Choice.kernel`; `gemmkit configs` prints `Choice.explain()` for a shape; the tuner groups its
candidates by `preferred_kernel(cfg)`; `gemmkit isa` compiles `kernels_for(cfg)` for each shipped bucket.
The decision depends only on the call signature, so a call plan (callplan.py) makes it once per signature.

Each kernel's own facts (which dtypes, strides and targets it takes) stay in its host code
(`kernels/gluon/hopper_host.dense_unsupported`, `hopper_pingpong_fp8.unsupported`, `cdna_host.unsupported`,
`kernels/triton/dense.tma_unsupported`); this file holds the order and the config-level rules. What the installed
Triton's compiler cannot fit (a Gluon kernel that spills with a call's fused epilogue on that release) is
kernels/_budgets.py's table: the rule asks it last, with the call's `Epilogue` (bias or not, activation).
"""
from __future__ import annotations

import dataclasses
import os

from ..configs import split_tail
from ..kernels import _budgets
from ..kernels import _host as H
from ..kernels.triton import dense as G
from . import _common as C

GLUON_BF16 = "hopper_pingpong_kernel"
GLUON_COOP = "hopper_coop_kernel"
GLUON_FP8 = "hopper_pingpong_fp8_kernel"
GLUON_CDNA = "cdna_pingpong_kernel"
TRITON_TMA = "gemm_tma_kernel"
TRITON_POINTER = "gemm_kernel"
GATED_TMA, GATED_POINTER = "gemm_gated_tma_kernel", "gemm_gated_kernel"
TRITON_ROWS = "gemm_rows_kernel"
TRITON_ROWS_TMA = "gemm_rows_tma_kernel"
GLUON_KERNELS = (GLUON_BF16, GLUON_COOP, GLUON_FP8, GLUON_CDNA)


@dataclasses.dataclass(frozen=True)
class Epilogue:
    """What a call fuses after the GEMM: a bias (or not) and an activation (kernels/triton/_epilogue.ACTIVATIONS).
    The rule asks kernels/_budgets.py whether a Gluon kernel fits it in its registers under the installed Triton."""
    has_bias: bool = False
    activation: str = "none"


NO_EPILOGUE = Epilogue()


def _out_name(y) -> str:
    return H.TL_DTYPE[y.dtype]


def _budget_unsupported(kernel: str, cfg: dict, y, epilogue: Epilogue, scaling=G.NO_SCALING) -> str | None:
    return _budgets.gluon_epilogue_unsupported(kernel, cfg, _out_name(y), epilogue.has_bias, epilogue.activation,
                                               scaling.mode)


def epilogues_elsewhere(kernel: str, cfg: dict, out: str = "bf16", scale: str = "none") -> list:
    """[(epilogue, why)]: the fused epilogues for which the installed Triton's budget (kernels/_budgets.py) passes
    the Gluon `kernel` over with `cfg` (the Triton tier runs those calls; a gated config: its activations); [] on
    Triton 3.6. `gemmkit configs`."""
    fp8 = kernel == GLUON_FP8
    if cfg.get("gated"):
        order = _budgets.GATED_EPILOGUE_ORDER
    else:
        order = ((True, "none"), (False, "none")) if fp8 else _budgets.EPILOGUE_ORDER
    out_list = []
    for has_bias, act in order:
        why = _budgets.gluon_epilogue_unsupported(kernel, cfg, out, has_bias, act, scale)
        if why:
            out_list.append((_budgets.epilogue_name(has_bias, act), why))
    return out_list


@dataclasses.dataclass(frozen=True)
class Choice:
    kernel: str  # the kernel that serves the call (its @jit function's name, as launcher.LAUNCHES counts it)
    config: dict  # the config that kernel runs (a Gluon config's Triton fallback runs dense.triton_tile of it)
    passed_over: tuple = ()  # ((kernel, why), ...): the kernels ahead of it in the order, and why each cannot
    pad_k: int = 0  # > 0: x (and w: pad_k_w) are first copied to rows of pad_k elements (kernels/triton/pad.py), zeros
    # after K
    pad_k_w: bool = True  # with pad_k: w is copied too (False: a w whose rows TMA can address is left as it is)
    pad_m: int = 0  # > 0: x is first copied to pad_m rows, zeros after M (whole TMA boxes of rows: `pad_m`)
    pad_n: int = 0  # > 0: w is first copied to pad_n rows, zeros after N (whole TMA boxes of w's rows: `pad_n`)
    pitch_x: int = 0  # > 0: x's copy (for `pitch` alone, or pad_m's) has rows of pitch_x elements (a 128-byte pitch)
    pitch_w: int = 0  # > 0: w's copy (for `pitch` alone, or pad_n's) has rows of pitch_w elements
    pitch_y: int = 0  # > 0: the kernel writes a workspace of rows of pitch_y elements, copied to y after (`pitch_y`)
    gated: bool = False  # gemm_rows*_kernel for the gated GEMM: its fp32 partials go through the gated reduce (or
    # gemm_rows_tma's own, config["CLASS_MAJOR"]), which applies the activation

    @property
    def path(self) -> str:
        """The Triton tier's path ("tma" / "pointer"), or "gluon"."""
        return "gluon" if self.kernel in GLUON_KERNELS else "tma" if self.kernel in TMA_KERNELS else "pointer"

    def explain(self) -> str:
        class_major = self.kernel == TRITON_ROWS_TMA and self.config.get("CLASS_MAJOR")
        lines = [f"kernel: {self.kernel}" + (
            " (+ rows_reduce_kernel, which applies the activation)" if self.gated and class_major else
            " (+ the gated split-K reduce, which applies the activation)" if self.gated else
            " (+ its split-K reduce)" if self._reduces() and not class_major else "")]
        if self.kernel in (TRITON_ROWS, TRITON_ROWS_TMA):  # its tile is the shape's (gemm_rows*.tile)
            c, name = self.config, "gemm_rows" if self.kernel == TRITON_ROWS else "gemm_rows_tma"
            lines.append(f"  its own tile for the shape: {c['BLOCK_SIZE_M']} x {c['BLOCK_SIZE_N']} x {c['BLOCK_SIZE_K']}"
                         + (f", K split {c['NUM_KSPLIT']} ways" if c["NUM_KSPLIT"] > 1 else ", K unsplit")
                         + f" ({name}.tile; the config's tile is not used)")
        if self.kernel == TRITON_ROWS_TMA:
            v = c.get("VEC", 8)
            lines.append(f"  w's rows by TMA where they lie (boxes of one row class, n mod {v}), on {v} shifted copies "
                         "of x (shift_rows_kernel)")
            if class_major:
                lines.append("  fp32 partials with each program's columns together, summed and put in order by "
                             "rows_reduce_kernel" + (" (gate and up: act(g) * u)" if self.gated else ""))
        if self.pad_k:
            lines.append(f"  on copies of x{' and w' if self.pad_k_w else ''} with rows of {self.pad_k} elements "
                         "(pad_rows_kernel; zeros after K)")
        if self.pad_m:
            lines.append(f"  on a copy of x of {self.pad_m} rows (pad_rows_kernel; zeros after M): whole TMA boxes of "
                         "rows, which load faster than boxes reaching past M")
        if self.pad_n:
            lines.append(f"  on a copy of w of {self.pad_n} rows (pad_rows_kernel; zeros after N): whole TMA boxes of "
                         "w's rows, which load faster than boxes reaching past N")
        if self.pitch_y:
            lines.append(f"  into a workspace of rows of {self.pitch_y} elements (16-byte multiples, as TMA needs), "
                         "then copied to y (copy_rows: pad_rows_kernel)")
        for name, p in (("x", self.pitch_x), ("w", self.pitch_w)):
            if p:
                lines.append(f"  on a copy of {name} at a row pitch of {p} elements ({PITCH_BYTES} bytes' multiple): "
                             f"TMA box rows that start off {PITCH_SECTOR}-byte sectors load slowly (`pitch`)")
        lines += [f"  not {k}{' on the operands as given' if self.pad_k else ''}: {why}" for k, why in self.passed_over]
        return "\n".join(lines)

    def _reduces(self) -> bool:
        return self.config.get("NUM_KSPLIT", 1) > 1


def gluon_dense_kernel(cfg: dict, fp8: bool, target=None) -> str | None:
    """The Gluon kernel a config asks for (None: a Triton config); `fp8`: 8-bit operands (int8 too: the fp8 kernel
    then says it takes fp8 only). num_warps 8 is the cooperative layout (hopper_pingpong.is_coop); the fp8
    kernel takes both layouts. On an AMD `target`: the CDNA ping-pong (16-bit only: an 8-bit call passes it over
    with that reason)."""
    if cfg.get("backend") != "gluon":
        return None
    if target is not None and target.is_amd:  # 8-bit calls: the kernel's reasons say it takes no scales
        return GLUON_CDNA
    if fp8:
        return GLUON_FP8
    from ..kernels.gluon import hopper_pingpong

    return GLUON_COOP if hopper_pingpong.is_coop(cfg) else GLUON_BF16


def preferred_kernel(cfg: dict, fp8: bool = False) -> str:
    """The kernel a config is written for: what serves a call whose operands every kernel takes (contiguous,
    16-byte aligned, on an sm_90 GPU for the TMA and Gluon kernels). The tuner's kernel families."""
    return gluon_dense_kernel(cfg, fp8) or (TRITON_TMA if cfg.get("tma") else TRITON_POINTER)


def kernels_for(cfg: dict, target, in_bytes: int = 2, out_bytes: int = 2) -> list:
    """[(kernel, config)]: every kernel that can serve `cfg` on `target` for some call, in the dispatch
    order (the preferred one, then each fallback), with the config it runs there: what `gemmkit isa`
    compiles for a shipped bucket (dense.triton_kernels: the Triton TMA kernel where its shared memory fits)."""
    fp8 = in_bytes == 1
    out = []
    gluon = gluon_dense_kernel(cfg, fp8, target)
    if gluon:
        out.append((gluon, cfg))
    tile = G.triton_tile(cfg, fp8)
    return out + [(kernel, tile) for kernel in G.triton_kernels(tile, target, in_bytes, out_bytes)]


def dense(cfg: dict, target, x2, w, y, scaling=G.NO_SCALING, interpreting: bool | None = None,
          epilogue: Epilogue = NO_EPILOGUE) -> Choice:
    """The kernel that serves act(x2 @ w.T + bias) (2-D operands as the op launches them; `epilogue`: the bias and
    activation) with `cfg` on `target`. `interpreting`: the call runs in Triton's interpreter (default:
    `_interpreting(x2)`)."""
    fp8 = x2.dtype in H.FP8_DTYPES
    interpreting = _interpreting(x2) if interpreting is None else interpreting
    passed = []
    gluon = gluon_dense_kernel(cfg, x2.element_size() == 1, target)  # 8-bit: the fp8 kernel (which declines int8)
    if gluon:
        why = (failed_gluon(gluon, cfg)
               or _gluon_dense_unsupported(gluon, cfg, target, x2, w, y, scaling, interpreting, epilogue)
               or _budget_unsupported(gluon, cfg, y, epilogue, scaling))
        if why is None:
            return _rows_padded(Choice(gluon, cfg), x2, w)
        passed.append((gluon, why))
    tile = G.triton_tile(cfg, fp8)
    if target.is_nvidia:
        tma_tile = _tma_stages(tile, target, x2.element_size(), y.element_size())
        why = G.tma_unsupported(tma_tile, target, x2, w, y)
        if why is None:
            swapped = _swap_copied(cfg, target, x2, w, y, scaling, passed, interpreting, epilogue)
            return swapped or _rows_padded(Choice(TRITON_TMA, tma_tile, tuple(passed)), x2, w)
        passed.append((TRITON_TMA, why))
        rows = _rows_tma_kernel(tile, target, x2, w, scaling, passed) or \
            _rows_kernel(tile, target, x2, w, scaling, passed)
        if rows is not None:
            return rows
        padded = _padded(cfg, target, x2, w, y, scaling, passed, interpreting, epilogue)
        if padded is not None:
            return padded
        def route(ws):  # a Gluon split whose fp32 rows would be off 16 bytes: unsplit if the Gluon kernel takes it so
            inner = dense(cfg, target, x2, w, ws, scaling, interpreting, epilogue)
            if inner.path != "gluon" and cfg.get("backend") == "gluon" and cfg.get("NUM_KSPLIT", 1) > 1 and \
                    (y.shape[1] * 4) % H.TMA_ALIGN:
                unsplit = dense(dict(cfg, NUM_KSPLIT=1), target, x2, w, ws, scaling, interpreting, epilogue)
                return unsplit if unsplit.path == "gluon" else inner  # (the Triton tier keeps its split)
            return inner

        workspace = _y_workspace(y, y.shape[0] * y.shape[1] * x2.shape[1], passed, route)
        if workspace is not None:
            return workspace
    else:
        vector = _vector_rows(tile, target, x2, w, y, scaling, passed)
        if vector is not None:
            return vector
    tile = G.fallback_stages(tile, target, x2.element_size(), y.element_size(), tma=False)
    G.check_feasible(tile, target, x2.element_size(), y.element_size(), tma=False)
    return Choice(TRITON_POINTER, tile, tuple(passed))


# x and w rows copied to 16-byte multiples (kernels/triton/pad.py): the copy reads and writes w once more, but the
# pointer kernel on rows at 2-byte alignment is slower still, even where it only streams w. H200, bf16 4096 x 4095 w,
# CUDA graphs: M = 16 48.1 -> 31.8 us, M = 64 257 -> 35 us, M = 4096 3431 -> 217 us (docs/PERF.md, "Unaligned K").
# At a few tokens the copy is most of the call: there gemm_rows_kernel reads w once where it lies, in 16-byte
# vectors (kernels/triton/gemm_rows.py; measured in docs/PERF.md, "Unaligned K"). GEMMKIT_ROWS_KERNEL=0 (or
# ROWS_KERNEL = False) turns it off, e.g. to compare. gemm_a8w8's fp8 / int8 calls (K % 16 != 0, rowcol scales) take
# it at the same few tokens: not yet timed on a GPU (2026-12-07, no machine lent); predicted from the bytes moved
# (the copy reads and writes w once more before the kernel reads it: ~3x gemm_rows' traffic; bf16 gemm_rows
# streams at ~75% of the aligned kernel's rate) ~1.7x the copy at M = 1: H200 1 x 4096 x 4095 fp8 22.2 us on the
# copy, 10.5 at K = 4096 (results/h200/a8w8_models.json), so ~13 us.
ROWS_KERNEL = os.environ.get("GEMMKIT_ROWS_KERNEL", "1") != "0"


# Past gemm_rows' few tokens the copy of w is still most of the call (M = 64 x 4096 x 4095: 34.9 us against 13-14 at
# K = 4096): there gemm_rows_tma_kernel reads w once where it lies, by TMA (kernels/triton/gemm_rows_tma.py), up to
# ROWS_TMA_MAX_M tokens, where x's eight shifted copies hold at most ROWS_TMA_X_SHARE of w's bytes and K reaches
# ROWS_TMA_MIN_K (the swapped tile, M <= gemm_rows_tma.SWAP_MAX_M) or ROWS_TMA_MIN_K_UNSWAPPED (its partials and
# their reduce cost as much at any K). H100, 2026-12-07, same process, against this path off, class-major partials
# (benchmarks/results/h100/rows_tma.json, rows_tma_short_k.json: 32 shapes): every admitted shape ran faster, 1.07-2.48x
# (17 x 4096 x 4095 39.6 -> 24.3 us, 64 x 4096 x 4095 40.8 -> 26.0, 128 x 4096 x 4095 42.6 -> 33.2, 256 x 28672 x 8191
# 573 -> 338, 200 x 12288 x 1535 51.6 -> 48.3); the refused: 100 x 8192 x 1023 0.95x and 200 x 12288 x 1023 0.92x
# under the unswapped floor, 256 x 4096 x 4095 0.94x (x's copies half of w), but 56 x 1536 x 7001 (a third) 1.16x and
# 256 x 5000 x 7001 (0.41) 1.07x: the share is set under them, as no shape between 0.25 and 0.33 was timed. Fitted
# on these rows: the ten held-out shapes of rows_tma_heldout.json ran with the partials in y's order, before.
# From ROWS_TMA_MIN_M it serves gemm_rows' few tokens too (its partials in y's order to gemm_rows_tma.Y_ORDER_MAX_M
# tokens; to 16 when this was timed): H100, same process (results/h100/rows_tma_small_m.json, M = 2-16 on five
# weights), 1.02-1.45x gemm_rows on all 25 rows (2 x 14336 x 4095 77.4 -> 53.5 us, 16 x 4096 x 4095 23.9 -> 22.6),
# 0.99-1.31x on 15 held out (rows_tma_small_m_heldout.json); the gated call with its class-major partials 1.07-1.31x
# on three rows (4 x 4096 x 4095 44.8 -> 35.2, gated_unaligned_k.json). H200 (results/h200/, the same files, b5a2c4f):
# 1.05-1.62x, held out 0.99-1.42x (worst 3 x 576 x 7001). At M = 1 gemm_rows: 1 x 4096 x 4095 20.7 against 20.5
# (y's order) / 22.8 (class-major, rows_tma.json), the gated 35.7 against 40.1.
# gemm_a8w8's fp8 / int8 calls (rowcol scales) take it by the same rule, the K floors counted in bytes (twice the
# 16-bit elements) and the share in elements (16 copies of x at 8 bits): not yet timed on a GPU (2026-12-07, no
# machine lent). Predicted from the 16-bit rows: past one token the copy of w is most of the call there too (64 x 5000
# x 7000 fp8 50.5 us on the copy, H200 `unaligned_k.json`; w once at ~2.5 TB/s: ~15-20 us).
ROWS_TMA = os.environ.get("GEMMKIT_ROWS_TMA", "1") == "1"  # GEMMKIT_ROWS_TMA=0: off
ROWS_TMA_MIN_M, ROWS_TMA_MAX_M, ROWS_TMA_X_SHARE = 2, 256, 0.3
ROWS_TMA_MIN_K, ROWS_TMA_MIN_K_UNSWAPPED = 1000, 1280  # the shortest K timed (1023) won / lost


# A Gluon config's tile on the Triton tier's TMA kernel keeps as many of its stages as fit that path's shared memory
# (`dense.fallback_stages`: its output staging tile takes some) where at least this many fit; else the pointer kernel
# runs it (no staging tile: more stages). The cooperative 128 x 256 x 64 keeps 3 of 4 (bf16 y: H100, 1024-4096 x
# 4096 x 4096 with an operand transposed, 0.98-1.03x the contiguous call, `results/h100/layouts.json`); with an fp32 y
# 2 fit, so the pointer kernel runs it (3 rather than 2: not measured).
TMA_MIN_STAGES = 3


def _tma_stages(tile: dict, target, in_bytes: int, out_bytes: int) -> dict:
    """`tile` as the Triton tier's TMA kernel runs it: a Gluon config's stages fitted to that path (`fallback_stages`)
    where at least TMA_MIN_STAGES (or all of its own) fit, else as it is (the fit fails: the pointer kernel)."""
    fitted = G.fallback_stages(tile, target, in_bytes, out_bytes, tma=True)
    return fitted if fitted["num_stages"] >= min(TMA_MIN_STAGES, tile["num_stages"]) else tile


def _row_misaligned(t) -> bool:
    """Unit stride along K, but rows (or the base) off TMA's 16-byte rule: what a copy fixes. (An operand
    transposed in memory, unit stride along its rows, is left as it is: the TMA kernel's where that storage meets
    TMA's rules and it is 16-bit, kernels/triton/dense.mn_major, else the pointer kernel's.)"""
    return t.stride(-1) == 1 and not H.tma_compatible(t)


def _x_transposed_copy(x2, w, cfg) -> bool:
    """Whether x is transposed in memory (unit stride along M), holds at most w's bytes, and either no TMA kernel
    reads it in place (its (K, M) storage off TMA's rules: M % 8 != 0 for 16-bit x, 8-bit x:
    kernels/triton/dense.mn_major) or `cfg` is a Gluon swap-AB tile (`SWAP_COPY`). A copy of x to rows along K (one
    read and write of the smaller operand) lets the Gluon kernels run, or the TMA kernels instead of the pointer
    kernel (H100, 2 x 4096 x 4096 bf16 with x of strides (1, 2): the pointer kernel 45 us, with the copy 17.8 us, the
    contiguous call 15.7 us; benchmarks/layouts.py)."""
    return x2.stride(-1) != 1 and x2.numel() * x2.element_size() <= w.numel() * w.element_size() and \
        (not G.mn_major(x2) or (SWAP_COPY and bool(cfg.get("swap_ab"))))


# A small x transposed in memory that the TMA kernel reads in place (X_KM) is still copied to rows along K where the
# config is a Gluon swap-AB tile (decode-sized M): the Gluon kernels take rows along K only, and the copy is one
# launch over the smaller operand. Predicted +9% at 16 x 4096 x 4096 (the contiguous call's 15.7 us plus the copy's
# ~2, as at M = 2, against the TMA kernel's 19.5); H100, the same ABBA with it off (results/h100/layouts.json):
# M = 8 / 16 / 32 / 64 / 128 +11 / +11 / +7 / +14 / +3%. GEMMKIT_SWAP_COPY=0 (or SWAP_COPY = False) turns it off,
# e.g. to compare (benchmarks/layouts.py does).
SWAP_COPY = os.environ.get("GEMMKIT_SWAP_COPY", "1") != "0"

# A 16-bit w transposed in memory (a (K, N) weight passed as W.t()) under a Gluon ping-pong swap-AB tile (decode-sized
# M) is read there in place (kernels/gluon/hopper_pingpong.py X_KM: wgmma's MN-major A), not by the Triton tier's TMA
# kernel (its W_KN): H100, 2-128 x 4096 x 4096, same ABBA with it off, 16.3-19.8 -> 15.4-16.5 us, as fast as the
# contiguous call (results/h100/layouts.json). GEMMKIT_SWAP_W_KN=0 (or SWAP_W_KN = False) turns it off, e.g. to
# compare (benchmarks/layouts.py does).
SWAP_W_KN = os.environ.get("GEMMKIT_SWAP_W_KN", "1") != "0"


def _swap_copied(cfg, target, x2, w, y, scaling, passed, interpreting, epilogue) -> Choice | None:
    """The Gluon swap-AB tile on a copy of a small transposed x that the TMA kernel would read in place
    (`SWAP_COPY`), or None: no such copy, or the Gluon kernel declines the call on it too."""
    if not (x2.stride(-1) != 1 and G.mn_major(x2) and _x_transposed_copy(x2, w, cfg)):
        return None
    padded = _padded(cfg, target, x2, w, y, scaling, passed, interpreting, epilogue)
    return padded if padded is not None and padded.path == "gluon" else None


def _padded(cfg, target, x2, w, y, scaling, passed, interpreting, epilogue) -> Choice | None:
    """The kernel that serves the call on padded copies of x and w, where a copy is what stands between the call
    and a TMA kernel: y meets TMA's rules, and x or w only breaks them by its rows, or x is a small transposed
    operand TMA cannot read in place (`_x_transposed_copy`: copied whole, `pad_k` = K where K's rows are aligned)."""
    M, K = x2.shape
    if not _copies_align(x2, w, y, cfg):
        return None
    import torch

    # (x copied for its layout alone, `_x_transposed_copy`, where K's rows are 16 bytes: rows of K, w as it is)
    from ..kernels.triton import pad

    aligned = pad.padded_k(K, x2.element_size()) == K and not (_row_misaligned(x2) or _row_misaligned(w))
    KP = K if aligned else _copy_k(K, x2.element_size(), scaling)
    # w is copied only where its own rows are off or the copy's rows are longer than K (an x sliced from a wider one
    # at K % 8 == 0 leaves the weight as it is: the kernels take x and w of one K)
    copy_w = _row_misaligned(w) or KP != K
    stand_in = (torch.empty((M, KP), dtype=x2.dtype, device="meta"),
                torch.empty((w.shape[0], KP), dtype=w.dtype, device="meta") if copy_w else w)
    inner = dense(cfg, target, *stand_in, y, scaling, interpreting, epilogue)
    if inner.path == "pointer":
        return None
    return dataclasses.replace(inner, passed_over=tuple(passed), pad_k=KP, pad_k_w=copy_w)


def _copies_align(x2, w, y, cfg) -> bool:
    """Whether copies of x and w (`pad_k`) are what stands between the call and a TMA kernel: y meets TMA's rules,
    and x or w only breaks them by its rows (or x is copied whole: `_x_transposed_copy`), the other read in place
    (along K, or transposed where a TMA kernel reads it so: kernels/triton/dense.mn_major)."""
    copy_x = _row_misaligned(x2) or _x_transposed_copy(x2, w, cfg)
    return H.tma_compatible(y) and (copy_x or _row_misaligned(w)) and \
        (copy_x or x2.stride(-1) == 1 or G.mn_major(x2)) and (w.stride(-1) == 1 or G.mn_major(w))


def _copy_k(K: int, element_size: int, scaling=G.NO_SCALING) -> int:
    """The row length of `pad_k`'s copies: K rounded up to 16 bytes, or to whole 128-byte lines where the 16-byte
    rows would start off 32-byte sectors (`pitch`) and the block scales still cover them."""
    from ..kernels.triton import pad

    KP = pad.padded_k(K, element_size)
    if PITCH and (KP * element_size) % PITCH_SECTOR:
        lines = H.cdiv(K, PITCH_BYTES // element_size) * (PITCH_BYTES // element_size)
        KP = lines if _scale_blocks_cover(lines, K, scaling) else KP
    return KP


def _scale_blocks_cover(KP: int, K: int, scaling) -> bool:
    """Whether a copy of KP columns keeps the kernels' block-scale reads inside the scales of a K-column call. The
    kernels take the copy's K (zeros past K) and read a scale column for every scale block it reaches, so KP must end
    in K's last scale block: true of the 16-byte rows (`pad.padded_k`, at most 16 elements past K, bk >= 32), not of
    a 128-byte pitch at bk < 128 8-bit elements (K = 1, bk = 32: columns 1-3 read past the scales, NaN there makes a
    NaN output)."""
    return scaling.mode != "block" or H.cdiv(KP, scaling.block_k) == H.cdiv(K, scaling.block_k)


# y computed into a workspace of 16-byte rows, then copied to y (kernels/triton/pad.py copy_rows), where y's rows
# keep the call off the TMA kernels (N % 8 != 0 for a 16-bit y: vocabularies of 50257 or 32001 tokens, odd widths).
# The copy reads and writes y once more. H200, same process, against the pointer kernel that served them
# (ab/pitch_y.json, the Gluon bf16 kernels): 3000 x 777 x 5000 22x faster, 900 x 4500 x 2600 34x, 300 x 3001 x 3000
# 12x; 50257 x 4096 at M = 1 / 16 / 128 / 1024 / 4096 +7% / +5% / +13% / +16% / +18%; 64 x 1001 x 1024 (65 M
# multiply-adds) -18%: hence PITCH_Y_MIN_MACS. Taken wherever the stand-in call (y at that pitch) goes to a TMA
# kernel: the Gluon ones (a Gluon split config unsplit where its fp32 rows would be off 16 bytes too and the Gluon
# kernel then takes the call, hopper_host.launch_dense: N % 4 == 0) and the Triton tier's (its split-K partials are
# addressed by pointer: it keeps the split), on `pad_k`'s copies too. Not yet timed beyond the Gluon bf16 kernels:
# the 8-bit kernels and the Triton TMA kernel against a pointer kernel as slow (fp8 on rows off 16 bytes: 42 TFLOP/s
# at 3000 x 5000 x 7000, "Unaligned K" in docs/PERF.md, where the copies beat it 1.5-26x).
PITCH_Y_MIN_MACS = 1 << 27  # M * N * K under this: the pointer kernel, the copy's launch is most of the call


def _y_workspace(y, macs: int, passed, route) -> Choice | None:
    """The kernel that serves the call into a workspace of y's shape at a 16-byte row pitch (`Choice.pitch_y`), where
    y's rows are off TMA's rule, the call holds at least PITCH_Y_MIN_MACS multiply-adds (`macs`) and route(stand-in),
    the dispatch of the same call into that workspace, names a TMA kernel (Gluon or the Triton tier's, on `pad_k`'s
    copies where x's or w's rows are off too); None otherwise. (In the interpreter the Gluon kernels are passed over:
    the Triton TMA kernels alone.) `dense` and `gated` ask it."""
    M, N = y.shape
    if not PITCH or y.stride(-1) != 1 or H.tma_compatible(y) or macs < PITCH_Y_MIN_MACS:
        return None
    import torch

    per = max(1, H.TMA_ALIGN // y.element_size())
    np_ = H.cdiv(N, per) * per
    inner = route(torch.empty((M, np_), dtype=y.dtype, device="meta")[:, :N])
    if inner.path == "pointer":
        return None
    return dataclasses.replace(inner, passed_over=tuple(passed), pitch_y=np_)


def _asks_tma(tile) -> bool:
    """Whether a config names a TMA kernel: the Triton tier's ("tma") or a Gluon one (the fp8 tables' Gluon configs
    keep "tma" false: their Triton fallback is the pointer kernel)."""
    return bool(tile.get("tma")) or tile.get("backend") == "gluon"


def _rows_kernel(tile, target, x2, w, scaling, passed) -> Choice | None:
    """gemm_rows_kernel for a call whose w rows the target's kernels cannot read as rows (NVIDIA: a config that asks
    for TMA, w's rows off TMA's rule; AMD: any config, w's rows off the pointer kernel's vectors, `_unvectorized`),
    where the kernel takes it: 16-bit operands without scales or 8-bit ones with rowcol scales, M within its tile (x
    and y any strides). Not for x's rows alone (the copy of x is small) nor, on NVIDIA, for a config that asks for the
    pointer kernel."""
    from ..kernels.triton import gemm_rows

    off = _row_misaligned(w) and _asks_tma(tile) if target.is_nvidia else _unvectorized(w)
    if not ROWS_KERNEL or not off or gemm_rows.unsupported(x2, w, scaling) is not None:
        return None
    M, K = x2.shape
    t = gemm_rows.tile(M, w.shape[0], K, w.element_size(), target.num_cus)
    cfg = dict(BLOCK_SIZE_M=t["BLOCK_M"], BLOCK_SIZE_N=t["BLOCK_N"], BLOCK_SIZE_K=t["BLOCK_K"], NUM_KSPLIT=t["SPLIT_K"])
    return Choice(TRITON_ROWS, cfg, tuple(passed))


def _rows_tma_kernel(tile, target, x2, w, scaling, passed) -> Choice | None:
    """gemm_rows_tma_kernel for a call whose config asks for TMA but whose w rows TMA cannot address, at
    ROWS_TMA_MIN_M to ROWS_TMA_MAX_M tokens, where the kernel takes it (`gemm_rows_tma.unsupported`: 16-bit operands
    without scales, 8-bit ones with rowcol scales), x's shifted copies hold at most ROWS_TMA_X_SHARE of w's bytes and
    K's rows reach its tile's floor (ROWS_TMA_MIN_K* 16-bit elements: in bytes)."""
    from ..kernels.triton import gemm_rows_tma

    M, K = x2.shape
    N = w.shape[0]
    if not ROWS_TMA or not _asks_tma(tile) or not _row_misaligned(w) or not ROWS_TMA_MIN_M <= M <= ROWS_TMA_MAX_M or \
            gemm_rows_tma.unsupported(x2, w, target, scaling):
        return None
    t = gemm_rows_tma.tile(M, N, K, w.element_size(), target.num_cus)
    if K * w.element_size() < 2 * (ROWS_TMA_MIN_K if t["SWAP"] else ROWS_TMA_MIN_K_UNSWAPPED):
        return None
    v = gemm_rows_tma.vec(w.element_size())
    if v * H.cdiv(M, t["BLOCK_M"]) * t["BLOCK_M"] * gemm_rows_tma.shifted_k(K, w.element_size()) > \
            ROWS_TMA_X_SHARE * N * K:
        return None
    cfg = dict(BLOCK_SIZE_M=t["BLOCK_M"], BLOCK_SIZE_N=t["BLOCK_J"], BLOCK_SIZE_K=t["BLOCK_K"],
               NUM_KSPLIT=t["SPLIT_K"], CLASS_MAJOR=t["CLASS_MAJOR"], VEC=v)
    return Choice(TRITON_ROWS_TMA, cfg, tuple(passed))


# AMD targets (no TMA): the pointer kernel reads rows in 16-byte vectors only where Triton's specialisation proves
# every row start 16-byte aligned: a row stride divisible by 16 elements and a 16-byte aligned base. Elsewhere (K % 16
# != 0: bf16 K = 4095 or 1000, fp8 K = 7001, or a sliced operand) gfx942 / gfx950 compile element-wide loads: the
# a16w16 gfx942 table's 256 x 256 x 64 tile has 80 global_load_ushort where the aligned call has 16
# global_load_dwordx4 (+ 16 ushort), a static compile under Triton 3.6. There w is read where it lies by
# gemm_rows_kernel at its few tokens (its w chunks compile to 16-byte loads on both, global_load_dwordx4, or
# global_load_lds_dwordx4 on gfx950 from Triton 3.8: `gemmkit isa`, its AMD promise), else x and w are copied to
# rows of a multiple of 16 elements (`pad_k`, zeros after K) and the pointer kernel runs on the copies, from
# ROW_COPY_MIN_MACS multiply-adds (under it the copy's launch is most of the call, as for y's copy on the H200:
# PITCH_Y_MIN_MACS). NOT MEASURED on an AMD GPU (none here): the choice follows the H200's same trade with the same
# pointer kernel's 2-byte loads against the copy (bf16 4096 x 4095 w: M = 16 48.1 -> 31.8 us, 64 257 -> 35, 4096
# 3431 -> 217; the copy there feeds the TMA kernel) and gemm_rows' at a few tokens. GEMMKIT_AMD_VECTOR_ROWS=0 (or
# AMD_VECTOR_ROWS = False) turns both off: the pointer kernel on the operands as given.
AMD_VECTOR_ROWS = os.environ.get("GEMMKIT_AMD_VECTOR_ROWS", "1") != "0"
AMD_ROW_ELEMENTS = 16  # Triton specialises an integer argument divisible by this (its row stride, in elements)
ROW_COPY_MIN_MACS = PITCH_Y_MIN_MACS


def _unvectorized(t) -> bool:
    """Unit stride along K, but a row (or batch) stride not divisible by AMD_ROW_ELEMENTS (over more than one row or
    batch entry) or a base off 16 bytes: rows the AMD pointer kernels read element by element (`_vector_rows`)."""
    return t.stride(-1) == 1 and (any(n > 1 and st % AMD_ROW_ELEMENTS for n, st in zip(t.shape[:-1], t.stride()[:-1]))
                                  or t.data_ptr() % H.TMA_ALIGN != 0)


def _vector_k(K: int) -> int:
    """The row length of the AMD copies: K rounded up to AMD_ROW_ELEMENTS (8-bit block scales: at most 15 columns
    past K, inside K's last 128-column block)."""
    return H.cdiv(K, AMD_ROW_ELEMENTS) * AMD_ROW_ELEMENTS


def _vector_copies(x2, w, macs: int, scaling=G.NO_SCALING) -> tuple | None:
    """AMD: (KP, whether w is copied) of the copies to rows of a multiple of AMD_ROW_ELEMENTS elements (zeros after K)
    where x's or w's rows are off the pointer kernel's vectors (`_unvectorized`; w unit stride along K), the call
    holds ROW_COPY_MIN_MACS multiply-adds (`macs`) or more and the block scales cover the copy's columns; else None.
    w is copied where its own rows are off or the copy's rows are longer than K."""
    K = x2.shape[1]
    KP = _vector_k(K)
    if not AMD_VECTOR_ROWS or w.stride(-1) != 1 or not (_unvectorized(x2) or _unvectorized(w)) or \
            macs < ROW_COPY_MIN_MACS or not _scale_blocks_cover(KP, K, scaling):
        return None
    return KP, _unvectorized(w) or KP != K


def _vector_rows(tile, target, x2, w, y, scaling, passed) -> Choice | None:
    """AMD: where x's or w's rows are off the pointer kernel's 16-byte vectors, gemm_rows_kernel at a few tokens
    (`_rows_kernel`), else the pointer kernel on copies of x and w (`_vector_copies`); None otherwise (the pointer
    kernel on the operands as given)."""
    rows = _rows_kernel(tile, target, x2, w, scaling, passed) if AMD_VECTOR_ROWS else None
    copies = rows is None and _vector_copies(x2, w, x2.shape[0] * w.shape[0] * x2.shape[1], scaling)
    if not copies:
        return rows
    tile = G.fallback_stages(tile, target, x2.element_size(), y.element_size(), tma=False)
    G.check_feasible(tile, target, x2.element_size(), y.element_size(), tma=False)
    return Choice(TRITON_POINTER, tile, tuple(passed), pad_k=copies[0], pad_k_w=copies[1])


# x copied to whole TMA boxes of rows (kernels/triton/pad.py) where a TMA kernel's last row of tiles would load boxes
# reaching past M and the copy is small beside w. The rows past M load slowly (the hardware's out-of-bounds fill):
# H200, fp8 8192 x 28672, one 64 x 64 ping-pong config: M = 64 67.8 us, M = 65 143 us, M = 128 78 us; bf16 8192 x
# 8192, 128-row tiles: M = 160 80 us, M = 256 54 us (benchmarks/results/h200/ab/fp8_m_sweep.json, bf16_m200.json).
# The copy reads and writes x once (a few microseconds where x is at most 1 / PAD_M_SHARE of w's bytes). Where that
# fixed cost is a large part of the call it loses: same process, H200 (ab/{fp8,bf16,blockscale}_pad_m.json), copy
# against none: fp8 on 8192 x 8192 / 8192 x 28672 / 7168 x 16384 at M = 65-96 0.62-0.79x -> 1.01-1.27x vendor,
# M = 17 / 33 0.95-1.33 -> 1.14-1.44x; bf16 M = 160 / 200 on 75 MB-1.7 GB weights 0.45-0.80 -> 0.72-0.85x, M = 33 / 80
# 0.77-0.92 -> 0.90-0.96x (M = 17 on 8192 x 8192 lost: 1.00 -> 0.95x, one row kept above the floor); but at
# M = 1 / 8 (one decode tile; its boxes load past M at any M) 1.3-1.8 -> 1.2-1.6x, and on weights of 16-32 MB
# (4096 x 4096, 7168 x 2048) 0.96-1.18 -> 0.78-1.03x. Hence the two floors, PAD_M_MIN_ROWS and PAD_M_MIN_W_BYTES.
# The bf16 swap-AB decode calls (M < PAD_M_SWAP_MAX_M, the token tile 32 or 64 rows) lose to the copy where their
# last token box is mostly full (ab/bf16_pad_m_decode.json, same process, copy -> none: M = 24 / 48 / 56 on 11 layers
# +0-10%, M = 40 (5/8 full) -7% to +6%, M = 33 (1/2) -12% to +2%; held out, ab/bf16_pad_m_decode_heldout.json: six
# other layers at M = 28 / 44 / 52 / 60 / 63, 30 rows 0.921 -> 0.979x cuBLAS, every row up 1-9%): there no copy
# where the last box is at least PAD_M_SWAP_FULL full. Under one tile the Gluon kernels now load only x's rows instead
# (X_BOX_KERNELS, kernels/_host.x_boxes: fp8 +9%, block scale +12%, bf16 +2% over this rule, ab/*_x_boxes.json), so
# these rules serve the Triton tier's TMA kernels, x past one tile, and kernels/_host.TRIM_X_BOX off.
# GEMMKIT_PAD_M=0 (or PAD_M = False) turns it off, e.g. to compare.
PAD_M = os.environ.get("GEMMKIT_PAD_M", "1") != "0"
PAD_M_SHARE = 8
PAD_M_MIN_ROWS = 16  # M up to this: no copy
PAD_M_MIN_W_BYTES = 48 << 20  # w under this: no copy
PAD_M_SWAP_MAX_M, PAD_M_SWAP_FULL = 64, 2 / 3  # swap-AB at M below this: no copy where the last box is this full
# x loaded in TMA boxes of BLOCK_SIZE_M rows (the dense kernels and the gated GEMM's; the gated one by the same rule,
# its w the gate and up rows: not measured with and without the copy)
ROW_BOX_KERNELS = (GLUON_BF16, GLUON_COOP, GLUON_FP8, TRITON_TMA, GATED_TMA)
# Kernels whose last row and column of tiles start one tile before M / N (kernels/gluon/hopper_parts.py
# `tile_origin`): every box they load lies inside x and w wherever M (N) holds at least one tile, so no copy there.
SHIFTED_KERNELS = (GLUON_BF16, GLUON_COOP)
# Kernels that load x (swap-AB: the tokens) in boxes of only its rows under one row of tiles (kernels/_host.x_boxes,
# gluon/hopper_host.token_boxes): no copy there.
X_BOX_KERNELS = (GLUON_FP8, GLUON_BF16, GLUON_COOP)


def _shifts(cfg: dict) -> bool:
    """Whether a SHIFTED_KERNELS config shifts its last tiles (kernels/_host.shift_last_tiles: on, and the installed
    Triton's register budget allows it for the tile)."""
    return H.shift_last_tiles(_budgets.consumer_acc_regs(cfg))


def pad_m(kernel: str, cfg: dict, M: int, N: int, K: int, x_bytes: int, w_bytes: int) -> int:
    """The rows x is copied to before `kernel` runs `cfg` on an (M, N, K) call (0: x as it is): M rounded up to
    whole BLOCK_SIZE_M boxes (the tokens' tile, swap-AB's too), where M is not already, M > PAD_M_MIN_ROWS, w (w_bytes
    an element) holds at least PAD_M_MIN_W_BYTES and the copy of x (x_bytes an element) at most 1 / PAD_M_SHARE of
    w's bytes; not for a swap-AB call at M < PAD_M_SWAP_MAX_M whose last box is at least PAD_M_SWAP_FULL full, nor
    where the kernel loads only x's rows (X_BOX_KERNELS under one row of tiles), nor for the cooperative swap-AB tile
    (tokens in a split width: its B-row boxes load x as it is, measured so in ab/bf16_coop_swap*.json)."""
    if split_tail(cfg["BLOCK_SIZE_M"]):  # the cooperative swap-AB tile's tokens: B-row boxes, the last past M
        return 0
    if not PAD_M or kernel not in ROW_BOX_KERNELS or M <= PAD_M_MIN_ROWS or N * K * w_bytes < PAD_M_MIN_W_BYTES or \
            (kernel in SHIFTED_KERNELS and _shifts(cfg) and M >= cfg["BLOCK_SIZE_M"]) or \
            (kernel in X_BOX_KERNELS and H.x_boxes(cfg["BLOCK_SIZE_M"], M)[0] < cfg["BLOCK_SIZE_M"]):
        return 0
    mp = H.cdiv(M, cfg["BLOCK_SIZE_M"]) * cfg["BLOCK_SIZE_M"]
    if mp == M or mp * K * x_bytes * PAD_M_SHARE > N * K * w_bytes:
        return 0
    last = M - (mp - cfg["BLOCK_SIZE_M"])  # the rows of the last box that are x's
    if cfg.get("swap_ab") and M < PAD_M_SWAP_MAX_M and last >= PAD_M_SWAP_FULL * cfg["BLOCK_SIZE_M"]:
        return 0
    return mp


# w copied to whole TMA boxes of its rows (kernels/triton/pad.py), the same cure for the same cause on the other
# operand: a tile whose w box reaches past N loads slowly. H200, bf16 4096 x N x 4096, the ping-pong's 64 x 128
# (128 tiles at N = 160-256): kernel 31.5 us at N = 160, 26.1 at N = 200, against 13.9 at N = 256; on w copied to
# 256 rows 15.8 / 13.6 us, plus the copy's 1.5 us (ncu: the same DRAM bytes either way). Only where it was measured
# to pay (ab/bf16_pad_n.json, same process, H200): N <= PAD_N_MAX_N on the Gluon ping-pong's unsplit tiles (the
# config model's `narrow_wave`, which counts on it: model/one_wave.py) with w at most 1 / PAD_M_SHARE of x's bytes:
# 4096 x 160 x 4096 on 64 x 128 0.57 -> 0.91x cuBLAS, N = 136 / 200 / 240 at M = 2048-8192 0.46-0.78 ->
# 0.70-0.93x. Not on the Triton tier's split tiles there (-3 to -16%: the copy's launch is a large part of a 6-20 us
# call), nor where w is wide (one partial column of many: unmeasured), nor on the cooperative kernel (unmeasured
# there). bf16 / fp16 only (no scales to pad), not the swap-AB tile (its w boxes are BLOCK_SIZE_M rows).
PAD_N_KERNELS = (GLUON_BF16,)
PAD_N_MAX_N = 256


def pad_n(kernel: str, cfg: dict, M: int, N: int, K: int, x_bytes: int, w_bytes: int) -> int:
    """The rows w is copied to before `kernel` runs `cfg` on an (M, N, K) call (0: w as it is): N rounded up to
    whole BLOCK_SIZE_N boxes, where N is not already, N <= PAD_N_MAX_N, the tile is unsplit, w is 16-bit and the copy
    of w (w_bytes an element) is at most 1 / PAD_M_SHARE of x's bytes (x_bytes an element), as `pad_m`'s copy of x
    is of w's."""
    if not PAD_M or kernel not in PAD_N_KERNELS or w_bytes != 2 or cfg.get("swap_ab") or N > PAD_N_MAX_N or \
            cfg.get("NUM_KSPLIT", 1) != 1 or \
            (kernel in SHIFTED_KERNELS and _shifts(cfg) and N >= cfg["BLOCK_SIZE_N"]):
        return 0
    np_ = H.cdiv(N, cfg["BLOCK_SIZE_N"]) * cfg["BLOCK_SIZE_N"]
    if np_ == N or np_ * K * w_bytes * PAD_M_SHARE > M * K * x_bytes:
        return 0
    return np_


# x and w copied to a row pitch of PITCH_BYTES (kernels/triton/pad.py; the kernel reads the first K elements of each
# row) where their rows start off 32-byte sectors (16-bit: K % 16 != 0): TMA box rows that start mid-sector load far
# more slowly. H200, bf16, the ping-pong's 128 x 128 (same process, benchmarks/results/h200/ab/pitch_operands.json):
# 1500 x 7000 x 3000 146.8 us, with x at a 128-byte pitch 116.2, w 105.6, both 100.9 (cuBLAS 93.6 either way);
# 3000 x 5000 x 7000 on the cooperative 128 x 256 389.6 -> 322.5 with both. Rows on 32- or 64-byte multiples
# (K = 3696 / 7392, Qwen2.5-72B's down_proj split 8 / 4 ways) cost little as they are: there the copies lost 1-7%
# (ab/pitch.json). A copy reads and writes its operand once, so each one is copied where it is at most the other's
# bytes (both where equal): the weight of a GEMM with few tokens stays as it is; and x not at M <= PAD_M_MIN_ROWS (nor
# w at N <= it), where the copy's launch is most of the call (1 / 16 x 4096 x 3000: -12% / -5%; 64 x 8192 x 5000: +20%,
# ab/pitch_y.json). The Triton tier's TMA kernel (measured on its M_LEQ_128 bucket's tile at M = 65-128, x copied,
# before the config model's `m128_tile` gave most of those calls to the Gluon ping-pong; the rule stays for the calls
# it still runs: split tiles, one tile column, fallbacks, config=) only from PITCH_TRITON_MIN_MACS multiply-adds: its copy's launch is a fixed cost and its gain grows with the column tiles
# that re-read x (ab/pitch_triton_tier_k16.json, 24 shapes with K % 16 == 8: from 2^31 every row +2 to +24%, below it
# -18 to +24%, 0.702 -> 0.709x over all; ab/pitch_triton_tier.json: the three such rows there, all below, -6 to
# +10%; its other rows have K % 8 != 0, whose pad_k copies took the 128-byte pitch: 0.80 -> 0.88x). The Gluon
# kernels copy an operand only where the off-sector rows they would load (its bytes times the tiles across it, each of
# which reads it whole) reach PITCH_MIN_LOADS, or where pad_m / pad_n copy it anyway: the copy's launch costs about
# 1.8 us under a CUDA graph and the slow loads it saves about 0.1-0.16 us a MB loaded (ab/bf16_pitch_small.json, 18
# random calls of 4-13 us with K % 16 == 8: under 12 MB loaded the copy lost on 15 rows (0.3-1.8 us) and tied on one,
# at 12.9-16.7 MB it tied or won by up to 0.9 us). 16-bit operands only (the 8-bit kernels' calls were not measured).
# GEMMKIT_PITCH=0 (or PITCH = False) turns it off.
PITCH = os.environ.get("GEMMKIT_PITCH", "1") != "0"
PITCH_BYTES = 128  # the copies' row pitch
PITCH_SECTOR = 32  # rows whose stride is a multiple of this stay as they are
PITCH_KERNELS = (GLUON_BF16, GLUON_COOP, TRITON_TMA)
PITCH_TRITON_MIN_MACS = 1 << 31
PITCH_MIN_LOADS = 12 << 20  # bytes: the Gluon kernels' least off-sector loads of an operand that is copied
# An operand is copied where its bytes are at most PITCH_SHARE times the other's. w copied too where it is larger
# (inf; ab/bf16_pitch_both.json, H100, 40 random shapes with K % 16 == 8, w loaded >= 12 MB): 0.70x over the
# answer with x alone copied; at M < 1000 0.55x, M = 1000-4999 0.88x, only at M >= 5000 (35-45 rows of tiles)
# 1.00-1.02x.
PITCH_SHARE = 1.0


def pitch(kernel: str, cfg: dict, x2, w, rows: int = 0, cols: int = 0) -> tuple[int, int]:
    """(x's, w's) copy pitch in elements (0: no copy at a new pitch): K rounded up to PITCH_BYTES, for an operand
    whose row stride is off PITCH_SECTOR, that holds at most the other operand's bytes (so pad_m's copy of x and
    pad_n's of w, each at most an eighth of the other operand, are made at this pitch too) and more than
    PAD_M_MIN_ROWS rows; for the Triton tier's kernel only on calls of PITCH_TRITON_MIN_MACS or more, for the Gluon
    kernels only where the tiles of `cfg` load PITCH_MIN_LOADS bytes of the operand or more, or its row copy (`rows`
    for x, pad_m's, `cols` for w, pad_n's; 0: none) is made anyway."""
    if not PITCH or kernel not in PITCH_KERNELS or x2.element_size() != 2:  # 8-bit operands: unmeasured
        return 0, 0
    M, K, N = x2.shape[0], x2.shape[1], w.shape[0]
    if kernel == TRITON_TMA and M * N * K < PITCH_TRITON_MIN_MACS:
        return 0, 0
    per = PITCH_BYTES // x2.element_size()
    kp = H.cdiv(K, per) * per
    xb, wb = M * K * x2.element_size(), N * K * w.element_size()
    if kernel == TRITON_TMA:
        x_loads = w_loads = PITCH_MIN_LOADS
    else:  # each tile across an operand loads its rows whole: x once per column of tiles, w once per row
        x_loads = PITCH_MIN_LOADS if rows else xb * H.cdiv(N, cfg["BLOCK_SIZE_N"])
        w_loads = PITCH_MIN_LOADS if cols else wb * H.cdiv(M, cfg["BLOCK_SIZE_M"])

    def off(t):
        return (t.stride(0) * t.element_size()) % PITCH_SECTOR != 0

    return (kp if off(x2) and xb <= PITCH_SHARE * wb and M > PAD_M_MIN_ROWS and x_loads >= PITCH_MIN_LOADS else 0), \
        (kp if off(w) and wb <= PITCH_SHARE * xb and N > PAD_M_MIN_ROWS and w_loads >= PITCH_MIN_LOADS else 0)


def _rows_padded(choice: Choice, x2, w) -> Choice:
    """`choice` with the copies of x (`pad_m`) and w (`pad_n`) to whole TMA boxes of rows and to a 128-byte row
    pitch (`pitch`) that its call needs; none of an operand transposed in memory (the TMA kernel reads it where it
    lies: kernels/triton/dense.mn_major)."""
    M, K, N = x2.shape[0], x2.shape[1], w.shape[0]
    x_rows, w_rows = x2.stride(-1) == 1, w.stride(-1) == 1
    rows = pad_m(choice.kernel, choice.config, M, N, K, x2.element_size(), w.element_size()) if x_rows else 0
    cols = pad_n(choice.kernel, choice.config, M, N, K, x2.element_size(), w.element_size()) if w_rows else 0
    px, pw = pitch(choice.kernel, choice.config, x2, w, rows, cols)
    px, pw = px if x_rows else 0, pw if w_rows else 0
    return dataclasses.replace(choice, pad_m=rows, pad_n=cols, pitch_x=px, pitch_w=pw) if rows or cols or px or pw \
        else choice


def _gluon_dense_unsupported(kernel, cfg, target, x2, w, y, scaling, interpreting, epilogue=NO_EPILOGUE) -> str | None:
    if interpreting:
        return "the Triton interpreter does not run Gluon kernels"
    if kernel == GLUON_CDNA:
        if scaling.mode != "none":
            return f"the CDNA ping-pong takes no scales, got {scaling.mode!r} scaling"
        from ..kernels.gluon import cdna_host

        return cdna_host.unsupported(cfg, x2, w, y, None, epilogue.activation, target, has_bias=epilogue.has_bias)
    if kernel != GLUON_FP8:
        if scaling.mode != "none":
            return f"the bf16 / fp16 Gluon kernels take no scales, got {scaling.mode!r} scaling"
        if cfg.get("NUM_KSPLIT", 1) > 1 and w.shape[0] % 4:
            return "Gluon split-K's fp32 workspace needs N % 4 == 0 (16-byte TMA rows)"
        from ..kernels.gluon import hopper_host

        # (the ping-pong's swap-AB tile also reads a W.t() weight where it lies: hopper_pingpong's X_KM, `SWAP_W_KN`)
        w_kn = SWAP_W_KN and kernel == GLUON_BF16 and bool(cfg.get("swap_ab"))
        return hopper_host.dense_unsupported(x2, w, y, target, w_kn=w_kn)
    if cfg.get("NUM_KSPLIT", 1) != 1:
        return "split-K configs run on the Triton tier"
    if scaling.mode not in ("rowcol", "block"):
        return f"the gluon fp8 kernel takes per-token x per-channel or block scales, not {scaling.mode!r}"
    block_shape = None
    if scaling.mode == "block":
        if scaling.block_n % cfg["BLOCK_SIZE_N"] or scaling.block_k % cfg["BLOCK_SIZE_K"]:
            return (f"block_shape ({scaling.block_n}, {scaling.block_k}): the gluon kernel needs BLOCK_SIZE_N "
                    f"({cfg['BLOCK_SIZE_N']}) to divide bn and BLOCK_SIZE_K ({cfg['BLOCK_SIZE_K']}) to divide bk")
        block_shape = (scaling.block_n, scaling.block_k)
    from ..kernels.gluon import hopper_pingpong_fp8

    return hopper_pingpong_fp8.unsupported(x2, w, y, scaling.x_scale, scaling.w_scale, target, block_shape)


def _interpreting(t) -> bool:
    """A CPU tensor runs in Triton's interpreter (ops/_common.check_device_supported raises otherwise), and so
    does any call while TRITON_INTERPRET is on; "meta" tensors (`gemmkit configs`) stand for a GPU call."""
    return t.device.type == "cpu" or (t.device.type != "meta" and C.interpreting())


# ----------------------------------------------------------------------------- the other op families

GLUON_BATCHED = "hopper_pingpong_batched_kernel"
GLUON_BATCHED_COOP = "hopper_coop_batched_kernel"
BATCHED_TMA, BATCHED_POINTER = "batched_gemm_tma_kernel", "batched_gemm_kernel"
SPLIT_CAT_TMA, SPLIT_CAT_POINTER = "gemm_split_cat_tma_kernel", "gemm_split_cat_kernel"
AFP4 = "gemm_afp4wfp4_kernel"
GLUON_KERNELS += (GLUON_BATCHED, GLUON_BATCHED_COOP)
TMA_KERNELS = (TRITON_TMA, BATCHED_TMA, GATED_TMA, SPLIT_CAT_TMA)


def _triton_tier(cfg, target, passed, tma_kernel, tma_why, pointer_kernel, pointer_check) -> Choice:
    """The Triton tier's choice: its TMA kernel where `tma_why()` finds no reason (asked only on NVIDIA targets:
    AMD has one Triton kernel per op), else its pointer kernel once `pointer_check()` (ValueError) passes."""
    if target.is_nvidia:
        why = tma_why()
        if why is None:
            return Choice(tma_kernel, cfg, tuple(passed))
        passed.append((tma_kernel, why))
    pointer_check()
    return Choice(pointer_kernel, cfg, tuple(passed))


def batched(cfg: dict, target, x, w, y, scaling=G.NO_SCALING, epilogue: Epilogue = NO_EPILOGUE) -> Choice:
    """batched_gemm_a16w16 / _a8w8 on 3-D x (B, M, K), w (B, N, K), y (B, M, N) (`epilogue`: the bias and
    activation): the Gluon batched ping-pong (or its cooperative layout, num_warps 8) for a "backend": "gluon"
    config where it can take the call, else the Triton tier with the same config."""
    from ..kernels.triton import batched as TB

    passed = []
    if cfg.get("backend") == "gluon":
        from ..kernels.gluon import hopper_pingpong

        kernel = GLUON_BATCHED_COOP if hopper_pingpong.is_coop(cfg) else GLUON_BATCHED
        why = (failed_gluon(kernel, cfg) or _gluon_batched_unsupported(cfg, target, x, w, y, scaling)
               or _budget_unsupported(kernel, cfg, y, epilogue))
        if why is None:
            return Choice(kernel, cfg)
        passed.append((kernel, why))
    if cfg["NUM_KSPLIT"] != 1:
        raise ValueError("config: key 'NUM_KSPLIT' must be 1 for the batched GEMMs (no split-K)")
    in_bytes, out_bytes = x.element_size(), y.element_size()
    pointer = G.fallback_stages(cfg, target, in_bytes, out_bytes, tma=False)  # a Gluon config: the stages that fit
    tma = _tma_stages(cfg, target, in_bytes, out_bytes)
    choice = _triton_tier(tma, target, passed, BATCHED_TMA, lambda: TB.tma_unsupported(tma, target, x, w, y),
                          BATCHED_POINTER, lambda: G.check_feasible(pointer, target, in_bytes, out_bytes, tma=False))
    if choice.kernel != BATCHED_POINTER:
        return choice
    return _batched_copies(cfg, target, x, w, y, scaling, epilogue, choice) or \
        dataclasses.replace(choice, config=pointer)


# The batched calls whose rows keep them on the pointer kernel's element-wide loads (K % 8 != 0 for 16-bit operands:
# off TMA's 16-byte rule on NVIDIA; K % 16 != 0 on AMD, `_unvectorized`) run on copies of x and w to rows of
# 16-byte multiples (16-element ones on AMD), as the dense calls do (`_padded`, `_vector_copies`; the same pad_rows
# copy over the flattened batch), from ROW_COPY_MIN_MACS multiply-adds, where each copied operand's batch flattens
# into rows (no broadcast or interleaved batch dim) and the copies let a faster kernel run (NVIDIA: a TMA or Gluon
# one). NOT TIMED (2026-12-07: no GPU lent): predicted from the dense rows of the same trade (H200, the pointer kernel
# against the copy + TMA kernel: 1.5-27x, "Unaligned K" in docs/PERF.md). GEMMKIT_BATCHED_COPIES=0 (or
# BATCHED_COPIES = False) turns it off, for the A/B.
BATCHED_COPIES = os.environ.get("GEMMKIT_BATCHED_COPIES", "1") != "0"


def _flattens(t) -> bool:
    """Whether a 3-D operand's batch flattens into rows: (B, R, K) a view of (B R, K) (one row stride)."""
    return t.shape[0] == 1 or t.stride(0) == t.shape[1] * t.stride(1)


def _batched_copies(cfg, target, x, w, y, scaling, epilogue, choice) -> Choice | None:
    """The batched call on copies of x and w with rows of a 16-byte (AMD: 16-element) multiple (`pad_k`; w copied
    where its own rows are off or the copy's are longer), where the pointer kernel `choice` would read them element
    by element and the copies pay (`BATCHED_COPIES`); None otherwise."""
    import torch

    from ..kernels.triton.batched import tma_compatible_3d

    def off(t):  # rows along K that the target's fast kernels cannot read as rows
        return t.stride(-1) == 1 and not tma_compatible_3d(t) if target.is_nvidia else _unvectorized(t)

    B, M, K = x.shape
    if not BATCHED_COPIES or w.stride(-1) != 1 or not (off(x) or off(w)) or B * M * w.shape[1] * K < ROW_COPY_MIN_MACS:
        return None
    KP = _copy_k(K, x.element_size()) if target.is_nvidia else _vector_k(K)
    copy_w = off(w) or KP != K
    if not (_flattens(x) and (_flattens(w) or not copy_w)):
        return None
    stand_in = (torch.empty((B, M, KP), dtype=x.dtype, device="meta"),
                torch.empty((B, w.shape[1], KP), dtype=w.dtype, device="meta") if copy_w else w)
    inner = batched(cfg, target, *stand_in, y, scaling, epilogue)
    if target.is_nvidia and inner.path == "pointer":
        return None
    return dataclasses.replace(inner, passed_over=choice.passed_over, pad_k=KP, pad_k_w=copy_w)


def _gluon_batched_unsupported(cfg, target, x, w, y, scaling) -> str | None:
    """The Gluon batched kernel's reasons: Gluon does not run in the interpreter, has no 8-bit batched kernel, needs
    more than one wave of tiles to gain anything (measured), and needs sm_90 and x, w, y that meet TMA's rules as
    3-D tensors (a broadcast, stride-0 or interleaved batch dim, K % 8 != 0, an unaligned base or row:
    kernels/gluon/hopper_pingpong_batched.py `unsupported`)."""
    if _interpreting(x):
        return "the Triton interpreter does not run Gluon kernels"
    if scaling.mode != "none":
        return "the Gluon batched kernel is 16-bit only (batched_gemm_a8w8 runs the Triton tier)"
    B, M, N = y.shape
    work = B * H.cdiv(M, cfg["BLOCK_SIZE_M"]) * H.cdiv(N, cfg["BLOCK_SIZE_N"])
    if work <= target.num_cus:
        # One wave: every CTA has at most one tile, so nothing runs under an epilogue (ping-pong: the
        # second consumer idles); the Triton kernel with the same tiles starts sooner (H200, 8 x 512^3, 128 tiles:
        # Gluon 0.84-0.92x torch.bmm over 8 configs, Triton 128x128x64 0.94x; docs/kernels/batched_gemm.md).
        return f"one wave of work ({work} tiles for {target.num_cus} SMs): nothing to overlap"
    from ..kernels.gluon import hopper_pingpong_batched

    return hopper_pingpong_batched.unsupported(x, w, y, target)


def gated(cfg: dict, target, x2, w, y, *, activation: str) -> Choice:
    """gemm_a16w16_gated and ffn_gated's first GEMM (x2 (M, K), w (2I, K), h (M, I), `activation` on the gate). A
    "backend": "gluon" config: the Gluon gated tile (hopper_coop's at num_warps 8, else the ping-pong's: their
    `launch_gated`) on the operands as given where it can take the call (`_gluon_gated_unsupported`) and the installed
    Triton fits the activation in its registers (kernels/_budgets.py: on 3.9 a gelu into a bf16 h spills at two
    64-register accumulators), else the Triton tier with the same tile. The Triton
    tier: its TMA kernel on a copy of x of whole boxes of rows where `pad_m` says so; where TMA cannot address w's
    rows, gemm_rows_tma_kernel where `_rows_tma_kernel` takes the call, else at a few tokens gemm_rows_kernel,
    into fp32 partials that the gated reduce finishes (kernels/triton/gated.launch_rows), else the TMA kernel on
    copies of x and of w where its own rows are off (`pad_k`, `pad_k_w`); where h's rows are off 16 bytes, any of
    these into a workspace of 16-byte rows (`_y_workspace`: `Choice.pitch_y`, ops/ffn.launch_gated copies h out of it)."""
    from ..kernels.triton import gated as TG

    passed, asked = [], cfg
    if cfg.get("backend", "triton") == "gluon":
        from ..kernels.gluon import hopper_pingpong

        kernel = GLUON_COOP if hopper_pingpong.is_coop(cfg) else GLUON_BF16
        gcfg = {**cfg, "gated": True}  # the gated tile: a compile failure of it is its own (run_gluon's key), not
        # the dense kernel's with the same keys
        why = (failed_gluon(kernel, gcfg) or _gluon_gated_unsupported(kernel, cfg, target, x2, w, y)
               or _budgets.gluon_epilogue_unsupported(kernel, gcfg, _out_name(y), False, activation))
        if why is None:
            return Choice(kernel, gcfg)
        passed.append((kernel, why))
        cfg = G.triton_tile(cfg)
    elif cfg.get("backend", "triton") != "triton":
        raise ValueError(f"config: key 'backend' = {cfg['backend']!r}; the gated GEMM runs on the Triton tier or a "
                         "Gluon gated tile (expected 'triton' or 'gluon')")
    in_bytes, out_bytes = x2.element_size(), y.element_size()
    tma_cfg = TG.fit_stages(cfg, target, in_bytes, out_bytes)  # a 4-byte h's staging tile may need a shorter ring
    choice = _triton_tier(tma_cfg, target, passed, GATED_TMA, lambda: TG.tma_unsupported(tma_cfg, target, x2, w, y),
                          GATED_POINTER, lambda: TG.check_feasible(cfg, target, in_bytes, out_bytes, tma=False))
    if choice.kernel == GATED_TMA:
        return _rows_padded(choice, x2, w)
    choice = dataclasses.replace(choice, config=cfg)
    rows = (_rows_tma_kernel(cfg, target, x2, w, G.NO_SCALING, list(choice.passed_over)) if target.is_nvidia
            else None) or (_rows_kernel(cfg, target, x2, w, G.NO_SCALING, list(choice.passed_over))
                           if target.is_nvidia or AMD_VECTOR_ROWS else None)
    if rows is not None:  # w's rows off 16 bytes: w read where it lies, then the gated reduce
        if rows.kernel == TRITON_ROWS_TMA:  # its own reduce where I is whole octets (gated.launch_rows)
            from ..kernels.triton import gemm_rows_tma

            rows = dataclasses.replace(rows, config=dict(
                rows.config, CLASS_MAJOR=gemm_rows_tma.gated_takes(y.shape[1], w.element_size())))
        return dataclasses.replace(rows, gated=True)
    if target.is_nvidia and _copies_align(x2, w, y, cfg):  # K % 8 != 0: the TMA kernel on copies (`pad_k`)
        import torch

        KP = _copy_k(x2.shape[1], x2.element_size())
        # w is copied only where its own rows are off (an x sliced from a wider one leaves w as it is: the kernel
        # runs to x's KP columns, and w's descriptor reads zeros past its K)
        copy_w = _row_misaligned(w)
        stand_in = (torch.empty((x2.shape[0], KP), dtype=x2.dtype, device="meta"),
                    torch.empty((w.shape[0], KP), dtype=w.dtype, device="meta") if copy_w else w)
        if TG.tma_unsupported(tma_cfg, target, *stand_in, y) is None:
            inner = _rows_padded(Choice(GATED_TMA, tma_cfg), *stand_in)
            return dataclasses.replace(inner, passed_over=choice.passed_over, pad_k=KP, pad_k_w=copy_w)
    copies = not target.is_nvidia and _vector_copies(x2, w, 2 * y.shape[0] * y.shape[1] * x2.shape[1])
    if copies:  # AMD, rows off the pointer kernel's vectors: it runs on copies of x and w (`_vector_copies`)
        return dataclasses.replace(choice, pad_k=copies[0], pad_k_w=copies[1])
    if target.is_nvidia:  # h's rows off 16 bytes (I % 8 != 0): into a workspace of 16-byte rows (`_y_workspace`)
        workspace = _y_workspace(y, 2 * y.shape[0] * y.shape[1] * x2.shape[1], choice.passed_over,
                                 lambda ws: gated(asked, target, x2, w, ws, activation=activation))
        if workspace is not None:
            return workspace
    return choice


def _gluon_gated_unsupported(kernel, cfg, target, x2, w, y) -> str | None:
    """Why the Gluon gated tile cannot take the call (None: it can): Gluon does not run in the interpreter; the tile
    runs unsplit and unswapped, on sm_90, with bf16 / fp16 x and w and x, w, h that meet TMA's rules
    (kernels/gluon/hopper_host.dense_unsupported), and a config its plan can build (`derive`'s ValueError)."""
    if _interpreting(x2):
        return "the Triton interpreter does not run Gluon kernels"
    if cfg.get("NUM_KSPLIT", 1) != 1 or cfg.get("swap_ab"):
        return "the Gluon gated tile runs unsplit and unswapped"
    from ..kernels.gluon import hopper_coop, hopper_host, hopper_pingpong

    why = hopper_host.dense_unsupported(x2, w, y, target)
    if why is None:
        try:
            (hopper_coop if kernel == GLUON_COOP else hopper_pingpong).derive(
                {**cfg, "gated": True}, target, x2.element_size(), y.element_size())
        except ValueError as e:
            why = str(e)
    return why


def split_cat(cfg: dict, target, x2, w, c1) -> Choice:
    """gemm_split_cat and gemm_a8w8_blockscale_split_cat: the Triton tier only, without split-K."""
    from ..kernels.triton import split_cat as TS

    if cfg["NUM_KSPLIT"] != 1:
        raise ValueError(f"config: key 'NUM_KSPLIT' = {cfg['NUM_KSPLIT']}; the split-cat GEMMs have no split-K "
                         "path (expected 1)")
    if cfg.get("backend", "triton") != "triton":
        raise ValueError(f"config: key 'backend' = {cfg['backend']!r}; the split-cat GEMMs run on the Triton tier "
                         "only (expected 'triton')")
    return _triton_tier(cfg, target, [], SPLIT_CAT_TMA, lambda: TS.tma_unsupported(cfg, target, x2, w, c1),
                        SPLIT_CAT_POINTER,
                        lambda: G.check_feasible(cfg, target, x2.element_size(), c1.element_size(), tma=False))


def _launch_gluon_dense(choice, x2, w, bias, y, activation, target, scaling, compile_only):
    if choice.kernel == GLUON_CDNA:
        from ..kernels.gluon import cdna_pingpong

        cdna_pingpong.launch(x2, w, bias, y, activation, choice.config, target, compile_only=compile_only)
    elif choice.kernel == GLUON_FP8:
        from ..kernels.gluon import hopper_pingpong_fp8

        block_shape = (scaling.block_n, scaling.block_k) if scaling.mode == "block" else None
        hopper_pingpong_fp8.launch(x2, w, scaling.x_scale, scaling.w_scale, bias, y, choice.config, target,
                                   compile_only=compile_only, block_shape=block_shape)
    else:
        from ..kernels.gluon import hopper_coop, hopper_pingpong

        kernel = hopper_coop if choice.kernel == GLUON_COOP else hopper_pingpong
        kernel.launch(x2, w, bias, y, activation, choice.config, target, compile_only=compile_only)


# ----------------------------------------------------------------------------- Gluon kernels that do not compile
#
# Gluon's API and the compiler move between Triton releases (3.9 removed the TMA copy names every Hopper Gluon kernel
# here uses). A Gluon kernel that fails to compile for a config must not fail the user's call: the call runs the
# Triton tier with the same config, one warning names the kernel and the Triton version, and the rule passes the
# kernel over for that config from then on (`failed_gluon`; `gemmkit configs` says so in this process).

_GLUON_FAILED: dict = {}  # (kernel, config items) -> why


def _config_key(kernel: str, cfg: dict):
    return kernel, tuple(sorted(cfg.items()))


def failed_gluon(kernel: str, cfg: dict) -> str | None:
    """Why the Gluon `kernel` is passed over for `cfg`: it failed to compile in this process (None: it did not)."""
    return _GLUON_FAILED.get(_config_key(kernel, cfg))


def _compile_errors() -> tuple:
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources, PTXASError

    return CompilationError, OutOfResources, PTXASError


def run_gluon(choice: Choice, launch, fallback):
    """launch() (a Gluon kernel's); where it fails to compile, remember the failure, warn once, and run fallback()
    (the Triton tier: the rule now passes the kernel over for this config)."""
    try:
        launch()
    except _compile_errors() as e:
        import warnings

        import triton

        first = (str(e).strip().splitlines() or [""])[-1][:200]
        why = f"failed to compile with Triton {triton.__version__} ({type(e).__name__}: {first})"
        _GLUON_FAILED[_config_key(choice.kernel, choice.config)] = why
        warnings.warn(f"gemmkit: the Gluon kernel {choice.kernel} {why}; this config runs on the Triton tier instead",
                      RuntimeWarning, stacklevel=3)
        fallback()


def run_in_workspace(choice: Choice, y, compile_only, launch):
    """`choice.pitch_y` (`_y_workspace`): launch(ws) into a workspace of y's shape at rows of choice.pitch_y elements,
    then y copied out of it (kernels/triton/pad.copy_rows). launch_dense and ops/ffn.launch_gated run it."""
    import torch

    from ..kernels.triton import pad

    ws = torch.empty((y.shape[0], choice.pitch_y), dtype=y.dtype, device=y.device)[:, :y.shape[1]]
    launch(ws)
    pad.copy_rows(ws, y, compile_only)


def launch_dense(choice: Choice, x2, w, bias, y, activation, target, scaling=G.NO_SCALING, compile_only=False):
    """Launch the kernel `choice` names for a dense GEMM (x2, w, y 2-D, as `dense` saw them: dense.matrix_operand
    first; bias (N,) contiguous or None), on padded copies of x2 and w where `choice.pad_k` / `pad_m` / `pad_n` say
    so: the kernels take an x of more rows than y's and a w of more rows than y's columns, and y's bounds drop the
    rows and columns past M and N; `choice.pitch_y`: into a workspace at a 16-byte row pitch, then copied to y."""
    if choice.pitch_y:
        run_in_workspace(choice, y, compile_only, lambda ws: launch_dense(
            dataclasses.replace(choice, pitch_y=0), x2, w, bias, ws, activation, target, scaling, compile_only))
        return
    if choice.pad_k or choice.pad_m or choice.pad_n or choice.pitch_x or choice.pitch_w:
        from ..kernels.triton import pad

        K = x2.shape[1]
        if choice.pad_k or choice.pad_m or choice.pitch_x:  # (a pitch copy keeps K: the kernel reads [:, :K])
            x2 = pad.pad_rows(x2, choice.pad_k or choice.pitch_x or K, compile_only, RP=choice.pad_m or None)
            x2 = x2 if choice.pad_k else x2[:, :K]
        w_k = choice.pad_k if choice.pad_k_w else 0  # (pad_k without w: w as given, or its pitch / pad_n copy)
        if w_k or choice.pad_n or choice.pitch_w:
            w = pad.pad_rows(w, w_k or choice.pitch_w or K, compile_only, RP=choice.pad_n or None)
            w = w if w_k else w[:, :K]
    if choice.path == "gluon":
        def fallback():  # the kernel is now a failed one: the rule passes it over
            again = dense(choice.config, target, x2, w, y, scaling, epilogue=Epilogue(bias is not None, activation))
            launch_dense(again, x2, w, bias, y, activation, target, scaling, compile_only)
        run_gluon(choice, lambda: _launch_gluon_dense(choice, x2, w, bias, y, activation, target, scaling,
                                                      compile_only), fallback)
    elif choice.kernel == TRITON_ROWS:
        from ..kernels.triton import gemm_rows

        gemm_rows.launch(x2, w, bias, y, activation, target, compile_only, scaling)
    elif choice.kernel == TRITON_ROWS_TMA:
        from ..kernels.triton import gemm_rows_tma

        gemm_rows_tma.launch(x2, w, bias, y, activation, target, compile_only, scaling=scaling)
    else:
        G.launch(x2, w, bias, y, activation, choice.config, target, scaling,
                 compile_only=compile_only, tma=choice.kernel == TRITON_TMA)


def gluon_launch(choice: Choice, target, M: int, N: int, K: int, in_bytes: int = 2, out_bytes: int = 2,
                 gated: bool = False) -> str | None:
    """(`gemmkit configs`) What a dense 16-bit Gluon launch of `choice` derives from the shape and the SM count, not
    from the config: split-K's count (NUM_KSPLIT is an upper bound: hopper_host.fit_split_k), the tiles and rounds
    of the persistent grid, and the tail split (the kernels' own `launch` asks the same functions); `gated`: the gated
    tile's launch (`launch_gated`: unsplit, no tail split). None for another kernel."""
    if choice.kernel not in (GLUON_BF16, GLUON_COOP):
        return None
    from ..kernels.gluon import hopper_coop, hopper_host, hopper_pingpong

    cfg = {**choice.config, "gated": True} if gated else hopper_host.fit_split_k(choice.config, M, N, K, target)
    coop = choice.kernel == GLUON_COOP
    plan = (hopper_coop if coop else hopper_pingpong).derive(cfg, target, in_bytes, out_bytes)
    if getattr(plan, "swap", False):
        tiles = H.cdiv(N, plan.BM) * H.cdiv(M, plan.BN)
        what = f"{tiles} tiles of {plan.BM} weight rows x {plan.BN} tokens (swap-AB)"
    else:
        tiles = H.cdiv(M, plan.BM) * H.cdiv(N, plan.BN)
        what = f"{tiles} tiles of {plan.BM} x {plan.BN}"
    n = target.num_cus
    items = tiles * plan.split_k  # the persistent grid's work items: a tile, or one K split of one
    whole = items // n
    rounds = "one round" if items <= n else \
        (f"{whole} round" + ("s" if whole > 1 else "")) + (f" + {items % n}" if items % n else "")
    if plan.split_k > 1:
        what += (f", K split {plan.split_k} ways (NUM_KSPLIT {choice.config.get('NUM_KSPLIT', 1)}, fitted to a "
                 f"wave): {items} work items")
    line = f"  launch: {what} on {n} SMs ({rounds}), {plan.stages} ring stages"
    if gated:
        return line + f" (the gated tile: gate and up boxes of {plan.BN} rows of w a stage)"
    n_tail, splits = (hopper_coop.tail_of(plan, cfg, M, N, K, target) if coop
                      else hopper_pingpong.tail_plan(plan, M, N, K, n))
    if n_tail:
        line += f"; the last round's {n_tail} tiles as {splits} K splits each (the tail split, + tail_reduce_kernel)"
    return line


def for_shape(table_op: str, cfg: dict, target, M: int, N: int, K: int, B: int = 1, x_t: bool = False,
              w_t: bool = False) -> Choice:
    """The Choice for an (M, N, K) call (B entries for the batched ops) of a table op on a GPU of `target` with
    contiguous operands at 16-byte aligned addresses (meta tensors stand for them): what `gemmkit configs`
    prints. `x_t` / `w_t` (the dense ops): x / w transposed in memory, views of (K, M) / (K, N) storage (a weight
    passed as W.t()). ValueError for a config no kernel of the target can run, or a layout the op has no such
    operand for."""
    import torch

    def meta(*shape, dtype, stride=None):
        return torch.empty_strided(shape, stride or torch.empty(shape, device="meta").stride(), dtype=dtype,
                                   device="meta")

    f32, bf16 = torch.float32, torch.bfloat16
    eight_bit = torch.int8 if table_op.endswith("_int8") else H.fp8_dtype(target)
    dtype = eight_bit if table_op.startswith(("a8w8", "batched_a8w8")) else bf16
    if table_op == "afp4wfp4":
        return Choice(AFP4, cfg)
    if table_op.startswith("batched_"):
        x, w, y = meta(B, M, K, dtype=dtype), meta(B, N, K, dtype=dtype), meta(B, M, N, dtype=bf16)
        scaling = G.NO_SCALING if dtype == bf16 else G.Scaling("rowcol", meta(B, M, dtype=f32), meta(B, N, dtype=f32))
        return batched(cfg, target, x, w, y, scaling)
    x, w, y = meta(M, K, dtype=dtype), meta(N, K, dtype=dtype), meta(M, N, dtype=bf16)
    if x_t or w_t:
        if table_op not in ("a16w16", "a8w8", "a8w8_int8", "a8w8_blockscale"):
            raise ValueError(f"x / w transposed in memory: the dense GEMMs' layouts, not {table_op}'s")
        x = meta(K, M, dtype=dtype).t() if x_t else x
        w = meta(K, N, dtype=dtype).t() if w_t else w
    if table_op == "a16w16_gated":  # w holds the gate and up rows: (2N, K); N is the intermediate size
        # (silu, the ops' default; `gemmkit configs` lists the activations the budget sends to the Triton tier)
        return gated(cfg, target, x, meta(2 * N, K, dtype=dtype), y, activation="silu")
    if "blockscale" in table_op:  # block_shape (128, 128), x_scale M-major as gemmkit.quant writes it
        kb = H.cdiv(K, 128)
        scaling = G.Scaling("block", meta(M, kb, dtype=f32, stride=(1, M)), meta(H.cdiv(N, 128), kb, dtype=f32),
                            128, 128)
        cfg = dict(cfg, BLOCK_SIZE_K=min(cfg["BLOCK_SIZE_K"], 128))  # as the op caps it: a step in one K block
    elif dtype != bf16:
        scaling = G.Scaling("rowcol", meta(M, dtype=f32), meta(N, dtype=f32))
    else:
        scaling = G.NO_SCALING
    if table_op.endswith("split_cat"):  # c1 stands for the outputs (their dtype); their layout picks only the store
        return split_cat(cfg, target, x, w, y)
    return dense(cfg, target, x, w, y, scaling)
