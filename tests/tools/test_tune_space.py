"""The tools layer points one way: tune (the search) uses bench (timing, op descriptions), bench imports
nothing from tune; every bench op's candidate space lives in gemmkit/tune/space.py."""
import ast
from pathlib import Path

import pytest

import gemmkit
from gemmkit import arch, tune
from gemmkit.bench.ops import BENCH_OPS
from gemmkit.configs import validate_config
from gemmkit.tune import space

BENCH_DIR = Path(gemmkit.__file__).parent / "bench"


def _imported_modules(path: Path) -> set:
    """Absolute names of every module `path` imports (top level or inside a function), relative ones resolved."""
    # dotted name of the file (a package's own as "<pkg>.__init__"): `level` dots strip that many parts
    pkg = "gemmkit." + ".".join(path.relative_to(Path(gemmkit.__file__).parent).with_suffix("").parts)
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.rsplit(".", node.level)[0]
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)  # `from .. import tune` imports gemmkit.tune
    return out


def test_import_resolution_sees_relative_imports():
    names = _imported_modules(Path(tune.__file__))
    assert {"gemmkit.bench.ops", "gemmkit.tune.space", "gemmkit.tune.merge", "gemmkit.configs"} <= names


@pytest.mark.parametrize("path", sorted(BENCH_DIR.rglob("*.py")), ids=lambda p: p.name)
def test_bench_imports_nothing_from_tune(path):
    bad = sorted(m for m in _imported_modules(path) if m == "gemmkit.tune" or m.startswith("gemmkit.tune."))
    assert not bad, f"{path.name} imports {bad}: bench must not import tune (docs/DESIGN.md, Layers)"


def test_every_bench_op_has_a_tuner_space():
    assert set(space.OP_SPACES) == set(BENCH_OPS)
    for name in BENCH_OPS:
        assert space.op_space(name) is space.OP_SPACES[name]


@pytest.mark.parametrize("name", list(BENCH_OPS))
@pytest.mark.parametrize("M,N,K,target", [(16, 2048, 512, "sm_90"), (1024, 8192, 8192, "sm_90"),
                                          (256, 4096, 4096, "gfx942")])
def test_op_spaces_are_valid_configs(name, M, N, K, target):
    cands = space.op_space(name)(M, N, K, arch.get(target))
    assert cands
    for c in cands:
        validate_config(dict(c))


def test_space_names_stay_importable_from_tune():
    for name in ("search_space", "few_tile_space", "gluon_space", "gluon_swap_space", "gluon_fp8_space",
                 "gluon_split_k_space", "fill_splits", "_cfg", "FEW_TILE_WAVES", "MIN_SPLIT_STEPS", "MAX_GLUON_SPLIT",
                 "GLUON_SPLIT_K_BK", "GLUON_SPLIT_K_TILES", "op_space", "OP_SPACES"):
        assert getattr(tune, name) is getattr(space, name), name
