"""Config tables: lookup order, shape files, validation errors naming file and key, caching, CLI."""
import json

import pytest

from gemmkit import configs
from gemmkit.cli import main as cli_main

BASE = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 2}


@pytest.fixture
def table_dir(tmp_path, monkeypatch):
    (tmp_path / "sm_90").mkdir()
    (tmp_path / "gfx942").mkdir()
    monkeypatch.setattr(configs, "CONFIG_DIR", tmp_path)
    configs.clear_cache()
    yield tmp_path
    configs.clear_cache()


def write(path, table):
    path.write_text(json.dumps(table))


def tagged(tag):
    return {**BASE, "BLOCK_SIZE_N": tag}


def test_bucket_order(table_dir):
    write(table_dir / "sm_90" / "A16W16.json", {
        "any": tagged(16), "M_GEQ_512": tagged(32), "M_LEQ_128": tagged(64), "M_LEQ_8": tagged(128),
        "M_GEQ_4096": tagged(256)})
    got = {M: configs.select("a16w16", "sm_90", M, 1, 1) for M in (1, 8, 9, 128, 129, 512, 4095, 4096, 10**6)}
    assert {M: c["BLOCK_SIZE_N"] for M, (c, _) in got.items()} == {
        1: 128, 8: 128, 9: 64, 128: 64, 129: 16, 512: 32, 4095: 32, 4096: 256, 10**6: 256}
    assert got[129][1] == "sm_90/A16W16.json:any"
    assert got[9][1] == "sm_90/A16W16.json:M_LEQ_128"


def test_shape_file_beats_default(table_dir):
    write(table_dir / "sm_90" / "A16W16.json", {"any": tagged(16)})
    write(table_dir / "sm_90" / "A16W16-N=4096-K=1024.json", {"any": tagged(128)})
    assert configs.select("a16w16", "sm_90", 7, 4096, 1024)[0]["BLOCK_SIZE_N"] == 128
    assert configs.select("a16w16", "sm_90", 7, 4096, 1024)[1] == "sm_90/A16W16-N=4096-K=1024.json:any"
    assert configs.select("a16w16", "sm_90", 7, 4096, 2048)[0]["BLOCK_SIZE_N"] == 16


def test_shape_file_falls_through_below_its_range(table_dir):
    write(table_dir / "sm_90" / "A16W16.json", {"M_LEQ_64": tagged(16), "any": tagged(32)})
    write(table_dir / "sm_90" / "A16W16-N=64-K=64.json", {"M_GEQ_4096": tagged(128), "M_GEQ_256": tagged(256)})
    assert configs.select("a16w16", "sm_90", 100, 64, 64) == (tagged(32) | configs.DEFAULTS | tagged(32),
                                                             "sm_90/A16W16.json:any")
    assert configs.select("a16w16", "sm_90", 300, 64, 64)[1] == "sm_90/A16W16-N=64-K=64.json:M_GEQ_256"
    assert configs.select("a16w16", "sm_90", 5000, 64, 64)[0]["BLOCK_SIZE_N"] == 128


def test_unmatched_without_any(table_dir):
    write(table_dir / "sm_90" / "A16W16.json", {"M_LEQ_16": tagged(16)})
    with pytest.raises(ValueError, match=r"A16W16.json: no bucket matches M=17"):
        configs.select("a16w16", "sm_90", 17, 1, 1)


@pytest.mark.parametrize("table,message", [
    ({"any": {**BASE, "BLOCK_M": 4}}, r"A16W16.json: bucket 'any': unknown key 'BLOCK_M'"),
    ({"any": {k: v for k, v in BASE.items() if k != "num_warps"}}, r"A16W16.json: bucket 'any': missing key 'num_warps'"),
    ({"M_LEQ_4": {**BASE, "BLOCK_SIZE_K": 100}}, r"A16W16.json: bucket 'M_LEQ_4': key 'BLOCK_SIZE_K' = 100"),
    ({"M_LEQ_4": {**BASE, "num_warps": 3}}, r"bucket 'M_LEQ_4': key 'num_warps' = 3; expected one of"),
    ({"M_LEQ_4": {**BASE, "GROUP_SIZE_M": 0}}, r"bucket 'M_LEQ_4': key 'GROUP_SIZE_M' = 0"),
    ({"M_LEQ_4": {**BASE, "persistent": 1}}, r"bucket 'M_LEQ_4': key 'persistent' = 1; expected true or false"),
    ({"M_LT_4": BASE}, r"A16W16.json: unknown bucket key 'M_LT_4'"),
    ({"any": {**BASE, "waves_per_eu": 2}}, r"bucket 'any': key 'waves_per_eu' is not supported on cuda"),
])
def test_invalid_tables(table_dir, table, message):
    write(table_dir / "sm_90" / "A16W16.json", table)
    with pytest.raises(ValueError, match=message):
        configs.select("a16w16", "sm_90", 1, 1, 1)


def test_tma_rejected_in_amd_table(table_dir):
    write(table_dir / "gfx942" / "A16W16.json", {"any": {**BASE, "tma": True}})
    with pytest.raises(ValueError, match=r"gfx942/A16W16.json: bucket 'any': key 'tma' is not supported on hip"):
        configs.select("a16w16", "gfx942", 1, 1, 1)


def test_not_json(table_dir):
    (table_dir / "sm_90" / "A16W16.json").write_text("{oops")
    with pytest.raises(ValueError, match=r"A16W16.json: not valid JSON"):
        configs.select("a16w16", "sm_90", 1, 1, 1)


def test_missing_table(table_dir):
    with pytest.raises(ValueError, match=r"no config table for op 'a16w16' on arch 'gfx942'"):
        configs.select("a16w16", "gfx942", 1, 1, 1)


def test_tables_are_cached(table_dir):
    path = table_dir / "sm_90" / "A16W16.json"
    write(path, {"any": tagged(16)})
    assert configs.select("a16w16", "sm_90", 1, 1, 1)[0]["BLOCK_SIZE_N"] == 16
    write(path, {"any": tagged(32)})  # not re-read until the cache is cleared
    assert configs.select("a16w16", "sm_90", 1, 1, 1)[0]["BLOCK_SIZE_N"] == 16
    configs.clear_cache()
    assert configs.select("a16w16", "sm_90", 1, 1, 1)[0]["BLOCK_SIZE_N"] == 32


def test_selected_config_is_a_copy():
    c, _ = configs.select("a16w16", "sm_90", 1, 8192, 8192)
    c["BLOCK_SIZE_M"] = 12345
    assert configs.select("a16w16", "sm_90", 1, 8192, 8192)[0]["BLOCK_SIZE_M"] != 12345


@pytest.mark.parametrize("arch", ["sm_90", "gfx942", "gfx950"])
def test_shipped_tables_valid(arch):
    """Every shipped table loads, and every bucket is feasible on its target (both paths on sm_90)."""
    from gemmkit import arch as _arch
    from gemmkit.ops.gemm_a16w16 import check_feasible

    table = configs.load_table(str(configs.table_path("a16w16", arch)))
    assert table["any"] is not None, "a default table needs an 'any' bucket"
    for _, key, cfg in table["leq"] + table["geq"] + [(0, "any", table["any"])]:
        check_feasible(cfg, _arch.ARCHS[arch], 2, 2, tma=bool(cfg["tma"]))
        check_feasible(cfg, _arch.ARCHS[arch], 2, 2, tma=False)


@pytest.mark.parametrize("N,K,source", [(1000, 3000, "sm_90/A16W16.json:M_LEQ_128"),
                                         (8192, 8192, "sm_90/A16W16-N=8192-K=8192.json:M_GEQ_128")])  # rounds up
def test_cli_configs(capsys, N, K, source):
    assert cli_main(["configs", "--op", "a16w16", "-M", "100", "-N", str(N), "-K", str(K), "--arch", "sm_90"]) == 0
    out = capsys.readouterr().out
    assert source in out
    cfg = json.JSONDecoder().raw_decode(out[out.index("{"):])[0]  # then the kernel that serves it (test_dispatch.py)
    from gemmkit import arch as _arch

    assert cfg == configs.serve("a16w16", _arch.ARCHS["sm_90"], 100, N, K)[0]  # the bucket, fitted (test_config_model)


@pytest.mark.parametrize("M, key", [(64, "M_GEQ_64"), (65, "M_GEQ_128"), (80, "M_GEQ_128"), (128, "M_GEQ_128"),
                                    (129, "M_GEQ_256"), (300, "M_GEQ_256"), (3000, "M_GEQ_2048"), (10, "M_GEQ_1")])
def test_a_shape_file_rounds_m_up_to_the_bucket_whose_tiles_cover_it(M, key):
    """Between two measured M, the upper bucket serves where the lower one's tile would add a row of tiles it was not
    measured with and the upper one's tiles cover M as they covered its own (A16W16-N=8192-K=8192: M_GEQ_64 is one
    64-row tile, M_GEQ_128 two; 129 takes M_GEQ_256's two 128-row tiles, 300 stays: three tiles, M_GEQ_512 has four)."""
    assert configs.select("a16w16", "sm_90", M, 8192, 8192)[1] == f"sm_90/A16W16-N=8192-K=8192.json:{key}"


# ----------------------------------------------------------------------------- a shape file's MODEL buckets

def test_a_model_bucket_hands_its_range_to_the_default_table_and_the_model(table_dir):
    from gemmkit import arch as _arch

    write(table_dir / "sm_90" / "A16W16.json", {"M_LEQ_64": tagged(16), "any": tagged(32)})
    write(table_dir / "sm_90" / "A16W16-N=64-K=64.json",
          {"M_GEQ_4096": tagged(128), "M_GEQ_1024": configs.MODEL, "M_GEQ_256": tagged(256)})
    assert configs.select("a16w16", "sm_90", 256, 64, 64)[1] == "sm_90/A16W16-N=64-K=64.json:M_GEQ_256"
    cfg, src = configs.select("a16w16", "sm_90", 2000, 64, 64)  # the MODEL bucket: the default table's bucket
    assert cfg["BLOCK_SIZE_N"] == 32
    assert src == "sm_90/A16W16.json:any (sm_90/A16W16-N=64-K=64 M_GEQ_1024: model)"
    assert not configs.tuned(src)
    assert configs.select("a16w16", "sm_90", 5000, 64, 64)[0]["BLOCK_SIZE_N"] == 128
    served = configs.serve("a16w16", _arch.ARCHS["sm_90"], 2000, 64, 64)
    assert served[0] == configs.serve("a16w16", _arch.ARCHS["sm_90"], 2000, 64, 64, shape_files=False)[0]
    assert [k for k, _ in configs.bucket_configs(configs.load_table(str(table_dir / "sm_90" / "A16W16-N=64-K=64.json")))] \
        == ["M_GEQ_4096", "M_GEQ_256"]


@pytest.mark.parametrize("name, table", [
    ("A16W16.json", {"M_LEQ_64": "model", "any": BASE}),  # the default table has no model to hand to
    ("A16W16-N=64-K=64.json", {"any": "model"}),
    ("A16W16-N=64-K=64.json", {"M_GEQ_1": "auto"}),
])
def test_model_bucket_only_in_a_shape_files_m_buckets(table_dir, name, table):
    write(table_dir / "sm_90" / "A16W16.json", {"any": BASE})
    write(table_dir / "sm_90" / name, table)
    with pytest.raises(configs.ConfigError, match="the only string a bucket takes is 'model'"):
        configs.select("a16w16", "sm_90", 1, 64, 64)


def test_round_up_into_a_model_bucket_and_out_of_one(table_dir):
    """Rounding up into a MODEL bucket hands M to the model; a MODEL bucket below a tuned one rounds up as a config
    would (the upper bucket's 128-row tile covers 100 as it covers 128)."""
    big = {**BASE, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128}
    write(table_dir / "sm_90" / "A16W16.json", {"any": tagged(32)})
    write(table_dir / "sm_90" / "A16W16-N=64-K=64.json", {"M_GEQ_128": big, "M_GEQ_64": configs.MODEL,
                                                           "M_GEQ_16": {**BASE, "BLOCK_SIZE_M": 16}})
    assert configs.select("a16w16", "sm_90", 100, 64, 64)[1] == "sm_90/A16W16-N=64-K=64.json:M_GEQ_128"
    assert configs.select("a16w16", "sm_90", 64, 64, 64)[1].endswith("(sm_90/A16W16-N=64-K=64 M_GEQ_64: model)")
    assert configs.select("a16w16", "sm_90", 40, 64, 64)[1].endswith("(sm_90/A16W16-N=64-K=64 M_GEQ_64: model)")
    assert configs.select("a16w16", "sm_90", 16, 64, 64)[1] == "sm_90/A16W16-N=64-K=64.json:M_GEQ_16"


def test_the_tuner_merges_onto_a_model_bucket_as_onto_the_default_table(table_dir):
    from gemmkit.tune import merge

    assert merge.same_config(configs.MODEL, configs.MODEL) and not merge.same_config(configs.MODEL, BASE)
    write(table_dir / "sm_90" / "A16W16.json", {"any": BASE})
    write(table_dir / "sm_90" / "A16W16-N=64-K=64.json", {"M_GEQ_1": configs.MODEL})
    win = {**BASE, "BLOCK_SIZE_N": 128}
    rows = {(256, 64, 64): [{"config": win, "ms": 1.0}, {"config": BASE, "ms": 2.0}]}
    merge.merge_tables(rows, table_dir, "sm_90", base_dir=table_dir, log=lambda *_: None)
    raw = json.loads((table_dir / "sm_90" / "A16W16-N=64-K=64.json").read_text())
    assert raw["M_GEQ_1"] == configs.MODEL and raw["M_GEQ_256"]["BLOCK_SIZE_N"] == 128


@pytest.mark.parametrize("extra, past", [({}, True), ({"NUM_KSPLIT": 4}, False),
                                         ({"swap_ab": True, "backend": "gluon", "BLOCK_SIZE_N": 64}, False)])
def test_a_bucket_past_its_round_of_tiles_hands_m_to_the_model(table_dir, extra, past):
    """bf16: M_GEQ_256's 64 x 64 tiles on N = 8192 are 4 x 128 = 512 for 132 SMs at 256: not one round, so they
    keep serving; M_GEQ_64's are 128 at 64 (one round) and 256 at M = 100 (a second): the model serves 100, unless
    the bucket is split-K or swap-AB."""
    from gemmkit import arch as _arch

    H200 = _arch.ARCHS["sm_90"]
    write(table_dir / "sm_90" / "A16W16.json", {"any": tagged(32)})
    write(table_dir / "sm_90" / "A16W16-N=8192-K=64.json", {"M_GEQ_256": BASE, "M_GEQ_64": {**BASE, **extra}})
    assert configs.serve("a16w16", H200, 64, 8192, 64)[1] == "sm_90/A16W16-N=8192-K=64.json:M_GEQ_64"
    assert configs.serve("a16w16", H200, 300, 8192, 64)[1] == "sm_90/A16W16-N=8192-K=64.json:M_GEQ_256"
    cfg, src = configs.serve("a16w16", H200, 100, 8192, 64)
    assert configs.tuned(src) is not past
    if past:
        assert "(sm_90/A16W16-N=8192-K=64 M_GEQ_64 past one round of its tiles: model)" in src
        assert cfg == configs.serve("a16w16", H200, 100, 8192, 64, shape_files=False)[0]
    assert configs.select("a16w16", "sm_90", 100, 8192, 64)[1].endswith("M_GEQ_64")  # the tables as they are


def test_model_fills_better_than_a_shape_files_bucket():
    """bf16 (model.fills_better): Llama-3-8B / DeepSeek (4096, 4096) at M = 2304: the M_GEQ_2048 bucket's 128 x 256
    tiles are 18 x 16 = 288 for 132 SMs (73% of three waves), the model's 64 x 192 ping-pong 36 x 22 = 792 (six
    waves, 97%): the model serves (ab/bf16_fill_over_tables.json: 0.74 -> 0.96x cuBLAS). At a bucket's own M (measured
    there) the bucket serves. Where the model's answer fills its waves no better (q_a 1536 x 7168 at M = 384:
    `few_tiles`' 72 ping-pong tiles, 55% of the SMs) the bucket keeps serving too."""
    from gemmkit import arch as _arch
    from gemmkit.configs import model

    H200 = _arch.ARCHS["sm_90"]
    cfg, src = configs.serve("a16w16", H200, 2304, 4096, 4096)
    assert "(sm_90/A16W16-N=4096-K=4096 M_GEQ_2048 fills 73% of its waves at M = 2304: model)" in src, src
    assert not configs.tuned(src) and (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]) == (64, 192)
    assert cfg == configs.serve("a16w16", H200, 2304, 4096, 4096, shape_files=False)[0]
    # Llama-3-70B o_proj (8192, 8192) at M = 16, its M_GEQ_16 bucket's own M: 32 x 64 tiles fill 48%, the model's
    # 16 x 64 swap-AB 97%; the bucket was measured there, so it serves
    table = configs.select("a16w16", "sm_90", 16, 8192, 8192)[0]
    assert model.fills_better("a16w16", table, configs.serve("a16w16", H200, 16, 8192, 8192, shape_files=False)[0],
                              16, 8192, H200.num_cus)
    assert configs.serve("a16w16", H200, 16, 8192, 8192)[1] == "sm_90/A16W16-N=8192-K=8192.json:M_GEQ_16"
    fitted = configs.serve("a16w16", H200, 384, 1536, 7168, shape_files=False)[0]
    assert fitted.get("backend") == "gluon" and model.launch_fill(fitted, 384, 1536, H200.num_cus) < model.FILL_OVER_TABLE
    assert configs.tuned(configs.serve("a16w16", H200, 384, 1536, 7168)[1])
    # launch_fill: tiles x splits over whole waves, rows and columns past M and N empty
    tile = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 192}
    assert model.launch_fill(tile, 4096, 576, 132) == 4096 * 576 / (132 * 128 * 192)
    assert model.launch_fill({**tile, "NUM_KSPLIT": 2}, 4096, 576, 132) == 2 * 4096 * 576 / (2 * 132 * 128 * 192)
    gluon = {**tile, "NUM_KSPLIT": 4, "backend": "gluon"}  # kept to one wave: 96 tiles, one split
    assert model.launch_fill(gluon, 4096, 576, 132) == model.launch_fill(tile, 4096, 576, 132)
    assert not model.fills_better("a8w8", tile, tile, 4096, 576, 132)  # bf16's rule only


@pytest.mark.parametrize("fitted_fill, table_fill, takes", [(0.97, 0.73, True), (0.89, 0.5, False),
                                                            (0.97, 0.8, False)])
def test_fills_better_thresholds(fitted_fill, table_fill, takes, monkeypatch):
    from gemmkit.configs import model

    fills = {"fitted": fitted_fill, "table": table_fill}
    monkeypatch.setattr(model.tables, "launch_fill", lambda cfg, M, N, num_cus: fills[cfg["name"]])
    assert model.fills_better("a16w16", {"name": "table"}, {"name": "fitted"}, 1, 1, 132) is takes
