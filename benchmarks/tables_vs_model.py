"""Shape files against the config model: does each tuned bucket still beat what the model serves without it?

A shape file (`configs/<arch>/<OP>-N=<N>-K=<K>.json`) is a measured override on top of the config model
(configs/model/). Buckets tuned before a model rule or kernel existed can lose to it. This script writes A/B specs
for benchmarks/ab_configs.py: for every shipped shape file of the op on the arch and every M asked for, the config
the shape file serves ("table": null, the op's own call) and the one the model serves with the shape files set aside
(`configs.serve(..., shape_files=False)`: "model"), where the two differ.

    PYTHONPATH=. python3 benchmarks/tables_vs_model.py --op a16w16 -m 1,16,...,8192 --parts 2 OUT_PREFIX
        -> OUT_PREFIX.0.json, OUT_PREFIX.1.json (rows dealt round-robin, so each part takes about as long), then on
           the GPU: python benchmarks/ab_configs.py OUT_PREFIX.0.json RESULT.0.json ...

Each spec also holds "sources" ({"M,N,K": {"table": source, "model": source}}) for reading the results.
"""
import argparse
import json

from gemmkit import arch as _arch
from gemmkit import configs as _configs

SUITE_M = (1, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def shape_files(op: str, arch: str):
    """(N, K) of every shipped shape file of `op` on `arch`."""
    out = []
    for p in _configs.shipped_tables(op):
        if p.parent.name == arch and p.stem.split("-")[0] == op.upper() and "-N=" in p.stem:
            N, K = p.stem.split("-N=")[1].split("-K=")
            out.append((int(N), int(K)))
    return sorted(out)


def rows(op: str, arch: str, ms):
    """{"M,N,K": (table config, table source, model config, model source)} where the shape file serves M and the
    model's config differs from it."""
    target = _arch.ARCHS[arch]
    out = {}
    for N, K in shape_files(op, arch):
        for M in ms:
            cfg, src = _configs.serve(op, target, M, N, K)
            if not _configs.tuned(src):
                continue  # the shape file does not serve this M: the model already does
            mcfg, msrc = _configs.serve(op, target, M, N, K, shape_files=False)
            if _configs.validate_config(dict(mcfg)) != _configs.validate_config(dict(cfg)):
                out[f"{M},{N},{K}"] = (cfg, src, mcfg, msrc)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefix", help="write PREFIX.<part>.json")
    ap.add_argument("--op", default="a16w16")
    ap.add_argument("--arch", default="sm_90", choices=sorted(_arch.ARCHS))
    ap.add_argument("-m", default=",".join(map(str, SUITE_M)), help="M values (comma list)")
    ap.add_argument("--parts", type=int, default=1)
    args = ap.parse_args(argv)
    found = rows(args.op, args.arch, [int(m) for m in args.m.split(",")])
    keys = list(found)
    for part in range(args.parts):
        mine = keys[part::args.parts]
        spec = {"op": args.op,  # ab_configs.py times the op's first dtype (bf16, fp8)
                "shapes": {k: {"table": None, "model": found[k][2]} for k in mine},
                "sources": {k: {"table": found[k][1], "model": found[k][3]} for k in mine}}
        with open(f"{args.prefix}.{part}.json", "w") as f:
            json.dump(spec, f, indent=1)
    print(f"{len(keys)} rows where the model's config differs from the shape file's, in {args.parts} part(s)")


if __name__ == "__main__":
    main()
