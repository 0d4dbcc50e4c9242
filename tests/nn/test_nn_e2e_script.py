"""benchmarks/e2e.py --dry-run: the end-to-end benchmark's whole path (build from a config, convert, prefill, a
decode step on a StaticCache, rows and logits errors) on a tiny Llama in the interpreter, so the GPU script does
not rot between GPU runs. torch._scaled_mm is emulated on the CPU with the same quantization as the torch baseline,
so torch_fp8_blockwise and gemmkit_fp8_block quantize alike and their logits errors agree."""
import importlib.util
import math
import os

import pytest

from _util import ROOT

pytest.importorskip("transformers")
pytestmark = pytest.mark.interpreter


def test_e2e_dry_run():
    spec = importlib.util.spec_from_file_location("e2e", os.path.join(ROOT, "benchmarks", "e2e.py"))
    e2e = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(e2e)
    result = e2e.main(["--dry-run", "--models", "llama3-8b", "--layers", "1",
                       "--schemes", "torch_bf16,gemmkit_fp8_block,gemmkit_fp8_block_fused,torch_fp8_blockwise"])
    rows = {(r["scheme"], r["phase"], r["batch"]): r for r in result["rows"]}
    assert len(rows) == 4 * 4 and all("error" not in r for r in result["rows"])  # 2 prefill + 2 decode cases each
    for key in ("device", "date", "torch", "triton", "transformers", "git_sha", "method"):
        assert result[key]
    for (scheme, phase, batch), r in rows.items():
        assert r["tokens_per_s"] > 0 and math.isclose(r["speedup"], r["baseline_ms"] / r["ms"])
        # an eager row's baseline is the bf16 model re-timed beside it; the first timing is kept
        assert ("baseline_ms_first" in r) == (scheme != "torch_bf16")
        if scheme != "torch_bf16":  # each alternated round's paired ratio, and their median
            assert len(r["speedup_rounds"]) == e2e.EAGER_ROUNDS and all(v > 0 for v in r["speedup_rounds"])
            assert r["speedup_paired"] == pytest.approx(sorted(r["speedup_rounds"])[e2e.EAGER_ROUNDS // 2], rel=1e-3)
        bound = 0.0 if scheme == "torch_bf16" else 0.15
        assert r["logits_rel_err"] <= bound, (scheme, phase, batch, r["logits_rel_err"])
        if scheme == "gemmkit_fp8_block":
            torch_err = rows["torch_fp8_blockwise", phase, batch]["logits_rel_err"]
            assert abs(r["logits_rel_err"] - torch_err) <= 0.1 * torch_err
    assert result["conversion"]["llama3-8b"]["gemmkit_fp8_block"] == "7 converted, 0 fused"  # lm_head stays bf16
    assert result["conversion"]["llama3-8b"]["gemmkit_fp8_block_fused"] == "4 converted, 1 fused"  # the MLP: one
