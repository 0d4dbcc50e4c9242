"""CDNA 8-wave ping-pong GEMM in Gluon (gfx950, gfx942): C = act(A @ B.T + bias), bf16 / fp16 in, fp32
accumulate, bf16 / fp16 / fp32 out (gemm_a16w16's "backend": "gluon" buckets on AMD; host side: cdna_host.py).

A is (M, K), B is (N, K) (the weight layout of `nn.Linear`), C is (M, N). One program per 256 x 256
tile of C (the grid covers C; edge tiles are partial); 8 waves in two groups of four; A and B go from global memory straight into LDS
(cdna4 `buffer_load_to_shared`, no registers), two LDS stages, and the groups run one sync
interval apart (the stagger) so one group's MFMAs overlap the other's loads.

    C tile 256 x 256, waves as a 2 x 4 grid (cdna_layout.py)       LDS (gfx950: BK = 64, 128 KiB)
    +---------+---------+---------+---------+                      stage 0: A 256 x BK | B 256 x BK
    | wave 0  | wave 1  | wave 2  | wave 3  |  G0 (warp_id_m 0)    stage 1: A 256 x BK | B 256 x BK
    | 128x64  |         |         |         |  rows 0..127         each buffer swizzled: 16-byte
    +---------+---------+---------+---------+                      chunk ^= (row // per_phase)
    | wave 4  | wave 5  | wave 6  | wave 7  |  G1 (warp_id_m 1)             % max_phase
    +---------+---------+---------+---------+  rows 128..255
    per wave per K tile: (128/16) x (64/16) x (BK/32) MFMA 16x16x32 = 64 (gfx942: 16x16x16, BK 32: 64)

Schedule: `cdna-pingpong` of gemmkit/schedule/library.py (the simplified schedule of seed 003 §6.5
with 8-wave loads), which `gemmkit schedule check cdna-pingpong` proves free of LDS races. The
kernel is generated from it: `kernel_ops()` turns the schedule's prologue, loop body and
epilogue into op tuples that the @gluon.jit body walks at compile time, so the checked schedule
and the compiled one are the same list.

    G0: load s0 | wait | bar |      | bar: load s1 wait | bar: compute s0 | bar: compute s1 | bar: load s0 ...
    G1: load s0 | wait | bar | bar* | bar:              | bar: load s1    | bar: compute s0 | bar: compute s1 ...
        (* the stagger: G1's extra barrier; G0 pays it back with one at the end)

Edges, in two compile-time variants the host picks per call (cdna_host.variant; whole-tile calls compile neither):
    EDGE    (M or N not a multiple of 256) a row of A past M / of B past N starts at ROW_OOB, an offset past the
            buffer's range: its loads return 0 with no per-load mask; an edge tile's store is masked, behind a
            branch on the tile (a mask computed before it was interleaved with the last MFMAs and spilled)
    MASK_K  (K not a multiple of 2 * BK) the loads mask columns past K (0 in LDS); the loop runs cdiv(K, 2 BK)
            stage pairs, the last one partly or wholly zeros
Epilogue: bias and activation are the Triton tier's `bias_activation` (kernels/triton/_epilogue.py), then the cast.

Constraints:
- gfx950 or gfx942 (tile_config raises otherwise); num_warps = 8; bf16 / fp16 A and B of one dtype (and bias),
  C bf16 / fp16 / fp32.
- A, B, C row-major with rows of exactly K / K / N elements; K and N multiples of 16 elements (direct-to-LDS needs
  16-byte vectors; the static compile declares that divisibility); every tensor's span below 2**31 - 2 bytes
  (buffer ops: cdna_layout.BUFFER_BYTES); the host checks all of it (cdna_host.operands_unsupported).
- The fused epilogues and variants that compile with 0 spills are cdna_host.spill_free() per release; on 3.6: on gfx950
  every epilogue with a bias, no activation without one, at edge tiles and K tails; on gfx942 whole tiles only
  (M, N % 256, K % 64), with no activation or relu (it starts at 254 VGPRs).
- Barriers are `_compat.barrier()` (gl.thread_barrier, Triton >= 3.7 gl.barrier: s_barrier with
  fences: LLVM drains the wave's counters before it, at least as strong as the schedule's waits); the stagger and re-align are a raw
  `s_barrier` behind a branch on warp_id_m, in inline assembly, because Gluon 3.6 has no
  per-wave-group barrier. LDS -> register waits (lgkmcnt) are the compiler's, from data flow.
- gfx950 from Triton 3.7: a compute stage reads its K tile from LDS in two halves (K_HALVES 2,
  kernels/_budgets.cdna_k_halves): whole, the operands and the 128-register accumulator spilled
  (84-188 bytes); the MFMA count, the schedule and the LDS are the same.
- Compiled and run in the NumPy model (cdna_model.py) only: no AMD GPU has run this kernel.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.amd import cdna3
from triton.experimental.gluon.language.amd.cdna4 import async_copy
from triton.runtime.jit import constexpr_function

from ... import launcher
from ...schedule import library as _library
from ...schedule.model import Barrier, Load, Mma, Read, WaitLgkm, WaitVm
from .. import _budgets
from . import cdna_host as H
from . import cdna_layout as L
from ..triton._epilogue import ACTIVATIONS, bias_activation
from ._compat import barrier

SCHEDULE = "cdna-pingpong"
# kernel op codes: (LOAD, stage) (WAIT, vmcnt) (BARRIER, 0) (GROUP_BARRIER, group) (COMPUTE, stage)
LOAD, WAIT, BARRIER, GROUP_BARRIER, COMPUTE = 0, 1, 2, 3, 4


def _ops(steps) -> tuple:
    """Collapse schedule steps into kernel ops: the loads of one stage are one op (the whole
    CTA's direct-to-LDS copy of A and B), a compute stage's reads, lgkm waits and MFMAs are one."""
    out = []
    for st in steps:
        if isinstance(st, Load):
            op = (LOAD, int(st.buf[3]))  # "As[s][h]"
        elif isinstance(st, WaitVm):
            if st.n != 0:
                raise ValueError("the kernel maps vmcnt waits to wait_group(0) only; a partial wait needs "
                                 "commit groups that match the schedule's load counts")
            op = (WAIT, 0)
        elif isinstance(st, Barrier):
            op = (BARRIER, 0) if len(st.who) == 2 else (GROUP_BARRIER, st.who[0])
        elif isinstance(st, (Read, WaitLgkm, Mma)):
            op = (COMPUTE, int(st.note.split()[-1]))  # "compute stage s"
        else:
            raise ValueError(f"the kernel cannot run {st.text()}")
        if not out or op != out[-1] or op[0] == BARRIER:
            out.append(op)
    return tuple(out)


def kernel_ops() -> dict:
    """The schedule the kernel runs: prologue, loop body (two K tiles + the stage-0 reload),
    last body (no reload), epilogue, each a tuple of op tuples."""
    prologue, body, epilogue = _library.pingpong_phases("all")
    return {"PROLOGUE": _ops(prologue), "BODY": _ops(body(0, last=False)), "LAST": _ops(body(0, last=True)),
            "EPILOGUE": _ops(epilogue)}


def barriers_in_code(ops: dict) -> int:
    """s_barrier instructions the code holds: one per barrier op (the loop body once)."""
    return sum(op[0] in (BARRIER, GROUP_BARRIER) for part in ops.values() for op in part)


def computes_in_code(ops: dict) -> int:
    return sum(op[0] == COMPUTE for part in ops.values() for op in part)


@constexpr_function
def _group_barrier_asm(group):
    # warp_id_m = (thread id of lane 0) >> 8 (256 threads per group); the labels are unique per use.
    return ("v_readfirstlane_b32 $0, $1\n s_lshr_b32 $0, $0, 8\n s_cmp_eq_u32 $0, %d\n"
            " s_cbranch_scc0 gk_skip_${:uid}\n s_barrier\ngk_skip_${:uid}:" % group)


@gluon.jit
def _group_barrier(GROUP: gl.constexpr, NUM_WARPS: gl.constexpr):
    """s_barrier for the waves of one group only (the stagger), as the seeds' `if warp_id_m == g`."""
    tid = gl.arange(0, NUM_WARPS * 64, layout=gl.BlockedLayout([1], [64], [NUM_WARPS], [0]))
    gl.inline_asm_elementwise(_group_barrier_asm(GROUP), "=&s,v", [tid], dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _run(OPS: gl.constexpr, a_s, b_s, a_ptr, b_ptr, offs_a, offs_b, ks, K, k_off, acc,
         BK: gl.constexpr, DOT_A: gl.constexpr, DOT_B: gl.constexpr, NUM_WARPS: gl.constexpr,
         MASK_K: gl.constexpr, K_HALVES: gl.constexpr):
    """Issue one phase of the schedule, op by op (unrolled at compile time). A load masks rows past M (A) / N (B)
    and columns past K: the buffer load turns a masked lane's offset out of range, and the hardware writes 0 to
    its LDS slot. A compute op reads its stage from LDS whole (K_HALVES 1) or in two K halves, each read right
    before its MFMAs (K_HALVES 2: half the operand registers live at a time; kernels/_budgets.cdna_k_halves)."""
    for i in gl.static_range(len(OPS)):
        if OPS[i][0] == 0:  # LOAD stage: the next K tile of A and B, global -> LDS
            if MASK_K:  # the last stage pair reaches past K: its columns past K load as 0
                in_k = (k_off + ks) < K
                async_copy.buffer_load_to_shared(a_s.index(OPS[i][1]), a_ptr, offs_a + k_off, mask=in_k[None, :])
                async_copy.buffer_load_to_shared(b_s.index(OPS[i][1]), b_ptr, offs_b + k_off, mask=in_k[None, :])
            else:
                async_copy.buffer_load_to_shared(a_s.index(OPS[i][1]), a_ptr, offs_a + k_off)
                async_copy.buffer_load_to_shared(b_s.index(OPS[i][1]), b_ptr, offs_b + k_off)
            async_copy.commit_group()
            k_off += BK
        elif OPS[i][0] == 1:  # WAIT vmcnt
            async_copy.wait_group(OPS[i][1])
        elif OPS[i][0] == 2:  # BARRIER
            barrier()
        elif OPS[i][0] == 3:  # GROUP_BARRIER
            _group_barrier(OPS[i][1], NUM_WARPS)
        else:  # COMPUTE stage: LDS -> registers -> MFMA
            if K_HALVES == 1:
                a = a_s.index(OPS[i][1]).load(DOT_A)
                b = b_s.index(OPS[i][1]).permute([1, 0]).load(DOT_B)
                acc = cdna3.mfma(a, b, acc)
            else:
                for h in gl.static_range(K_HALVES):
                    a = a_s.index(OPS[i][1]).slice(h * (BK // K_HALVES), BK // K_HALVES, 1).load(DOT_A)
                    b = b_s.index(OPS[i][1]).slice(h * (BK // K_HALVES), BK // K_HALVES, 1).permute([1, 0]).load(DOT_B)
                    acc = cdna3.mfma(a, b, acc)
    return k_off, acc


# M is not specialised (a launch compiles what the static compile does: N and K are 16-element multiples and
# the pointers 16-byte aligned by the host's rules, cdna_host.DIVISIBLE; the bias's alignment is not promised)
@gluon.jit(do_not_specialize=["M"], do_not_specialize_on_alignment=["bias_ptr"])
def cdna_pingpong_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
                         BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                         MFMA_VERSION: gl.constexpr, MFMA_K: gl.constexpr, VEC: gl.constexpr, LOAD_VEC: gl.constexpr,
                         PER_PHASE: gl.constexpr, MAX_PHASE: gl.constexpr, LOAD_ROWS: gl.constexpr,
                         PROLOGUE: gl.constexpr, BODY: gl.constexpr, LAST: gl.constexpr, EPILOGUE: gl.constexpr,
                         ROW_OOB: gl.constexpr, EDGE: gl.constexpr, MASK_K: gl.constexpr, HAS_BIAS: gl.constexpr,
                         ACTIVATION: gl.constexpr, K_HALVES: gl.constexpr):
    NUM_WARPS: gl.constexpr = 8
    mfma: gl.constexpr = gl.amd.AMDMFMALayout(version=MFMA_VERSION, instr_shape=[16, 16, MFMA_K], transposed=True,
                                              warps_per_cta=[2, 4])
    DOT_A: gl.constexpr = gl.DotOperandLayout(0, mfma, VEC)
    DOT_B: gl.constexpr = gl.DotOperandLayout(1, mfma, VEC)
    # global -> LDS: 16 bytes per lane, one wave instruction = LOAD_ROWS x BK (1 KiB)
    ld: gl.constexpr = gl.BlockedLayout([1, LOAD_VEC], [LOAD_ROWS, BK // LOAD_VEC], [NUM_WARPS, 1], [1, 0])
    smem: gl.constexpr = gl.SwizzledSharedLayout(VEC, PER_PHASE, MAX_PHASE, [1, 0])
    a_s = gl.allocate_shared_memory(a_ptr.dtype.element_ty, [2, BM, BK], smem)
    b_s = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [2, BN, BK], smem)

    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, ld))
    ks = gl.arange(0, BK, layout=gl.SliceLayout(0, ld))
    rows_a = pid_m * BM + rows
    rows_b = pid_n * BN + rows
    if EDGE:  # a row past M (A) or N (B) starts at ROW_OOB, an element offset past the buffer's range
        # (cdna_layout.ROW_OOB): every load of it returns 0, and the loop needs no mask (per-load masks spilled)
        offs_a = gl.where(rows_a < M, rows_a * K, ROW_OOB)[:, None] + ks[None, :]
        offs_b = gl.where(rows_b < N, rows_b * K, ROW_OOB)[:, None] + ks[None, :]
    else:
        offs_a = rows_a[:, None] * K + ks[None, :]
        offs_b = rows_b[:, None] * K + ks[None, :]
    acc = gl.zeros([BM, BN], gl.float32, mfma)

    k_off = 0
    k_off, acc = _run(PROLOGUE, a_s, b_s, a_ptr, b_ptr, offs_a, offs_b, ks, K, k_off, acc, BK, DOT_A,
                      DOT_B, NUM_WARPS, MASK_K, K_HALVES)
    # K tiles in stage pairs; the last pair's tiles past K (K % (2 * BK) != 0) load as zeros
    for _ in range(0, (K + 2 * BK - 1) // (2 * BK) - 1):
        k_off, acc = _run(BODY, a_s, b_s, a_ptr, b_ptr, offs_a, offs_b, ks, K, k_off, acc, BK, DOT_A,
                          DOT_B, NUM_WARPS, MASK_K, K_HALVES)
    k_off, acc = _run(LAST, a_s, b_s, a_ptr, b_ptr, offs_a, offs_b, ks, K, k_off, acc, BK, DOT_A, DOT_B,
                      NUM_WARPS, MASK_K, K_HALVES)
    k_off, acc = _run(EPILOGUE, a_s, b_s, a_ptr, b_ptr, offs_a, offs_b, ks, K, k_off, acc, BK, DOT_A,
                      DOT_B, NUM_WARPS, MASK_K, K_HALVES)

    # the epilogue: bias and activation (kernels/triton/_epilogue.py, the Triton tier's), cast, masked store
    rcm = pid_m * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, mfma))
    rcn = pid_n * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, mfma))
    # bias and activation: the Triton tier's epilogue (kernels/triton/_epilogue.py), then the cast
    out = bias_activation(acc, bias_ptr, rcn, N, HAS_BIAS, ACTIVATION).to(c_ptr.dtype.element_ty)
    offs_c = rcm[:, None] * N + rcn[None, :]
    # The store's mask only where the tile has an edge, behind a branch: computed before it, the compiler
    # interleaved the mask with the last MFMAs and spilled (52-100 bytes, Triton 3.6).
    if EDGE:
        if ((pid_m + 1) * BM <= M) & ((pid_n + 1) * BN <= N):
            cdna3.buffer_store(out, c_ptr, offs_c)
        else:  # rows past M and columns past N are not written (a masked lane's offset is out of range)
            cdna3.buffer_store(out, c_ptr, offs_c, mask=(rcm < M)[:, None] & (rcn < N)[None, :])
    else:
        cdna3.buffer_store(out, c_ptr, offs_c)


def constexprs(target, has_bias: bool = False, activation: str = "none", edge: bool = False,
               mask_k: bool = False) -> dict:
    """Everything the kernel is specialised on, from the target (cdna_layout.tile_config), the schedule, the call
    (mask_k: K is not a multiple of 2 * BK; the fused epilogue: bias or not, activation) and the installed Triton's
    register budget (K_HALVES: kernels/_budgets.cdna_k_halves)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation: expected one of {ACTIVATIONS}, got {activation!r}")
    cfg = L.tile_config(target)
    return dict(BM=cfg.BM, BN=cfg.BN, BK=cfg.BK, MFMA_VERSION=cfg.mfma_version, MFMA_K=cfg.mfma[2], VEC=cfg.vec,
                LOAD_VEC=cfg.load_vec,
                PER_PHASE=cfg.per_phase, MAX_PHASE=cfg.max_phase, LOAD_ROWS=L.load_threads(cfg)[0], **kernel_ops(),
                ROW_OOB=L.ROW_OOB, EDGE=bool(edge), MASK_K=bool(mask_k), HAS_BIAS=bool(has_bias), ACTIVATION=activation,
                K_HALVES=_budgets.cdna_k_halves(target))


def kernel_constexprs(M: int, N: int, K: int, has_bias: bool, activation: str, target) -> dict:
    """`constexprs` of the variant a call of M x N x K compiles (cdna_host.variant: edge tiles, K's tail)."""
    edge, mask_k = H.variant(M, N, K, target)
    return constexprs(target, has_bias, activation, edge, mask_k)


def launch(x2, w, bias, y, activation, cfg, target, compile_only=False):
    """y = act(x2 @ w.T + bias) on the CDNA ping-pong. ValueError where cdna_host.unsupported finds a reason (the
    dispatch asks first: a call that reaches here with one is a bug, not a fallback)."""
    why = H.unsupported(cfg, x2, w, y, bias, activation, target)
    if why:
        raise ValueError(f"{H.KERNEL}: {why}")
    M, K = x2.shape
    N = w.shape[0]
    ce = kernel_constexprs(M, N, K, bias is not None, activation, target)
    return launcher.launcher(cdna_pingpong_kernel, H.grid(M, N, target), compile_only)(
        *H.arguments(x2, w, bias, y), **ce, num_warps=H.NUM_WARPS)


def signature(in_dtype: str, out_dtype: str, ce: dict) -> dict:
    """The static-compile signature of cdna_host.arguments (`gemmkit isa`): each runtime parameter of the kernel, in
    its order, typed as `arguments` passes it; then the constexprs."""
    types = {"a_ptr": f"*{in_dtype}", "b_ptr": f"*{in_dtype}", "c_ptr": f"*{out_dtype}", "bias_ptr": f"*{in_dtype}",
             "M": "i32", "N": "i32", "K": "i32"}
    return {name: types[name] if name in types else "constexpr" for name in cdna_pingpong_kernel.arg_names
            if name in types or name in ce}


# ---- static compile (gemmkit isa) ---------------------------------------------------------------

PROMISES = (
    {"promise": "no spills", "check": "spill_bytes == 0"},
    {"promise": "LDS within the target", "check": "lds_bytes <= target.shared_mem_bytes"},
    {"promise": "LDS = two stages of A and B (tile_config)", "check": "lds_bytes == smem_bound"},
    {"promise": "direct-to-LDS loads for all of A and B (16 B per lane on gfx950, 4 B on gfx942)",
     "check": "counts['buffer_load_lds'] == cfg['lds_loads']"},
    {"promise": "no global->register loads of A or B", "check": "counts['buffer_load'] == counts['buffer_load_lds']"},
    {"promise": "MFMA count = 64 per wave per K tile x the compute ops in the code",
     "check": "counts['v_mfma'] == cfg['mfma']"},
    {"promise": "matrix work per K step = tile arithmetic", "check": "mma_k_steps == cfg['computes']"},
    {"promise": "s_barrier count = the schedule's barriers (loop body once)",
     "check": "counts['s_barrier'] == cfg['barriers']"},
)


def heaviest_epilogue(arch: str, edge: bool, mask_k: bool, out: str = "bf16", version=None):
    """(has_bias, activation): the first of _budgets.EPILOGUE_ORDER (most arithmetic first) that the release's
    cdna_host.spill_free table lets this variant run, or None (the variant takes no epilogue on `arch`)."""
    ok = H.spill_free(version).get((arch, edge, mask_k, out), {})
    return next(((b, a) for b, a in _budgets.EPILOGUE_ORDER if a in ok.get(b, ())), None)


def widest_variant(arch: str, version=None):
    """(EDGE, MASK_K) of the most general calls the kernel takes on `arch` with some epilogue (gfx950: edge tiles
    and K % (2 * BK) != 0; gfx942 on 3.6: whole tiles only; the release's spill_free table)."""
    return next(v for v in ((True, True), (True, False), (False, True), (False, False))
                if heaviest_epilogue(arch, *v, version=version) is not None)


def isa_cases(archs):
    """The kernel as written (whole tiles, no epilogue), once per target; then each gfx942 / gfx950 A16W16 bucket that
    names the Gluon backend, compiled as the dispatch would run its most general calls: the widest variant the
    target takes with the heaviest epilogue its release's spill_free table lets it run."""
    import json

    from ... import arch as _arch
    from ... import configs as _configs

    ops = kernel_ops()
    for arch in archs:
        if arch not in H.TARGETS:
            continue
        cfg = L.tile_config(_arch.ARCHS[arch])
        loads_per_op = 2 * (cfg.BM * cfg.BK * L.ELEM_BYTES) // (L.NUM_WARPS * L.WAVE * cfg.load_vec * L.ELEM_BYTES)
        n_loads = sum(op[0] == LOAD for part in ops.values() for op in part)
        base = {"BLOCK_SIZE_M": cfg.BM, "BLOCK_SIZE_N": cfg.BN, "BLOCK_SIZE_K": cfg.BK, "num_warps": 8,
                "num_stages": 2, "schedule": SCHEDULE, "barriers": barriers_in_code(ops),
                "computes": computes_in_code(ops), "mfma": computes_in_code(ops) * L.mfma_per_wave_per_k_tile(cfg),
                "lds_loads": n_loads * loads_per_op}
        yield {"kernel": H.KERNEL, "op": "cdna_pingpong", "arch": arch, "table": "-", "bucket": SCHEDULE,
               "config": dict(base, edge=False, mask_k=False, has_bias=False, activation="none", out="bf16"),
               "path": "gluon"}
        path = _configs.table_path("a16w16", arch)
        if not path.exists():
            continue
        edge, mask_k = widest_variant(arch)
        has_bias, act = heaviest_epilogue(arch, edge, mask_k)
        for bucket, shipped in json.loads(path.read_text()).items():
            if shipped.get("backend") == "gluon":
                yield {"kernel": H.KERNEL, "op": "cdna_pingpong", "arch": arch, "table": path.name, "bucket": bucket,
                       "config": dict(base, edge=edge, mask_k=mask_k, has_bias=has_bias, activation=act, out="bf16"),
                       "path": "gluon"}


def isa_spec(case):
    from ... import arch as _arch

    target = _arch.ARCHS[case["arch"]]
    cfg = L.tile_config(target)
    c = case["config"]
    # (a case without the variant keys is the kernel as written: whole tiles, no epilogue, bf16 out; the cases
    # tests/data/triton_budgets.json recorded before the kernel had variants)
    ce = constexprs(target, c.get("has_bias", False), c.get("activation", "none"), c.get("edge", False),
                    c.get("mask_k", False))
    return dict(kernel=cdna_pingpong_kernel, signature=signature("bf16", c.get("out", "bf16"), ce), constexprs=ce,
                divisible=H.DIVISIBLE, options={"num_warps": H.NUM_WARPS}, promises=PROMISES,
                block=(cfg.BM, cfg.BN, cfg.BK), smem_bound=cfg.lds_bytes)
