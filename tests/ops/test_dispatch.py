"""The dispatch rule (gemmkit/ops/dispatch.py): which kernel serves a call and why each kernel ahead of it cannot.

The rule is checked on meta tensors (a GPU call's shapes, strides and dtypes, no data) for every kernel it can
choose; the ops are checked to launch what the rule says (interpreter calls, counted by launcher.LAUNCHES); the
isa cases, the tuner's kernel families and `gemmkit configs` are checked to follow the same rule."""
import dataclasses
import json

import pytest
import torch
from _util import check_a16w16, poisoned, randn

from gemmkit import arch, configs, launcher
from gemmkit.cli import main as cli_main
from gemmkit.kernels._host import fp8_dtype
from gemmkit.kernels.triton import dense as G
from gemmkit.ops import dispatch as D
from gemmkit.ops.gemm_a16w16 import gemm_a16w16

H200, MI300 = arch.get("sm_90"), arch.get("gfx942")
BF16, FP8 = torch.bfloat16, torch.float8_e4m3fn
TILE = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
        "num_stages": 3, "NUM_KSPLIT": 1, "tma": True, "persistent": False}
GLUON = dict(TILE, backend="gluon")
COOP = dict(GLUON, num_warps=8)


def meta(*shape, dtype=BF16, stride=None):
    stride = stride or torch.empty(shape, device="meta").stride()
    return torch.empty_strided(shape, stride, dtype=dtype, device="meta")


def gated_choice(cfg, target, x, w, h, activation="silu"):
    """dispatch.gated's Choice for a gated call with `activation` on the gate."""
    return D.gated(cfg, target, x, w, h, activation=activation)


def dense_meta(M, N, K, dtype=BF16, y_cols=None):
    """x, w, y of an (M, N, K) call; y_cols: y's row stride (a view of a wider buffer)."""
    return (meta(M, K, dtype=dtype), meta(N, K, dtype=dtype),
            meta(M, N, stride=(y_cols, 1) if y_cols else None))


@pytest.mark.parametrize("cfg, kernel", [(GLUON, D.GLUON_BF16), (COOP, D.GLUON_COOP), (TILE, D.TRITON_TMA),
                                         (dict(TILE, tma=False), D.TRITON_POINTER)])
def test_aligned_call_gets_the_kernel_its_config_names(cfg, kernel):
    choice = D.dense(cfg, H200, *dense_meta(256, 512, 1024))
    assert choice.kernel == kernel == D.preferred_kernel(cfg)
    assert choice.passed_over == (() if kernel != D.TRITON_POINTER else
                                  ((D.TRITON_TMA, 'the config has "tma": false'),))


def test_unaligned_output_passes_over_gluon_and_tma_and_says_why(monkeypatch):
    choice = D.dense(GLUON, H200, *dense_meta(256, 500, 2048))  # y rows of 1000 bytes: not 16-byte multiples
    assert choice.kernel == D.GLUON_BF16 and choice.pitch_y == 504  # into a workspace of 1008-byte rows, copied
    assert "into a workspace of rows of 504 elements" in choice.explain()
    assert [k for k, _ in choice.passed_over] == [D.GLUON_BF16, D.TRITON_TMA]
    assert all(why.startswith("y: TMA needs") for _, why in choice.passed_over)
    split = D.dense(dict(GLUON, NUM_KSPLIT=4), H200, *dense_meta(256, 502, 2048))
    assert split.pitch_y == 504 and split.config["NUM_KSPLIT"] == 1  # split-K's fp32 rows would be off 16 bytes
    assert D.dense(dict(GLUON, NUM_KSPLIT=4), H200, *dense_meta(256, 500, 2048)).config["NUM_KSPLIT"] == 4
    # the Gluon kernel passed over anyway (here: the interpreter): the Triton tier keeps the split
    tier = D.dense(dict(GLUON, NUM_KSPLIT=4), H200, *dense_meta(256, 502, 2048), interpreting=True)
    assert (tier.kernel, tier.pitch_y, tier.config["NUM_KSPLIT"]) == (D.TRITON_TMA, 504, 4)
    assert D.dense(dict(GLUON, NUM_KSPLIT=4), H200, *dense_meta(256, 504, 2048)).config["NUM_KSPLIT"] == 4
    triton = D.dense(TILE, H200, *dense_meta(256, 500, 2048))  # the Triton tier's TMA kernel takes the workspace too
    assert triton.kernel == D.TRITON_TMA and triton.pitch_y == 504
    rowcol = G.Scaling("rowcol", meta(256, dtype=torch.float32), meta(500, dtype=torch.float32))
    fp8 = D.dense(GLUON, H200, *dense_meta(256, 500, 2048, dtype=FP8), rowcol)  # and the fp8 Gluon kernel
    assert fp8.kernel == D.GLUON_FP8 and fp8.pitch_y == 504
    assert D.dense(GLUON, H200, *dense_meta(64, 1001, 1024)).kernel == D.TRITON_POINTER  # under PITCH_Y_MIN_MACS
    monkeypatch.setattr(D, "PITCH", False)
    choice = D.dense(GLUON, H200, *dense_meta(256, 500, 2048))
    assert choice.kernel == D.TRITON_POINTER and choice.path == "pointer" and not choice.pitch_y
    # the same N in a y that is a view of wider, aligned rows: TMA's rules hold again
    assert D.dense(GLUON, H200, *dense_meta(256, 500, 1024, y_cols=512)).kernel == D.GLUON_BF16


def test_gluon_split_k_needs_n_multiple_of_4_but_the_triton_tier_takes_it():
    cfg = dict(GLUON, NUM_KSPLIT=4)
    x, w, y = dense_meta(64, 4098, 8192, y_cols=4104)
    choice = D.dense(cfg, H200, x, w, y)
    assert choice.passed_over[0] == (D.GLUON_BF16, "Gluon split-K's fp32 workspace needs N % 4 == 0 (16-byte TMA rows)")
    assert choice.kernel == D.TRITON_TMA
    assert "split-K reduce" in choice.explain()
    assert D.dense(cfg, H200, *dense_meta(64, 4096, 8192)).kernel == D.GLUON_BF16


def test_a_gluon_split_tile_falls_back_to_its_power_of_two_part(monkeypatch):
    monkeypatch.setattr(D, "PITCH", False)  # (else y's misaligned rows go to a workspace: the Gluon split tile)
    cfg = dict(GLUON, BLOCK_SIZE_N=192)
    choice = D.dense(cfg, H200, *dense_meta(256, 512, 1024))
    assert choice.kernel == D.GLUON_BF16 and choice.config["BLOCK_SIZE_N"] == 192
    unaligned_y = meta(256, 512, stride=(513, 1))  # 1026-byte rows: neither Gluon nor TMA (a copy of x, w cannot help)
    choice = D.dense(cfg, H200, meta(256, 1000), meta(512, 1000), unaligned_y)
    assert choice.kernel == D.TRITON_POINTER and choice.config["BLOCK_SIZE_N"] == 128


def test_amd_target_runs_the_pointer_kernel_and_lists_no_tma():
    choice = D.dense(dict(TILE, tma=False), MI300, *dense_meta(256, 512, 1024))
    assert choice.kernel == D.TRITON_POINTER and choice.passed_over == ()
    # a "backend": "gluon" config on AMD names the CDNA ping-pong, which runs only its own tile (test_cdna_host.py)
    choice = D.dense(dict(GLUON, tma=False), MI300, *dense_meta(256, 512, 1024))
    assert choice.kernel == D.TRITON_POINTER and [k for k, _ in choice.passed_over] == [D.GLUON_CDNA]
    assert "tile on gfx942 is 256 x 256 x 32" in choice.passed_over[0][1]


def test_fp8_gluon_kernel_and_its_scale_rules():
    x, w, y = dense_meta(256, 512, 1024, dtype=FP8)
    rowcol = G.Scaling("rowcol", meta(256, dtype=torch.float32), meta(512, dtype=torch.float32))
    assert D.dense(GLUON, H200, x, w, y, rowcol).kernel == D.GLUON_FP8
    assert D.dense(COOP, H200, x, w, y, rowcol).kernel == D.GLUON_FP8
    block = G.Scaling("block", meta(256, 8, dtype=torch.float32, stride=(1, 256)), meta(4, 8, dtype=torch.float32),
                      128, 128)
    assert D.dense(GLUON, H200, x, w, y, block).kernel == D.GLUON_FP8
    odd = G.Scaling("block", block.x_scale, meta(8, 8, dtype=torch.float32), 64, 128)  # bn 64 < BLOCK_SIZE_N 128
    choice = D.dense(GLUON, H200, x, w, y, odd)
    assert choice.kernel == D.TRITON_TMA and "BLOCK_SIZE_N (128) to divide bn" in choice.passed_over[0][1]
    split = D.dense(dict(GLUON, NUM_KSPLIT=2), H200, x, w, y, rowcol)
    assert split.passed_over[0] == (D.GLUON_FP8, "split-K configs run on the Triton tier")


def test_int8_never_runs_the_fp8_kernel():
    x, w, y = dense_meta(256, 512, 1024, dtype=torch.int8)
    rowcol = G.Scaling("rowcol", meta(256, dtype=torch.float32), meta(512, dtype=torch.float32))
    choice = D.dense(GLUON, H200, x, w, y, rowcol)
    assert choice.kernel == D.TRITON_TMA and "float8_e4m3fn" in choice.passed_over[0][1]


def test_a_config_that_fits_no_kernel_is_a_value_error():
    huge = dict(TILE, BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=128, num_stages=6)
    with pytest.raises(ValueError, match="shared memory"):
        D.dense(huge, H200, *dense_meta(256, 512, 1024))


def test_cpu_calls_pass_over_gluon_for_the_interpreter():
    x, w, y = torch.empty(32, 64, dtype=BF16), torch.empty(48, 64, dtype=BF16), torch.empty(32, 48, dtype=BF16)
    choice = D.dense(GLUON, H200, x, w, y)
    assert choice.passed_over[0] == (D.GLUON_BF16, "the Triton interpreter does not run Gluon kernels")


# ----------------------------------------------------------------------------- the op launches what the rule says

SMALL = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 2, "num_warps": 4,
         "num_stages": 2, "NUM_KSPLIT": 1, "tma": True, "persistent": False}


@pytest.mark.interpreter
@pytest.mark.parametrize("case", ["aligned", "y_unaligned", "x_transposed", "gluon", "pointer_config"])
def test_op_launches_the_kernel_the_rule_chooses(case):
    M, N, K = 24, 40, 64
    x, w = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16)
    cfg = dict(SMALL, backend="gluon") if case == "gluon" else dict(SMALL, tma=case != "pointer_config")
    if case == "x_transposed":
        x = randn(K, M, dtype=BF16).t()
    y = poisoned((M, N + (8 if case != "y_unaligned" else 3)), dtype=BF16)[:, :N]  # rows of 96 or 86 bytes
    choice = D.dense(configs.validate_config(dict(cfg)), H200, G.matrix_operand(x), w, y)
    before = launcher.LAUNCHES.copy()
    gemm_a16w16(x, w, out=y, config=cfg)
    launched = {k for k, v in (launcher.LAUNCHES - before).items() if v}
    assert launched == {choice.kernel}
    check_a16w16(y, x, w)


# ----------------------------------------------------------------------------- tools follow the same rule

def test_isa_table_cases_are_the_rules_triton_kernels():
    for path in configs.shipped_tables("a16w16"):
        target = arch.ARCHS[path.parent.name]
        table = json.loads(path.read_text())
        cases = [c for c in G.table_cases("a16w16", [target.arch]) if c["table"] == path.name]
        for bucket, cfg in table.items():
            if cfg == configs.MODEL:  # the config model serves it: no case of its own
                assert not [c for c in cases if c["bucket"] == bucket]
                continue
            cfg = configs.validate_config(dict(cfg), backend=target.backend)
            want = [k for k, _ in D.kernels_for(cfg, target) if k not in D.GLUON_KERNELS]
            assert [c["kernel"] for c in cases if c["bucket"] == bucket] == want, (path.name, bucket)


def test_tuner_families_follow_the_rule():
    from gemmkit.tune import pick_candidates

    cands = [dict(TILE, BLOCK_SIZE_K=bk) for bk in (32, 64, 128)] + [dict(GLUON, BLOCK_SIZE_K=bk) for bk in (32, 64)] \
        + [dict(COOP, BLOCK_SIZE_K=64), dict(TILE, tma=False)]
    picked = pick_candidates(cands, cands, M=64, max_candidates=1)
    assert sorted(D.preferred_kernel(c) for c in picked) == sorted([D.GLUON_BF16, D.GLUON_COOP, D.TRITON_TMA]) or \
        sorted(D.preferred_kernel(c) for c in picked) == sorted([D.GLUON_BF16, D.GLUON_COOP, D.TRITON_POINTER])


def test_cli_configs_prints_the_kernel_and_why_others_cannot(capsys):
    assert cli_main(["configs", "--op", "a16w16", "-M", "17", "-N", "4100", "-K", "4096", "--arch", "sm_90"]) == 0
    out = capsys.readouterr().out
    cfg, source = configs.serve("a16w16", H200, 17, 4100, 4096)
    choice = D.for_shape("a16w16", cfg, H200, 17, 4100, 4096)
    assert choice.explain() in out
    assert "kernel: " in out and ("not " in out) == bool(choice.passed_over)
    assert cli_main(["configs", "--op", "a8w8_blockscale", "-M", "64", "-N", "4096", "-K", "7168", "--arch",
                     "sm_90"]) == 0
    assert "kernel: " in capsys.readouterr().out


# ----------------------------------------------------------------------------- batched, gated, split-cat

def test_batched_rule():
    x, w, y = meta(8, 256, 512), meta(8, 384, 512), meta(8, 256, 384)  # 8 x 2 x 3 = 48 tiles: one wave
    choice = D.batched(GLUON, H200, x, w, y)
    assert choice.kernel == D.BATCHED_TMA and choice.passed_over[0][1].startswith("one wave of work (48 tiles")
    x, w, y = meta(64, 256, 512), meta(64, 384, 512), meta(64, 256, 384)  # 384 tiles
    assert D.batched(GLUON, H200, x, w, y).kernel == D.GLUON_BATCHED
    assert D.batched(COOP, H200, x, w, y).kernel == D.GLUON_BATCHED_COOP
    broadcast_w = meta(1, 384, 512).expand(64, 384, 512)
    choice = D.batched(GLUON, H200, x, broadcast_w, y)
    assert choice.kernel == D.BATCHED_POINTER and [k for k, _ in choice.passed_over] == [D.GLUON_BATCHED,
                                                                                       D.BATCHED_TMA]
    assert all(why.startswith("w: 3-D TMA") for _, why in choice.passed_over)
    with pytest.raises(ValueError, match="NUM_KSPLIT"):
        D.batched(dict(TILE, NUM_KSPLIT=2), H200, x, w, y)


def test_gated_rows_padded_like_dense():
    """The gated GEMM's TMA kernel loads x in boxes of BLOCK_SIZE_M rows like the dense ones: x copied to whole boxes
    by the same rule (w = the gate and up rows: its bytes count), never on the pointer kernel or an AMD target."""
    tile = dict(TILE, BLOCK_SIZE_M=64)
    I, K = 28672, 8192  # Llama-3-70B: w 2 x 28672 x 8192 bf16, 940 MB
    assert gated_choice(tile, H200, meta(80, K), meta(2 * I, K), meta(80, I)).pad_m == 128
    assert gated_choice(tile, H200, meta(128, K), meta(2 * I, K), meta(128, I)).pad_m == 0  # whole boxes already
    assert gated_choice(tile, H200, meta(12, K), meta(2 * I, K), meta(12, I)).pad_m == 0  # M <= PAD_M_MIN_ROWS
    assert gated_choice(tile, H200, meta(80, 4096), meta(2 * 2048, 4096), meta(80, 2048)).pad_m == 0  # w 32 MB
    assert gated_choice(dict(tile, tma=False), H200, meta(80, K), meta(2 * I, K), meta(80, I)).pad_m == 0
    assert gated_choice(dict(tile, num_stages=2), MI300, meta(80, K), meta(2 * I, K), meta(80, I)).pad_m == 0


@pytest.mark.interpreter
@pytest.mark.parametrize("split", [1, 3])
def test_gated_row_padded_x_gives_every_element_and_replays(split, launches, monkeypatch):
    """M = 20 of 16-row tiles through ffn_gated: x copied to 32 rows before the gated TMA kernel, h's 20 rows stored
    (split 3: the partials' 20 rows, reduced), the down projection on h as it is; every element within the float64
    reference's bound, and the replayed call plan does the same (the size floor lowered to an interpreter-sized w, as
    for the dense test above)."""
    import gemmkit
    from _util import within_bound
    from gemmkit import callplan
    from test_ffn import ffn_ref

    monkeypatch.setattr(D, "PAD_M_MIN_W_BYTES", 0)
    callplan.clear()
    M, I, K = 20, 256, 64
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 1, "num_warps": 4,
           "num_stages": 2, "tma": True, "NUM_KSPLIT": split}
    replays = callplan.STATS["replays"]
    for _ in range(2):  # record, then replay
        x, wg, wd = randn(M, K, dtype=BF16), randn(2 * I, K, dtype=BF16), randn(K, I, dtype=BF16)
        before = launches.copy()
        y = gemmkit.ffn_gated(x, wg, wd, config=cfg)  # the down projection: its table
        launched = launches - before
        assert launched["pad_rows_kernel"] == 1 and launched["gemm_gated_tma_kernel"] == 1, launched
        ok, msg = within_bound(y, ffn_ref(x, wg, wd), BF16)
        assert ok, msg
    assert callplan.STATS["replays"] == replays + 1, "the padded call's plan was not replayed"


def test_gated_and_split_cat_rules():
    x, w, h = meta(64, 512), meta(2 * 256, 512), meta(64, 256)
    assert gated_choice(TILE, H200, x, w, h).kernel == D.GATED_TMA
    assert gated_choice(dict(TILE, BLOCK_SIZE_M=64, num_stages=2), MI300, x, w, h).kernel == D.GATED_POINTER
    with pytest.raises(ValueError, match="shared memory for the gated tile"):  # fits no kernel there
        gated_choice(TILE, MI300, x, w, h)
    assert gated_choice(TILE, H200, x, w, meta(64, 250, stride=(250, 1))).passed_over[0][1].startswith("y: TMA needs")
    # h's rows off 16 bytes above PITCH_Y_MIN_MACS (gate and up): the TMA kernel into a workspace of 16-byte rows
    odd = gated_choice(TILE, H200, meta(64, 4096), meta(2 * 1001, 4096), meta(64, 1001))
    assert (odd.kernel, odd.pitch_y) == (D.GATED_TMA, 1008) and odd.passed_over[0][1].startswith("y: TMA needs")
    assert gated_choice(TILE, H200, meta(64, 512), meta(2 * 1001, 512), meta(64, 1001)).kernel == D.GATED_POINTER
    with pytest.raises(ValueError, match="the gated GEMM runs on the Triton tier or a Gluon gated tile"):
        gated_choice(dict(TILE, backend="cuda"), H200, x, w, h)


def test_gated_gluon_rules():
    """A "backend": "gluon" gated config: the Gluon gated tile (the coop's at num_warps 8, the ping-pong's at 4) on
    sm_90 TMA operands, unsplit; otherwise the Triton tier with the same tile, each reason kept."""
    x, w, h = meta(200, 512), meta(2 * 256, 512), meta(200, 256)
    gated = {**COOP, "gated": True}  # the gated tile: its own key for a failed compile (`failed_gluon`)
    assert gated_choice(COOP, H200, x, w, h) == D.Choice(D.GLUON_COOP, gated)  # no copies: the tile shifts its last row
    assert gated_choice(dict(GLUON, BLOCK_SIZE_M=64, num_stages=4), H200, x, w, h).kernel == D.GLUON_BF16
    assert "two accumulators" in gated_choice(GLUON, H200, x, w, h).passed_over[0][1]  # 128 x 128 a consumer: too many
    for cfg, target, operands, why in [
            (COOP, H200, (randn(200, 512, dtype=BF16), randn(512, 512, dtype=BF16), torch.empty(200, 256, dtype=BF16)),
             "the Triton interpreter"),
            (dict(COOP, NUM_KSPLIT=2), H200, (x, w, h), "the Gluon gated tile runs unsplit"),
            (COOP, H200, (x, w, meta(200, 250, stride=(250, 1))), "y: TMA needs"),
            (COOP, H200, (meta(200, 512, dtype=torch.float32), meta(512, 512, dtype=torch.float32), h), "needs bf16"),
            (dict(COOP, num_stages=2, BLOCK_SIZE_M=64), MI300, (x, w, h), "needs sm_90, not gfx942")]:
        choice = gated_choice(cfg, target, *operands)
        assert choice.path != "gluon" and choice.passed_over[0][0] == D.GLUON_COOP, choice
        assert choice.passed_over[0][1].startswith(why), choice.passed_over
        assert choice.config.get("NUM_KSPLIT", 1) == cfg["NUM_KSPLIT"]  # the same tile on the Triton tier
    with pytest.raises(ValueError, match="BLOCK_SIZE_N"):  # a tile the gated plan cannot build: its reason, then
        gated_choice(dict(COOP, BLOCK_SIZE_N=512), H200, x, w, h)  # the Triton tier, which fits it nowhere either


@pytest.mark.parametrize("version", ["3.6.0", "3.8.0", "3.9.0"])
def test_gated_gluon_follows_the_budget(version, monkeypatch):
    """The Gluon gated tile under the installed Triton's register budget (kernels/_budgets.py): where its two
    accumulators fill a consumer's 128 registers (coop 128 x 128, the ping-pong's 64 x 128), Triton 3.9 sends a gelu
    into a bf16 h to the Triton tier (it spilled 128 - 144 B there, tests/data/triton_budgets.json) and keeps the other
    activations; 3.6 - 3.8 keep every one; a 64-register tile (coop 128 x 64) keeps every one on every release."""
    from gemmkit._versions import parse
    from gemmkit.kernels import _budgets

    monkeypatch.delenv(_budgets.OFF_ENV, raising=False)
    monkeypatch.setattr(_budgets, "installed", lambda: parse(version))
    x, w, h = meta(200, 512), meta(2 * 256, 512), meta(200, 256)
    full = [(COOP, D.GLUON_COOP), (dict(GLUON, BLOCK_SIZE_M=64, num_stages=4), D.GLUON_BF16)]
    for cfg, kernel in full + [(dict(COOP, BLOCK_SIZE_N=64), D.GLUON_COOP)]:
        for act in ("gelu", "gelu_tanh", "silu", "relu"):
            choice = gated_choice(cfg, H200, x, w, h, act)
            spills = version == "3.9.0" and act == "gelu" and cfg["BLOCK_SIZE_N"] == 128
            assert (choice.path != "gluon") == spills, (cfg, act, choice)
            if spills:
                assert choice.passed_over[0][0] == kernel and "GLUON_EPILOGUE" in choice.passed_over[0][1]
            else:
                assert choice.kernel == kernel
        elsewhere = [e for e, _ in D.epilogues_elsewhere(kernel, {**cfg, "gated": True})]  # `gemmkit configs`
        assert elsewhere == (["gelu"] if version == "3.9.0" and cfg["BLOCK_SIZE_N"] == 128 else [])


def test_a_failed_gated_compile_is_its_own(monkeypatch):
    """A Gluon gated tile that failed to compile passes the gated GEMM over to the Triton tier, not the dense GEMM with
    a config of the same keys (and the other way round)."""
    x, w, h = meta(200, 512), meta(2 * 256, 512), meta(200, 256)
    monkeypatch.setitem(D._GLUON_FAILED, D._config_key(D.GLUON_COOP, {**COOP, "gated": True}), "failed to compile")
    assert gated_choice(COOP, H200, x, w, h).passed_over == ((D.GLUON_COOP, "failed to compile"),)
    assert D.dense(COOP, H200, x, meta(256, 512), h).kernel == D.GLUON_COOP
    monkeypatch.delitem(D._GLUON_FAILED, D._config_key(D.GLUON_COOP, {**COOP, "gated": True}))
    monkeypatch.setitem(D._GLUON_FAILED, D._config_key(D.GLUON_COOP, COOP), "failed to compile")
    assert gated_choice(COOP, H200, x, w, h).kernel == D.GLUON_COOP
    c1 = meta(64, 256)
    assert D.split_cat(TILE, H200, x, meta(256, 512), c1).kernel == D.SPLIT_CAT_TMA
    assert D.split_cat(dict(TILE, tma=False), H200, x, meta(256, 512), c1).passed_over == \
        ((D.SPLIT_CAT_TMA, 'the config has "tma": false'),)
    with pytest.raises(ValueError, match="no split-K"):
        D.split_cat(dict(TILE, NUM_KSPLIT=2), H200, x, meta(256, 512), c1)
    with pytest.raises(ValueError, match="the split-cat GEMMs run on the Triton tier only"):
        D.split_cat(GLUON, H200, x, meta(256, 512), c1)


@pytest.mark.interpreter
@pytest.mark.parametrize("layout", ["aligned", "w_broadcast"])
def test_batched_op_launches_the_kernel_the_rule_chooses(layout):
    import gemmkit

    B, M, N, K = 3, 20, 40, 64
    x, w = randn(B, M, K, dtype=BF16), randn(B, N, K, dtype=BF16)
    if layout == "w_broadcast":
        w = randn(1, N, K, dtype=BF16).expand(B, N, K)
    cfg = dict(SMALL, backend="gluon")
    y = poisoned((B, M, N), dtype=BF16)
    choice = D.batched(configs.validate_config(dict(cfg)), H200, x, w, y)
    before = launcher.LAUNCHES.copy()
    gemmkit.batched_gemm_a16w16(x, w, out=y, config=cfg)
    assert {k for k, v in (launcher.LAUNCHES - before).items() if v} == {choice.kernel}
    assert choice.kernel == (D.BATCHED_TMA if layout == "aligned" else D.BATCHED_POINTER)
    for b in range(B):
        check_a16w16(y[b], x[b], w[b])


@pytest.mark.parametrize("target", [H200, MI300], ids=lambda t: t.arch)
def test_batched_unaligned_k_copies(target, monkeypatch):
    """Batched calls whose rows keep them on the pointer kernel's element-wide loads (K % 8 != 0 for bf16 on sm_90,
    K % 16 != 0 on AMD) run on copies of x and w to 16-byte (AMD: 16-element) rows, from ROW_COPY_MIN_MACS, where
    each copied operand's batch flattens into rows; a broadcast w, aligned rows or BATCHED_COPIES off: as given."""
    cfg = dict(TILE, NUM_KSPLIT=1) if target.is_nvidia else configs.serve("batched_a16w16", target, 256, 512, 1025)[0]
    B, M, N = 8, 256, 512
    for K, KP in ((1025, D._copy_k(1025, 2) if target.is_nvidia else 1040), (1000, 1008)):  # (sm_90: the dense
        # copies' row length, a 128-byte pitch where 16-byte rows would start off 32-byte sectors)
        c = D.batched(cfg, target, meta(B, M, K), meta(B, N, K), meta(B, M, N))
        if target.is_nvidia and K % 8 == 0:  # 16-byte rows: TMA reads them as given
            assert (c.kernel, c.pad_k) == (D.BATCHED_TMA, 0), c
            continue
        kernel = D.BATCHED_TMA if target.is_nvidia else D.BATCHED_POINTER
        assert (c.kernel, c.pad_k, c.pad_k_w) == (kernel, KP, True), (K, c)
    assert D.batched(cfg, target, meta(B, M, 1024), meta(B, N, 1024), meta(B, M, N)).pad_k == 0  # aligned
    assert D.batched(cfg, target, meta(2, 16, 1025), meta(2, 64, 1025), meta(2, 16, 64)).pad_k == 0  # small call
    broadcast = meta(1, N, 1025).expand(B, N, 1025)  # w's batch does not flatten: no copy of it, so none at all
    assert D.batched(cfg, target, meta(B, M, 1025), broadcast, meta(B, M, N)).pad_k == 0
    monkeypatch.setattr(D, "BATCHED_COPIES", False)
    assert D.batched(cfg, target, meta(B, M, 1025), meta(B, N, 1025), meta(B, M, N)).pad_k == 0


@pytest.mark.interpreter
@pytest.mark.parametrize("arch_name", ["sm_90", "gfx942"])
def test_batched_unaligned_k_copies_compute(arch_name, monkeypatch):
    """The batched op on the copies, in the interpreter: the copies and the kernel the rule names (sm_90: the TMA one)
    launched, every element of every batch entry against the float64 reference, into a poisoned output."""
    import gemmkit

    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", arch_name)
    B, M, N, K = 2, 64, 512, 2049  # 134.3 M multiply-adds: just over ROW_COPY_MIN_MACS
    x, w = randn(B, M, K, dtype=BF16), randn(B, N, K, dtype=BF16)
    y = poisoned((B, M, N), dtype=BF16)
    before = launcher.LAUNCHES.copy()
    gemmkit.batched_gemm_a16w16(x, w, out=y)
    launched = launcher.LAUNCHES - before
    kernel = D.BATCHED_TMA if arch_name == "sm_90" else D.BATCHED_POINTER
    assert launched["pad_rows_kernel"] == 2 and launched[kernel] == 1, launched
    for b in range(B):
        check_a16w16(y[b], x[b], w[b])
    from _util import q8, within_bound

    from gemmkit.reference import gemm_a8w8_ref

    dtype = torch.float8_e4m3fn if arch_name == "sm_90" else torch.int8  # (gfx942's fp8: not in this interpreter)
    x8, w8 = q8(B, M, K, dtype=dtype), q8(B, N, K, dtype=dtype)
    xs, ws = torch.rand(B, M, 1) + 0.5, torch.rand(B, 1, N) + 0.5
    y8 = poisoned((B, M, N), dtype=BF16)
    before = launcher.LAUNCHES.copy()
    gemmkit.batched_gemm_a8w8(x8, w8, xs, ws, out=y8)
    launched = launcher.LAUNCHES - before
    assert launched["pad_rows_kernel"] == 2 and launched[kernel] == 1, launched
    for b in range(B):
        ok, msg = within_bound(y8[b], gemm_a8w8_ref(x8[b], w8[b], xs[b, :, 0], ws[b, 0]), BF16)
        assert ok, msg


# ----------------------------------------------------------------------------- unaligned K: padded copies

@pytest.mark.parametrize("M", [1, 2, 16, 17, 64, 257, 4096])
def test_unaligned_k_pads_or_reads_rows_where_they_lie(M):
    from gemmkit.kernels.triton import gemm_rows_tma

    K = 4095  # rows of 8190 bytes: no TMA on the operands as given
    choice = D.dense(GLUON, H200, *dense_meta(M, 4096, K))
    if M < D.ROWS_TMA_MIN_M:  # one token: w read where it lies (kernels/triton/gemm_rows.py), no copy
        assert choice.kernel == D.TRITON_ROWS and choice.pad_k == 0 and choice.path == "pointer"
        assert "gemm_rows_kernel" in choice.explain()
    elif M <= D.ROWS_TMA_MAX_M:  # then by TMA where it lies (kernels/triton/gemm_rows_tma.py), x's shifted copies
        assert choice.kernel == D.TRITON_ROWS_TMA and choice.pad_k == 0
        assert "8 shifted copies of x" in choice.explain()
        # class-major partials and their reduce past a few tokens, y's order below (gemm_rows_tma.Y_ORDER_MAX_M)
        assert ("rows_reduce_kernel" in choice.explain()) == (M > gemm_rows_tma.Y_ORDER_MAX_M)
    else:
        assert choice.pad_k == 4096 and choice.kernel == D.GLUON_BF16
        assert "rows of 4096 elements" in choice.explain()
    fp8 = D.dense(GLUON, H200, *dense_meta(M, 4096, 7000, dtype=FP8),
                  G.Scaling("rowcol", meta(M, dtype=torch.float32), meta(4096, dtype=torch.float32)))
    if M < D.ROWS_TMA_MIN_M:  # fp8 / int8 as bf16: one token on gemm_rows, with the scales
        assert fp8.kernel == D.TRITON_ROWS and fp8.pad_k == 0
    elif M <= D.ROWS_TMA_MAX_M:  # then gemm_rows_tma (16 classes, x's 16 shifted copies), though the fp8 table's
        assert fp8.kernel == D.TRITON_ROWS_TMA and fp8.pad_k == 0  # configs are Gluon ones ("tma" false)
        assert "16 shifted copies of x" in fp8.explain()
    else:
        assert fp8.pad_k == 7008 and fp8.kernel == D.GLUON_FP8  # fp8 rows: multiples of 16 elements
    blocks = D.dense(GLUON, H200, *dense_meta(M, 4096, 7000, dtype=FP8),
                     G.Scaling("block", meta(M, 55, dtype=torch.float32), meta(32, 55, dtype=torch.float32), 128, 128))
    assert blocks.pad_k == 7008 and blocks.kernel != D.TRITON_ROWS  # block scales: the copy at any M
    assert D.dense(GLUON, H200, *dense_meta(M, 4096, 4096)).pad_k == 0  # aligned: no copy


def test_no_padding_where_it_cannot_help(monkeypatch):
    x, w = meta(256, 4095), meta(512, 4095)
    both = D.dense(GLUON, H200, x, w, meta(256, 500))  # y breaks TMA's rules too: copies of x and w, y's workspace
    assert both.kernel == D.GLUON_BF16 and both.pad_k == 4096 and both.pitch_y == 504
    monkeypatch.setattr(D, "PITCH", False)
    assert D.dense(GLUON, H200, x, w, meta(256, 500)).pad_k == 0  # without the workspace no TMA kernel either way
    monkeypatch.undo()
    # w (512, 4095) with unit stride along N: copied too where x's rows are (one K for both), read in place otherwise
    transposed = D.dense(GLUON, H200, x, meta(4095, 512).t(), meta(256, 512))
    assert (transposed.kernel, transposed.pad_k, transposed.pad_k_w) == (D.GLUON_BF16, 4096, True)
    assert D.dense(dict(TILE, tma=False), H200, x, w, meta(256, 512)).pad_k == 0  # no TMA kernel asked for
    assert D.dense(GLUON, MI300, meta(4, 4095), meta(512, 4095), meta(4, 512)).pad_k == 0  # AMD: under its floor


MI355 = arch.get("gfx950")


@pytest.mark.parametrize("target", [MI300, MI355], ids=lambda t: t.arch)
def test_amd_rows_off_the_vectors(target, monkeypatch):
    """AMD (no TMA): rows whose stride is not a multiple of 16 elements, or whose base is off 16 bytes, compile to
    element-wide loads in the pointer kernel: w read where it lies by gemm_rows at its few tokens (any config: AMD's
    ask for the pointer kernel), else copies of x and w to rows of a multiple of 16 elements (`pad_k`) under the
    pointer kernel, from ROW_COPY_MIN_MACS multiply-adds; rows that are 16-byte multiples but not 16 elements (bf16
    K = 1000) count as off; aligned rows, a transposed w, or AMD_VECTOR_ROWS off: the operands as given."""
    from gemmkit.kernels.triton import gemm_rows

    cfg = configs.serve("a16w16", target, 64, 4096, 4095)[0]
    for K, KP in ((4095, 4096), (1000, 1008), (2049, 2064)):
        for M in (1, gemm_rows.MAX_M):
            c = D.dense(cfg, target, *dense_meta(M, 4096, K))
            assert (c.kernel, c.pad_k) == (D.TRITON_ROWS, 0), (K, M, c)
        c = D.dense(cfg, target, *dense_meta(gemm_rows.MAX_M + 1 if K == 4095 else 64, 4096, K))
        assert (c.kernel, c.pad_k, c.pad_k_w) == (D.TRITON_POINTER, KP, True), (K, c)
        assert f"on copies of x and w with rows of {KP} elements" in c.explain()
    assert D.dense(cfg, target, *dense_meta(64, 4096, 4096)).pad_k == 0  # aligned: as given
    assert D.dense(cfg, target, *dense_meta(64, 4096, 4112)).pad_k == 0  # (4112 = 257 x 16)
    small = D.dense(cfg, target, *dense_meta(64, 1024, 1001))  # 65.6 M multiply-adds: the copy's launch would lead
    assert (small.kernel, small.pad_k) == (D.TRITON_POINTER, 0)
    # x a view of rows of 4097 elements (its stride off 16), w aligned: x alone copied, to K's own columns
    x = torch.empty(64 * 4097, dtype=BF16, device="meta").as_strided((64, 4096), (4097, 1))
    c = D.dense(cfg, target, x, meta(4096, 4096), meta(64, 4096))
    assert (c.kernel, c.pad_k, c.pad_k_w) == (D.TRITON_POINTER, 4096, False), c
    c = D.dense(cfg, target, meta(64, 4095), meta(4095, 4096).t(), meta(64, 4096))  # w along N: as given
    assert (c.kernel, c.pad_k) == (D.TRITON_POINTER, 0), c
    e4m3 = fp8_dtype(target)
    for M, kernel in ((1, D.TRITON_ROWS), (64, D.TRITON_POINTER)):  # 8-bit with rowcol scales as 16-bit
        c = D.dense(configs.serve("a8w8", target, M, 4096, 7000)[0], target, *dense_meta(M, 4096, 7000, dtype=e4m3),
                    G.Scaling("rowcol", meta(M, dtype=torch.float32), meta(4096, dtype=torch.float32)))
        assert (c.kernel, c.pad_k) == (kernel, 0 if kernel == D.TRITON_ROWS else 7008), c
    blocks = D.dense(configs.serve("a8w8_blockscale", target, 1, 4096, 7000)[0], target,
                     *dense_meta(64, 4096, 7000, dtype=e4m3),
                     G.Scaling("block", meta(64, 55, dtype=torch.float32), meta(32, 55, dtype=torch.float32), 128, 128))
    assert (blocks.kernel, blocks.pad_k) == (D.TRITON_POINTER, 7008), blocks  # block scales: the copy (gemm_rows
    # takes none), its 7008 columns inside K's last 128-column scale block
    x, w, h = meta(4, 4095), meta(2 * 2048, 4095), meta(4, 2048)  # the gated GEMM: gemm_rows' partials, then copies
    gated_cfg = dict(TILE, BLOCK_SIZE_M=64, num_stages=2, tma=False)
    assert (gated_choice(gated_cfg, target, x, w, h).kernel, gated_choice(gated_cfg, target, x, w, h).gated) == \
        (D.TRITON_ROWS, True)
    c = gated_choice(gated_cfg, target, meta(64, 4095), w, meta(64, 2048))
    assert (c.kernel, c.pad_k, c.pad_k_w) == (D.GATED_POINTER, 4096, True), c
    monkeypatch.setattr(D, "AMD_VECTOR_ROWS", False)
    for M in (1, 64):
        c = D.dense(cfg, target, *dense_meta(M, 4096, 4095))
        assert (c.kernel, c.pad_k) == (D.TRITON_POINTER, 0), c
        assert gated_choice(gated_cfg, target, meta(M, 4095), w, meta(M, 2048)).kernel == D.GATED_POINTER


@pytest.mark.interpreter
@pytest.mark.parametrize("arch_name", ["gfx942", "gfx950"])
def test_amd_rows_off_the_vectors_compute(arch_name, monkeypatch):
    """The AMD paths of rows off the pointer kernel's vectors, in the interpreter as the target's calls run them:
    gemm_rows at a few tokens on a w whose row gaps hold NaN (a read past a row's K shows), the copies past them
    (just over ROW_COPY_MIN_MACS), 8-bit with rowcol scales (int8 on gfx942, whose fp8 the interpreter of Triton <
    3.8 lacks; fp8 on gfx950); every element against the float64 reference, into poisoned outputs."""
    from _util import a8w8_launched, fp8_rows_with_nan_gaps, q8

    monkeypatch.setenv("GEMMKIT_INTERPRET_ARCH", arch_name)
    N, K = 40, 1001
    full = randn(N, K + 2, dtype=BF16)
    full[:, K:] = float("nan")
    w = full[:, :K]  # rows of 1003 elements: neither their stride nor their starts on 16 elements
    for M in (1, 5):
        x = randn(M, K, dtype=BF16)
        before = launcher.LAUNCHES.copy()
        y = gemm_a16w16(x, w, out=poisoned((M, N), BF16))
        assert {k for k, v in (launcher.LAUNCHES - before).items() if v} <= {"gemm_rows_kernel", "splitk_reduce_kernel"}
        assert (launcher.LAUNCHES - before)["gemm_rows_kernel"] == 1
        check_a16w16(y, x, w)
    M, N, K = 33, 2048, 2001  # 135.2 M multiply-adds: the copies, then the pointer kernel on rows of 2016 elements
    x, w = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16)
    before = launcher.LAUNCHES.copy()
    y = gemm_a16w16(x, w, out=poisoned((M, N), BF16))
    launched = launcher.LAUNCHES - before
    assert launched["pad_rows_kernel"] == 2 and launched["gemm_kernel"] == 1 and "gemm_rows_kernel" not in launched
    check_a16w16(y, x, w)
    import gemmkit
    from _util import check_gated

    for M, I, K, kernel in ((3, 24, 1001, "gemm_rows_kernel"), (33, 1024, 2001, "gemm_gated_kernel")):  # gated
        x, w = randn(M, K, dtype=BF16), randn(2 * I, K, dtype=BF16)  # (the copies from 2 M I K = 2^27 on)
        before = launcher.LAUNCHES.copy()
        h = gemmkit.gemm_a16w16_gated(x, w, out=poisoned((M, I), BF16))
        launched = launcher.LAUNCHES - before
        assert launched[kernel] == 1 and launched["pad_rows_kernel"] == (2 if kernel == "gemm_gated_kernel" else 0)
        check_gated(h, x, w)
    dtype = torch.int8 if arch_name == "gfx942" else torch.float8_e4m3fn
    N, K = 48, 1001
    w8 = fp8_rows_with_nan_gaps(N, K, 3) if dtype != torch.int8 else q8(N, K + 3, dtype=dtype)[:, :K]
    for M in (1, 3):
        x8 = q8(M, K, dtype=dtype)
        xs, ws = torch.rand(M, dtype=torch.float32) + 0.5, torch.rand(N, dtype=torch.float32) + 0.5
        assert a8w8_launched(x8, w8, xs, ws, randn(N, dtype=BF16))["gemm_rows_kernel"] == 1


def test_transposed_operands(monkeypatch):
    """x / w transposed in memory (unit stride along M / N): read in place by the TMA kernel where their storage meets
    TMA's rules and they are 16-bit (its tile's stages fitted to the TMA path's shared memory, as the pointer path's
    are); a transposed w read in place by the Gluon ping-pong's swap-AB tile too (its X_KM); a small transposed x
    copied whole to rows along K for the Gluon kernels where TMA cannot read it (M % 8 != 0, or 8-bit) or the config is
    a swap-AB tile (`SWAP_COPY`); a large one, and a transposed w TMA cannot read, left to the pointer kernel."""
    N = K = 4096
    for M in (16, 1024):  # the swap-AB tile and the cooperative 128 x 256 (4 stages: over the TMA path's budget, 3 fit)
        cfg = configs.serve("a16w16", H200, M, N, K)[0]
        assert bool(cfg.get("swap_ab")) == (M == 16)
        for x, w in ((meta(M, K), meta(K, N).t()), (meta(K, M).t(), meta(N, K)), (meta(K, M).t(), meta(K, N).t())):
            c = D.dense(cfg, H200, x, w, meta(M, N))
            if cfg.get("swap_ab"):  # x copied where it is transposed (`SWAP_COPY`), w read where it lies (X_KM)
                copied = K if x.stride(-1) != 1 else 0
                assert (c.kernel, c.pad_k, c.pad_n, c.pitch_w) == (D.GLUON_BF16, copied, 0, 0), c
                assert not (copied and c.pad_k_w), c  # (w as it is)
                if not copied:
                    continue
                monkeypatch.setattr(D, "SWAP_COPY", False)
                c = D.dense(cfg, H200, x, w, meta(M, N))
                monkeypatch.undo()
            assert (c.kernel, c.pad_k, c.pad_m, c.pitch_x, c.pitch_w) == (D.TRITON_TMA, 0, 0, 0, 0), (M, c)
            assert G.smem_bytes(c.config, H200, 2, 2, tma=True) <= H200.shared_mem_bytes
    for M in (2, 15):
        cfg = configs.serve("a16w16", H200, M, N, K)[0]
        c = D.dense(cfg, H200, meta(K, M).t(), meta(N, K), meta(M, N))
        assert (c.kernel, c.pad_k, c.pad_k_w) == (D.GLUON_BF16, K, False), c
        c = D.dense(cfg, H200, meta(K, M).t(), meta(K, N).t(), meta(M, N))  # x copied, w read transposed
        assert (c.kernel, c.pad_k, c.pad_k_w) == (D.GLUON_BF16 if cfg.get("swap_ab") else D.TRITON_TMA, K, False), c
    monkeypatch.setattr(D, "SWAP_W_KN", False)  # (off: the Triton tier's TMA kernel reads it, its W_KN)
    assert D.dense(configs.serve("a16w16", H200, 16, N, K)[0], H200, meta(16, K), meta(K, N).t(),
                   meta(16, N)).kernel == D.TRITON_TMA
    monkeypatch.undo()
    coop_swap = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 8,
                 "num_stages": 4, "backend": "gluon", "swap_ab": True}  # the cooperative swap-AB tile: K-major w only
    assert D.dense(coop_swap, H200, meta(200, K), meta(K, N).t(), meta(200, N)).path != "gluon"
    fp8 = configs.serve("a8w8", H200, 2, N, K)[0]
    e4m3 = torch.float8_e4m3fn
    rowcol = G.Scaling("rowcol", meta(2, dtype=torch.float32), meta(N, dtype=torch.float32))
    c = D.dense(fp8, H200, meta(K, 2, dtype=e4m3).t(), meta(N, K, dtype=e4m3), meta(2, N), rowcol)
    assert (c.path != "pointer", c.pad_k) == (True, K), c  # (the decode row's Triton split tile, on the copy)
    c = D.dense(fp8, H200, meta(2, K, dtype=e4m3), meta(K, N, dtype=e4m3).t(), meta(2, N), rowcol)
    assert c.kernel == D.TRITON_POINTER, c  # 8-bit w transposed: sm_90's fp8 wgmma reads K-major operands only
    big = configs.serve("a16w16", H200, 4095, 512, K)[0]  # x (4095 rows, transposed) larger than w: not copied
    assert D.dense(big, H200, meta(K, 4095).t(), meta(512, K), meta(4095, 512)).kernel == D.TRITON_POINTER
    c = D.dense(cfg, H200, meta(2, K), meta(K, N - 3).t(), meta(2, N - 3))  # w's storage off TMA: no copy
    assert c.kernel in (D.TRITON_POINTER, D.TRITON_ROWS) and not c.pad_k, c


@pytest.mark.parametrize("tokens", [4096, 4093])
def test_linear_backward_calls_take_the_tma_kernel(tokens):
    """gemmkit.nn.Linear's backward GEMMs on a Llama-style layer (N = 11008, K = 4096): dX = gemm_a16w16(dY, W.t())
    (w transposed) and dW = gemm_a16w16(dY.t(), X.t()) (both transposed; the tokens are its K, any count: TMA
    zero-fills the storage's rows past it) are the TMA kernel's, not the pointer kernel's."""
    N, K = 11008, 4096
    dy, x, weight = meta(tokens, N), meta(tokens, K), meta(N, K)
    for a, b in ((dy, weight.t()), (dy.t(), x.t())):
        cfg = configs.serve("a16w16", H200, a.shape[0], b.shape[0], a.shape[1])[0]
        c = D.dense(cfg, H200, a, b, meta(a.shape[0], b.shape[0]))
        assert (c.kernel, c.pad_k) == (D.TRITON_TMA, 0), c


def test_triton_config_with_rows_and_output_off_takes_the_copies():
    """K and N both off 16 bytes (or N alone), a Triton-tier config (the model's split-K tiles at M = 17-128): x and
    w copied (`pad_k`) and y through its workspace (`pitch_y`) for the TMA kernel, not the pointer kernel on rows off
    16 bytes; the split kept (its fp32 partials are addressed by pointer). Under PITCH_Y_MIN_MACS the pointer kernel."""
    split = dict(TILE, NUM_KSPLIT=4)
    choice = D.dense(split, H200, *dense_meta(98, 1827, 4153))
    assert (choice.kernel, choice.pad_k, choice.pitch_y, choice.config["NUM_KSPLIT"]) == (D.TRITON_TMA, 4160, 1832, 4)
    aligned = D.dense(split, H200, *dense_meta(98, 1827, 4160))  # K's rows whole: no copies, y's workspace alone
    assert (aligned.kernel, aligned.pad_k, aligned.pitch_y) == (D.TRITON_TMA, 0, 1832)
    assert D.dense(split, H200, *dense_meta(20, 1001, 4153)).kernel == D.TRITON_POINTER  # 83 M multiply-adds
    assert D.dense(dict(split, tma=False), H200, *dense_meta(98, 1827, 4153)).kernel == D.TRITON_POINTER


def test_rows_kernel_only_where_it_takes_the_call(monkeypatch):
    x, w, y = dense_meta(8, 512, 4095)
    assert D.dense(GLUON, H200, x, w, y).kernel == D.TRITON_ROWS_TMA  # from ROWS_TMA_MIN_M: by TMA where it lies
    assert D.dense(GLUON, H200, x, meta(512, 4097)[:, :4095], y).kernel == D.TRITON_ROWS_TMA  # a view, rows of 4097
    assert D.dense(GLUON, H200, *dense_meta(1, 512, 4095)).kernel == D.TRITON_ROWS  # below it gemm_rows
    assert D.dense(GLUON, H200, *dense_meta(8, 512, 999)).kernel == D.TRITON_ROWS  # under ROWS_TMA_MIN_K likewise
    x8, w8 = meta(8, 4095, dtype=FP8), meta(512, 4095, dtype=FP8)
    fp8 = D.dense(GLUON, H200, x8, w8, y, G.Scaling("rowcol", meta(8, dtype=torch.float32),
                                                    meta(512, dtype=torch.float32)))
    # 8-bit calls with rowcol scales: x's 16 shifted copies would hold half of w's bytes (the share 0.3): gemm_rows
    assert fp8.kernel == D.TRITON_ROWS and fp8.pad_k == 0
    x8 = meta(32, 4095, dtype=FP8)
    fp8 = D.dense(GLUON, H200, x8, w8, meta(32, 512), G.Scaling("rowcol", meta(32, dtype=torch.float32),
                                                                  meta(512, dtype=torch.float32)))
    assert fp8.pad_k == 4096 and fp8.kernel == D.GLUON_FP8  # past gemm_rows.MAX_M and over the share: the copy
    aligned_w = D.dense(GLUON, H200, x, meta(512, 4095, stride=(4096, 1)), y)
    assert aligned_w.kernel == D.GLUON_BF16 and aligned_w.pad_k == 4096  # only x's rows off: its copy is small
    assert aligned_w.pad_k_w  # but K % 8 != 0: w's copy too (the kernels take x and w of one K)
    sliced = D.dense(GLUON, H200, meta(64, 4099)[:, :4096], meta(512, 4096), meta(64, 512))
    assert sliced.kernel == D.GLUON_BF16 and sliced.pad_k == 4096 and not sliced.pad_k_w  # x's rows alone off
    assert "copies of x with rows" in sliced.explain()
    monkeypatch.setattr(D, "ROWS_TMA", False)
    assert D.dense(GLUON, H200, x, w, y).kernel == D.TRITON_ROWS  # turned off: gemm_rows, where it takes it
    monkeypatch.setattr(D, "ROWS_KERNEL", False)
    assert D.dense(GLUON, H200, x, w, y).pad_k == 4096  # both off: the copy


def _call(op, M, N, K, block_k=None):
    """One call of `op` on fresh (M, N, K) operands with the SMALL config into a poisoned output: (y, float64
    reference). Block scales: one K block of block_k (default: all of K), x's scales M-major."""
    import gemmkit
    from _util import q8, scales
    from gemmkit.reference import gemm_a8w8_blockscale_ref, gemm_a8w8_ref

    if op == "a16w16":
        x, w = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16)
        return gemm_a16w16(x, w, out=poisoned((M, N), BF16), config=SMALL), x.double() @ w.double().t()
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    if op == "a8w8":
        xs, ws = scales(M, 1), scales(1, N)
        return gemmkit.gemm_a8w8(x, w, xs, ws, out=poisoned((M, N), BF16), config=SMALL), gemm_a8w8_ref(x, w, xs, ws)
    kb = -(-K // (block_k or K))
    xs, ws = scales(M, kb).t().contiguous().t(), scales(-(-N // (block_k or N)), kb)
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, out=poisoned((M, N), BF16), config=SMALL,
                                     **({"block_shape": (block_k, block_k)} if block_k else {}))
    return y, gemm_a8w8_blockscale_ref(x, w, xs, ws, **({"block_shape": (block_k, block_k)} if block_k else {}))


@pytest.mark.interpreter
@pytest.mark.parametrize("op", ["a16w16", "a8w8", "a8w8_blockscale"])
def test_unaligned_k_runs_on_padded_copies_and_replays(op):
    """An odd K: the op copies x and w (pad_rows_kernel) and runs the TMA kernel on the copies;
    the call plan's replay does the same on new inputs; every element within the float64 reference's bound."""
    from _util import within_bound

    from gemmkit import callplan

    M, N = 48, 48  # above gemm_rows.MAX_M: bf16 copies too
    K = 75  # rows of 150 (bf16) or 75 (fp8) bytes: off 16-byte multiples
    replays = callplan.STATS["replays"]
    for _ in range(2):  # record, then replay
        before = launcher.LAUNCHES.copy()
        y, ref = _call(op, M, N, K)
        launched = launcher.LAUNCHES - before
        assert launched["pad_rows_kernel"] == 2 and launched["gemm_tma_kernel"] == 1, launched
        ok, msg = within_bound(y, ref, BF16)
        assert ok, msg
    assert callplan.STATS["replays"] == replays + 1, "the padded call's plan was not replayed"


def _block(M, N, K, bk, bn=128):
    kb = -(-K // bk)
    return G.Scaling("block", meta(M, kb, dtype=torch.float32, stride=(1, M)),
                     meta(-(-N // bn), kb, dtype=torch.float32), bn, bk)


@pytest.mark.parametrize("K, bk, want", [
    (1, 32, 16), (1, 64, 16), (1, 128, 128),  # 16-byte rows; the 128-byte pitch only where it ends in K's last block
    (70, 32, 80), (70, 64, 128), (200, 128, 256), (4097, 128, 4224), (4097, 32, 4112)])
def test_padded_k_stays_in_the_last_scale_block(K, bk, want):
    """The kernels take a padded copy's K: under block scales its columns must end in K's last scale block, or the
    kernels read scale columns past the scales' last (a NaN there gave a NaN output)."""
    x, w, y = dense_meta(64, 256, K, dtype=FP8)
    choice = D.dense(TILE, H200, x, w, y, _block(64, 256, K, bk))
    assert choice.kernel == D.TRITON_TMA and choice.pad_k == want
    assert -(-choice.pad_k // bk) == -(-K // bk)
    assert D.dense(TILE, H200, x, w, y, _fp8_rowcol(64, 256)).pad_k == -(-K // 128) * 128  # no scale columns: pitch


@pytest.mark.interpreter
@pytest.mark.parametrize("K, bk", [(1, 32), (40, 64), (75, 32)])
def test_block_scales_past_the_last_are_never_read(K, bk):
    """Block scales in storage that holds NaN past their last column: an odd K's padded copy (pad_rows_kernel) at
    block_k < 128 must read none of it (K = 1, bk = 32 once read columns 1-3: a NaN output, found by the property
    tests where the memory after x_scale held one). Every element against float64."""
    import gemmkit
    from _util import q8, scales, within_bound
    from gemmkit.reference import gemm_a8w8_blockscale_ref

    M, N = 5, 56
    kb, nb = -(-K // bk), -(-N // bk)
    x, w = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8)
    xs = torch.full((M, kb + 8), float("nan"))[:, :kb]  # row-major, NaN after each row's last scale
    ws = torch.full((nb, kb + 8), float("nan"))[:, :kb]
    xs.copy_(scales(M, kb))
    ws.copy_(scales(nb, kb))
    cfg = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "num_warps": 4,
           "num_stages": 2, "NUM_KSPLIT": 1, "tma": True, "persistent": False}
    before = launcher.LAUNCHES.copy()
    y = gemmkit.gemm_a8w8_blockscale(x, w, xs, ws, block_shape=(bk, bk), out=poisoned((M, N), BF16), config=cfg)
    launched = launcher.LAUNCHES - before
    assert launched["pad_rows_kernel"] == 2 and launched["gemm_tma_kernel"] == 1, launched
    ok, msg = within_bound(y, gemm_a8w8_blockscale_ref(x, w, xs, ws, (bk, bk)), BF16)
    assert ok, msg


@pytest.mark.parametrize("M", [2, 17, 48])  # the M_LEQ_16 / 32 / 64 buckets
def test_a_gluon_config_falls_back_with_the_stages_that_fit(M):
    """The config model's wide swap-AB tiles (`swap_wide`: 128 weight rows, 6-8 stages, within the Gluon kernel's
    budget, which takes num_stages as an upper bound) run on the Triton tier with as many stages as fit its path where
    the Gluon kernel declines the call (the interpreter: the TMA kernel; a transposed w whose storage TMA cannot read:
    the pointer kernel; both raised ValueError once); a Triton config's stages stay as asked, and too many still
    raise."""
    N, K = 12000, 4096
    cfg, why = configs.serve("a16w16", H200, M, N, K)
    assert cfg["backend"] == "gluon" and cfg["BLOCK_SIZE_N"] == 128 and "wide swap-AB" in why
    with pytest.raises(ValueError, match="shared memory"):  # the served stages do not fit the Triton tier
        G.check_feasible(G.triton_tile(cfg), H200, 2, 2, tma=False)
    w_off = meta(N, K, stride=(1, N + 1))  # transposed, its (K, N) storage's rows off 16 bytes
    for kernel, call, tma in ((D.TRITON_TMA, (*dense_meta(M, N, K), True), True),
                              (D.TRITON_POINTER, (meta(M, K), w_off, meta(M, N), False), False)):
        choice = D.dense(cfg, H200, *call[:3], interpreting=call[3])
        assert choice.kernel == kernel and choice.config["num_stages"] < cfg["num_stages"]
        G.check_feasible(choice.config, H200, 2, 2, tma=tma)
        assert G.smem_bytes(dict(choice.config, num_stages=choice.config["num_stages"] + 1), H200, 2, 2, tma) > \
            H200.shared_mem_bytes  # as many as fit
    assert D.dense(cfg, H200, *dense_meta(M, N, K), interpreting=False).config == cfg  # the Gluon kernel: as served
    triton_cfg = dict(cfg, backend="triton")
    with pytest.raises(ValueError, match="shared memory"):
        D.dense(triton_cfg, H200, meta(M, K), w_off, meta(M, N), interpreting=False)


@pytest.mark.interpreter
def test_a_served_wide_swap_tile_runs_on_the_triton_tier(monkeypatch):
    """The property tests' call (M = 17, N = 129, K = 1 on 2 SMs: the wide swap-AB tile served) and a column-major x
    run in the interpreter (the Triton tier) and give every element."""
    from _util import within_bound
    from gemmkit.reference import gemm_a16w16_ref

    monkeypatch.setenv("GEMMKIT_NUM_CUS", "2")
    two_sms = dataclasses.replace(H200, num_cus=2)
    for M, N, K, cols in [(17, 129, 1, False), (17, 129, 40, True)]:
        cfg, why = configs.serve("a16w16", two_sms, M, N, K)
        assert cfg["BLOCK_SIZE_N"] == 128 and "wide swap-AB" in why, why  # the tile this test is about
        x = randn(K, M, dtype=BF16).t() if cols else randn(M, K, dtype=BF16)
        w = randn(N, K, dtype=BF16)
        before = launcher.LAUNCHES.copy()
        y = gemm_a16w16(x, w, out=poisoned((M, N), BF16))
        assert (launcher.LAUNCHES - before)["gemm_kernel"] == 1  # the Triton tier's pointer kernel
        ok, msg = within_bound(y, gemm_a16w16_ref(x, w), BF16)
        assert ok, msg


# ----------------------------------------------------------------------------- x copied to whole boxes of rows

PP64 = dict(GLUON, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=128)


def _fp8_rowcol(M, N):
    return G.Scaling("rowcol", meta(M, dtype=torch.float32), meta(N, dtype=torch.float32))


@pytest.mark.parametrize("M, want", [(64, 0), (65, 128), (80, 128), (127, 128), (128, 0), (129, 192)])
def test_x_is_padded_to_whole_row_boxes_where_a_tma_kernel_would_load_past_m(M, want):
    """A TMA kernel's last row of tiles loads x boxes of BLOCK_SIZE_M rows: where they would reach past M (slow on the
    H200), the rule copies x to whole boxes first, if the copy is small beside w."""
    fp8 = D.dense(PP64, H200, *dense_meta(M, 8192, 28672, dtype=FP8), _fp8_rowcol(M, 8192))
    assert fp8.kernel == D.GLUON_FP8 and fp8.pad_m == want
    bf16 = D.dense(dict(GLUON, BLOCK_SIZE_M=128), H200, *dense_meta(M, 8192, 8192))
    # under one tile x's boxes hold only its rows (kernels/_host.x_boxes; not at 127: one box of 128); past one tile
    # the last tiles shift back
    assert bf16.pad_m == (128 if M == 127 else 0)
    if want:
        assert f"a copy of x of {want} rows" in fp8.explain()


def test_no_row_padding_where_x_is_large_beside_w_or_nothing_loads_boxes():
    assert D.dense(PP64, H200, *dense_meta(4000, 8192, 8192, dtype=FP8), _fp8_rowcol(4000, 8192)).pad_m == 0  # x ~ w
    assert D.dense(PP64, H200, *dense_meta(80, 4096, 4096, dtype=FP8), _fp8_rowcol(80, 4096)).pad_m == 0  # w 16 MB
    assert D.dense(PP64, H200, *dense_meta(9, 8192, 8192, dtype=FP8), _fp8_rowcol(9, 8192)).pad_m == 0  # M <= 16
    assert D.dense(dict(TILE, tma=False), H200, *dense_meta(80, 8192, 8192)).pad_m == 0  # the pointer kernel
    assert D.dense(GLUON, MI300, *dense_meta(80, 8192, 8192)).pad_m == 0  # AMD: no TMA boxes
    tma = D.dense(TILE, H200, *dense_meta(80, 8192, 8192))
    assert tma.kernel == D.TRITON_TMA and tma.pad_m == 128
    unaligned = D.dense(GLUON, H200, *dense_meta(300, 8192, 8191))  # K to 16-byte rows; M in boxes of its rows
    assert unaligned.pad_k == 8192 and unaligned.pad_m == 0


@pytest.mark.parametrize("M, bm, want", [(17, 32, 32), (21, 32, 32), (22, 32, 0), (24, 32, 0), (33, 64, 64),
                                          (40, 64, 64), (43, 64, 0), (48, 64, 0), (63, 64, 0),
                                          (120, 64, 0)])  # M >= 64: the last token tile shifts back
def test_swap_ab_decode_calls_keep_x_where_the_last_box_is_mostly_full(M, bm, want, monkeypatch):
    """Under one token tile the tokens come in boxes of only their rows (kernels/_host.x_boxes): no copy. With those
    off (TRIM_X_BOX), ab/bf16_pad_m_decode(_heldout).json's rule: the swap-AB decode tile loads its last token box as
    it is where x fills at least 2/3 of it (the copy's launch cost more), and from x copied to whole boxes where it is
    about half empty."""
    from gemmkit.kernels import _host as H

    swap = dict(GLUON, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=128, swap_ab=True)
    unswapped = dict(swap, swap_ab=False, BLOCK_SIZE_M=64)
    assert D.dense(swap, H200, *dense_meta(M, 10240, 5120)).pad_m == 0
    assert D.dense(unswapped, H200, *dense_meta(48, 10240, 5120)).pad_m == 0
    monkeypatch.setattr(H, "TRIM_X_BOX", False)
    assert D.dense(swap, H200, *dense_meta(M, 10240, 5120)).pad_m == want
    assert D.dense(unswapped, H200, *dense_meta(48, 10240, 5120)).pad_m == 64


def test_row_padding_can_be_turned_off(monkeypatch):
    from gemmkit.kernels import _host as H

    monkeypatch.setattr(H, "TRIM_X_BOX", False)  # (else x's boxes hold M = 80: no copy either way)
    assert D.dense(dict(GLUON, BLOCK_SIZE_M=128), H200, *dense_meta(80, 8192, 8192)).pad_m == 128
    monkeypatch.setattr(D, "PAD_M", False)
    assert D.dense(dict(GLUON, BLOCK_SIZE_M=128), H200, *dense_meta(80, 8192, 8192)).pad_m == 0


@pytest.mark.interpreter
@pytest.mark.parametrize("op, K", [("a16w16", 64), ("a16w16", 75), ("a8w8", 64), ("a8w8_blockscale", 256)])
def test_row_padded_x_gives_every_element_and_replays(op, K, monkeypatch):
    """M = 20 of 16-row tiles: x is copied to 32 rows (pad_rows_kernel; with K = 75 that copy also pads its rows, and
    w is copied too), the TMA kernel computes 32 rows and y's 20 are stored; every element within the float64
    reference's bound, the per-row scales read for the 20 rows only, and the call plan's replay does the same on new
    inputs. (The size floor, PAD_M_MIN_W_BYTES, is lowered to an interpreter-sized w: the copy's mechanics are what
    this checks; the GPU tests run it at the floor's sizes.)"""
    from _util import within_bound

    from gemmkit import callplan

    monkeypatch.setattr(D, "PAD_M_MIN_W_BYTES", 0)
    monkeypatch.setattr(D, "ROWS_KERNEL", False)  # bf16 K = 75 at M = 20 reads w in place otherwise (gemm_rows.py)
    callplan.clear()
    M, N = 20, 512
    replays = callplan.STATS["replays"]
    for _ in range(2):  # record, then replay
        before = launcher.LAUNCHES.copy()
        y, ref = _call(op, M, N, K, block_k=128 if op == "a8w8_blockscale" else None)
        launched = launcher.LAUNCHES - before
        assert launched["pad_rows_kernel"] == (2 if K % 8 else 1) and launched["gemm_tma_kernel"] == 1, launched
        ok, msg = within_bound(y, ref, BF16)
        assert ok, msg
    assert callplan.STATS["replays"] == replays + 1, "the padded call's plan was not replayed"


# ----------------------------------------------------------------------------- w copied to whole boxes of its rows

PP64X128 = dict(GLUON, BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, num_stages=8)


@pytest.mark.parametrize("N, want", [(160, 0), (200, 0), (96, 128), (8, 128), (40, 128), (128, 0), (256, 0)])
def test_w_is_padded_to_whole_row_boxes_where_its_last_box_would_load_past_n(N, want):
    """A Gluon kernel's last column of tiles loads w boxes of BLOCK_SIZE_N rows: where N is under one box they would
    reach past N (slow on the H200, as x's past M), so w is copied to a whole box first, where that copy is small
    beside x (routers); at N past one box the last column shifts back to end at N (hopper_parts.tile_origin)."""
    choice = D.dense(PP64X128, H200, *dense_meta(4096, N, 4096))
    assert choice.kernel == D.GLUON_BF16 and choice.pad_n == want, choice
    assert (f"a copy of w of {want} rows" in choice.explain()) == bool(want)


def test_no_w_padding_where_it_was_not_measured_to_pay():
    assert D.dense(PP64X128, H200, *dense_meta(512, 96, 4096)).pad_n == 0  # the copy 1/4 of x's bytes, over 1/8
    assert D.dense(PP64X128, H200, *dense_meta(1024, 96, 4096)).pad_n == 128  # 1/8
    assert D.dense(PP64X128, H200, *dense_meta(4096, 160, 4096)).pad_n == 0  # past one column: shifted, no copy
    assert D.dense(PP64X128, H200, *dense_meta(8192, 1000, 4096)).pad_n == 0  # N > PAD_N_MAX_N: one column of many
    assert D.dense(dict(PP64X128, NUM_KSPLIT=2), H200, *dense_meta(4096, 96, 4096)).pad_n == 0  # split tiles
    coop = D.dense(dict(COOP, BLOCK_SIZE_N=128), H200, *dense_meta(4096, 96, 4096))  # not measured on the coop
    assert coop.kernel == D.GLUON_COOP and coop.pad_n == 0
    tma = D.dense(dict(TILE, BLOCK_SIZE_N=128), H200, *dense_meta(4096, 96, 4096))  # the Triton tier (lost there)
    assert tma.kernel == D.TRITON_TMA and tma.pad_n == 0
    assert D.dense(PP64, H200, *dense_meta(4096, 40, 4096, dtype=FP8), _fp8_rowcol(4096, 40)).pad_n == 0  # scales
    assert D.dense(dict(PP64X128, swap_ab=True), H200, *dense_meta(4096, 96, 4096)).pad_n == 0  # w is the tile's rows
    assert D.dense(GLUON, MI300, *dense_meta(4096, 96, 4096)).pad_n == 0  # AMD: no TMA boxes


def test_w_padding_turns_off_with_row_padding(monkeypatch):
    monkeypatch.setattr(D, "PAD_M", False)
    assert D.dense(PP64X128, H200, *dense_meta(4096, 96, 4096)).pad_n == 0


@pytest.mark.parametrize("M, N, K", [(4096, 160, 4096), (2048, 200, 3072), (8192, 200, 3072), (6000, 40, 2048),
                                     (8192, 8, 4096), (3000, 160, 4096), (2048, 136, 4096)])
def test_narrow_wave_partial_columns_are_the_ones_dispatch_pads(M, N, K):
    """configs/model/one_wave.py's `narrow_wave` serves a tile whose last column reaches past N only where the kernel
    shifts it back (N past one tile width) or ops/dispatch.py copies w to a whole box (`pad_n`): the two rules agree."""
    from gemmkit.configs import model

    cfg, source = configs.serve("a16w16", H200, M, N, K)
    bn = cfg["BLOCK_SIZE_N"]
    assert "one wave" in source and N % bn, source
    assert D.dense(cfg, H200, *dense_meta(M, N, K)).pad_n == (bn if N < bn else 0)
    assert model.NARROW_WAVE_PAD_SHARE == D.PAD_M_SHARE and model.NARROW_WAVE_MAX_N <= D.PAD_N_MAX_N


@pytest.mark.interpreter
def test_pad_rows_zero_fills_rows_and_columns():
    from gemmkit.kernels.triton import pad

    t = randn(5, 40, dtype=BF16)[:, :37]  # rows of a wider buffer
    out = pad.pad_rows(t, 48, RP=16)
    assert out.shape == (16, 48) and out.is_contiguous()
    assert torch.equal(out[:5, :37], t) and not out[5:].any() and not out[:, 37:].any()
    with pytest.raises(ValueError, match="cannot hold"):
        pad.pad_rows(t, 48, RP=4)


@pytest.mark.interpreter
def test_copy_rows_copies_y_out_of_its_workspace():
    """copy_rows (`Choice.pitch_y`): a workspace view of 16-byte rows into y, contiguous or a view of wider rows; every
    element, nothing written past y's columns."""
    from gemmkit.kernels.triton import pad

    ws = randn(37, 48, dtype=BF16)[:, :45]  # y's 45 columns in rows of 48
    y = torch.full((37, 45), float("nan"), dtype=BF16)
    assert pad.copy_rows(ws, y) is y and torch.equal(y, ws)
    wide = torch.full((37, 50), float("nan"), dtype=BF16)
    pad.copy_rows(ws, wide[:, :45])
    assert torch.equal(wide[:, :45], ws) and wide[:, 45:].isnan().all()
    with pytest.raises(ValueError, match="cannot take"):
        pad.copy_rows(ws, torch.empty(37, 44, dtype=BF16))


@pytest.mark.interpreter
def test_rows_and_output_off_run_the_copies_right(launches):
    """`test_triton_config_with_rows_and_output_off_takes_the_copies`' path run (interpreter): x and w copied to rows
    of 3392 (a 128-byte pitch: 3368 would be off 32-byte sectors), the split-K TMA kernel into y's workspace of
    1008-element rows, the reduce, then y copied out of it; every element of a poisoned y right, bias and activation
    applied once."""
    M, N, K = 40, 1001, 3361  # 134.6 M multiply-adds: just over PITCH_Y_MIN_MACS
    cfg = configs.validate_config(dict(TILE, BLOCK_SIZE_M=64, BLOCK_SIZE_K=128, NUM_KSPLIT=2))
    x, w, bias = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16), randn(N, dtype=BF16)
    choice = D.dense(cfg, H200, x, w, poisoned((M, N), BF16))  # (CPU tensors: the interpreter's view)
    assert (choice.kernel, choice.pad_k, choice.pitch_y, choice.config["NUM_KSPLIT"]) == (D.TRITON_TMA, 3392, 1008, 2)
    before = dict(launches)
    y = gemm_a16w16(x, w, bias, activation="gelu", out=poisoned((M, N), BF16), config=cfg)
    launched = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    assert launched.get(D.TRITON_TMA) == 1 and D.TRITON_POINTER not in launched, launched
    check_a16w16(y, x, w, bias, "gelu")


@pytest.mark.interpreter
def test_fp8_output_off_runs_the_workspace_right(launches):
    """gemm_a8w8 (fp8, per-token and per-channel scales) with y's rows off 16 bytes (N = 1001), over
    PITCH_Y_MIN_MACS: the TMA kernel into y's workspace, copied out (interpreter: the Triton tier's; on sm_90 the
    Gluon fp8 kernel for a "gluon" config); every element of a poisoned y right."""
    import gemmkit
    from _util import check_8bit, q8, scales

    M, N, K = 72, 1001, 2048  # 147.6 M multiply-adds
    x, w, xs, ws = q8(M, K, dtype=FP8), q8(N, K, dtype=FP8), scales(M, 1), scales(1, N)
    cfg = configs.validate_config(dict(TILE, BLOCK_SIZE_K=128))
    before = dict(launches)
    y = gemmkit.gemm_a8w8(x, w, xs, ws, out=poisoned((M, N), BF16), config=cfg)
    launched = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    assert launched.get(D.TRITON_TMA) == 1 and D.TRITON_POINTER not in launched, launched
    check_8bit(y, x, w, xs, ws)


@pytest.mark.interpreter
def test_gated_output_off_runs_the_workspace_right(launches):
    """gemm_a16w16_gated with h's rows off 16 bytes (I = 1001) and K's too, over PITCH_Y_MIN_MACS: the gated TMA
    kernel on x's and w's copies into h's workspace, copied out; every element of a poisoned h right."""
    import gemmkit
    from _util import check_gated

    M, I, K = 40, 1001, 1701  # 136 M multiply-adds (gate and up)
    x, w = randn(M, K, dtype=BF16), randn(2 * I, K, dtype=BF16)
    cfg = configs.validate_config(dict(TILE, BLOCK_SIZE_M=64))
    before = dict(launches)
    h = gemmkit.gemm_a16w16_gated(x, w, activation="gelu", out=poisoned((M, I), BF16), config=cfg)
    launched = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    assert launched.get(D.GATED_TMA) == 1 and D.GATED_POINTER not in launched, launched
    assert launched.get("pad_rows_kernel") == 3, launched  # x, w, then h out of its workspace
    check_gated(h, x, w, "gelu")


# ----------------------------------------------------------------------------- a Gluon kernel that fails to compile

@pytest.mark.interpreter
def test_a_gluon_kernel_that_fails_to_compile_falls_back_once_with_a_warning(monkeypatch):
    """A Triton release whose Gluon API moved (3.9 removed the TMA copy names) fails the Gluon kernel's compile: the
    call runs the Triton tier with the same config, one RuntimeWarning names the kernel and the Triton version, the
    rule passes the kernel over for that config from then on, and the result is right."""
    import warnings

    import triton
    from triton.runtime.errors import OutOfResources

    from gemmkit.kernels.gluon import hopper_pingpong

    tried = []

    def fails(*a, **k):
        tried.append(1)
        raise OutOfResources(300000, 232448, "shared memory")

    monkeypatch.setattr(hopper_pingpong, "launch", fails)
    monkeypatch.setattr(D, "_GLUON_FAILED", {})
    cfg = configs.validate_config(dict(SMALL, backend="gluon"))
    M, N, K = 24, 40, 64
    x, w = randn(M, K, dtype=BF16), randn(N, K, dtype=BF16)
    for call in range(2):
        y = poisoned((M, N), BF16)
        before = launcher.LAUNCHES.copy()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # the first call: the rule's choice on a GPU (the interpreter would pass Gluon over); then the rule's own
            choice = D.Choice(D.GLUON_BF16, cfg) if call == 0 else D.dense(cfg, H200, x, w, y, interpreting=False)
            D.launch_dense(choice, x, w, None, y, "none", H200)
        assert {k for k, v in (launcher.LAUNCHES - before).items() if v} == {D.TRITON_TMA}
        check_a16w16(y, x, w)
        msgs = [str(c.message) for c in caught if issubclass(c.category, RuntimeWarning)]
        if call == 0:
            assert len(msgs) == 1 and D.GLUON_BF16 in msgs[0] and triton.__version__ in msgs[0], msgs
        assert len(tried) == 1  # the second call does not try the kernel again
    why = dict(D.dense(cfg, H200, *dense_meta(256, 512, 1024)).passed_over)[D.GLUON_BF16]
    assert why.startswith(f"failed to compile with Triton {triton.__version__}") and "OutOfResources" in why


# ----------------------------------------------------------------------------- x / w copied to a 128-byte row pitch

@pytest.mark.parametrize("M, N, K, want", [
    (1500, 7000, 3000, (3008, 0)),  # x's rows (6000 bytes) off 32-byte sectors, x smaller than w: x copied
    (8000, 200, 3000, (0, 3008)),  # w the smaller one
    (3000, 3000, 3000, (3008, 3008)),  # equal: both
    (1024, 8192, 3696, (0, 0)),  # 7392-byte rows: on 32-byte sectors, as they are
    (1024, 8192, 4096, (0, 0)),
    (16, 4096, 3000, (0, 0)),  # M <= PAD_M_MIN_ROWS: the copy's launch is most of the call
    (17, 4096, 3000, (0, 0)),  # x's 32 column tiles load 3.3 MB of it: under PITCH_MIN_LOADS
    (200, 8192, 1000, (1024, 0))])  # 26 MB: copied (by the Gluon kernels; under the Triton tier's floor)
def test_operands_copied_to_a_128_byte_pitch_where_rows_start_mid_sector(M, N, K, want):
    choice = D.dense(GLUON, H200, *dense_meta(M, N, K))
    assert choice.kernel == D.GLUON_BF16 and (choice.pitch_x, choice.pitch_w) == want
    assert (f"row pitch of {max(want)} " in choice.explain()) == any(want)
    assert D.dense(COOP, H200, *dense_meta(M, N, K)).pitch_x == want[0]
    tier = D.dense(TILE, H200, *dense_meta(M, N, K))  # the Triton tier's TMA kernel by the same rule, from its floor
    big = M * N * K >= D.PITCH_TRITON_MIN_MACS
    assert tier.kernel == D.TRITON_TMA and (tier.pitch_x, tier.pitch_w) == (want if big else (0, 0))
    # the cases hold rows copied on both sides of the floor: 200 x 8192 x 1000 is the one below it (Gluon copies,
    # the Triton tier does not); a row added under the floor with a copy would change what this test covers
    assert big or (M, N, K) == (200, 8192, 1000) or not any(want)


@pytest.mark.parametrize("M, N, K, cfg, want", [
    (75, 504, 280, GLUON, (0, 0)),  # x: 42 KB x 4 column tiles
    (106, 4768, 1576, dict(GLUON, BLOCK_SIZE_N=96), (1600, 0)),  # 334 KB x 50 = 16.7 MB
    (255, 4432, 744, dict(GLUON, BLOCK_SIZE_M=64, BLOCK_SIZE_N=144), (0, 0)),  # 379 KB x 31 = 11.8 MB
    (985, 640, 7992, dict(GLUON, BLOCK_SIZE_M=64), (0, 8000)),  # w the smaller: 10.2 MB x 16 row tiles
    (600, 192, 3000, dict(GLUON, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64), (0, 0)),  # w: 1.2 MB x 10 row tiles
    (29, 5704, 1544, dict(GLUON, BLOCK_SIZE_M=32, BLOCK_SIZE_N=64, swap_ab=True), (0, 0)),  # 90 KB x 90 weight tiles
    (44, 5800, 9992, dict(GLUON, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, swap_ab=True), (10048, 0))])  # 879 KB x 91
def test_pitch_copy_needs_enough_off_sector_loads(M, N, K, cfg, want):
    """The Gluon kernels' operand copies to a 128-byte pitch (`pitch`) only where their tiles would load
    PITCH_MIN_LOADS bytes or more of its off-sector rows (x once per column of tiles, w once per row): under it the
    copy's launch costs more than the slow loads it saves (the calls of a few microseconds)."""
    choice = D.dense(cfg, H200, *dense_meta(M, N, K))
    assert choice.path == "gluon" and (choice.pitch_x, choice.pitch_w) == want, choice.explain()


def test_pitch_floor_below_the_row_copies(monkeypatch):
    """x's row copy (pad_m) is made at the 128-byte pitch whatever x's loads: its copy is made anyway."""
    from gemmkit.kernels import _host as H

    monkeypatch.setattr(D, "PAD_M_MIN_W_BYTES", 0)
    monkeypatch.setattr(H, "TRIM_X_BOX", False)
    assert D.dense(GLUON, H200, *dense_meta(80, 8192, 1000)).pitch_x == 1024  # 160 KB x 64 = 10 MB, copied
    monkeypatch.setattr(D, "PAD_M", False)
    assert D.dense(GLUON, H200, *dense_meta(80, 8192, 1000)).pitch_x == 0


def test_pitch_rides_on_the_row_copies_and_turns_off(monkeypatch):
    from gemmkit.kernels import _host as H

    monkeypatch.setattr(D, "PAD_M_MIN_W_BYTES", 0)
    monkeypatch.setattr(H, "TRIM_X_BOX", False)  # (else x's boxes hold M = 80: no row copy)
    rows = D.dense(GLUON, H200, *dense_meta(80, 8192, 1000))  # x copied to 128 rows: at a 1024-element pitch
    assert rows.pad_m == 128 and rows.pitch_x == 1024 and rows.pitch_w == 0  # (w larger: as it is)
    unaligned = D.dense(GLUON, H200, *dense_meta(300, 512, 2500))  # K % 8 != 0: rows of 2560, not 2504 (off sectors)
    assert unaligned.pad_k == 2560 and not unaligned.pitch_x
    monkeypatch.setattr(D, "PITCH", False)
    assert D.dense(GLUON, H200, *dense_meta(1500, 7000, 3000)).pitch_x == 0
    assert D.dense(GLUON, H200, *dense_meta(300, 512, 2500)).pad_k == 2504


def test_served_configs_name_their_split_count():
    """Every config the model serves carries NUM_KSPLIT (the Triton tier reads it: a wide-N tile without it raised
    KeyError on the pointer path, M = 128 x 50257 x 4096 with its y rows off 16 bytes)."""
    for M in (1, 16, 64, 128, 256, 1024, 4096, 8192):
        for N, K in ((50257, 4096), (777, 5000), (128, 2880), (4096, 4096)):
            assert "NUM_KSPLIT" in configs.serve("a16w16", H200, M, N, K)[0], (M, N, K)


def test_last_tiles_shift_where_the_register_budget_allows(monkeypatch):
    """kernels/_budgets.shift_ok (SHIFT_FULL_ACC): on Triton 3.9 a full-accumulator tile keeps its last tiles where
    they lie (the kernel's SHIFT constexpr off) and the dispatch copies x to whole boxes as before; a 96-register tile
    shifts on every release."""
    from gemmkit.kernels import _budgets
    from gemmkit.kernels.gluon import hopper_pingpong as hp

    full, split = dict(GLUON, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128), dict(GLUON, BLOCK_SIZE_M=64, BLOCK_SIZE_N=192)
    meta_200 = dense_meta(200, 8192, 8192)
    for version, full_shifts in (((3, 6), True), ((3, 8), True), ((3, 9), False)):
        monkeypatch.setattr(_budgets, "installed", lambda v=version: v)
        ce = hp.dense_constexprs(hp.derive(full, H200), has_bias=False, activation="none")
        assert ce["SHIFT"] is full_shifts
        assert hp.dense_constexprs(hp.derive(split, H200), has_bias=False, activation="none")["SHIFT"] is True
        assert D.dense(full, H200, *meta_200).pad_m == (0 if full_shifts else 256)  # M = 200: one tile and a part
        assert D.dense(split, H200, *meta_200).pad_m == 0
