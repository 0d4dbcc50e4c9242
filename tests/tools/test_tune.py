"""The tuner's CPU-side logic: candidate space, pruning, sampling, progress keys, and merging winners
into the table files (the GPU smoke test is in tests/ops/test_a16w16_gpu.py)."""
import json

import pytest

import gemmkit
from gemmkit import arch, configs
from gemmkit.tune import (_key, _load_progress, merge_tables, neighbours, order_m_major, pick_candidates, prune,
                          rows_by_shape, rows_from_progress, search_space)

H200 = arch.get("sm_90")


def test_small_m_offers_grouped_order_only():
    """At M <= 64 the bucket also serves larger M, where GROUP_SIZE_M 1 re-reads w per tile row. The swapped tile
    (swap_ab) is the exception: its GROUP_SIZE_M groups weight tiles, and 1 runs each weight tile's token tiles back
    to back (tune.gluon_swap_space)."""
    for M in (1, 16, 64):
        space = search_space(M, 8192, 8192, H200)
        assert {c["GROUP_SIZE_M"] for c in space if not c.get("swap_ab")} == {8}
        assert {c["GROUP_SIZE_M"] for c in space if c.get("swap_ab")} == {1}


def test_prune_counts_batched_tiles():
    """Persistent launches are pruned when one wave covers every tile: for batched ops, B x tiles."""
    c = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
         "num_stages": 3, "persistent": True, "tma": False, "NUM_KSPLIT": 1}
    assert prune([c], 512, 512, 512, H200) == []  # 16 tiles: one wave
    assert prune([c], 512, 512, 512, H200, batch=64) == [c]  # 1024 tiles


def test_progress_keys_tell_batches_apart(tmp_path):
    c = {"BLOCK_SIZE_M": 64}
    assert _key(1, 2, 3, c) != _key(1, 2, 3, c, batch=8)
    assert _key(1, 2, 3, c, "batched_a16w16", "bf16", 8) != _key(1, 2, 3, c, "batched_a16w16", "bf16", 64)
    p = tmp_path / "tune_progress.jsonl"
    rows = [{"op": "batched_a16w16", "dtype": "bf16", "M": 1, "N": 2, "K": 3, "B": b, "config": c, "ms": b}
            for b in (8, 64)]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n{cut")
    done = _load_progress(p)
    assert len(done) == 2 and done[_key(1, 2, 3, c, "batched_a16w16", "bf16", 64)]["ms"] == 64


def test_merge_rows_come_from_one_batch_count(tmp_path):
    """A winner timed at B = 8 is never compared with a serving config timed at B = 64."""
    c1 = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
          "num_stages": 3}
    c2 = dict(c1, BLOCK_SIZE_N=128)
    p = tmp_path / "tune_progress.jsonl"
    rows = [{"op": "batched_a16w16", "dtype": "bf16", "M": 512, "N": 512, "K": 512, "B": b, "config": c,
             "ms": ms, "rel_err": 0.0} for b, c, ms in ((8, c1, 0.05), (64, c2, 0.40))]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    for b, c in ((8, c1), (64, c2)):
        got = rows_from_progress(p, "batched_a16w16", "bf16", batch=b)
        assert [r["config"] for r in got[(512, 512, 512)]] == [c]
    assert rows_from_progress(p, "batched_a16w16", "bf16") == {}  # batch 1: neither


# ----------------------------------------------------------------------------- M coverage, sampling

def test_one_tile_row_configs_between_16_and_64():
    """At 16 < M <= 64 the space holds BLOCK_SIZE_M >= M configs that survive pruning: one row of
    tiles reads each w tile once (a BLOCK_SIZE_M 16 bucket at M = 32 reads w twice)."""
    for M in (17, 32, 48, 64):
        for N, K in ((8192, 8192), (576, 7168), (57344, 8192)):
            kept = prune(search_space(M, N, K, H200), M, N, K, H200)
            assert any(c["BLOCK_SIZE_M"] >= M for c in kept), (M, N, K)


def test_sampling_keeps_each_backend_and_the_table_configs():
    """--backend all at M >= 256 on sm_90: up to max_candidates Triton *and* Gluon candidates (a
    shared random cut would drop most of the few Gluon ones), then the serving/neighbour configs."""
    M, N, K = 512, 8192, 8192
    space = search_space(M, N, K, H200)
    pruned = prune(space, M, N, K, H200)
    serving = configs.validate_config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 512,
                                       "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 2})
    cands = pick_candidates(space, pruned, M, 5, extra=[serving])
    by = [c.get("backend", "triton") + ("/coop" if c["num_warps"] == 8 and c.get("backend") == "gluon" else "")
          for c in cands]
    # the cooperative family at M = 512: 128 x 192 (s4, s5) and 128 x 128 s6, x 2 group sizes: 6 candidates
    assert by.count("gluon") == 5 and by.count("gluon/coop") == 5 and by.count("triton") == 6
    assert cands[-1] == serving
    assert pick_candidates(space, pruned, M, 5, extra=[serving, cands[0]]) == cands  # no duplicates
    # the draw depends on M only: two layers at one M share their candidates (and compiles)
    other = prune(search_space(M, 8192, 28672, H200), M, 8192, 28672, H200)
    a = {json.dumps(c, sort_keys=True) for c in pick_candidates(space, pruned, M, 8)}
    b = {json.dumps(c, sort_keys=True) for c in pick_candidates(search_space(M, 8192, 28672, H200), other, M, 8)}
    assert len(a & b) >= 12


def test_m_major_order():
    rows = [("l1", 32, 1, 1), ("l1", 512, 1, 1), ("l2", 32, 2, 2), ("l2", 512, 2, 2)]
    assert [r[1:] for r in order_m_major(rows, [512, 32])] == [(512, 1, 1), (512, 2, 2), (32, 1, 1), (32, 2, 2)]
    assert [r[1] for r in order_m_major(rows)] == [32, 32, 512, 512]


def test_neighbours_are_the_serving_and_next_bucket(tmp_path):
    _table(tmp_path, {"M_GEQ_64": _c(64), "M_GEQ_16": _c(16), "M_GEQ_256": _c(128)})
    got = neighbours("a16w16", "sm_90", 32, 8192, 8192, base_dir=tmp_path)
    assert [c["BLOCK_SIZE_M"] for c in got] == [16, 64]
    assert [c["BLOCK_SIZE_M"] for c in neighbours("a16w16", "sm_90", 4096, 8192, 8192, base_dir=tmp_path)] == [128]


# ----------------------------------------------------------------------------- merging into the tables

def _c(bm, bn=64, **kw):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
            "num_stages": 4, "tma": True, **kw}


# The default table's bucket: a tile no test's winner is, so that the config model's choice (fitted from it) is
# never a winner unless a test times it (merge writes "model" where the model's choice is within noise of the best).
DEFAULT = _c(128, 32, num_stages=2)


def _table(base, raw, N=8192, K=8192, op="A16W16"):
    d = base / "sm_90"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{op}.json").write_text(json.dumps({"any": DEFAULT}))  # the default table (the model fits it)
    p = d / f"{op}-N={N}-K={K}.json"
    p.write_text(json.dumps(raw, indent=1))
    return p


def _row(M, cfg, ms, N=8192, K=8192):
    return {"M": M, "N": N, "K": K, "config": configs.validate_config(dict(cfg)), "ms": ms, "rel_err": 1e-3,
            "ref_ms": 1.0}


def _merge(base, rows, **kw):
    out = {}
    for r in rows:
        out.setdefault((r["M"], r["N"], r["K"]), []).append(r)
    return merge_tables(out, base, "sm_90", base_dir=base, log=lambda *a: None, **kw)


def test_merge_inserts_new_bucket_and_keeps_the_others(tmp_path):
    """A tuned M between two buckets gets its own M_GEQ bucket when the winner beats the serving
    config by more than min_gain; the buckets around it stay, in lookup order."""
    before = {"M_GEQ_256": _c(128, 128, backend="gluon", num_stages=6), "M_GEQ_64": _c(64), "M_GEQ_1": _c(16)}
    p = _table(tmp_path, before)
    win = _c(64, 128, num_stages=3)
    (written,), dec = _merge(tmp_path, [_row(128, _c(64), 1.00), _row(128, win, 0.90)])
    assert written == p
    raw = json.loads(p.read_text())
    assert list(raw) == ["M_GEQ_256", "M_GEQ_128", "M_GEQ_64", "M_GEQ_1"]
    assert raw["M_GEQ_128"] == {k: v for k, v in win.items()}  # defaults stripped, nothing else
    assert all(raw[k] == before[k] for k in before)
    configs.load_table.cache_clear()
    t = configs.load_table(str(p))  # validates
    assert [m for m, _, _ in t["geq"]] == [256, 128, 64, 1]
    assert dec[(8192, 8192)][0]["action"] == "write" and dec[(8192, 8192)][0]["gain"] > 0.1


def test_merge_keeps_the_table_within_noise(tmp_path):
    p = _table(tmp_path, {"M_GEQ_256": _c(128, 128), "M_GEQ_1": _c(16)})
    text = p.read_text()
    written, dec = _merge(tmp_path, [_row(512, _c(128, 128), 1.00), _row(512, _c(128, 256), 0.985)])
    assert written == [] and p.read_text() == text
    assert dec[(8192, 8192)][0]["action"] == "keep"
    # the serving config winning outright: nothing to write either
    written, _ = _merge(tmp_path, [_row(512, _c(128, 128), 0.90), _row(512, _c(128, 256), 1.0)])
    assert written == []


def test_merge_fixes_a_structurally_wrong_bucket_whatever_the_margin(tmp_path):
    """M = 32 served by a BLOCK_SIZE_M 16 bucket (two tile rows: w read twice) takes the one-row winner
    even at a gain inside the noise band."""
    p = _table(tmp_path, {"M_GEQ_64": _c(64), "M_GEQ_16": _c(16)})
    _merge(tmp_path, [_row(32, _c(16), 1.00), _row(32, _c(32, 128), 0.995)])
    assert json.loads(p.read_text())["M_GEQ_32"]["BLOCK_SIZE_M"] == 32


def test_merge_retunes_an_existing_bucket(tmp_path):
    p = _table(tmp_path, {"M_GEQ_1024": _c(128, 128), "M_GEQ_256": _c(64, 256), "M_GEQ_1": _c(16)})
    _merge(tmp_path, [_row(256, _c(64, 256), 1.0), _row(256, _c(128, 256, num_warps=8), 0.8)])
    raw = json.loads(p.read_text())
    assert list(raw) == ["M_GEQ_1024", "M_GEQ_256", "M_GEQ_1"] and raw["M_GEQ_256"]["num_warps"] == 8


def test_merge_pins_a_kept_m_that_a_new_lower_bucket_would_take(tmp_path):
    """Tuned at 512 (table wins) and 256 (new winner): M_GEQ_256 alone would start serving 512 with a
    config never timed there, so 512 gets a bucket holding the config it was measured with."""
    p = _table(tmp_path, {"M_GEQ_1024": _c(128, 256), "M_GEQ_64": _c(64), "M_GEQ_1": _c(16)})
    rows = [_row(256, _c(64), 1.0), _row(256, _c(128, 128), 0.7), _row(512, _c(64), 0.5), _row(512, _c(128, 128), 0.6)]
    _, dec = _merge(tmp_path, rows)
    raw = json.loads(p.read_text())
    assert raw["M_GEQ_256"]["BLOCK_SIZE_M"] == 128 and raw["M_GEQ_512"]["BLOCK_SIZE_M"] == 64
    assert [d.get("bucket") for d in dec[(8192, 8192)]] == ["add M_GEQ_256", "pin M_GEQ_512"]
    configs.load_table.cache_clear()
    configs.load_table(str(p))


def test_merge_writes_to_another_dir_and_from_a_progress_file(tmp_path):
    """--tables-from path: progress rows (wrong and failed ones ignored) merged onto base tables and
    written under out/, the base untouched."""
    base, out = tmp_path / "base", tmp_path / "out"
    p = _table(base, {"M_GEQ_16": _c(16)})
    text = p.read_text()
    prog = tmp_path / "tune_progress.jsonl"
    rows = [dict(_row(32, _c(16), 1.0), op="a16w16", dtype="bf16"),
            dict(_row(32, _c(64), 0.5), op="a16w16", dtype="bf16"),
            dict(_row(32, _c(32), 0.1), op="a16w16", dtype="bf16", rel_err=0.5),  # wrong: never written
            {"M": 32, "N": 8192, "K": 8192, "config": _c(32, 128), "error": "boom", "op": "a16w16"}]
    prog.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (written,), _ = merge_tables(rows_from_progress(prog), out, "sm_90", base_dir=base, log=lambda *a: None)
    assert written == out / "sm_90" / p.name and p.read_text() == text
    assert json.loads(written.read_text())["M_GEQ_32"]["BLOCK_SIZE_M"] == 64



def test_cli_tables_from_merges_onto_the_shipped_tables(tmp_path):
    """`gemmkit tune --tables-from P --out D` (no GPU): merged copies of the touched shipped files
    under D/sm_90, decisions in D/merge_decisions.json, the shipped file untouched."""
    from gemmkit.cli import main

    cur, _ = configs.select("a16w16", "sm_90", 32, 8192, 8192)
    shipped = configs.table_path("a16w16", "sm_90", 8192, 8192)
    text = shipped.read_text()
    rows = [dict(_row(32, cur, 1.0), op="a16w16", dtype="bf16"),
            dict(_row(32, {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 8, "num_warps": 4,
                           "num_stages": 4, "tma": True}, 0.8), op="a16w16", dtype="bf16")]
    prog = tmp_path / "p.jsonl"
    prog.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert main(["tune", "--tables-from", str(prog), "--out", str(tmp_path)]) == 0
    merged = json.loads((tmp_path / "sm_90" / shipped.name).read_text())
    assert merged["M_GEQ_32"]["BLOCK_SIZE_M"] == 64 and shipped.read_text() == text
    (d,) = json.loads((tmp_path / "merge_decisions.json").read_text())
    assert d["action"] == "write" and d["M"] == 32


def test_merge_pins_only_where_the_new_service_was_not_as_fast(tmp_path):
    """No pin where the config that would now serve the kept M was measured there within min_gain."""
    p = _table(tmp_path, {"M_GEQ_1024": _c(128, 256), "M_GEQ_64": _c(64), "M_GEQ_1": _c(16)})
    rows = [_row(256, _c(64), 1.0), _row(256, _c(128, 128), 0.7), _row(512, _c(64), 0.5), _row(512, _c(128, 128), 0.505)]
    _, dec = _merge(tmp_path, rows)
    assert "M_GEQ_512" not in json.loads(p.read_text()) and "bucket" not in dec[(8192, 8192)][1]


def test_merging_several_runs_at_once_is_what_merging_again_keeps(tmp_path):
    """Run 1 kept M = 512 on the old M_GEQ_256 config; run 2 re-tuned M_GEQ_256. Merged one after
    the other, run 2 silently hands M = 512 a config never timed there; merged together (every
    progress file at once), M = 512 is pinned. Merging the same rows again changes nothing."""
    base = {"M_GEQ_1024": _c(128, 256), "M_GEQ_256": _c(64), "M_GEQ_1": _c(16)}
    run1 = [dict(_row(512, _c(64), 0.5), op="a16w16"), dict(_row(512, _c(32, 128), 0.7), op="a16w16")]
    run2 = [dict(_row(256, _c(64), 1.0), op="a16w16"), dict(_row(256, _c(128, 128), 0.7), op="a16w16")]
    files = []
    for i, rows in enumerate((run1, run2)):
        files.append(tmp_path / f"run{i + 1}.jsonl")
        files[-1].write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    p = _table(tmp_path, base)
    merge_tables(rows_from_progress(files), tmp_path, "sm_90", base_dir=tmp_path, log=lambda *a: None)
    raw = json.loads(p.read_text())
    assert raw["M_GEQ_256"]["BLOCK_SIZE_M"] == 128 and raw["M_GEQ_512"]["BLOCK_SIZE_M"] == 64
    text = p.read_text()
    written, _ = merge_tables(rows_from_progress(files), tmp_path, "sm_90", base_dir=tmp_path, log=lambda *a: None)
    assert written == [] and p.read_text() == text


def test_gluon_configs_must_fit_their_triton_fallback():
    """A Gluon bucket runs on the Triton pointer kernel for calls the ping-pong cannot take: 64x256x64
    with 6 stages fits the ping-pong's plan but not the pointer kernel's shared memory; the tuner
    does not offer it and the merge never writes it (rows measured before the rule are dropped)."""
    g = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4,
         "num_stages": 6, "persistent": True, "tma": True, "NUM_KSPLIT": 1, "backend": "gluon"}
    assert prune([g], 8192, 8192, 8192, H200) == []
    assert prune([dict(g, num_stages=5)], 8192, 8192, 8192, H200) == [dict(g, num_stages=5)]
    rows = [_row(8192, g, 1.0), _row(8192, dict(g, num_stages=5), 1.01)]
    assert [r["config"]["num_stages"] for r in rows_by_shape(rows)[(8192, 8192, 8192)]] == [5]


def test_merge_keeps_a_serving_config_it_has_no_measurement_of(tmp_path):
    """An old progress file (measured against earlier tables) does not undo later decisions: where the
    serving config was never timed at that M there is nothing to compare, so the bucket stays."""
    p = _table(tmp_path, {"M_GEQ_256": _c(128, 128, backend="gluon"), "M_GEQ_1": _c(16)})
    written, dec = _merge(tmp_path, [_row(1024, _c(128, 256), 0.5), _row(1024, _c(64, 128), 0.9)])
    assert written == [] and dec[(8192, 8192)][0]["action"] == "keep" and "M_GEQ_1024" not in json.loads(p.read_text())


@pytest.mark.parametrize("op", ["a16w16_gated", "split_cat", "a8w8_blockscale_split_cat"])
@pytest.mark.parametrize("M", [16, 256, 1024, 4096])
def test_triton_tier_op_spaces_offer_no_gluon_configs(op, M):
    """The gated and split-cat GEMMs' tuner spaces offer the Triton tier's tiles only, not the dense op's Gluon
    candidates (sm_90, M >= 256): the split-cat GEMMs raise on another backend, and the gated GEMM's Gluon tiles are
    other kernels (their gated tile; the config model's `gated_one_wave` serves the cooperative one)."""
    from gemmkit.tune import op_space, search_space

    H200 = gemmkit.arch.get("sm_90")
    assert [c for c in search_space(M, 32768, 512, H200) if c.get("backend") == "gluon"] or M < 256  # what is filtered
    space = op_space(op)(M, 32768, 512, H200)
    assert space and all(c.get("backend", "triton") == "triton" for c in space)


@pytest.mark.parametrize("op", ["a8w8", "a8w8_blockscale"])
def test_fp8_ops_offer_the_fp8_gluon_kernel(op):
    """gemm_a8w8 (fp8) and gemm_a8w8_blockscale on sm_90 offer the FP8 Gluon kernel's configs (the tables serve
    them; session 12 found the coop one 1.2-2.4x faster than the block-scale tables' Triton configs at M = 256-2048,
    which the tuner could not have found without them): ping-pong from M = 64, coop (num_warps 8) from M = 128,
    every one kept by prune (checked with the FP8 kernel's own plan), and none on AMD targets."""
    from gemmkit.tune import search_space

    H200 = gemmkit.arch.get("sm_90")
    for M, want_coop in ((64, False), (256, True), (4096, True)):
        gluon = [c for c in search_space(M, 2112, 7168, H200, op) if c.get("backend") == "gluon"]
        assert gluon and prune(gluon, M, 2112, 7168, H200, 1, 2, 2) == gluon
        assert any(c["num_warps"] == 8 for c in gluon) == want_coop
        assert any(c["num_warps"] == 8 and c["BLOCK_SIZE_M"] == 256 for c in gluon) == (M >= 1024)  # coop 256
        # block mode: no 128 x 128 ping-pong (it spilled there until session 17; not timed since)
        assert op == "a8w8" or not any(c["num_warps"] == 4 and c["BLOCK_SIZE_M"] == 128 for c in gluon)
    assert not [c for c in search_space(16, 2112, 7168, H200, op) if c.get("backend") == "gluon"]
    assert not [c for c in search_space(1024, 2112, 7168, gemmkit.arch.get("gfx942"), op) if c.get("backend") == "gluon"]


# ----------------------------------------------------------------------------- merging against the config model

def _model(M, N=8192, K=8192):
    """The config model's choice at M on the test's default table (what a call gets without a shape file)."""
    from gemmkit.tune import merge

    return merge._model_choice("a16w16", "sm_90", {"any": DEFAULT}, M, N, K)


def test_merge_hands_an_m_to_the_model_where_its_choice_is_within_noise_of_the_best(tmp_path):
    """The table's config 20% behind, the best a third config, the model's choice 1% behind that: the bucket says
    "model" (not a copy of the model's config); with the model 10% behind the best, the best is written."""
    p = _table(tmp_path, {"M_GEQ_1024": _c(128, 256), "M_GEQ_64": _c(64), "M_GEQ_1": _c(16)})
    rows = [_row(256, _c(64), 1.2), _row(256, _c(64, 256), 1.0), _row(256, _model(256), 1.01)]
    (written,), dec = _merge(tmp_path, rows)
    raw = json.loads(p.read_text())
    assert raw["M_GEQ_256"] == configs.MODEL and written == p
    assert dec[(8192, 8192)][0]["action"] == "model"
    configs.clear_cache()
    configs.load_table(str(p))  # a valid shape file
    p = _table(tmp_path, {"M_GEQ_1024": _c(128, 256), "M_GEQ_64": _c(64), "M_GEQ_1": _c(16)})
    _merge(tmp_path, [_row(256, _c(64), 1.2), _row(256, _c(64, 256), 1.0), _row(256, _model(256), 1.1)])
    assert json.loads(p.read_text())["M_GEQ_256"]["BLOCK_SIZE_N"] == 256


def test_merge_compares_an_m_the_model_serves_with_the_models_config(tmp_path):
    """No shape-file bucket serves M = 32 (or a "model" one does): the serving config is the model's choice, as a
    call gets it; a winner within noise of it keeps the table as it is, one beyond it gets a bucket."""
    for table in ({"M_GEQ_1024": _c(128, 256)}, {"M_GEQ_1024": _c(128, 256), "M_GEQ_1": configs.MODEL}):
        p = _table(tmp_path, table)
        text = p.read_text()
        written, dec = _merge(tmp_path, [_row(32, _model(32), 1.0), _row(32, _c(32, 128), 0.99)])
        assert written == [] and p.read_text() == text
        assert dec[(8192, 8192)][0]["cur_ms"] == 1.0 and dec[(8192, 8192)][0]["action"] == "keep"
        _merge(tmp_path, [_row(32, _model(32), 1.0), _row(32, _c(32, 128), 0.8)])
        assert json.loads(p.read_text())["M_GEQ_32"]["BLOCK_SIZE_M"] == 32


def test_merge_pins_the_model_for_a_kept_m_a_new_lower_bucket_would_take(tmp_path):
    """256 and 512 served by the model (no shape-file bucket below 1024); 256 gets a bucket, 512 keeps the model,
    which the new M_GEQ_256 would replace there with a config timed 20% behind: 512 gets a "model" bucket."""
    p = _table(tmp_path, {"M_GEQ_1024": _c(128, 256)})
    rows = [_row(256, _model(256), 1.0), _row(256, _c(64, 256), 0.7),
            _row(512, _model(512), 0.5), _row(512, _c(64, 256), 0.6)]
    _, dec = _merge(tmp_path, rows)
    raw = json.loads(p.read_text())
    assert raw["M_GEQ_256"]["BLOCK_SIZE_N"] == 256 and raw["M_GEQ_512"] == configs.MODEL
    assert [(d["action"], d.get("bucket")) for d in dec[(8192, 8192)]] == [("write", "add M_GEQ_256"),
                                                                          ("keep", "pin M_GEQ_512")]
