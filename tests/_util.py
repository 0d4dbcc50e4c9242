"""Helpers shared by the tests: fresh inputs, poisoned outputs, tolerances, sm_90 static compiles."""
import json
import os
import re
import subprocess
import sys

import torch

# The repository root (tests/_util.py sits one level below it): cwd / PYTHONPATH of subprocesses.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Norm-wise bound on ||out - ref|| / ||ref|| against the float64 reference.
# The inputs are exact in float64, accumulation is fp32 (error ~K * 2**-24,
# negligible at test sizes), so the error is the final rounding to out_dtype:
# at most one half-ulp per element, i.e. 2**-9 (bf16), 2**-12 (fp16), 2**-25
# (fp32) relative. The bounds allow 2x that plus fp32 accumulation slack.
TOL = {torch.bfloat16: 2**-8, torch.float16: 2**-10, torch.float32: 2e-6}


def randn(*shape, dtype, device="cpu", seed=None):
    g = torch.Generator(device="cpu")
    g.manual_seed(torch.seed() if seed is None else seed)
    return torch.randn(*shape, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)


def gemm_launches(launches) -> int:
    """Launches counted in `launches` (launcher.LAUNCHES) other than the operand copies an unaligned K takes first
    (kernels/triton/pad.py: ops/dispatch.py copies x and w whose rows TMA cannot address)."""
    return sum(v for k, v in launches.items() if k != "pad_rows_kernel")


def assert_gluon_or_fallback(launches, before: dict, gluon: str, cfg: dict, has_bias: bool, activation: str,
                             out_dtype: str = "bf16", scale: str = "none"):
    """One launch since `before` (a copy of launcher.LAUNCHES): of `gluon`, or, where the installed Triton's budget
    (kernels/_budgets.py) passes that kernel over for this fused epilogue with `cfg` (Triton >= 3.7: full-accumulator
    tiles spill under some gelu / silu epilogues; >= 3.9: the fp8 kernel's cooperative layout, `scale` "rowcol"), of a
    Triton-tier kernel (the same config; TMA or pointer as ops/dispatch.py's own rules take it)."""
    from gemmkit.kernels import _budgets
    from gemmkit.ops import dispatch as D

    triton_tier = (D.TRITON_POINTER, D.TRITON_TMA, D.BATCHED_POINTER, D.BATCHED_TMA)
    launched = {k: v - before.get(k, 0) for k, v in launches.items() if v != before.get(k, 0)}
    why = _budgets.gluon_epilogue_unsupported(gluon, cfg, out_dtype, has_bias, activation, scale)
    if why is None:
        assert launched == {gluon: 1}, launched
    else:
        assert len(launched) == 1 and next(iter(launched)) in triton_tier and sum(launched.values()) == 1, \
            (why, launched)


def poisoned(shape, dtype, device="cpu"):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def dispatch_copies(choice) -> int:
    """The pad_rows_kernel launches a dense call of dispatch Choice `choice` makes: x's copy (pad_k, pad_m or its
    pitch), w's (pad_k's where it copies w, pad_n or its pitch) and y's out of its workspace (pitch_y)."""
    return (bool(choice.pad_k or choice.pad_m or choice.pitch_x) + bool(choice.pad_k and choice.pad_k_w or choice.pad_n
                                                                        or choice.pitch_w) + bool(choice.pitch_y))


def untouched_empty(numel: int, dtype, device="cpu"):
    """torch.empty(numel) whose pages stay untouched (a CPU buffer of GiBs that costs only the pages its few real
    elements sit on): conftest's deterministic mode would fill every element of it (8.4 GiB resident for
    test_large_offsets.py). The caller writes every element it reads."""
    import torch.utils.deterministic as det

    fill, det.fill_uninitialized_memory = det.fill_uninitialized_memory, False
    try:
        return torch.empty(numel, dtype=dtype, device=device)
    finally:
        det.fill_uninitialized_memory = fill

# The size below which a result may come out as zero, which no relative bound covers: for fp16, half its smallest
# subnormal (a single silu(-20) ~ -4e-8 is 0 in fp16); for bf16 and fp32, whose subnormals are fp32's, the smallest
# fp32 normal times 2**7: the kernels compute the epilogue in fp32, whose subnormal values flush to zero (the GPU's
# flush-to-zero arithmetic; the activations' exp overflowing in 1 / (1 + exp(-z)) first), and a sigmoid under the
# smallest normal still multiplies the pre-activation x: gelu_tanh(x) = x sigmoid(2u) is a normal bf16 number at
# x ~ -10.3 (1.6e-38) where sigmoid(2u) is not, silu(x) = x sigmoid(x) up to x ~ -90 (a 1 x 1 gelu_tanh result of
# -1.59e-38 came out as 0; one of 5.4e-41 before it).
UNDERFLOW = {torch.bfloat16: 2.0**-119, torch.float16: 2.0**-25, torch.float32: 2.0**-119}


def within_bound(out, ref, out_dtype):
    """(ok, message): ||out - ref|| <= TOL * ||ref|| + UNDERFLOW * sqrt(numel), in float64; NaN never passes."""
    return _norm_within(out.detach().to("cpu", torch.float64), ref.detach().to("cpu", torch.float64), out_dtype,
                        TOL[out_dtype])


def _norm_within(o, r, out_dtype, tol):
    """(ok, message): ||o - r|| <= tol * ||r|| + UNDERFLOW * sqrt(numel) for float64 o, r on one device; NaN never
    passes."""
    if not torch.isfinite(o).all():
        return False, "non-finite output (an element never written?)"
    diff, norm = (o - r).norm().item(), r.norm().item()
    bound = tol * norm + UNDERFLOW[out_dtype] * r.numel() ** 0.5
    return diff <= bound, (f"||out - ref|| = {diff:.3g} > {bound:.3g} (||ref|| = {norm:.3g}, "
                           f"rel {diff / max(norm, 1e-300):.3g})")


def _elements_out(bad, o, r, detail) -> str:
    """The message of a per-element check: how many of the `bad` mask's elements, the first with its output and
    reference, and `detail(index)`, what the bound was made of there."""
    where = bad.nonzero()
    first = tuple(where[0].tolist())
    return (f"{where.shape[0]} of {r.numel()} elements out of bounds, first at {list(first)}: {o[first].item()} vs "
            f"{r[first].item()} ({detail(first)})")


# Half a unit in the last place of each output dtype: the per-element bound's relative part
HALF_ULP = {torch.bfloat16: 2**-9, torch.float16: 2**-12, torch.float32: 2**-24}


def within_every_element(out, ref, out_dtype, k=0):
    """(ok, message): every element within 2 half-ulps of out_dtype of its float64 reference, plus 2**-16 of the
    reference's rms times max(1, k / 2048) for k-long dot products (the fp32 accumulation's error and the output's
    rounding). A norm-wise bound over a large output would pass one wrong tile or row; this one does not: on
    unit-variance inputs a missing 16-wide K step is off by ~4, while the accumulation part at k = 14336 is ~0.013.

    The accumulation part grows with k because tensor cores add into the fp32 accumulator with truncation, not
    round-to-nearest (Fasi et al. 2021 measured this on earlier NVIDIA tensor cores). Simulated on 16-product steps
    at k = 14336, round-toward-zero accumulation errs up to 2**-13.4 rms and round-to-nearest up to 2**-17.5. The H100
    (2026-12-05, swap-AB 64 x 4096 x 14336) erred up to 2**-15.4 rms: 2**-16 rms alone failed 9-17 of 262144 elements
    there. NaN never passes."""
    o, r = out.detach().to("cpu", torch.float64), ref.detach().to("cpu", torch.float64)
    if not torch.isfinite(o).all():
        return False, "non-finite output (an element never written?)"
    rms = r.pow(2).mean().sqrt().item() if r.numel() else 0.0
    acc = 2**-16 * rms * max(1.0, k / 2048)
    bad = (o - r).abs() > 2 * HALF_ULP[out_dtype] * r.abs() + acc + 1e-30
    if bad.any():
        return False, _elements_out(bad, o, r, lambda i: f"rms {rms:.3g}, k {k}")
    return True, ""


def q8(*shape, dtype, device="cpu"):
    """Fresh random 8-bit operands spread over the format (int8: every value; fp8: normal numbers
    and subnormals), for the 8-bit GEMM tests."""
    if dtype == torch.int8:
        g = torch.Generator().manual_seed(torch.seed())
        return torch.randint(-128, 128, shape, generator=g, dtype=torch.int8).to(device)
    return (randn(*shape, dtype=torch.float32) * 8).to(device=device, dtype=dtype)


def scales(*shape, device="cpu"):
    """Fresh positive fp32 scales of a size that keeps 8-bit products in range."""
    return ((randn(*shape, dtype=torch.float32).abs() + 0.25) / 64).to(device)


def fp8_rows_with_nan_gaps(N: int, K: int, gap: int, device="cpu"):
    """An fp8 w (N, K) that is a view of rows of K + gap elements whose last `gap` hold NaN (e4m3fn has no inf): a
    kernel that reads past a row's K elements into its sums makes NaN outputs."""
    full = q8(N, K + gap, dtype=torch.float8_e4m3fn, device=device)
    full.view(torch.uint8)[:, K:] = 0x7F  # NaN
    return full[:, :K]


def a8w8_launched(x, w, xs, ws, bias=None, out_dtype=torch.bfloat16):
    """gemm_a8w8(x, w, xs, ws, bias) into a poisoned output, every element within the float64 reference's bound;
    returns the kernels it launched (a Counter), for the caller to check the ones its path must take."""
    from gemmkit import launcher
    from gemmkit.ops.gemm_a8w8 import gemm_a8w8
    from gemmkit.reference import gemm_a8w8_ref

    before = launcher.LAUNCHES.copy()
    y = gemm_a8w8(x, w, xs, ws, bias, out=poisoned((x.shape[0], w.shape[0]), out_dtype))
    launched = launcher.LAUNCHES - before
    ok, msg = within_bound(y, gemm_a8w8_ref(x, w, xs, ws, bias), out_dtype)
    assert ok, msg
    return launched


# ----------------------------------------------------------------------------- sm_90 static compiles

# The child of compile_sm90_cases. Static compiles need Triton's JIT objects, which an interpreter
# process (TRITON_INTERPRET=1, set by conftest.py on CPU machines) lacks, hence a fresh process.
# argv[1]: JSON [module names (one per case), cases, {metric: PTX text to count}].
_COMPILE_SM90 = """
import importlib, json, sys
from gemmkit import arch
from gemmkit.isa import compile_static, resources
from gemmkit.isa.promises import evaluate
modules, cases, ptx_counts = json.loads(sys.argv[1])
t = arch.ARCHS["sm_90"]
out = []
for name, case in zip(modules, cases):
    s = importlib.import_module(name).isa_spec(case)
    c = compile_static(s["kernel"], s["signature"], s["constexprs"], t, s["options"], s["divisible"])
    m = resources(c, t, s["block"])
    m["smem_bound"] = s["smem_bound"]
    for key, text in ptx_counts.items():
        m[key] = c.asm["ptx"].count(text)
    out.append({"metrics": m, "promises": evaluate(s["promises"], m, case["config"], t)})
print(json.dumps(out))
"""


def compile_sm90_cases(module, cases, ptx_counts=None, timeout=300):
    """Compile `module.isa_spec(case)` for sm_90, for each case, in one subprocess without TRITON_INTERPRET.

    module: a module or its name (every case), or a list of them (one per case). ptx_counts:
    {metric name: text}, each counted in the PTX and added to the metrics. Returns, per case,
    {"metrics": resources(...) + smem_bound, "promises": evaluate(isa_spec's promises, ...)}.
    """
    mods = list(module) if isinstance(module, (list, tuple)) else [module] * len(cases)
    names = [m if isinstance(m, str) else m.__name__ for m in mods]
    assert len(names) == len(cases), (len(names), len(cases))
    env = dict(os.environ, TRITON_INTERPRET="0")
    r = subprocess.run([sys.executable, "-c", _COMPILE_SM90, json.dumps([names, cases, ptx_counts or {}])], env=env,
                       capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def broken_promises(res):
    """The promises a compile_sm90_cases result breaks, one line each."""
    return [f"{p['promise']}: {p['check']} ({p['detail']})" for p in res["promises"] if not p["ok"]]


# ----------------------------------------------------------------------------- GPU tests of the dense Gluon kernels

def gpu_target(cus=None):
    """The GPU's target; with `cus`, a persistent grid of that many CTAs (many tiles per CTA)."""
    from gemmkit import arch

    t = arch.current()
    return t.with_cus(cus) if cus else t


def launch_dense(kernel_module, x, w, bias, act, out_dtype, cfg, cus):
    """y = act(x @ w.T + bias) through a dense Hopper Gluon kernel's `launch` (hopper_pingpong, hopper_coop)
    into a NaN-poisoned output, synchronized."""
    y = poisoned((x.shape[0], w.shape[0]), out_dtype or x.dtype, x.device)
    kernel_module.launch(x, w, bias, y, act, cfg, gpu_target(cus))
    torch.cuda.synchronize()
    return y


def check_served_tail_split(M, N, K, launches):
    """gemm_a16w16 on fresh x, w of M x N x K, served by the op (GPU tests of a tail split the rule takes: the caller
    asserts which kernel serves it): the tail reduce runs, every element checked, a second call bitwise equal, and
    the same call right under CUDA-graph replay (`check_a16w16_graph_replays`)."""
    import gemmkit

    x, w = randn(M, K, dtype=torch.bfloat16, device="cuda"), randn(N, K, dtype=torch.bfloat16, device="cuda")
    before = launches["tail_reduce_kernel"]
    y = gemmkit.gemm_a16w16(x, w)
    torch.cuda.synchronize()
    assert launches["tail_reduce_kernel"] > before
    check_a16w16(y, x, w)
    assert torch.equal(gemmkit.gemm_a16w16(x, w), y)
    check_a16w16_graph_replays(M, N, K, None)


def check_a16w16_graph_replays(M, N, K, config, replays=3):
    """gemm_a16w16(x, w, out=out, config=config) captured once in a CUDA graph (compiled outside the capture),
    then replayed on fresh x with the output poisoned before each replay, every replay checked (GPU tests)."""
    import gemmkit

    x, w = randn(M, K, dtype=torch.bfloat16, device="cuda"), randn(N, K, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    gemmkit.gemm_a16w16(x, w, out=out, config=config)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        gemmkit.gemm_a16w16(x, w, out=out, config=config)
    for _ in range(replays):
        x.copy_(randn(M, K, dtype=torch.bfloat16, device="cuda"))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        check_a16w16(out, x, w)


def check_a16w16(y, x, w, bias=None, act="none"):
    """y within the norm-wise bound of the float64 reference act(x @ w.T + bias), and every element within its own
    (`within_every_element`)."""
    from gemmkit.reference import gemm_a16w16_ref

    ref = gemm_a16w16_ref(x, w, bias, act)
    ok, msg = within_bound(y, ref, y.dtype)
    assert ok, msg
    ok, msg = within_every_element(y, ref, y.dtype, x.shape[-1])
    assert ok, msg


# The largest slope of the gated GEMM's activations (gelu's 1.129 near x = 2.4, gelu_tanh's alike, silu's 1.0998,
# relu's 1): an error e in the gate moves act(gate) by at most ACT_SLOPE * e.
ACT_SLOPE = 1.13
# The fp32 epilogue's own error in act(g) * u, relative: its exp / erfc fits (kernels/triton/_epilogue.py: erfc's
# under 1.2e-7) and a few fp32 roundings. Far under bf16's and fp16's half-ulp; it matters for an fp32 h.
GATED_EPILOGUE_REL = 2**-20


def check_gated(h, x, w, activation="silu", norm_tol=None):
    """h of the gated GEMM, act(x Wg.T) * (x Wu.T) with w = [Wg; Wu], against the float64 reference computed on h's
    device: norm-wise within `norm_tol` (default TOL of h's dtype: `within_bound`'s), and every element within 2
    half-ulps of h's dtype plus GATED_EPILOGUE_REL of it plus the fp32 accumulation's part carried through the
    activation. With e = 2**-16 rms(x w.T) max(1, K / 2048) on each of g and u (`within_every_element`'s part of a
    GEMM's output), |act(g + e_g) (u + e_u) - act(g) u| <= ACT_SLOPE e |u| + e |act(g)| + ACT_SLOPE e**2. At
    K = 4096 a wrong element of unit-variance operands is ~10**4 times over that part. NaN never passes."""
    from gemmkit.reference import activation_ref

    I = w.shape[0] // 2
    gu = x.to(h.device, torch.float64) @ w.to(h.device, torch.float64).T
    g, u = gu[:, :I], gu[:, I:]
    ag = activation_ref(g, activation)
    ref = ag * u
    o = h.detach().to(torch.float64)
    ok, msg = _norm_within(o, ref, h.dtype, TOL[h.dtype] if norm_tol is None else norm_tol)
    assert ok, msg
    rms = gu.pow(2).mean().sqrt().item() if gu.numel() else 0.0
    e = 2**-16 * rms * max(1.0, x.shape[-1] / 2048)
    bound = ((2 * HALF_ULP[h.dtype] + GATED_EPILOGUE_REL) * ref.abs() + ACT_SLOPE * e * u.abs() + e * ag.abs()
             + ACT_SLOPE * e * e + UNDERFLOW[h.dtype])
    bad = (o - ref).abs() > bound
    assert not bad.any(), _elements_out(bad, o, ref, lambda i: f"g {g[i].item():.4g}, u {u[i].item():.4g}, e {e:.3g}")


# The 8-bit GEMMs' per-element accumulation part, relative to the element's sum of magnitudes (`check_8bit`'s mag).
# int8: the int32 sums are exact; the fp32 epilogue (the sum to fp32, two scales, a bias) rounds about four times,
# 2**-24 each. fp8: the tensor cores add each block of up to 128 products (the kernels add a block into the fp32
# accumulator before the next: kernels/triton/_mainloop.py PROMOTE_K, kernels/gluon/hopper_fp8_mainloop.py) keeping
# about 14 bits (DeepSeek-V3's report, H800), so each block errs by a few 2**-14 of its magnitude at most.
ACC_8BIT = {torch.float8_e4m3fn: 2**-11, torch.int8: 2**-21}


def check_8bit(y, x, w, xs, ws, bias=None, block=None, norm_tol=None) -> float:
    """y of gemm_a8w8 (`block` None: xs one scale per row of x, ws one per row of w) or gemm_a8w8_blockscale
    (`block` (bn, bk): xs one per (1, bk) of x, ws one per (bn, bk) of w) against the float64 reference, computed
    on y's device (products of 8-bit values and fp32 scales are exact there): norm-wise within `norm_tol` (default
    TOL of y's dtype: `within_bound`'s), and every element within 2 half-ulps of y's dtype of its reference plus
    ACC_8BIT[x.dtype] of mag = sum over k of |x_k w_k| times their scales, plus |bias|. Unit-variance sums at
    K = 8192 put a missing 128-product block ~4x over that bound and a wrong element ~35x. NaN never passes. Returns
    the largest (|y - ref| - rounding part) / mag, the accumulation error seen, for the tests to report."""
    from gemmkit.reference import expand_block_scales

    dev = y.device
    xd, wd = x.to(dev, torch.float64), w.to(dev, torch.float64)
    xs, ws = xs.to(dev, torch.float64), ws.to(dev, torch.float64)
    if block is None:
        xs, ws = xs.reshape(-1, 1), ws.reshape(-1, 1)
    else:
        xs, ws = expand_block_scales(xs, (1, block[1]), x.shape), expand_block_scales(ws, block, w.shape)
    ref = (xd * xs) @ (wd * ws).T
    mag = (xd.abs() * xs.abs()) @ (wd.abs() * ws.abs()).T
    if bias is not None:
        ref, mag = ref + bias.to(dev, torch.float64), mag + bias.to(dev, torch.float64).abs()
    o = y.detach().to(torch.float64)
    ok, msg = _norm_within(o, ref, y.dtype, TOL[y.dtype] if norm_tol is None else norm_tol)
    assert ok, msg
    over = (o - ref).abs() - 2 * HALF_ULP[y.dtype] * ref.abs()
    bound = ACC_8BIT[x.dtype] * mag + UNDERFLOW[y.dtype]
    share = over / mag.clamp_min(1e-300)
    bad = over > bound
    assert not bad.any(), _elements_out(bad, o, ref, lambda i: f"mag {mag[i].item():.4g}, worst accumulation share "
                                                               f"{share.max().item():.3g}")
    return max(0.0, share.max().item()) if ref.numel() else 0.0


# ----------------------------------------------------------------------------- compute-sanitizer (GPU tests)

def _sanitizer_exe():
    import shutil

    for cand in (shutil.which("compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer"):
        if cand and os.path.exists(cand):
            return cand
    return None


def dense_sanitize_script(module: str, configs, cases, launch_args: str = "", w_t: bool = False) -> str:
    """The script `sanitize` runs for a dense Gluon kernel (kernels/gluon/<module>.py `launch`): every config
    of `configs` on every (cus, (M, N, K)) of `cases` (a grid of `cus` persistent CTAs), bias + silu, the
    output poisoned with NaN, checked against fp32. `launch_args`: more keyword arguments of `launch`
    (", tail=True"); `w_t`: w transposed in memory (the (K, N) storage's W.t())."""
    w_new = "torch.randn(K, N, device=\"cuda\", dtype=torch.bfloat16).t()" if w_t else \
        "torch.randn(N, K, device=\"cuda\", dtype=torch.bfloat16)"
    return f"""
import torch
from gemmkit import arch
from gemmkit.kernels.gluon.{module} import launch
t = arch.current()
for cfg in {list(configs)!r}:
    for cus, (M, N, K) in {list(cases)!r}:
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = {w_new}
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        y = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        launch(x, w, b, y, "silu", cfg, t.with_cus(cus){launch_args})
        torch.cuda.synchronize()
        ref = torch.nn.functional.silu(x.float() @ w.float().T + b.float())
        assert ((y.float() - ref).norm() / ref.norm()).item() < 2**-8
print("sanitized run done")
"""


# Triton >= 3.8 loads every kernel by first asking the driver for oversized shared memory
# (cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_SHARED_MEMORY_MODE), backends/nvidia/driver.c load_binary) and, where the
# driver refuses it (580 drivers: CUDA_ERROR_INVALID_VALUE), sets the dynamic shared memory the older way. The refused
# probe is an API error to compute-sanitizer, one per kernel loaded, under a Python frame of Triton's loader.
_LOADER_PROBE = ("CUDA_ERROR_INVALID_VALUE", "cuFuncSetAttribute")
_LOADER_FRAMES = ("loadBinary", "_init_handles")


def sanitizer_errors(out: str) -> list:
    """The error records of a compute-sanitizer report `out` other than Triton's loader probe (above), each as its
    text; raises AssertionError where the report has no ERROR SUMMARY or its count is not the records found."""
    records, cur = [], None
    for line in out.splitlines():
        if not line.startswith("========="):
            cur = None
            continue
        body = line[len("========="):]
        if not body.strip():
            cur = None
        elif body.startswith("  "):  # a record's detail (backtrace frames)
            if cur is not None:
                cur.append(body.strip())
        elif not body.strip().startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY")):
            cur = [body.strip()]
            records.append(cur)
    summary = re.findall(r"ERROR SUMMARY: (\d+) error", out)
    assert summary, "no ERROR SUMMARY in the report:\n" + out[-3000:]
    assert int(summary[-1]) == len(records), f"ERROR SUMMARY {summary[-1]} but {len(records)} records:\n{out[-4000:]}"

    def probe(rec):
        return all(k in rec[0] for k in _LOADER_PROBE) and any(f in r for r in rec[1:] for f in _LOADER_FRAMES)
    return ["\n".join(r) for r in records if not probe(r)]


def assert_sanitizer_clean(out: str):
    """No error in a compute-sanitizer report but Triton's loader probe (`sanitizer_errors`)."""
    errors = sanitizer_errors(out)
    assert not errors, f"{len(errors)} errors:\n" + "\n\n".join(errors)[:4000]


def sanitize(tool, script, *args, timeout=600):
    """Run `python -c script *args` under `compute-sanitizer --tool tool` (repo root on PYTHONPATH) and return
    its output; the script must print "sanitized run done" at its end (asserted, with the exit status)."""
    exe = _sanitizer_exe()
    assert exe, "compute-sanitizer not found (it is on the H200 image)"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([exe, "--tool", tool, sys.executable, "-c", script, *args],
                       capture_output=True, text=True, env=env, timeout=timeout)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "sanitized run done" in out, out[-4000:]
    return out
