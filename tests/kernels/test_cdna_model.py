"""The CDNA ping-pong kernel's own code executed in NumPy (gemmkit/kernels/gluon/cdna_model.py): C against
A @ B.T on whole grids per target, and faults injected into the model's inputs (layouts, op lists, the
kernel's source) that must each make the check fail."""
import numpy as np
import pytest

from gemmkit import arch
from gemmkit.kernels.gluon import cdna_layout as L
from gemmkit.kernels.gluon import cdna_model as CM
from gemmkit.kernels.gluon import cdna_pingpong as K
from triton.experimental.gluon import language as gl

TARGETS = ["gfx950", "gfx942"]
# (M, N, K in units of 2 * BK): one tile, grids of 2-3 tiles along either side (the last row / column of
# tiles is an edge tile of the grid), the shortest K (no loop body) and several loop iterations
SHAPES = [(256, 256, 1), (512, 256, 2), (256, 512, 1), (768, 256, 1), (256, 768, 2), (512, 512, 3)]


def _operands(M, N, Kd, seed=0):
    rng = np.random.default_rng(seed)  # small integers: every fp32 partial sum is exact
    return (rng.integers(-4, 5, (M, Kd)).astype(np.float32), rng.integers(-4, 5, (N, Kd)).astype(np.float32))


def _case(a, shape=(512, 256, 2)):
    t = arch.ARCHS[a]
    M, N, kk = shape
    return (t, *_operands(M, N, 2 * L.tile_config(t).BK * kk))


@pytest.mark.parametrize("a", TARGETS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_model_computes_a_times_b_t(a, shape):
    t, A, B = _case(a, shape)
    ok, detail = CM.check(t, A, B)
    assert ok, detail


@pytest.mark.parametrize("a", TARGETS)
def test_model_counts_match_the_kernels_promises(a):
    t, A, B = _case(a, (256, 256, 2))
    _, rep = CM.run(t, A, B)
    cfg = L.tile_config(t)
    k_tiles = A.shape[1] // cfg.BK
    assert rep.mfma == L.NUM_WARPS * k_tiles * L.mfma_per_wave_per_k_tile(cfg)
    assert rep.loads == k_tiles * 2 * cfg.BM * cfg.BK // (L.WAVE * cfg.load_vec)
    assert rep.stores == 256 * 256  # the accumulator layout holds each C element once
    assert not rep.errors


@pytest.mark.parametrize("a", TARGETS)
def test_random_normal_operands_within_bf16(a):
    t = arch.ARCHS[a]
    bk = L.tile_config(t).BK
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((256, 4 * bk)), rng.standard_normal((512, 4 * bk))
    C, rep = CM.run(t, A, B)
    ref = CM.to_bf16(A.astype(np.float32)).astype(np.float64) @ CM.to_bf16(B.astype(np.float32)).astype(np.float64).T
    assert not rep.errors and np.isfinite(C).all()
    np.testing.assert_allclose(C, ref, rtol=2 ** -7, atol=1e-2)


def test_model_swizzle_is_cdna_layouts():
    for a in TARGETS:
        cfg = L.tile_config(arch.ARCHS[a])
        smem = gl.SwizzledSharedLayout(cfg.vec, cfg.per_phase, cfg.max_phase, [1, 0])
        r, c = np.meshgrid(np.arange(cfg.BM), np.arange(cfg.BK), indexing="ij")
        assert (CM.swizzled_offsets(smem, cfg.BM, cfg.BK) == L.lds_offset(cfg, r, c)).all()


def test_k_halves_path():
    """The kernel's K_HALVES = 2 branch (Triton >= 3.7 on gfx950) computes the same C."""
    t, A, B = _case("gfx950")
    ok, detail = CM.check(t, A, B, CM.Mutation(constexprs=lambda ce: {**ce, "K_HALVES": 2}))
    assert ok, detail


def test_k_halves_would_be_wrong_on_gfx942():
    """K_HALVES = 2 is gfx950-only (_budgets.cdna_k_halves), and must stay so: on gfx942 a half is 16 wide, less
    than the 4 lane groups x k_width 8 of DOT_A, so the compiler's layout broadcasts lanes 32..63 onto k 0..15
    and the model's MFMAs count that half twice."""
    cfg = L.tile_config(arch.ARCHS["gfx942"])
    mfma = gl.amd.AMDMFMALayout(version=3, instr_shape=[16, 16, 16], transposed=True, warps_per_cta=[2, 4])
    assert [0, 0] in CM.linear_layout(gl.DotOperandLayout(0, mfma, cfg.vec), (cfg.BM, cfg.BK // 2)).lane_bases
    t, A, B = _case("gfx942")
    assert not CM.check(t, A, B, CM.Mutation(constexprs=lambda ce: {**ce, "K_HALVES": 2}))[0]


# edge tiles along M and N, K not a multiple of 2 * BK (+16: the 16-element rows the host requires), one K tile
EDGE_SHAPES = [(300, 256, 0, 16), (256, 272, 1, 0), (300, 528, 1, 16), (16, 16, 0, 16), (520, 272, 2, 48)]


@pytest.mark.parametrize("a", TARGETS)
@pytest.mark.parametrize("shape", EDGE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_edge_tiles_and_k_tails(a, shape):
    """The variants cdna_host.variant picks for shapes off the tile: rows past M / N load as 0 (out of the buffer's
    range), K past the last whole stage pair loads as 0 (masked), the edge tiles' stores are masked."""
    t = arch.ARCHS[a]
    M, N, pairs, extra = shape
    A, B = _operands(M, N, 2 * L.tile_config(t).BK * pairs + extra, seed=sum(shape))
    ok, detail = CM.check(t, A, B)
    assert ok, detail


@pytest.mark.parametrize("a", TARGETS)
@pytest.mark.parametrize("act", ["relu", "gelu", "silu"])
def test_bias_and_activation_through_the_shared_epilogue(a, act):
    t = arch.ARCHS[a]
    A, B = _operands(300, 272, 2 * L.tile_config(t).BK + 16)
    bias = np.random.default_rng(3).integers(-8, 9, 272).astype(np.float32)
    ok, detail = CM.check(t, A, B, bias=bias, activation=act)
    assert ok, detail


@pytest.mark.parametrize("a", TARGETS)
@pytest.mark.parametrize("dtype, out", [("fp16", "fp16"), ("fp16", "fp32"), ("bf16", "fp32")])
def test_fp16_operands_and_other_outputs(a, dtype, out):
    t = arch.ARCHS[a]
    A, B = _operands(256, 300, 4 * L.tile_config(t).BK)
    bias = np.arange(300, dtype=np.float32) % 7 - 3
    ok, detail = CM.check(t, A, B, bias=bias, activation="relu", dtype=dtype, out=out)
    assert ok, detail


def _edge_case(a):
    t = arch.ARCHS[a]
    return (t, *_operands(300, 272, 2 * L.tile_config(t).BK + 16))


def _edge_fails(a, mutation, **kw):
    t, A, B = _edge_case(a)
    ok, detail = CM.check(t, A, B, mutation, **kw)
    assert not ok, "the mutation went unnoticed"
    return detail


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_edge_rows_not_sent_out_of_range(a):
    """Rows past M read as ordinary offsets: past the tensor but inside the buffer's range (a neighbour's memory)."""
    detail = _edge_fails(a, CM.Mutation(source=lambda n, s: s.replace("gl.where(rows_a < M, rows_a * K, ROW_OOB)",
                                                                      "(rows_a * K)")))
    assert "inside the buffer's range" in detail


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_edge_store_unmasked(a):
    _edge_fails(a, CM.Mutation(source=lambda n, s: s.replace(", mask=(rcm < M)[:, None] & (rcn < N)[None, :])", ")")))


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_k_tail_unmasked(a):
    """The K tail's columns past K read the next row (in range): wrong sums."""
    _edge_fails(a, CM.Mutation(constexprs=lambda ce: {**ce, "MASK_K": False}))


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_bias_by_row(a):
    bias = np.arange(272, dtype=np.float32) % 5
    _edge_fails(a, CM.Mutation(source=lambda n, s: s.replace("bias_activation(acc, bias_ptr, rcn,",
                                                             "bias_activation(acc, bias_ptr, rcm,")), bias=bias)


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_activation_before_bias(a):
    """The shared epilogue's own order, mutated (activation, then bias): relu of negative sums plus a bias differs."""
    bias = np.arange(272, dtype=np.float32) % 5 - 2
    _edge_fails(a, CM.Mutation(source=lambda n, s: s.replace("return activation(acc, ACTIVATION)", "return acc")
                               if n == "bias_activation" else s), bias=bias, activation="relu")


# ---- mutations: each must make the check fail

def _fails(a, mutation):
    t, A, B = _case(a)
    ok, detail = CM.check(t, A, B, mutation)
    assert not ok, "the mutation went unnoticed"
    return detail


def _swizzle_bit_flip(cfg):
    """Drop the XOR of the first phase bit: rows with bit log2(per_phase) set lose chunk bit 0 of their swizzle."""
    bit = int(np.log2(cfg.per_phase))

    def f(offs):
        r = (offs // cfg.BK) % cfg.BM  # row within its stage (offs = stage * BM * BK + row * BK + chunk ...)
        return offs ^ (((r >> bit) & 1) * cfg.vec)
    return f


@pytest.mark.parametrize("side", ["read", "write"])
@pytest.mark.parametrize("a", TARGETS)
def test_mutation_swizzle_bit(a, side):
    flip = _swizzle_bit_flip(L.tile_config(arch.ARCHS[a]))
    _fails(a, CM.Mutation(smem=lambda s, offs: flip(offs) if s == side else offs))


@pytest.mark.parametrize("a", TARGETS)
def test_swizzle_bit_on_both_sides_is_a_bank_conflict_not_a_wrong_result(a):
    """The same wrong swizzle on both sides is still a bijection: C is right, the reads conflict."""
    cfg = L.tile_config(arch.ARCHS[a])
    flip = _swizzle_bit_flip(cfg)
    t, A, B = _case(a)
    assert CM.check(t, A, B, CM.Mutation(smem=lambda s, offs: flip(offs)))[0]
    r = np.arange(16)
    off = flip(L.lds_offset(cfg, r, np.zeros(16, int)))
    assert len({(o * L.ELEM_BYTES % (L.LDS_BANKS * L.BANK_BYTES)) // L.VEC_BYTES for o in off}) < 16


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_k_tile_shifted_by_one(a):
    # the first load reads K tile 1: every tile shifts by one and the last reads past K
    _fails(a, CM.Mutation(source=lambda n, s: s.replace("k_off = 0", "k_off = BK")
                          if n == "cdna_pingpong_kernel" else s))
    # one loop iteration too few (the last two K tiles are never loaded)
    _fails(a, CM.Mutation(source=lambda n, s: s.replace("(K + 2 * BK - 1) // (2 * BK) - 1",
                                                        "(K + 2 * BK - 1) // (2 * BK) - 2")
                          if n == "cdna_pingpong_kernel" else s))


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_op_lists(a):
    # the loop body's reload of K tile k0 + 2 goes into stage 1 instead of 0: the next iteration computes
    # the stale k0 again from stage 0 and k0 + 2 in place of k0 + 3 (one K tile off in the op list)
    def reload_wrong_stage(ce):
        body = list(ce["BODY"])
        i = max(j for j, op in enumerate(body) if op == (K.LOAD, 0))
        body[i] = (K.LOAD, 1)
        return {**ce, "BODY": tuple(body)}
    _fails(a, CM.Mutation(constexprs=reload_wrong_stage))

    def no_wait(ce):  # the prologue's wait dropped: stage 0 is read before it lands (NaN)
        return {**ce, "PROLOGUE": tuple(op for op in ce["PROLOGUE"] if op[0] != K.WAIT),
                "BODY": tuple(op for op in ce["BODY"] if op[0] != K.WAIT),
                "LAST": tuple(op for op in ce["LAST"] if op[0] != K.WAIT)}
    _fails(a, CM.Mutation(constexprs=no_wait))


def _swap_fragment_halves(operand):
    """In every lane, exchange the two halves of each MFMA operand fragment (registers j and j ^ kw/2)."""
    def f(layout, shape, t):
        if not (isinstance(layout, gl.DotOperandLayout) and layout.operand_index == operand):
            return t
        kw = layout.parent.instr_shape[2] // 4
        r = np.arange(t.shape[2])
        return t[:, :, r ^ (kw // 2)]
    return f


@pytest.mark.parametrize("operand", [0, 1])
@pytest.mark.parametrize("a", TARGETS)
def test_mutation_fragment_halves_swapped(a, operand):
    _fails(a, CM.Mutation(table=_swap_fragment_halves(operand)))


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_accumulator_rows_swapped(a):
    def f(layout, shape, t):  # result registers 0 <-> 1 of every MFMA
        if not isinstance(layout, gl.amd.AMDMFMALayout):
            return t
        return t[:, :, np.arange(t.shape[2]) ^ 1]
    _fails(a, CM.Mutation(table=f))


@pytest.mark.parametrize("a", TARGETS)
def test_mutation_untransposed_accumulator(a):
    """The accumulator layout the kernel does not use (transposed=False) against the same MFMA: wrong C."""
    def f(layout, shape, t):
        if isinstance(layout, gl.amd.AMDMFMALayout) and layout.transposed:
            import dataclasses
            return CM.layout_table(dataclasses.replace(layout, transposed=False), shape)
        return t
    _fails(a, CM.Mutation(table=f))


@pytest.mark.parametrize("a", TARGETS)
def test_wave_pieces_of_c_per_the_compiler(a):
    """Which rows / columns of C a wave's accumulator holds, per the compiler's layout of the kernel's
    AMDMFMALayout(warps_per_cta=[2, 4]): 16-row / 16-column blocks interleaved over the wave grid
    (warp_id_m = wave // 4 owns the row blocks of its parity), not the contiguous 128 x 64 piece that
    cdna_layout.wave_tile and the kernel's docstring draw. The function is the same either way."""
    cfg = L.tile_config(arch.ARCHS[a])
    mfma = gl.amd.AMDMFMALayout(version=cfg.mfma_version, instr_shape=[16, 16, cfg.mfma[2]], transposed=True,
                                warps_per_cta=[2, 4])
    t = CM.layout_table(mfma, (cfg.BM, cfg.BN))
    for w in range(L.NUM_WARPS):
        rows, cols = set(t[w, ..., 0].ravel() // 16), set(t[w, ..., 1].ravel() // 16)
        assert rows == {b for b in range(16) if b % 2 == w // 4} and cols == {b for b in range(16) if b % 4 == w % 4}
