"""benchmarks/model_audit.py (CPU): an A/B row's regret is the served config's time over the fastest timed one's, a
row whose timed configs miss the served one (or time it with a knob off) says nothing of it."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import model_audit as MA  # noqa: E402

from gemmkit import arch, configs  # noqa: E402


def _write(tmp_path, rows, **doc):
    d = tmp_path / "h200" / "ab"
    d.mkdir(parents=True, exist_ok=True)
    (d / "x.json").write_text(json.dumps({"op": "a16w16", "dtype": "bf16", "date": "2026-12-05", "rows": rows, **doc}))


def test_regret_of_the_served_config(tmp_path):
    M, N, K = 1024, 5120, 2880
    served = configs.serve("a16w16", arch.get("sm_90"), M, N, K)[0]
    other = dict(served, BLOCK_SIZE_N=64)
    _write(tmp_path, [
        {"M": M, "N": N, "K": K, "configs": {"a": served, "b": other, "c": None},
         "ms": {"vendor": [1.0, 1.0], "a": [2.0, 2.2], "b": [1.0, 1.1], "c": [0.5, 0.5]}},
        {"M": M, "N": N, "K": K, "configs": {"a": dict(served, _pitch=False), "b": other},  # a knob off: not served
         "ms": {"a": [1.0, 1.0], "b": [2.0, 2.0]}},
        {"M": M, "N": N, "K": K, "configs": {"b": other}, "ms": {"b": [1.0, 1.0]}},  # one config: no A/B
    ])
    rows = MA.audit_rows("h200", results=str(tmp_path))
    assert len(rows) == 2
    first, second = rows
    assert first["served_as"] == "a" and first["best"] == "b"  # (the null config is not a timed config)
    assert abs(first["regret"] - 1.0) < 1e-12 and abs(first["ratio"] - 1 / 2.1) < 1e-12
    assert second["served_as"] is None and second["best"] == "a" and "regret" not in second
    s = MA.summary(rows)
    assert (s["rows"], s["served_config_timed"], s["over_noise"], s["over_10pct"]) == (2, 1, 1, 1)
    assert MA.audit_rows("h200", since="2026-12-06", results=str(tmp_path)) == []


def test_int8_rows_are_served_by_the_int8_table():
    assert MA._op({"op": "a8w8", "dtype": "int8"}) == "a8w8_int8"
    assert MA._op({"op": "a8w8", "dtype": "fp8"}) == "a8w8" and MA._op({"op": None}) is None


def test_rule_evidence_turns_each_rule_off_in_turn(tmp_path):
    from gemmkit.configs import model

    target, (M, N, K) = arch.get("sm_90"), (300, 1000, 8192)  # few 128 x 128 tiles: `few_tiles` serves
    on, source = configs.serve("a16w16", target, M, N, K)
    assert "few_tiles" in source or "ping-pong's 64" in source, source
    rules = model.OP_RULES["a16w16"]
    saved, rules["few_tiles"] = rules["few_tiles"], None
    configs.clear_cache()
    try:
        off = configs.serve("a16w16", target, M, N, K)[0]
    finally:
        rules["few_tiles"] = saved
        configs.clear_cache()
    assert off != on
    _write(tmp_path, [{"M": M, "N": N, "K": K, "configs": {"on": on, "off": off},
                       "ms": {"on": [1.0, 1.0], "off": [1.5, 1.5]}}])
    e = MA.rule_evidence("h200", "a16w16", results=str(tmp_path))
    assert e["few_tiles"] == {"rows": 1, "off_over_on": 1.5, "off_better": 0, "off_worse": 1}
    assert model.OP_RULES["a16w16"]["few_tiles"] is saved and configs.serve("a16w16", target, M, N, K)[0] == on


def test_a_null_config_counts_as_what_the_run_recorded_it_served(tmp_path):
    """benchmarks/ab_configs.py records what a null config ran (`served_configs`): the audit reads it as that config,
    and serves with the card's own target (a rule may read its HBM: `tail_waves_off_line`, H100 only)."""
    M, N, K = 786, 7712, 23312
    h100 = configs.serve("a16w16", arch.get("H100"), M, N, K)[0]
    assert h100 != configs.serve("a16w16", arch.get("H200"), M, N, K)[0]
    other = dict(h100, BLOCK_SIZE_N=64)
    d = tmp_path / "h100" / "ab"
    d.mkdir(parents=True)
    (d / "x.json").write_text(json.dumps({"op": "a16w16", "dtype": "bf16", "date": "2026-12-06", "rows": [
        {"M": M, "N": N, "K": K, "configs": {"served": None, "b": other}, "served_configs": {"served": h100},
         "ms": {"served": [2.0, 2.0], "b": [1.0, 1.0]}}]}))
    (row,) = MA.audit_rows("h100", results=str(tmp_path))
    assert row["served_as"] == "served" and row["best"] == "b" and abs(row["regret"] - 1.0) < 1e-12
