"""End to end: Hugging Face transformers models built from their configs (random weights, nothing downloaded), the torch
bf16 model against the same model with its linear layers on gemmkit (gemmkit.nn.convert) or on torch's own fp8.

Models (--models): llama3-8b (Llama-3-8B's config: hidden 4096, intermediate 14336, 32 heads, 8 KV heads, 32 layers,
vocab 128256), qwen2.5-7b (Qwen2.5-7B's: hidden 3584, intermediate 18944, 28 heads, 4 KV heads, 28 layers, vocab
152064, q / k / v biases), mistral-7b; --layers N keeps the first N decoder layers (time, memory).

Schemes (--schemes), each a deep copy of the bf16 model converted in place; lm_head stays torch bf16 in every scheme
(as fp8 serving keeps it) unless --convert-lm-head:
    torch_bf16            the model as built: the baseline of every row
    gemmkit_bf16          gemmkit.nn.convert(model, "bf16")                      gemm_a16w16
    gemmkit_bf16_fused    ... "bf16", fuse_mlp=True: gate/up/down in one ffn_gated call per layer
    gemmkit_fp8           ... "fp8": per-token dynamic activations x per-channel weights, gemm_a8w8
    gemmkit_fp8_block     ... "fp8_block": 1x128 activations x 128x128 weights, gemm_a8w8_blockscale
    gemmkit_fp8_fused, gemmkit_fp8_block_fused   ... with fuse_mlp=True: QuantGatedMLP, the MLP's act * mul fused
                          into the down projection's quantization (one pass over the gate_up output)
    torch_fp8_rowwise     TorchFp8Linear: torch._scaled_mm rowwise, activations quantized per token in torch ops
    torch_fp8_blockwise   TorchFp8Linear: torch._scaled_mm with 1x128 / 128x128 block scales (torch >= 2.9, CUDA
                          >= 12.9, sm_90), activations quantized per 1x128 in torch ops

Phases: prefill (--prefill 1x2048,8x512: batch x tokens, one forward without a KV cache, logits of the last position
as serving computes them) and decode (--decode-batch 1,16,64: one step of one new token per sequence after a prefill
of --context tokens into a StaticCache; each timed step rewrites the same position, so it is repeatable and capturable).
Modes (--modes): eager calls, and one CUDA graph of the call replayed (--modes eager,graph). Each timing is the median
of --prefill-iters / --decode-iters calls after --warmup calls, with CUDA events around every call. An eager call is
host-bound, and the host's state drifts over a run (the first H200 run had torch_bf16's eager decode step at 20.6 ms
for Llama-3-8B and 12.5 ms for the like-sized Qwen2.5-7B): an eager row's baseline is the torch_bf16 model timed again
beside it, the two alternated EAGER_ROUNDS times (medians of each), its first timing kept as baseline_ms_first; the
row also keeps each round's paired ratio (speedup_rounds) and their median (speedup_paired), which a drift of the
host slower than one round does not move.

Accuracy, per (model, scheme, phase, batch): the logits of an untimed eager call against the bf16 model's on the same
tokens (prefill: every position; decode: the step), relative error ||l - l_bf16|| / ||l_bf16|| and top-1 agreement;
graph rows also carry the graph's output against the same call's eager output (graph_vs_eager_rel_err: 0 where the
replay runs the eager call's kernels; in a 2-layer check on the H200 mostly 0, 6e-4 to 6e-2 for prefill and a few
decode rows, every scheme including torch_bf16, the larger values with fp8, whose rounding amplifies a small upstream
difference: some kernel inside the capture takes another algorithm than the eager call, not investigated further; a
wrong replay would be O(1)). With random weights the logits are nearly flat, so the relative error compares schemes
well while top-1 agreement is a noisy measure.

Output (--json, default benchmarks/results/<gpu>/e2e.json): {"device", "date", "torch", "triton", "transformers",
"cuda", "git_sha" (GEMMKIT_GIT_SHA or git), "method", "config", "conversion" (per model and scheme: what was converted
or skipped), "rows": [...]}, one row per (model, scheme, phase, batch, mode): tokens_per_s, baseline_tokens_per_s,
speedup (tokens_per_s / baseline_tokens_per_s), ms, baseline_ms, logits_rel_err, top1_agree, plus seq (prefill tokens
per sequence, or the decode context); a case that raised has one row with mode "all" and "error" instead.

Usage (GPU; one model with all schemes, phases and modes takes many minutes at full depth: on a machine with a
per-command limit, run one model or a few schemes per command with --append; every run starts with torch_bf16, the
baseline of its rows):
    PYTHONPATH=. python benchmarks/e2e.py [--models llama3-8b,qwen2.5-7b] [--layers 32] [--json PATH]
    PYTHONPATH=. python benchmarks/e2e.py --models qwen2.5-7b --schemes torch_bf16,gemmkit_fp8 --append
CPU check of the whole script (tiny configs in Triton's interpreter, eager only, torch._scaled_mm emulated):
    PYTHONPATH=. python benchmarks/e2e.py --dry-run
"""
from __future__ import annotations

import argparse
import copy
import datetime
import inspect
import json
import os
import statistics
import sys
import time

import torch

# name: (family, config values). Real models' shapes; the weights are random.
MODELS = {
    "llama3-8b": ("llama", dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                num_key_value_heads=8, num_hidden_layers=32, vocab_size=128256, rms_norm_eps=1e-5,
                                max_position_embeddings=8192)),
    "qwen2.5-7b": ("qwen2", dict(hidden_size=3584, intermediate_size=18944, num_attention_heads=28,
                                 num_key_value_heads=4, num_hidden_layers=28, vocab_size=152064, rms_norm_eps=1e-6,
                                 max_position_embeddings=32768)),
    "mistral-7b": ("mistral", dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                   num_key_value_heads=8, num_hidden_layers=32, vocab_size=32768, rms_norm_eps=1e-5,
                                   max_position_embeddings=32768)),
}
# --dry-run: the same families at toy sizes (K multiples of 128 for torch's blockwise _scaled_mm)
TINY = dict(hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=2,
            vocab_size=96, max_position_embeddings=128)
SCHEMES = ["torch_bf16", "gemmkit_bf16", "gemmkit_bf16_fused", "gemmkit_fp8", "gemmkit_fp8_fused", "gemmkit_fp8_block",
           "gemmkit_fp8_block_fused", "torch_fp8_rowwise", "torch_fp8_blockwise"]
GEMMKIT = {"gemmkit_bf16": ("bf16", False), "gemmkit_bf16_fused": ("bf16", True), "gemmkit_fp8": ("fp8", False),
           "gemmkit_fp8_fused": ("fp8", True), "gemmkit_fp8_block": ("fp8_block", False),
           "gemmkit_fp8_block_fused": ("fp8_block", True)}
FP8 = torch.float8_e4m3fn
FP8_MAX = 448.0


# ----------------------------------------------------------------------------- torch's own fp8 linear

def _cdiv(a, b):
    return -(-a // b)


def scaled_mm(xq, w_t, scale_a, scale_b, out_dtype, blockwise):
    """torch._scaled_mm on a GPU; on the CPU (--dry-run) the same math in fp32 with the scales expanded, so the
    module's quantization and scale layouts still run."""
    if xq.device.type == "cuda":
        return torch._scaled_mm(xq, w_t, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype)
    if not blockwise:
        return ((xq.float() @ w_t.float()) * scale_a * scale_b).to(out_dtype)
    K, N = w_t.shape
    sa = scale_a.repeat_interleave(128, 1)[:, :K]
    sb = scale_b.repeat_interleave(128, 0)[:K].repeat_interleave(128, 1)[:, :N]
    return ((xq.float() * sa) @ (w_t.float() * sb)).to(out_dtype)


class TorchFp8Linear(torch.nn.Module):
    """nn.Linear on torch._scaled_mm (cuBLASLt), as a torch user writes it without gemmkit.

    rowwise:   weight fp8 per output channel (scale (1, N)); x quantized per token in torch ops (amax, divide,
               clamp, cast: a few elementwise kernels), scale (M, 1).
    blockwise: weight per 128 x 128 block, its scales K-block-major (K/128, N/128) with the K-block stride padded to
               4 (16 bytes), the layout cuBLASLt takes; x per 1 x 128, scales M-major (M, K/128) strides (1, M), with
               x's rows padded to a multiple of 4 (M = 1 is refused otherwise: see forward).
    The bias is added after the GEMM. Inference only."""

    def __init__(self, linear, mode):
        super().__init__()
        w = linear.weight.detach()
        N, K = w.shape
        self.mode, self.in_features, self.out_features = mode, K, N
        if mode == "rowwise":
            s = w.float().abs().amax(1, keepdim=True).clamp(min=1e-12) / FP8_MAX
            wq = (w.float() / s).clamp(-FP8_MAX, FP8_MAX).to(FP8)
            scale = s.view(1, N).contiguous()
        else:
            NB, KB = _cdiv(N, 128), _cdiv(K, 128)
            wp = torch.zeros(NB * 128, KB * 128, device=w.device, dtype=torch.float32)
            wp[:N, :K] = w.float()
            blocks = wp.view(NB, 128, KB, 128)
            s = blocks.abs().amax((1, 3)).clamp(min=1e-12) / FP8_MAX  # (NB, KB)
            wq = (blocks / s[:, None, :, None]).clamp(-FP8_MAX, FP8_MAX).view(NB * 128, KB * 128)[:N, :K]
            wq = wq.contiguous().to(FP8)
            padded = torch.zeros(NB, _cdiv(KB, 4) * 4, device=w.device, dtype=torch.float32)
            padded[:, :KB] = s
            scale = padded[:, :KB].t()  # (KB, NB), strides (1, L4)
        self.register_buffer("weight_t", wq.t())  # (K, N) column-major, as _scaled_mm takes mat2
        self.register_buffer("weight_scale", scale)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())

    @staticmethod
    def why_not(linear, mode):
        N, K = linear.weight.shape
        if K % 16 or N % 16:
            return f"torch._scaled_mm needs K and N multiples of 16, got ({N}, {K})"
        if mode == "blockwise" and K % 128:
            return f"the torch blockwise baseline quantizes x per 128 along K, got K = {K}"
        return None

    def forward(self, x):
        K, N = self.in_features, self.out_features
        x2 = x.reshape(-1, K)
        M = x2.shape[0]
        if self.mode == "rowwise":
            s = x2.abs().amax(-1, keepdim=True).float().clamp(min=1e-12) / FP8_MAX
            xq = (x2.float() / s).clamp(-FP8_MAX, FP8_MAX).to(FP8)
        else:
            # rows padded to a multiple of 4: the M-major scales' K-block stride (M) must be 16 bytes (cuBLASLt) and
            # torch checks it equals M, so M = 1 (decode) runs as 4 rows
            rows = _cdiv(M, 4) * 4
            xb = torch.nn.functional.pad(x2, (0, 0, 0, rows - M)).float().view(rows, K // 128, 128)
            s = xb.abs().amax(-1).clamp(min=1e-12) / FP8_MAX
            xq = (xb / s[..., None]).clamp(-FP8_MAX, FP8_MAX).to(FP8).view(rows, K)
            s = s.t().contiguous().t()  # M-major
        y = scaled_mm(xq, self.weight_t, s, self.weight_scale, x.dtype, self.mode == "blockwise")[:M]
        if self.bias is not None:
            y = y + self.bias
        return y.view(*x.shape[:-1], N)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, torch._scaled_mm {self.mode}"


def torch_fp8_convert(model, mode, accept):
    """Replace every nn.Linear the filter accepts by a TorchFp8Linear; {name: reason} of the ones left alone."""
    skipped = {}
    for name, module in list(model.named_modules()):
        if type(module) is not torch.nn.Linear or not accept(module, name):
            continue
        why = TorchFp8Linear.why_not(module, mode)
        if why:
            skipped[name] = why
            continue
        parent, _, attr = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, attr, TorchFp8Linear(module, mode))
    return skipped


# ----------------------------------------------------------------------------- models and calls

def build(name, layers, device, dry_run):
    import transformers

    family, values = MODELS[name]
    values = dict(TINY if dry_run else values)
    if layers:
        values["num_hidden_layers"] = layers
    cls, cfg_cls = {"llama": ("LlamaForCausalLM", "LlamaConfig"), "qwen2": ("Qwen2ForCausalLM", "Qwen2Config"),
                    "mistral": ("MistralForCausalLM", "MistralConfig")}[family]
    config = getattr(transformers, cfg_cls)(**values)
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = getattr(transformers, cls)(config)
    finally:
        torch.set_default_dtype(old)
    return model.to(torch.bfloat16).eval(), config


def convert(base, scheme, convert_lm_head):
    """(model, notes): a deep copy of `base` with the scheme's layers."""
    from gemmkit import nn as gnn

    accept = (lambda module, name: True) if convert_lm_head else (lambda module, name: name != "lm_head")
    if scheme == "torch_bf16":
        return base, ""
    model = copy.deepcopy(base)
    if scheme in GEMMKIT:
        kind, fuse = GEMMKIT[scheme]
        report = gnn.convert(model, kind, filter=accept, fuse_mlp=fuse)
        notes = "; ".join(f"{k}: {v}" for k, v in report.skipped.items())
        done = f"{len(report.converted)} converted, {len(report.fused)} fused"
        return model, done + (f"; skipped {notes}" if notes else "")
    skipped = torch_fp8_convert(model, scheme.removeprefix("torch_fp8_"), accept)
    return model, "; ".join(f"skipped {k}: {v}" for k, v in skipped.items())


class Caller:
    """The transformers keyword names of the installed release (past_key_values became cache in 5.2x)."""

    def __init__(self, model):
        params = inspect.signature(type(model).forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"
        self.keep = "logits_to_keep" in params

    def prefill(self, model, ids, last_only):
        kw = {"logits_to_keep": 1} if last_only and self.keep else {}
        logits = model(ids, use_cache=False, **kw).logits
        return logits[:, -1] if last_only else logits

    def new_cache(self, model, config, max_len):
        from transformers import StaticCache

        return StaticCache(config=config, max_cache_len=max_len)

    def fill(self, model, cache, ids):
        B, S = ids.shape
        model(ids, position_ids=torch.arange(S, device=ids.device).expand(B, S), use_cache=True,
              **{self.cache_kw: cache})

    def step(self, model, cache, tok, pos, context):
        """One decode step at position `context` (the cache's length is set back to it first: repeatable)."""
        for layer in getattr(cache, "layers", ()):
            length = getattr(layer, "cumulative_length", None)
            if isinstance(length, torch.Tensor):
                length.fill_(context)
        return model(tok, position_ids=pos, use_cache=True, **{self.cache_kw: cache}).logits[:, -1]


EAGER_ROUNDS = 5  # eager rows: the scheme's timing and the baseline's, alternated this many times (`interleaved_ms`)


def time_ms(fn, iters, warmup, cuda):
    """Median milliseconds of fn() over `iters` calls (CUDA events around each call on a GPU)."""
    for _ in range(warmup):
        fn()
    if not cuda:
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def graphed(fn, warmup):
    """(replay, output): fn captured once in a CUDA graph (warmed up on a side stream first)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    torch.cuda.synchronize()
    return graph.replay, out


def rel_err(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


def top1(a, b):
    return (a.argmax(-1) == b.argmax(-1)).float().mean().item()


# ----------------------------------------------------------------------------- the run

def cases(args):
    """(phase, batch, seq) of the run."""
    for item in filter(None, args.prefill.split(",")):
        b, s = (int(v) for v in item.lower().split("x"))
        yield "prefill", b, s
    for b in filter(None, args.decode_batch.split(",")):
        yield "decode", int(b), args.context


def run_model(name, args, device, rows, notes):
    cuda = device.type == "cuda"
    base, config = build(name, args.layers, device, args.dry_run)
    caller = Caller(base)
    vocab = config.vocab_size
    g = torch.Generator(device="cpu").manual_seed(1)
    inputs = {(phase, b, s): (torch.randint(0, vocab, (b, s), generator=g).to(device),
                              torch.randint(0, vocab, (b, 1), generator=g).to(device))
              for phase, b, s in cases(args)}
    baseline = {}  # (phase, batch, mode) -> ms ; (phase, batch) -> reference logits
    for scheme in args.schemes.split(","):
        t0 = time.perf_counter()
        model, note = convert(base, scheme, args.convert_lm_head)
        notes.setdefault(name, {})[scheme] = note
        print(f"# {name} {scheme}: converted in {time.perf_counter() - t0:.1f} s {note}", flush=True)
        with torch.inference_mode():
            for (phase, b, s), (ids, tok) in inputs.items():
                try:
                    run_case(name, scheme, model, config, caller, phase, b, s, ids, tok, args, cuda, baseline, rows,
                             base)
                except Exception as e:  # noqa: BLE001  (a case the vendor refuses: its row says so)
                    if scheme == "torch_bf16" or args.dry_run:
                        raise
                    why = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
                    rows.append({"model": name, "scheme": scheme, "phase": phase, "batch": b, "seq": s,
                                 "mode": "all", "error": why})
                    print(f"{name:11s} {scheme:20s} {phase:7s} {b:3d}x{s:<5d} FAILED {why}", flush=True)
                    if cuda:
                        torch.cuda.synchronize()
        if model is not base:
            del model
        if cuda:
            torch.cuda.empty_cache()
    del base


def case_call(caller, model, config, phase, s, ids, tok):
    """The timed call of one case on `model` (decode: its own StaticCache, filled with the context first)."""
    if phase == "prefill":
        return lambda: caller.prefill(model, ids, last_only=True)
    cache = caller.new_cache(model, config, s + 1)
    caller.fill(model, cache, ids)
    pos = torch.full((ids.shape[0], 1), s, device=ids.device, dtype=torch.long)
    return lambda: caller.step(model, cache, tok, pos, s)


def interleaved_ms(call, base_call, iters, warmup, cuda, rounds=EAGER_ROUNDS):
    """(ms, base_ms, round_ratios): medians of `rounds` alternating timings of the scheme's call and the
    baseline's, each `iters` calls, and each round's base / scheme ratio; eager calls are host-bound, so the two
    share one stretch of the host's state (the paired ratios: a drift slower than a round cancels in each)."""
    mine, base = [], []
    for r in range(rounds):
        base.append(time_ms(base_call, iters, warmup if r == 0 else 1, cuda))
        mine.append(time_ms(call, iters, warmup if r == 0 else 1, cuda))
    return statistics.median(mine), statistics.median(base), [b / m for b, m in zip(base, mine)]


def run_case(name, scheme, model, config, caller, phase, b, s, ids, tok, args, cuda, baseline, rows, base_model):
    call = case_call(caller, model, config, phase, s, ids, tok)
    if phase == "prefill":
        logits = caller.prefill(model, ids, last_only=False)
        tokens = b * s
        iters = args.prefill_iters
    else:
        logits = call()
        tokens = b
        iters = args.decode_iters
    ref = baseline.setdefault((phase, b), logits)
    err, agree = rel_err(logits, ref), top1(logits, ref)
    eager_out = call().clone()  # what the timed call returns, eagerly: the graph's output must equal it
    for mode in args.modes.split(","):
        extra = {}
        if mode == "eager" and model is not base_model:  # the baseline re-timed beside it (`interleaved_ms`)
            base_call = case_call(caller, base_model, config, phase, s, ids, tok)
            ms, same_window, ratios = interleaved_ms(call, base_call, iters, args.warmup, cuda)
            extra["baseline_ms_first"] = baseline[(phase, b, mode)]  # the torch_bf16 row's own timing
            extra["speedup_rounds"] = ratios  # each round's paired ratio
            extra["speedup_paired"] = statistics.median(ratios)
            baseline_ms = same_window
        elif mode == "eager":
            ms = time_ms(call, iters, args.warmup, cuda)
        else:
            replay, out = graphed(call, args.warmup)
            ms = time_ms(replay, iters, args.warmup, cuda)
            extra["graph_vs_eager_rel_err"] = rel_err(out, eager_out)
        base_ms = baseline.setdefault((phase, b, mode), ms)
        if "baseline_ms_first" in extra:
            base_ms = baseline_ms
        row = {"model": name, "scheme": scheme, "phase": phase, "batch": b, "seq": s, "mode": mode,
               "tokens_per_s": tokens / ms * 1e3, "baseline_tokens_per_s": tokens / base_ms * 1e3,
               "speedup": base_ms / ms, "ms": ms, "baseline_ms": base_ms, "logits_rel_err": err, "top1_agree": agree,
               **extra}
        rows.append(row)
        print(f"{name:11s} {scheme:20s} {phase:7s} {b:3d}x{s:<5d} {mode:5s} {ms:9.3f} ms "
              f"{row['tokens_per_s']:11.0f} tok/s "
              f"x{row['speedup']:.3f}  logits rel err {err:.2e}  top-1 {agree:.3f}"
              + (f"  graph vs eager {extra['graph_vs_eager_rel_err']:.1e}" if "graph_vs_eager_rel_err" in extra else ""),
              flush=True)


def stamp(device):
    import triton
    import transformers

    from gemmkit.bench import git_sha

    return {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu (dry run, interpreter)",
            "date": datetime.date.today().isoformat(), "torch": torch.__version__, "triton": triton.__version__,
            "transformers": transformers.__version__, "cuda": torch.version.cuda, "git_sha": git_sha()}


def row_key(row):
    return row["model"], row["scheme"], row["phase"], row["batch"], row["seq"], row["mode"]


def merged(path, result):
    """--append: the rows of `path` that this run did not measure, then this run's (stamps: this run's; the earlier
    stamps are kept under "earlier_runs")."""
    with open(path) as f:
        old = json.load(f)
    mine = {row_key(r) for r in result["rows"]}
    earlier = old.pop("earlier_runs", []) + [{k: v for k, v in old.items() if k != "rows"}]
    conversion = old.get("conversion", {})
    for model, schemes in result["conversion"].items():
        conversion[model] = {**conversion.get(model, {}), **schemes}
    rows = [r for r in old.get("rows", []) if row_key(r) not in mine] + result["rows"]
    return {**result, "conversion": conversion, "rows": rows, "earlier_runs": earlier}


def plot(result, path):
    """Speedup over the torch bf16 model under CUDA graphs, one panel per model: a bar per scheme for each phase x
    batch (the eager rows are host-bound and noisy on a shared host: not drawn)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["rows"] if r.get("mode") == "graph" and r["scheme"] != "torch_bf16"]
    models = sorted({r["model"] for r in rows})
    schemes = [s for s in SCHEMES if s != "torch_bf16" and any(r["scheme"] == s for r in rows)]
    fig, axes = plt.subplots(len(models), 1, figsize=(11, 3.2 * len(models)), squeeze=False)
    for ax, model in zip(axes[:, 0], models):
        cases = sorted({(r["phase"], r["batch"]) for r in rows if r["model"] == model}, key=lambda c: (c[0] != "prefill", c[1]))
        width = 0.8 / len(schemes)
        for i, scheme in enumerate(schemes):
            got = {(r["phase"], r["batch"]): r["speedup"] for r in rows if r["model"] == model and r["scheme"] == scheme}
            ax.bar([c + i * width for c in range(len(cases))], [got.get(c, 0) for c in cases], width, label=scheme)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks([c + 0.4 - width / 2 for c in range(len(cases))])
        ax.set_xticklabels([f"{p} x{b}" for p, b in cases])
        ax.set_ylabel("x torch bf16 (graph)")
        ax.set_title(f"{model} ({result.get('device', '')}, {result.get('date', '')}, git {result.get('git_sha', '')})")
    axes[0, 0].legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def default_json(device):
    name = torch.cuda.get_device_name(device).lower()
    gpu = next((g for g in ("h200", "h100", "mi355x", "mi300x") if g in name), name.replace(" ", "_"))
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", gpu, "e2e.json")


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--models", default="llama3-8b,qwen2.5-7b", help=f"comma list of {', '.join(MODELS)}")
    p.add_argument("--layers", type=int, default=0, help="decoder layers (0: the model's)")
    p.add_argument("--schemes", default=",".join(SCHEMES), help="comma list; torch_bf16 (the baseline) must come first")
    p.add_argument("--prefill", default="1x2048,8x512", help="batch x tokens, comma list")
    p.add_argument("--decode-batch", default="1,16,64")
    p.add_argument("--context", type=int, default=512, help="tokens in the KV cache before the timed decode step")
    p.add_argument("--modes", default="eager,graph")
    p.add_argument("--prefill-iters", type=int, default=10)
    p.add_argument("--decode-iters", type=int, default=50)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--convert-lm-head", action="store_true", help="convert lm_head too (default: torch bf16 in every "
                                                                  "scheme)")
    p.add_argument("--json", default=None, help="output (default benchmarks/results/<gpu>/e2e.json; none on --dry-run)")
    p.add_argument("--append", action="store_true", help="merge into an existing --json file (rows of the same model, "
                                                         "scheme, phase, batch, seq and mode are replaced)")
    p.add_argument("--dry-run", action="store_true", help="CPU: tiny configs in Triton's interpreter, eager only")
    p.add_argument("--plot", default=None, help="PNG: the graph-mode speedups of the written (or --plot-only) results")
    p.add_argument("--plot-only", default=None, metavar="JSON", help="draw --plot from this results file; run nothing")
    args = p.parse_args(argv)
    if args.schemes.split(",")[0] != "torch_bf16":
        p.error("--schemes: torch_bf16 (the baseline) must come first")
    for s in args.schemes.split(","):
        if s not in SCHEMES:
            p.error(f"--schemes: unknown {s!r} (expected {', '.join(SCHEMES)})")
    if args.dry_run:
        args.prefill, args.decode_batch, args.context = "1x16,2x8", "1,2", 8
        args.modes, args.prefill_iters, args.decode_iters, args.warmup = "eager", 1, 1, 0
    return args


def main(argv=None):
    args = parse(argv)
    if args.plot_only:
        with open(args.plot_only) as f:
            plot(json.load(f), args.plot or os.path.splitext(args.plot_only)[0] + ".png")
        return None
    if args.dry_run:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before gemmkit is imported (Triton decides at decoration)
        device = torch.device("cpu")
    else:
        if not torch.cuda.is_available():
            sys.exit("e2e.py: needs a CUDA GPU (or --dry-run for the CPU check)")
        device = torch.device("cuda")
    import gemmkit  # noqa: F401  (after TRITON_INTERPRET)

    rows, notes = [], {}
    for name in args.models.split(","):
        run_model(name, args, device, rows, notes)
    result = {**stamp(device),
              "method": "HF transformers models from their configs, random weights, bf16; lm_head torch bf16 in "
                        "every scheme" + (" (converted: --convert-lm-head)" if args.convert_lm_head else "") +
                        "; prefill: forward without KV cache, last-position logits; decode: one step after "
                        f"{args.context} cached tokens (StaticCache); median of CUDA-event-timed calls after warm-up; "
                        "graph: one CUDA graph of the call replayed; logits_rel_err / top1_agree: full logits of an "
                        "eager call against torch_bf16's on the same tokens",
              "config": {k: v for k, v in vars(args).items() if k not in ("json", "append")}, "conversion": notes,
              "rows": rows}
    path = args.json or (None if args.dry_run else default_json(device))
    if path and args.append and os.path.exists(path):
        result = merged(path, result)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {path}")
    if args.plot:
        plot(result, args.plot)
    return result


if __name__ == "__main__":
    main()
