"""Quantizers: fp32 scales from amax, q = round(x / scale) in the GEMMs' input formats.

    quant_rowwise_kernel   one scale per row of x (M, K). Per-token activations and
                           per-output-channel weights are the same computation (w is (N, K),
                           one scale per row); only the scale's layout, (M, 1) or (1, N), differs,
                           and the host decides it. fp8 or int8 out.
    quant_block_kernel     one scale per GROUP_M x BLOCK_K block: (1, 128) token groups of
                           activations, (128, 128) tiles of weights (DeepSeek's layouts). fp8 out.
                           Both take GATED: x is then a gated MLP's gate_up output h = [gate | up] (M, 2K), and
                           what they quantize is act(gate) * up (ACTIVATION, kernels/triton/_epilogue.py's),
                           computed in fp32 from h's values and rounded once, into q (M, K): the fp8 MLP's
                           activation and its quantization in one pass over h.
    mxfp4_quant_kernel     OCP MXFP4: one E8M0 scale per 32 elements of a row, two E2M1 codes per byte.
    mxfp4_dequant_kernel   its inverse, to fp32.

Scale rule (fp8 / int8), the same in the torch references of gemmkit/quant.py, so the two agree bit
for bit (every step is an exactly rounded fp32 operation):

    a     = min(max(amax, AMAX_FLOOR), AMAX_CEIL) all-zero rows/blocks -> finite positive scale, q = 0;
                                                  AMAX_CEIL = 2^127 keeps QMAX * scale finite (with
                                                  FLT_MAX, 127 * fl(FLT_MAX / 127) rounds to inf), so
                                                  |x| > 2^127 and inf saturate to +-QMAX * scale
    scale = a / QMAX                              (div_rn: IEEE division, not the approximate `/`)
    q     = cast(clamp(x / scale, -QMAX, QMAX))   RNE; int8 rounds half to even explicitly
    NaN anywhere in a row/block: scale = NaN and q = 0 there (so q * scale is NaN, visibly)

MXFP4 rule (OCP Microscaling Formats v1.0): X = floor(log2(amax)) - 2 (2 = emax of E2M1), read exactly
from amax's exponent bits and clamped to >= -127; scale byte = X + 127; code = RNE(x * 2^-X) on the
E2M1 grid {0, 0.5, 1, 1.5, 2, 3, 4, 6}, saturating at 6 (|x| * 2^-X lies in [0, 8); a power-of-two
multiply is exact). Byte i of a row holds element 2i in its low nibble and element 2i + 1 in its
high nibble (what tl.dot_scaled's "e2m1" and triton.tools.mxfp.MXFP4Tensor expect). A group with
a NaN gets scale byte 0xFF (E8M0's NaN) and codes 0; an inf saturates to +-6 at the largest scale.

    quant_rowwise_kernel: BLOCK_M rows per program, two passes over K (ONE_PASS: K <= BLOCK_K, one row in
    registers, read once)
              k0        k0 + BLOCK_K
        +-----+---------+-------------------+
        |     | x tile  |   ...             |  pass 1: amax = max |x| over the whole row -> scale
        |     | BLOCK_M |                   |  pass 2: reload each tile, q = x / scale, store
        +-----+---------+-------------------+

    quant_block_kernel: one BLOCK_M x BLOCK_K tile per program, BLOCK_M // GROUP_M scales
        +------------------+      GROUP_M = 1:   a scale per row of the tile (BLOCK_M = 32)
        | GROUP_M x BLOCK_K|      GROUP_M = 128: one scale for the tile (BLOCK_M = 128)
        +------------------+      tile (pid_m, pid_k) -> scale rows pid_m * (BLOCK_M // GROUP_M) + g,
        |       ...        |      scale column pid_k
        +------------------+

    mxfp4_quant_kernel: BLOCK_M x BLOCK_K of x -> BLOCK_M x BLOCK_K/2 bytes + BLOCK_M x BLOCK_K/32 scales
        x row:   | e0 e1 | e2 e3 | ... | e30 e31 | e32 ...      one scale per 32 elements
        byte:    |  b0   |  b1   | ... |   b15   |  b16 ...     b_i = code(e_2i) | code(e_2i+1) << 4

Constraints:
  - x: bf16, fp16 or fp32, any strides (2-D); q, scale and packed outputs are contiguous. GATED: x has 2K
    columns, gate in [0, K), up in [K, 2K) (one stride_xk for both); ACTIVATION one of _epilogue.ACTIVATIONS.
  - BLOCK_K a power of two; the rowwise kernel's ONE_PASS only with K <= BLOCK_K (it reads columns [0, BLOCK_K) once:
    gemmkit.quant.launch_params sets it); mxfp4 needs K % 32 == 0 and BLOCK_K % 32 == 0 (groups never straddle
    tiles); the block kernel needs BLOCK_M % GROUP_M == 0. Ragged last tiles are masked.
  - q's dtype comes from q_ptr: fp8e4nv (e4m3fn, sm_90 / gfx950), fp8e4b8 (e4m3fnuz, gfx942) or int8
    (IS_INT). QMAX is the format's largest finite value (448, 240, 127).
  - dequantized values below fp32's normal range (scale byte 0) may flush to zero on GPUs.
  - Offsets: rows int64; column offsets (cols * stride_xk, a scale column's offset) int32 unless
    INT64_OFFSETS (_offsets.py; the host sets it when a span reaches 2**31 elements). M, K < 2**31.
  - NaN: `_quantize` selects 0 for NaN quotients before the clamp, so the rule holds whether
    minimum / maximum drop NaN (GPUs) or propagate it (the interpreter's numpy).
"""
import triton
import triton.language as tl

from ._epilogue import activation
from ._offsets import wide

# Floor on amax (fp32): an all-zero row/block gets scale AMAX_FLOOR / QMAX, finite and positive.
AMAX_FLOOR = tl.constexpr(1e-10)
# Ceiling on amax: QMAX * (AMAX_CEIL / QMAX) stays below FLT_MAX after rounding, so q * scale is finite.
AMAX_CEIL = tl.constexpr(2.0**127)
FLT_MAX = tl.constexpr(3.4028234663852886e38)

# sm_90's "no spills" reads the local-memory loads and stores: Triton 3.7.1 gives mxfp4_quant_kernel an 8-byte stack
# frame there with none (`gemmkit isa` under 3.7.1; 3.6, 3.8 and 3.9 none; maxnreg 255 leaves it), no register spilled.
PROMISES = (
    {"promise": "no spills", "arch": "amd", "check": "spill_bytes == 0"},
    {"promise": "no spills (local-memory traffic)", "arch": "sm_90", "check": "counts['LDL'] + counts['STL'] == 0"},
    # fp8 stores converted by the hardware's packed instruction (not a software rounding sequence)
    {"promise": "fp8 by v_cvt_pk_fp8_f32", "arch": "gfx942", "when": "'fp8' in cfg['out']",
     "check": "counts['v_cvt_pk_fp8'] > 0"},
    {"promise": "fp8 by v_cvt_scalef32_pk_fp8_f32", "arch": "gfx950", "when": "'fp8' in cfg['out']",
     "check": "counts['v_cvt_scalef32_pk_fp8'] > 0"},
    {"promise": "fp8 by F2FP.SATFINITE.E4M3", "arch": "sm_90", "when": "'fp8' in cfg['out']",
     "check": "counts['F2FP_E4M3'] > 0"},
)


@triton.jit
def _scale_from_amax(amax, has_nan, QMAX: tl.constexpr):
    """fp32 scale = clamp(amax, AMAX_FLOOR, AMAX_CEIL) / QMAX, NaN where the row/block had a NaN.

    maximum/minimum ignore NaN on GPUs and propagate it in the interpreter; the explicit
    `has_nan` select makes both give the same answer."""
    a = tl.minimum(tl.maximum(amax, AMAX_FLOOR), AMAX_CEIL)
    scale = tl.math.div_rn(a, tl.full(a.shape, QMAX, tl.float32))
    return tl.where(has_nan, float("nan"), scale)


@triton.jit
def _round_half_even(v):
    """Round to the nearest integer, ties to even, for |v| < 2**22 (exact: v - floor(v) is exact)."""
    r = tl.floor(v)
    f = v - r
    odd = (r - 2.0 * tl.floor(r * 0.5)) == 1.0
    return r + ((f > 0.5) | ((f == 0.5) & odd)).to(tl.float32)


@triton.jit
def _quantize(x, scale, QMAX: tl.constexpr, IS_INT: tl.constexpr):
    """q = clamp(x / scale, -QMAX, QMAX) as fp32 values of the target grid (NaN -> 0); scale broadcast.

    NaN becomes 0 before the clamp: GPUs' maximum(NaN, -QMAX) is -QMAX (maxNum drops NaN), so a NaN
    left to the clamp would quantize to -QMAX there."""
    v = tl.math.div_rn(x, tl.broadcast_to(scale, x.shape))
    v = tl.where(v != v, 0.0, v)
    v = tl.minimum(tl.maximum(v, -QMAX), QMAX)
    if IS_INT:
        v = _round_half_even(v)
    return v


@triton.jit
def _load_input(x_rows, cols, mask, K, stride_xk, GATED: tl.constexpr, ACTIVATION: tl.constexpr,
                INT64_OFFSETS: tl.constexpr):
    """The values to quantize at (rows, cols), fp32: x's, or with GATED act(gate) * up of h = [gate | up] (the up
    half K columns to the right). Masked lanes are 0 (act(0) * 0 = 0 for every activation)."""
    ptrs = x_rows + wide(cols, INT64_OFFSETS)[None, :] * stride_xk
    x = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
    if GATED:
        up = tl.load(ptrs + wide(K, INT64_OFFSETS) * stride_xk, mask=mask, other=0.0).to(tl.float32)
        x = activation(x, ACTIVATION) * up
    return x


@triton.jit
def quant_rowwise_kernel(x_ptr, q_ptr, scale_ptr, M, K, stride_xm, stride_xk,
                         QMAX: tl.constexpr, IS_INT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
                         INT64_OFFSETS: tl.constexpr, GATED: tl.constexpr = False,
                         ACTIVATION: tl.constexpr = "none", ONE_PASS: tl.constexpr = False):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    x_rows = x_ptr + rows[:, None].to(tl.int64) * stride_xm
    q_rows = q_ptr + rows[:, None].to(tl.int64) * K
    if ONE_PASS:  # K <= BLOCK_K: the rows read once, kept in registers between the amax and the quantization
        cols = tl.arange(0, BLOCK_K)
        mask = row_ok[:, None] & (cols[None, :] < K)
        x = _load_input(x_rows, cols, mask, K, stride_xk, GATED, ACTIVATION, INT64_OFFSETS)
        scale = _scale_from_amax(tl.max(tl.abs(x), axis=1), tl.max((x != x).to(tl.int32), axis=1) > 0, QMAX)
        tl.store(scale_ptr + rows, scale, mask=row_ok)
        tl.store(q_rows + cols[None, :], _quantize(x, scale[:, None], QMAX, IS_INT).to(q_ptr.dtype.element_ty),
                 mask=mask)
        return
    # Pass 1: amax of each row (masked lanes read 0, which never raises a max of |x|).
    amax = tl.zeros((BLOCK_M,), tl.float32)
    nans = tl.zeros((BLOCK_M,), tl.int32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        mask = row_ok[:, None] & (cols[None, :] < K)
        x = _load_input(x_rows, cols, mask, K, stride_xk, GATED, ACTIVATION, INT64_OFFSETS)
        amax = tl.maximum(amax, tl.max(tl.abs(x), axis=1))
        nans = tl.maximum(nans, tl.max((x != x).to(tl.int32), axis=1))
    scale = _scale_from_amax(amax, nans > 0, QMAX)
    tl.store(scale_ptr + rows, scale, mask=row_ok)
    # Pass 2: quantize (the row was just read: the second read mostly hits L2).
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        mask = row_ok[:, None] & (cols[None, :] < K)
        x = _load_input(x_rows, cols, mask, K, stride_xk, GATED, ACTIVATION, INT64_OFFSETS)
        q = _quantize(x, scale[:, None], QMAX, IS_INT)
        tl.store(q_rows + cols[None, :], q.to(q_ptr.dtype.element_ty), mask=mask)


@triton.jit
def quant_block_kernel(x_ptr, q_ptr, scale_ptr, M, K, stride_xm, stride_xk, stride_sm, stride_sk,
                       QMAX: tl.constexpr, GROUP_M: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
                       INT64_OFFSETS: tl.constexpr, GATED: tl.constexpr = False, ACTIVATION: tl.constexpr = "none"):
    G: tl.constexpr = BLOCK_M // GROUP_M  # scale rows this tile owns
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = (rows[:, None] < M) & (cols[None, :] < K)
    x = _load_input(x_ptr + rows[:, None].to(tl.int64) * stride_xm, cols, mask, K, stride_xk, GATED, ACTIVATION,
                    INT64_OFFSETS)
    # amax per GROUP_M x BLOCK_K block: view the tile as (G, GROUP_M, BLOCK_K).
    amax = tl.max(tl.max(tl.reshape(tl.abs(x), (G, GROUP_M, BLOCK_K)), axis=2), axis=1)
    nans = tl.max(tl.max(tl.reshape((x != x).to(tl.int32), (G, GROUP_M, BLOCK_K)), axis=2), axis=1)
    scale = _scale_from_amax(amax, nans > 0, QMAX)
    s_rows = pid_m * G + tl.arange(0, G)
    tl.store(scale_ptr + wide(s_rows, INT64_OFFSETS) * stride_sm + wide(pid_k, INT64_OFFSETS) * stride_sk, scale,
             mask=s_rows < tl.cdiv(M, GROUP_M))
    # Back to one scale per row of the tile, then quantize.
    row_scale = tl.reshape(tl.broadcast_to(scale[:, None], (G, GROUP_M)), (BLOCK_M,))
    q = _quantize(x, row_scale[:, None], QMAX, False)
    tl.store(q_ptr + rows[:, None].to(tl.int64) * K + cols[None, :], q.to(q_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _e2m1_code(v, sign):
    """4-bit E2M1 code of v (|v| < 8 or inf), round half to even, saturating at 6.

    Thresholds are the midpoints of the grid 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7); a tie goes
    to the even code: strict `>` where the lower neighbour's code is even, `>=` where the upper's is.
    """
    a = tl.abs(v)
    mag = ((a > 0.25).to(tl.int32) + (a >= 0.75).to(tl.int32) + (a > 1.25).to(tl.int32)
           + (a >= 1.75).to(tl.int32) + (a > 2.5).to(tl.int32) + (a >= 3.5).to(tl.int32)
           + (a > 5.0).to(tl.int32))
    return mag | (sign << 3)


@triton.jit
def _e2m1_value(code):
    """fp32 value of a 4-bit E2M1 code: exponent bits e = code[2:1], mantissa m = code[0]."""
    e = (code >> 1) & 3
    m = (code & 1).to(tl.float32)
    pow2 = tl.where(e == 1, 1.0, tl.where(e == 2, 2.0, 4.0))  # 2^(e - 1) for the normal codes
    mag = tl.where(e == 0, 0.5 * m, pow2 * (1.0 + 0.5 * m))
    # The sign bit moves to fp32's bit 31 (so code 8 is -0.0; `-mag` would be 0 - mag = +0.0).
    return (mag.to(tl.int32, bitcast=True) | ((code & 8) << 28)).to(tl.float32, bitcast=True)


@triton.jit
def mxfp4_quant_kernel(x_ptr, q_ptr, s_ptr, M, K, stride_xm, stride_xk,
                       BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, INT64_OFFSETS: tl.constexpr):
    G: tl.constexpr = BLOCK_K // 32  # scale groups per tile
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = (rows[:, None] < M) & (cols[None, :] < K)
    x = tl.load(x_ptr + rows[:, None].to(tl.int64) * stride_xm + wide(cols, INT64_OFFSETS)[None, :] * stride_xk,
                mask=mask, other=0.0).to(tl.float32)
    xg = tl.reshape(x, (BLOCK_M, G, 32))
    amax = tl.minimum(tl.max(tl.abs(xg), axis=2), FLT_MAX)  # inf -> the largest finite amax
    has_nan = tl.max((xg != xg).to(tl.int32), axis=2) > 0
    # Shared exponent X = floor(log2(amax)) - 2 from amax's exponent field (0 and subnormal -> -127).
    X = tl.maximum(((amax.to(tl.int32, bitcast=True) >> 23) & 0xFF) - 127 - 2, -127)
    inv_scale = ((127 - X) << 23).to(tl.float32, bitcast=True)  # 2^-X, a normal fp32 for X in [-127, 125]
    sign = ((xg.to(tl.int32, bitcast=True) >> 31) & 1)
    code = _e2m1_code(xg * inv_scale[:, :, None], sign)
    code = tl.where(has_nan[:, :, None], 0, code)
    # Pack pairs along K: element 2i -> low nibble, 2i + 1 -> high nibble.
    lo, hi = tl.split(tl.reshape(code, (BLOCK_M, BLOCK_K // 2, 2)))
    packed = (lo | (hi << 4)).to(tl.uint8)
    pcols = tl.program_id(1) * (BLOCK_K // 2) + tl.arange(0, BLOCK_K // 2)
    tl.store(q_ptr + rows[:, None].to(tl.int64) * (K // 2) + pcols[None, :], packed,
             mask=(rows[:, None] < M) & (pcols[None, :] < K // 2))
    scale_byte = tl.where(has_nan, 255, X + 127).to(tl.uint8)
    scols = tl.program_id(1) * G + tl.arange(0, G)
    tl.store(s_ptr + rows[:, None].to(tl.int64) * (K // 32) + scols[None, :], scale_byte,
             mask=(rows[:, None] < M) & (scols[None, :] < K // 32))


@triton.jit
def mxfp4_dequant_kernel(q_ptr, s_ptr, y_ptr, M, K, stride_qm, stride_qk, stride_sm, stride_sk,
                         BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, INT64_OFFSETS: tl.constexpr):
    G: tl.constexpr = BLOCK_K // 32
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows[:, None] < M
    pcols = tl.program_id(1) * (BLOCK_K // 2) + tl.arange(0, BLOCK_K // 2)
    packed = tl.load(q_ptr + rows[:, None].to(tl.int64) * stride_qm + wide(pcols, INT64_OFFSETS)[None, :] * stride_qk,
                     mask=row_ok & (pcols[None, :] < K // 2), other=0).to(tl.int32)
    # (lo, hi) of byte i are elements 2i, 2i + 1: join puts them side by side in that order.
    code = tl.reshape(tl.join(packed & 0xF, packed >> 4), (BLOCK_M, BLOCK_K))
    scols = tl.program_id(1) * G + tl.arange(0, G)
    b = tl.load(s_ptr + rows[:, None].to(tl.int64) * stride_sm + wide(scols, INT64_OFFSETS)[None, :] * stride_sk,
                mask=row_ok & (scols[None, :] < K // 32), other=127).to(tl.int32)
    # E8M0 -> fp32: 2^(b - 127) is the fp32 with exponent field b (b >= 1); b = 0 is the subnormal
    # 2^-127 (0x00400000); b = 255 is NaN.
    bits = tl.where(b == 0, 0x00400000, tl.where(b == 255, 0x7FC00000, b << 23))
    scale = bits.to(tl.float32, bitcast=True)
    y = tl.reshape(tl.reshape(_e2m1_value(code), (BLOCK_M, G, 32)) * scale[:, :, None], (BLOCK_M, BLOCK_K))
    cols = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    tl.store(y_ptr + rows[:, None].to(tl.int64) * K + cols[None, :], y, mask=row_ok & (cols[None, :] < K))
