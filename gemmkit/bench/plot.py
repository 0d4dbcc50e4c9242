"""`gemmkit bench --plot`: TFLOP/s against M per layer, gemmkit vs the vendor library, under the roofline.

The roof for a shape is min(dense peak, arithmetic intensity x copy bandwidth): the
memory roof binds at small M (decode), the compute roof at large M. The dense peak is
the datasheet figure from gemmkit.arch; the copy bandwidth is a measurement (default
4.3 TB/s, this H200's device-to-device copy).
"""
from __future__ import annotations


def plot_results(result: dict, path: str, copy_gbps: float = 4300.0):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .. import arch as _arch

    peak = _arch.get(result.get("arch", "sm_90")).peak_tflops["bf16"]
    layers = {}
    for r in result["rows"]:
        layers.setdefault((r.get("label", ""), r["N"], r["K"]), []).append(r)
    layers = {k: sorted(v, key=lambda r: r["M"]) for k, v in layers.items() if len(v) > 1}
    if not layers:
        raise ValueError("plot: needs rows with several M per layer (use --model or the default suite)")
    cols = min(4, len(layers))
    rows = -(-len(layers) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax, ((label, N, K), rs) in zip(axes.flat, layers.items()):
        ms = [r["M"] for r in rs]
        roof = [min(peak, 2 * m * N * K / ((m * K + N * K + m * N) * 2) * copy_gbps / 1e3) for m in ms]
        ax.plot(ms, roof, "k:", lw=1, label="roof (peak, copy BW)")
        ax.plot(ms, [r["ref_tflops"] for r in rs], "s-", ms=3, label="vendor")
        ax.plot(ms, [r["tflops"] for r in rs], "o-", ms=3, label="gemmkit")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{label}\nN={N} K={K}", fontsize=8)
        ax.set_xlabel("M", fontsize=8)
        ax.set_ylabel("TFLOP/s", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", alpha=0.2)
    for ax in list(axes.flat)[len(layers):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"{result.get('device', '')} {result.get('date', '')} (git {str(result.get('git_sha', ''))[:8]}), "
                 f"{result['rows'][0].get('timing', '')} timing; ratio = vendor ms / gemmkit ms", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
