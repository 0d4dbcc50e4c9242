"""Programmatic dependent launch, on against off (kernels/triton/_pdl.py), in one process on the GPU.

For every row: the op with its shipped table config as a CUDA graph of rotated inputs (the bench's method,
bench/timing.time_graph) with GEMMKIT_PDL=0 and =1 (the graph is captured under each setting), and the
vendor reference of bench/ops.py, in passes (vendor, off, on, vendor, ...), median of each. Two kinds of row:

  self     the graph holds one op call per input set, back to back (what `gemmkit bench --cuda-graph`
           times): each of our launches follows one of ours.
  foreign  each call is preceded by a torch copy into the op's x (x_buf.copy_(x_i)): our launch follows
           a kernel that is not ours and does not trigger early, as after a norm in a model; the vendor
           gets the same copy, and the copy alone is timed too (ratios with and without it).

Correctness: after timing, each PDL-on graph is replayed once more with its output poisoned (NaN) and
compared with the op's reference; a row that fails is reported, not timed as a win.

Usage (repo root, GPU): PYTHONPATH=. python benchmarks/pdl_ab.py --json OUT.json [--passes 3] [--rows NAME,...]
"""
import argparse
import json
import os
import statistics
import time


def rows():
    """(name, op, dtype, M, N, K, batch, kind)."""
    out = []
    for m in (1, 4, 16, 64, 256):
        out.append((f"split_cat M={m}", "split_cat", "bf16", m, 32768, 512, 1, "self"))
    out.append(("split_cat M=1 (after a copy)", "split_cat", "bf16", 1, 32768, 512, 1, "foreign"))
    out.append(("fp8 block split_cat M=1", "a8w8_blockscale_split_cat", "fp8", 1, 32768, 512, 1, "self"))
    for b, s in ((8, 512), (8, 1024), (8, 2048), (64, 512), (64, 1024)):
        out.append((f"bmm B={b} {s}^3", "batched_a16w16", "bf16", s, s, s, b, "self"))
    out.append(("bmm B=8 512^3 (after a copy)", "batched_a16w16", "bf16", 512, 512, 512, 8, "foreign"))
    for label, n, k in (("8B qkv", 6144, 4096), ("8B down", 4096, 14336), ("70B down", 8192, 28672)):
        for m in (1, 16):
            out.append((f"a16w16 {label} M={m}", "a16w16", "bf16", m, n, k, 1, "self"))
    for label, inter, hid in (("8B", 14336, 4096), ("70B", 28672, 8192)):
        for m in (1, 16, 64, 256):
            out.append((f"ffn_gated {label} M={m}", "ffn_gated", "bf16", m, inter, hid, 1, "self"))
    out.append(("ffn_gated 8B M=16 (after a copy)", "ffn_gated", "bf16", 16, 14336, 4096, 1, "foreign"))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--rows", default="")
    args = ap.parse_args()

    import torch

    from gemmkit.bench import git_sha, ops as bench_ops
    from gemmkit.bench.timing import rotation_count, time_graph

    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    want = [r.strip() for r in args.rows.split(",") if r.strip()]
    results = []
    for name, op_name, dtype, M, N, K, batch, kind in rows():
        if want and not any(w in name for w in want):
            continue
        op = bench_ops.get(op_name)
        torch.manual_seed(0)
        first = op.make_inputs(M, N, K, dtype, dev, batch=batch)
        nbytes = sum(t.numel() * t.element_size() for t in first if isinstance(t, torch.Tensor))
        sets = [first] + [op.make_inputs(M, N, K, dtype, dev, batch=batch)
                          for _ in range(rotation_count(nbytes, l2) - 1)]
        if kind == "foreign":  # one x buffer the copy writes and the op reads
            x_buf = torch.empty_like(first[0])
            sets = [(s[0], x_buf) + tuple(s[1:]) for s in sets]

            def ours(src, xb, *rest):
                xb.copy_(src)
                return op.run((xb,) + rest, None)

            def vendor(src, xb, *rest):
                xb.copy_(src)
                return op.vendor((xb,) + rest)

            def copy_only(src, xb, *rest):
                xb.copy_(src)
        else:
            def ours(*inp):
                return op.run(inp, None)

            def vendor(*inp):
                return op.vendor(inp)
            copy_only = None

        def timed(fn, pdl):
            os.environ["GEMMKIT_PDL"] = str(int(pdl))
            return time_graph(fn, sets) * 1e3  # us

        t = {"vendor": [], "off": [], "on": [], "wait": [], "copy": []}
        error = None
        try:
            for p in range(args.passes):
                order = [("vendor", vendor, 0), ("off", ours, 0), ("on", ours, 1), ("wait", ours, 2)]
                if p % 2:
                    order = order[::-1]
                for key, fn, pdl in order:
                    t[key].append(timed(fn, pdl))
                if copy_only is not None:
                    t["copy"].append(timed(copy_only, False))
            # correctness of the PDL graph: poisoned output, replayed, checked against the reference
            os.environ["GEMMKIT_PDL"] = "1"
            inp = sets[0][1:] if kind == "foreign" else sets[0]
            ref = op.reference(inp).float()
            out = op.run(inp, None)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                got = op.run(inp, None, out=out)
            got.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            rel = ((got.float() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
            ok = bool(torch.isfinite(got).all().item()) and rel < 3e-2
        except Exception as e:  # noqa: BLE001  (reported per row)
            error, rel, ok = f"{type(e).__name__}: {e}", None, False
        med = {k: statistics.median(v) for k, v in t.items() if v}
        row = dict(name=name, op=op_name, dtype=dtype, M=M, N=N, K=K, batch=batch, kind=kind, times_us=t,
                   median_us=med, rel_err_pdl_graph=rel, ok=ok, error=error)
        if "on" in med and "off" in med:
            row["on_over_off"] = med["off"] / med["on"]
            row["ratio_off"] = med["vendor"] / med["off"]
            row["ratio_on"] = med["vendor"] / med["on"]
            row["ratio_wait"] = med["vendor"] / med["wait"]
            if "copy" in med:
                c = med["copy"]
                row["ratio_off_minus_copy"] = (med["vendor"] - c) / (med["off"] - c)
                row["ratio_on_minus_copy"] = (med["vendor"] - c) / (med["on"] - c)
        results.append(row)
        print(f"{name:34s} vendor {med.get('vendor', 0):8.2f} off {med.get('off', 0):8.2f} on {med.get('on', 0):8.2f} "
              f"wait {med.get('wait', 0):8.2f} us  ratio off {row.get('ratio_off', 0):.3f} on {row.get('ratio_on', 0):.3f} "
              f"wait {row.get('ratio_wait', 0):.3f}  "
              f"ok={ok} rel={rel} {error or ''}", flush=True)
    meta = dict(device=torch.cuda.get_device_name(), date=time.strftime("%Y-%m-%d %H:%M:%S"),
                torch=torch.__version__, triton=__import__("triton").__version__, git_sha=git_sha(),
                passes=args.passes, method="bench/timing.time_graph (CUDA graph of rotated inputs), median per setting")
    with open(args.json, "w") as f:
        json.dump(dict(meta=meta, rows=results), f, indent=1)


if __name__ == "__main__":
    main()
