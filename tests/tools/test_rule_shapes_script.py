"""benchmarks/rule_shapes.py (CPU): the random shapes a rule key changes, each with the config served with the key
off (the A/B's before side) and null (the tree's); the rule table is left as it was."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import rule_shapes as RS  # noqa: E402

from gemmkit import arch, configs  # noqa: E402
from gemmkit.configs import model  # noqa: E402


def test_coop_widths_area_held_out_shapes(tmp_path):
    out = tmp_path / "ab.json"
    assert RS.main(["a16w16", "coop_widths_area", "20262300", "20262400", str(out)]) == 0
    shapes = json.loads(out.read_text())["shapes"]
    assert model.OP_RULES["a16w16"]["coop_widths_area"] is True  # restored
    assert shapes, "seeds 20262300-99 hold shapes the rule changes (bf16_coop_widths_by_area_verify.json)"
    for key, entry in shapes.items():
        M, N, K = map(int, key.split(","))
        assert entry["served"] is None
        now = configs.serve("a16w16", arch.get("H100"), M, N, K)[0]
        assert now != entry["before"] and (now["BLOCK_SIZE_M"], now["num_warps"]) == (128, 8)


def test_unknown_key_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no rule key"):
        RS.main(["a16w16", "no_such_rule", "1", "2", str(tmp_path / "x.json")])


def test_rule_off_turns_the_rule_off_and_restores_it():
    shape = (3198, 808, 672)  # `coop_widths_area`'s 128 x 192
    on = configs.serve("a16w16", arch.get("H100"), *shape)[0]
    with configs.rule_off("a16w16", "coop_widths_area"):
        assert model.OP_RULES["a16w16"]["coop_widths_area"] is None
        assert configs.serve("a16w16", arch.get("H100"), *shape)[0] != on
    assert model.OP_RULES["a16w16"]["coop_widths_area"] is True
    assert configs.serve("a16w16", arch.get("H100"), *shape)[0] == on
    with pytest.raises(KeyError):
        with configs.rule_off("a16w16", "no_such_rule"):
            pass


def test_within_samples_the_ranges_and_keeps_the_first_changed(tmp_path):
    out = tmp_path / "ab.json"
    argv = ["a16w16", "swap_rounds_wide_n", "1", "3", str(out), "--card", "H200", "--count", "200",
            "--within", "M=257-1536,N=1800-8000,K=70-4096"]
    assert RS.main(argv + ["--max", "5"]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["shapes"]) == 5 and "seeds 1-2" in doc["note"] and "(257, 1536)" in doc["note"]
    assert RS.main(argv) == 0
    every = list(json.loads(out.read_text())["shapes"])
    assert list(doc["shapes"]) == every[:5] and len(every) > 5  # the same seeds give the same shapes
    for key in every:
        M, N, K = map(int, key.split(","))
        assert 257 <= M <= 1536 and 1800 <= N <= 8000 and 72 <= K <= 4096 and N % 8 == 0 and K % 8 == 0
    shapes = RS.within_shapes({"M": (1, 1), "N": (8, 8), "K": (9, 16)}, 50, 7)
    assert {s[1:] for s in shapes} == {(1, 8, 16)}


@pytest.mark.parametrize("text", ["M=5-1,N=8-64,K=8-64", "M=1-2,N=8-64", "M=1-2,N=8-64,K=8-64,M=1-2",
                                  "M=1-2,N=1-7,K=8-64", "Q=1-2,N=8-64,K=8-64", "M=a-2,N=8-64,K=8-64"])
def test_within_refuses_malformed_ranges(text):
    with pytest.raises(SystemExit, match="--within"):
        RS.parse_within(text)
