"""Config tables: `<arch>/<OP>.json` (+ `<arch>/<OP>-N=<N>-K=<K>.json`), aiter-compatible.

A table file maps bucket keys to configs::

    {"M_LEQ_16": {...}, "M_LEQ_128": {...}, "M_GEQ_4096": {...}, "any": {...}}

Lookup for a shape (M, N, K) on an arch:
  1. the shape file `<OP>-N=<N>-K=<K>.json` if it exists, else the default `<OP>.json`;
  2. in that file, the `M_LEQ_x` keys in ascending x: the first with M <= x;
  3. then the `M_GEQ_x` keys in descending x: the first with M >= x;
  4. then `any`.
  A shape file that matches no bucket for this M hands the lookup to the default
  file (a tuned file covers the M range it was tuned for; the tuner writes
  `M_GEQ_<m>` buckets, so smaller M fall through). A default file that leaves
  a shape unmatched is an error.
  A shape file's bucket may be the string "model" (MODEL): measured, the config
  model's choice beat the tuned config over that M range, so the lookup goes on
  in the default file and the model fits it (`serve`); such a call is not
  `tuned`. benchmarks/tables_vs_model.py measures the two.

Every file is validated when it is first loaded (unknown bucket or config key,
missing key, impossible value: ValueError naming the file and the key) and
cached. A `config=` argument to an op goes through the same validation.
"""
from __future__ import annotations

import contextlib
import functools
import json
import re
from pathlib import Path

__all__ = ["select", "serve", "fit_bucket", "tuned", "load_table", "bucket_configs", "MODEL", "validate_config",
           "table_path", "table_ops", "table_archs", "ConfigError", "CONFIG_DIR", "KEYS"]

CONFIG_DIR = Path(__file__).resolve().parent
MODEL = "model"  # a shape file's bucket that hands its M range to the config model (module docstring)
_BUCKET = re.compile(r"^M_(LEQ|GEQ)_(\d+)$")


class ConfigError(ValueError):
    pass


def _pow2(v):
    return isinstance(v, int) and not isinstance(v, bool) and v > 0 and (v & (v - 1)) == 0


def _int_in(lo, hi=None):
    def check(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)
    return check


def _is_bool(v):
    return isinstance(v, bool)


# BLOCK_SIZE_N values that are not powers of two: the dense Gluon kernels build them from two accumulators of
# power-of-two widths A + B (kernels/gluon/hopper_pingpong.py, "Split tiles"; `split_tail`); no Triton tile can take
# them (kernels/triton/dense.py triton_tile). The widths a tile count near whole waves needs (cuBLAS runs 80-, 144-,
# 168-wide tiles on those layers: benchmarks/results/h200/vendor_kernels_bf16_weak.json). The ping-pong and the
# cooperative kernel build every one (the cooperative within its accumulator budget: BM / 2 x BN per consumer).
SPLIT_N = (48, 80, 96, 144, 160, 192)


def split_tail(bn: int) -> int:
    """B of a split tile BN = A + B (A the largest power of two below BN, B = BN - A a smaller one: 96 = 64 + 32,
    144 = 128 + 16), built from two accumulators of A and B columns (register and shared-memory tensors, and TMA
    boxes, are powers of two); 0 for any other BN. The one definition of the split: the Gluon kernels' plans and
    the Triton fallback (A columns) read it."""
    return bn - (1 << (bn.bit_length() - 1)) if bn in SPLIT_N else 0

# key -> (required, check, what is expected, which backends accept it)
KEYS = {
    # (a split width of SPLIT_N only as the tokens of the cooperative swap-AB tile: checked below)
    "BLOCK_SIZE_M": (True, lambda v: (_pow2(v) and v >= 16) or v in SPLIT_N,
                     f"a power of two >= 16 (or one of {SPLIT_N} with \"swap_ab\" on the cooperative kernel)",
                     ("cuda", "hip")),
    # SPLIT_N (48, 80, 96, 144, 160, 192): the Gluon kernels' split tiles (checked below: "backend" "gluon")
    "BLOCK_SIZE_N": (True, lambda v: (_pow2(v) and v >= 16) or v in SPLIT_N,
                     f"a power of two >= 16 (or one of {SPLIT_N} with \"backend\": \"gluon\")", ("cuda", "hip")),
    "BLOCK_SIZE_K": (True, lambda v: _pow2(v) and v >= 16, "a power of two >= 16", ("cuda", "hip")),
    "GROUP_SIZE_M": (True, _int_in(1), "an integer >= 1", ("cuda", "hip")),
    "num_warps": (True, lambda v: v in (1, 2, 4, 8, 16) and not isinstance(v, bool), "one of 1, 2, 4, 8, 16", ("cuda", "hip")),
    "num_stages": (True, _int_in(1, 8), "an integer in [1, 8]", ("cuda", "hip")),
    # AMD compiler options (aiter keys); rejected in sm_90 tables.
    "waves_per_eu": (False, _int_in(0, 8), "an integer in [0, 8]", ("hip",)),
    "matrix_instr_nonkdim": (False, lambda v: v in (0, 16, 32), "0, 16 or 32", ("hip",)),
    "kpack": (False, lambda v: v in (1, 2), "1 or 2", ("hip",)),
    # gemmkit keys.
    "persistent": (False, _is_bool, "true or false (grid = CUs, loop over tiles)", ("cuda", "hip")),
    "tma": (False, _is_bool, "true or false (TMA descriptors; Hopper only)", ("cuda",)),
    # Which kernel family runs the config: the Triton tier, or (gemm_a16w16 on sm_90) the Gluon
    # ping-pong kernel (kernels/gluon/hopper_pingpong.py), which reads BLOCK_SIZE_M/N/K,
    # GROUP_SIZE_M, num_warps and num_stages and falls back to Triton where it cannot run; num_warps 8
    # (two warpgroups on one tile) selects the cooperative layout (kernels/gluon/hopper_coop.py; fp8:
    # hopper_pingpong_fp8.py), 4 the ping-pong (hopper_pingpong.is_coop). On gfx942 / gfx950 (16-bit only) it names
    # the CDNA ping-pong (kernels/gluon/cdna_pingpong.py), whose tile is the target's (cdna_layout.tile_config).
    "backend": (False, lambda v: v in ("triton", "gluon"), "'triton' or 'gluon'", ("cuda", "hip")),
    "NUM_KSPLIT": (False, _int_in(1, 64), "an integer in [1, 64] (split-K: partial sums reduced in a fixed order)",
                   ("cuda", "hip")),
    # Swap-AB (the Gluon dense kernels): the kernel computes the BLOCK_SIZE_M x BLOCK_SIZE_N tile of y transposed,
    # weight rows as the wgmma's M and tokens as its N, and stores it transposed (kernels/gluon/hopper_pingpong.py,
    # "Swap-AB"). The ping-pong (num_warps 4, decode sizes): BLOCK_SIZE_N 64 or 128 weight rows, BLOCK_SIZE_M a power
    # of two in [16, 256] tokens; the cooperative kernel (num_warps 8): BLOCK_SIZE_N 128 weight rows (64 a consumer),
    # BLOCK_SIZE_M a split width of SPLIT_N (tokens in widths such as 144 = 128 + 16, which fit M where a multiple of
    # 64 rows does not: kernels/gluon/hopper_coop.py). The tile's meaning does not change, so the Triton tier's
    # fallback runs the same tile unswapped (a split width: its power-of-two part, kernels/triton/dense.triton_tile).
    "swap_ab": (False, _is_bool, "true or false (the Gluon dense kernels' transposed tile)", ("cuda",)),
}
DEFAULTS = {"persistent": False, "tma": False, "NUM_KSPLIT": 1}
COMPILER_OPTIONS = {"num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack"}


def validate_config(cfg, *, backend: str | None = None, where: str = "config") -> dict:
    """Check one config dict; return it with defaults filled in. `where` names it in errors."""
    if not isinstance(cfg, dict):
        raise ConfigError(f"{where}: expected a dict of config keys, got {type(cfg).__name__}")
    for key, value in cfg.items():
        if key not in KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}; expected keys from {sorted(KEYS)}")
        _, check, expected, backends = KEYS[key]
        if not check(value):
            raise ConfigError(f"{where}: key {key!r} = {value!r}; expected {expected}")
        if backend is not None and backend not in backends and value not in (False, 0):
            raise ConfigError(f"{where}: key {key!r} is not supported on {backend} targets")
    for key, (required, *_rest) in KEYS.items():
        if required and key not in cfg:
            raise ConfigError(f"{where}: missing key {key!r}")
    if cfg["BLOCK_SIZE_N"] in SPLIT_N and cfg.get("backend") != "gluon":
        raise ConfigError(f"{where}: key 'BLOCK_SIZE_N' = {cfg['BLOCK_SIZE_N']} is a split tile of the Gluon "
                          "kernels (two accumulators): it needs \"backend\": \"gluon\"")
    coop_swap = cfg.get("swap_ab") and cfg["num_warps"] == 8
    if cfg["BLOCK_SIZE_M"] in SPLIT_N and not coop_swap:
        raise ConfigError(f"{where}: key 'BLOCK_SIZE_M' = {cfg['BLOCK_SIZE_M']} is a split width of tokens: it needs "
                          "\"swap_ab\": true and num_warps 8 (the cooperative kernel's transposed tile)")
    if coop_swap:
        why = [w for w, bad in (("\"backend\": \"gluon\"", cfg.get("backend") != "gluon"),
                                ("BLOCK_SIZE_N 128 or 256 (the wgmma's M, 64 or 128 a consumer)",
                                 cfg["BLOCK_SIZE_N"] not in (128, 256)),
                                (f"BLOCK_SIZE_M one of {SPLIT_N} (the tokens)", cfg["BLOCK_SIZE_M"] not in SPLIT_N),
                                ("NUM_KSPLIT 1", cfg.get("NUM_KSPLIT", 1) != 1)) if bad]
        if why:
            raise ConfigError(f"{where}: key 'swap_ab' = true with num_warps 8 (the cooperative kernel's transposed "
                              "tile) needs " + ", ".join(why))
    elif cfg.get("swap_ab"):
        why = [w for w, bad in (("\"backend\": \"gluon\"", cfg.get("backend") != "gluon"),
                                ("num_warps 4 (the ping-pong) or 8 (the cooperative kernel)", cfg["num_warps"] != 4),
                                ("BLOCK_SIZE_N 64 or 128 (the wgmma's M)", cfg["BLOCK_SIZE_N"] not in (64, 128)),
                                ("NUM_KSPLIT 1", cfg.get("NUM_KSPLIT", 1) != 1)) if bad]
        if why:
            raise ConfigError(f"{where}: key 'swap_ab' = true (the Gluon ping-pong's transposed tile) needs "
                              + ", ".join(why))
    return {**DEFAULTS, **cfg}


def table_path(op: str, arch: str, N: int | None = None, K: int | None = None) -> Path:
    stem = op.upper() if N is None else f"{op.upper()}-N={N}-K={K}"
    return CONFIG_DIR / arch / f"{stem}.json"


def _backend_of(arch: str) -> str:
    return "cuda" if arch.startswith("sm_") else "hip"


@functools.lru_cache(maxsize=None)
def load_table(path: str) -> dict:
    """Load and validate one table file; buckets come back in lookup order."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{p}: not valid JSON ({e})") from None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{p}: expected a non-empty JSON object of buckets")
    backend = _backend_of(p.parent.name)
    shape_file = "-N=" in p.stem
    leq, geq, any_ = [], [], None

    def check(cfg, where, model_ok=True):  # a config, or None for a shape file's MODEL bucket
        if cfg == MODEL and shape_file and model_ok:
            return None
        if isinstance(cfg, str):
            raise ConfigError(f"{where}: {cfg!r}: the only string a bucket takes is {MODEL!r}, in an M_LEQ / M_GEQ "
                              "bucket of a shape file (<OP>-N=<N>-K=<K>.json: the config model serves that M range; "
                              "without an 'any' bucket the lookup goes on in the default table anyway)")
        return validate_config(cfg, backend=backend, where=where)

    for key, cfg in raw.items():
        where = f"{p}: bucket {key!r}"
        m = _BUCKET.match(key)
        if key == "any":
            any_ = check(cfg, where, model_ok=False)
        elif m:
            (leq if m.group(1) == "LEQ" else geq).append((int(m.group(2)), key, check(cfg, where)))
        else:
            raise ConfigError(f"{p}: unknown bucket key {key!r}; expected 'M_LEQ_<int>', 'M_GEQ_<int>' or 'any'")
    return {"leq": sorted(leq), "geq": sorted(geq, reverse=True), "any": any_}


def bucket_configs(table: dict):
    """(key, config) of every bucket of a loaded table (`load_table`) that holds a config, in lookup order (a
    shape file's MODEL buckets hold none)."""
    for _, key, cfg in table["leq"] + table["geq"]:
        if cfg is not None:
            yield key, cfg
    if table["any"] is not None:
        yield "any", table["any"]


def select(op: str, arch: str, M: int, N: int, K: int):
    """(config, source) for a shape; `source` names the file and bucket it came from."""
    cfg, source = _select_cached(op, arch, M, N, K)
    return dict(cfg), source


def serve(op: str, target, M: int, N: int, K: int, *, shape_files: bool = True):
    """(config, source) a call without `config=` runs on `target` (a gemmkit.arch.Target): a shape file's bucket as
    it is, else the default table's bucket fitted to the shape by the config model (configs/model/; `source`
    then says what the model changed and why). A shape file's bucket past the one round of tiles it was measured
    with hands M to the model as well (model.past_its_round, bf16), and so does one whose launch fills its waves
    poorly at an M other than its own where the model's fills them (model.fills_better, bf16). shape_files=False:
    what the config model serves with the shape files set aside (`gemmkit configs` prints both;
    benchmarks/tables_vs_model.py times them)."""
    from . import model

    cfg, source = select(op, target.arch, M, N, K)
    bucket = _SHAPE_BUCKET.search(source)  # a shape file's M_GEQ bucket past the round of tiles it was measured with?
    past = bucket is not None and model.past_its_round(op, cfg, int(bucket.group(1)), M, N, target.num_cus)
    if not shape_files or past:
        path = table_path(op, target.arch)
        hit = _match(load_table(str(path)), path, M)
        if hit is None:
            raise ConfigError(f"{path}: no bucket matches M={M} and there is no 'any' bucket")
        cfg, source = dict(hit[0]), hit[1] + (f" ({bucket.group(0).replace('.json:', ' ')} past one round of "
                                              f"its tiles: {MODEL})" if shape_files else "")
    if op in model.FITTED_OPS and not _SHAPE_FILE.search(source):
        large = _large_bucket(op, target.arch)
        chosen, notes = fit_bucket(op, target, cfg, large, M, N, K)
        if chosen is large and chosen is not cfg:
            source += f" -> {_large_key(op, target.arch)}"
        cfg = {"NUM_KSPLIT": 1, **chosen}  # (a rule's menu tile may leave the default out; the Triton tier reads it)
        if notes:
            source += ", fitted: " + "; ".join(notes)
    elif bucket is not None and int(bucket.group(1)) != M and model.OP_RULES.get(op, {}).get("fill_over_tables"):
        # (at its own M a bucket was measured: the tuner times the model's choice there too, tune/merge.py)
        fitted, fitted_source = serve(op, target, M, N, K, shape_files=False)
        if model.fills_better(op, cfg, fitted, M, N, target.num_cus):
            fill = model.launch_fill(cfg, M, N, target.num_cus)
            return fitted, (f"{fitted_source} ({bucket.group(0).replace('.json:', ' ')} fills {fill:.0%} of its "
                            f"waves at M = {M}: {MODEL})")
    return cfg, source


def fit_bucket(op: str, target, cfg: dict, large: dict | None, M: int, N: int, K: int):
    """(config, notes): a default table's bucket `cfg` for this shape as the config model serves it (`large`: that
    table's bucket for the largest M; configs/model/ `choose`, which `fit`s the tile). The one call into the model:
    `serve`, and the tuner's merge (tune/merge.py) on the tables it merges onto."""
    from . import model

    if op not in model.FITTED_OPS:
        return cfg, []
    return model.choose(op, cfg, large, M, N, K, target.num_cus, target.shared_mem_bytes, amd=target.is_amd,
                        hbm_gbps=target.hbm_gbps)


def model_configs(op: str, arch: str) -> list:
    """(name, config) of the configs the config model writes that no table ships (configs/model/: bf16's
    `wide_config`, `one_wave`'s and `narrow_wave`'s tiles, `few_tiles`' split tiles (their unsplit ones and
    `m128_tile` are `one_wave`'s / `narrow_wave`'s), `narrow_pingpong`, `split_widths`, `wide_one_wave` (`narrow_wide`'s
    64 x 160 is its 160), `coop_swap`, `tall_swap`,
    `coop_widths` (unsplit and split: `long_k_coop`'s), `off_sector` (unsplit and split; `long_k_split`'s too), `swap_wide` and `decode_split`; fp8's 64 x 64 Gluon ping-pong over the
    large-M bucket and fp8's `decode_wide` tile, block scale's also with `decode_wide_k`'s K step, per-token's `large_few_split_k` tile,
    fp8's and block scale's `m256_split` tile), so that `gemmkit isa` compiles them."""
    from . import model

    rules = model.OP_RULES.get(op, {})
    if not arch.startswith("sm_") or not rules.get("wide_share") or not table_path(op, arch).exists():
        return []
    if rules.get("wide_config"):
        out = [("model:wide_config", validate_config(dict(rules["wide_config"]), backend="cuda"))]
        out += [(f"model:one_wave_{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}{'_swap' if c.get('swap_ab') else ''}",
                 validate_config(dict(c), backend="cuda")) for c in rules.get("one_wave", ())]
        out += [(f"model:narrow_wave_{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}", validate_config(dict(c), backend="cuda"))
                for c in rules.get("narrow_wave", ())]
        out += [(f"model:few_tiles_{c['BLOCK_SIZE_M']}x{c['BLOCK_SIZE_N']}_split",  # (unsplit: the menus above)
                 validate_config(dict(c, NUM_KSPLIT=2), backend="cuda")) for c in rules.get("few_tiles", ())]
        base = select(op, arch, model.NARROW_MAX_M, 1, 1)[0]  # the default table's bucket narrow_pingpong replaces
        if rules.get("narrow_pingpong") and base.get("backend") == "gluon":
            out.append(("model:narrow_pingpong", validate_config(dict(base, **rules["narrow_pingpong"]),
                                                                  backend="cuda")))
        if base.get("backend") == "gluon":
            out += [(f"model:split_width_{w}", validate_config(model.split_width_config(base, w), backend="cuda"))
                    for w in rules.get("split_widths", ())]
        out += [(f"model:swap_wide_{b['BLOCK_SIZE_M']}", validate_config(dict(b, BLOCK_SIZE_N=rules["swap_wide"]),
                                                                         backend="cuda"))
                for b in (select(op, arch, m, 1, 1)[0] for m in (1, 32, model.ONE_WAVE_MIN_M - 1))
                if rules.get("swap_wide") and b.get("backend") == "gluon" and b.get("swap_ab")]
        if rules.get("decode_split"):  # the Triton tier's tile for each swap-AB decode bucket's rows, split
            out += [(f"model:decode_split_{b['BLOCK_SIZE_M']}", validate_config(
                dict(rules["decode_split"], BLOCK_SIZE_M=b["BLOCK_SIZE_M"], NUM_KSPLIT=model.DECODE_SPLIT_MIN),
                backend="cuda"))
                for b in (select(op, arch, m, 1, 1)[0] for m in (1, 32, model.ONE_WAVE_MIN_M - 1))
                if b.get("backend") == "gluon" and b.get("swap_ab")]
        wide = select(op, arch, model.WIDE_ONE_WAVE_MAX_M, 1, 1)[0]  # a bucket `wide_one_wave` serves from
        if wide.get("backend") == "gluon":
            out += [(f"model:wide_one_wave_{w}", validate_config(model.split_width_config(wide, w), backend="cuda"))
                    for w in rules.get("wide_one_wave", ())]
        out += [(f"model:coop_swap_{w}", validate_config(model.coop_swap_config(w), backend="cuda"))
                for w in rules.get("coop_swap", ())]
        out += [(f"model:tall_swap_{w}", validate_config(model.tall_swap_config(w), backend="cuda"))
                for w in rules.get("tall_swap", ())]
        coop = select(op, arch, model.COOP_WIDTH_MAX_M, 1, 1)[0]  # a bucket coop_widths serves from
        if coop.get("backend") == "gluon" and coop["BLOCK_SIZE_M"] == 128:
            out += [(f"model:coop_width_{w}", validate_config(model.coop_width_config(coop, w, s), backend="cuda"))
                    for w, s in rules.get("coop_widths", ())]
            if rules.get("long_k_coop"):  # its split coop widths
                out += [(f"model:coop_width_{w}_split", validate_config(
                    dict(model.coop_width_config(coop, w, s), NUM_KSPLIT=2), backend="cuda"))
                    for w, s in rules.get("coop_widths", ())]
            out += [(f"model:off_sector_{t['BLOCK_SIZE_M']}x{t['BLOCK_SIZE_N']}{'_split' if split > 1 else ''}",
                     validate_config(dict(coop, **t, NUM_KSPLIT=split), backend="cuda"))
                    for t in rules.get("off_sector", ()) for split in (1, 2)]
        return out
    out = []
    base = select(op, arch, 1, 1, 1)[0]  # the M_LEQ_16 bucket `decode_wide` widens
    if rules.get("decode_wide") and base.get("backend") != "gluon":
        out.append(("model:decode_wide", validate_config(dict(base, BLOCK_SIZE_N=rules["decode_wide"]),
                                                        backend="cuda")))
        if rules.get("decode_wide_k"):
            out.append(("model:decode_wide_k", validate_config(
                dict(base, BLOCK_SIZE_N=rules["decode_wide"], BLOCK_SIZE_K=rules["decode_wide_k"], NUM_KSPLIT=1),
                backend="cuda")))
    large = _large_bucket(op, arch)
    if large is None or large.get("backend") != "gluon":
        return out
    out.append(("model:small_pingpong", dict(large, **model.SMALL_PINGPONG)))
    if rules.get("large_few_split_k"):  # the Triton tier's tile of the large-M bucket, split along K
        out.append(("model:large_few_split", validate_config(
            dict({k: v for k, v in large.items() if k != "backend"}, num_stages=model.LARGE_FEW_STAGES, tma=True,
                 persistent=True, NUM_KSPLIT=2), backend="cuda")))
    if rules.get("m256_split"):  # the Triton tier's tile at 128 < M <= 256 where 64 x 64 tiles are few, split along K
        out.append(("model:m256_split", validate_config(dict(rules["m256_split"], NUM_KSPLIT=2), backend="cuda")))
    return out


def _large_bucket(op: str, arch: str):
    """The default table's bucket for the largest M (the config model's kernel choice, configs/model/)."""
    path = table_path(op, arch)
    hit = _match(load_table(str(path)), path, 1 << 62)
    return hit[0] if hit else None


def _large_key(op: str, arch: str) -> str:
    path = table_path(op, arch)
    return _match(load_table(str(path)), path, 1 << 62)[1].split(":")[-1]


_SHAPE_FILE = re.compile(r"-N=\d+-K=\d+\.json:")
_SHAPE_BUCKET = re.compile(r"\S+-N=\d+-K=\d+\.json:M_GEQ_(\d+)$")  # a `select` source: a shape file's M_GEQ bucket


def tuned(source: str) -> bool:
    """Whether a `select` / `serve` source names a shape file: a bucket measured for this (N, K) (the bench rows'
    `tuned`; a default bucket, fitted or not, and a `config=` argument are not)."""
    return bool(_SHAPE_FILE.search(source))


@functools.lru_cache(maxsize=4096)
def _select_cached(op: str, arch: str, M: int, N: int, K: int):
    shape_path = table_path(op, arch, N, K)
    deferred = ""
    if shape_path.exists():
        table = load_table(str(shape_path))
        hit = _round_up(table, shape_path, M) or _match(table, shape_path, M)
        if hit is not None and hit[0] is not None:
            return hit
        if hit is not None:  # a MODEL bucket: named in the source without ".json:" (not `tuned`)
            deferred = f" ({hit[1].replace('.json:', ' ')}: {MODEL})"
    path = table_path(op, arch)
    if not path.exists():
        raise ConfigError(f"no config table for op {op!r} on arch {arch!r} (looked for {path})")
    hit = _match(load_table(str(path)), path, M)
    if hit is None:
        raise ConfigError(f"{path}: no bucket matches M={M} and there is no 'any' bucket")
    return hit[0], hit[1] + deferred


def _tiles(M: int, cfg: dict) -> int:
    return -(-M // cfg["BLOCK_SIZE_M"])


def _round_up(table: dict, path: Path, M: int):
    """A shape file's next bucket up, for an M between two measured ones where the lower bucket's tile would add a
    row of tiles its measurement never had and the upper bucket's tiles cover M as they covered its own M: M = 80
    runs the M_GEQ_128 bucket (one 128-row tile, or two of 64, as measured at 128), not M_GEQ_64's two 64-row tiles
    measured as one. H200, the tuned models' layers at M = 80 (benchmarks/results/h200/config_model_tuned_a16w16.json):
    the lower bucket ran 0.43-0.94x cuBLAS, the same layers at M = 128 0.77-1.03x. None: no such bucket. Rounding
    up into a MODEL bucket gives (None, its source): the model serves M (H200, `ab/tables_vs_model_after_bf16.json`:
    25 such rows 1.07x the lower bucket's tile geomean, 0.90-1.46x); a MODEL bucket below a tuned one rounds up
    as a config would (the model there lost: 160-224 x 10240 x 8192 0.78-0.92x the round-up's tile)."""
    geq = table["geq"]  # descending bounds
    for i, (lo, _key, cfg) in enumerate(geq):
        if M >= lo:
            if i == 0 or M == lo or (cfg is not None and _tiles(M, cfg) == _tiles(lo, cfg)):
                return None
            hi, key, up = geq[i - 1]
            if up is None or _tiles(M, up) == _tiles(hi, up):  # up a MODEL bucket: the model serves M
                return up, f"{path.relative_to(CONFIG_DIR)}:{key}"
            return None
    return None


def _match(table: dict, path: Path, M: int):
    for bound, key, cfg in table["leq"]:
        if M <= bound:
            return cfg, f"{path.relative_to(CONFIG_DIR)}:{key}"
    for bound, key, cfg in table["geq"]:
        if M >= bound:
            return cfg, f"{path.relative_to(CONFIG_DIR)}:{key}"
    if table["any"] is not None:
        return table["any"], f"{path.relative_to(CONFIG_DIR)}:any"
    return None


def clear_cache():
    """Forget loaded tables (after editing or adding a table file)."""
    load_table.cache_clear()
    _select_cached.cache_clear()


@contextlib.contextmanager
def rule_off(op: str, key: str):
    """Within it, the config model runs `op` without its rule `key` (model.OP_RULES[op][key] = None: how an A/B's
    "before" side is written), nothing cached across the change; the rule is restored after. An unknown key raises
    KeyError."""
    from . import model

    rules = model.OP_RULES[op]
    saved = rules[key]
    rules[key] = None
    clear_cache()
    try:
        yield
    finally:
        rules[key] = saved
        clear_cache()


def shipped_tables(op: str | None = None):
    """Every shipped table file (for static-compile tests and `gemmkit isa`)."""
    for p in sorted(CONFIG_DIR.glob("*/*.json")):
        if op is None or p.stem.split("-")[0] == op.upper():
            yield p


def table_ops(arch: str | None = None) -> list:
    """The ops with a default table `<arch>/<OP>.json` (on `arch`, or on any arch), sorted: what
    `select` can look up (e.g. `gemmkit configs --op`)."""
    pattern = f"{arch}/*.json" if arch else "*/*.json"
    return sorted({p.stem.lower() for p in CONFIG_DIR.glob(pattern) if "-" not in p.stem})


def table_archs(op: str) -> list:
    """The archs that ship a default table for `op`, sorted."""
    return sorted(p.parent.name for p in CONFIG_DIR.glob(f"*/{op.upper()}.json"))
