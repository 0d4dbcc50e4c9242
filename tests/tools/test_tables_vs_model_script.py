"""benchmarks/tables_vs_model.py's CPU part: the A/B rows it writes are the shape files' tuned rows where the config
model would serve something else, each side what `configs.serve` gives."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import tables_vs_model as TVM  # noqa: E402

from gemmkit import arch, configs  # noqa: E402


def test_rows_are_tuned_rows_where_the_model_differs():
    target = arch.ARCHS["sm_90"]
    files = TVM.shape_files("a8w8_blockscale", "sm_90")
    assert (4096, 7168) in files and all(configs.table_path("a8w8_blockscale", "sm_90", n, k).exists() for n, k in files)
    rows = TVM.rows("a8w8_blockscale", "sm_90", [16, 32, 256, 512])
    assert rows, "no row: every shape file's config equals the model's"
    for key, (cfg, src, mcfg, msrc) in rows.items():
        M, N, K = map(int, key.split(","))
        assert (cfg, src) == configs.serve("a8w8_blockscale", target, M, N, K) and configs.tuned(src)
        assert (mcfg, msrc) == configs.serve("a8w8_blockscale", target, M, N, K, shape_files=False)
        assert configs.validate_config(dict(cfg)) != configs.validate_config(dict(mcfg))
    # an M a model bucket hands over is no row (4096 x 7168's M_GEQ_256 says "model")
    assert "256,4096,7168" not in rows


def test_spec_parts_deal_every_row_once(tmp_path):
    TVM.main(["--op", "a8w8_blockscale", "-m", "16,32,256,512,1024", "--parts", "2", str(tmp_path / "s")])
    parts = [json.load(open(tmp_path / f"s.{i}.json")) for i in range(2)]
    keys = [k for p in parts for k in p["shapes"]]
    assert len(keys) == len(set(keys)) == len(TVM.rows("a8w8_blockscale", "sm_90", [16, 32, 256, 512, 1024]))
    for p in parts:
        assert p["op"] == "a8w8_blockscale" and set(p["sources"]) == set(p["shapes"])
        assert all(c["table"] is None and isinstance(c["model"], dict) for c in p["shapes"].values())
