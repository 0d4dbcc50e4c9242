"""The seeds' ping-pong schedules, written as data (see model.py for the step types).

Geometry shared by all (seed 001 §3, 003 §14.2): block 256 x 256 x 64, 8 waves in
two groups of four (G0 = warp_id_m 0, G1 = warp_id_m 1), each wave 128 x 64 of C
as four 64 x 32 quadrants of 16 MFMA 16x16x32 each per K tile. LDS holds two
stages of A and B, each as two 128 x 64 halves: A[s][h] (rows of group h), B[s][h]
(columns 128h..128h+127). Counter costs per wave:

    LDS -> registers   a quadrant of A (64 x 64): 8 ds_read_b128, of B (32 x 64): 4
    global -> LDS      a 128 x 64 half loaded by 8 waves: 2 loads per wave, by 4 waves: 4

`buf` names follow 003 §15.1: As[stage][half], Bs[stage][half]. `tile` is the K
tile the buffer holds, so a later tile in the same buffer is an overwrite.

Where a seed leaves something open, the choice is noted at the step (`note`) and
in docs/kernels/cdna_pingpong.md.
"""
from __future__ import annotations

from .model import Barrier, Load, Mma, Read, Schedule, Signal, WaitCount, WaitLgkm, WaitVm

G0, G1, BOTH = (0,), (1,), (0, 1)
A_OPS, B_OPS = 8, 4  # ds_read_b128 per wave for one A quadrant / one B quadrant
QUAD_MFMA = 16  # 64 x 32 x 64 per quadrant / (16 x 16 x 32) per MFMA


def _b_halves(s):  # a group's four waves read both B halves (warp_id_n 0-1: half 0, 2-3: half 1)
    return (f"Bs[{s}][0]", f"Bs[{s}][1]")


def compute_stage(s: int, tile: int, a_of, note: str) -> list:
    """Seed 000 §6.2 / 001 §2.5: four LDS reads, then the MFMAs under fine-grained lgkmcnt waits.

    a_of: the A buffer this group's waves read (their 128 rows).
    lgkm FIFO: b0 (4) a0 (8) b1 (4) a1 (8) = 24; <= 12 leaves b1, a1: b0 and a0 are in;
    <= 8 leaves a1: b1 is in; 0: all in.
    """
    b = _b_halves(s)
    return [
        Read(buf=b, tile=tile, ops=B_OPS, dst="b0", note=note),
        Read(buf=a_of, tile=tile, ops=A_OPS, dst="a0", note=note),
        Read(buf=b, tile=tile, ops=B_OPS, dst="b1", note=note),
        Read(buf=a_of, tile=tile, ops=A_OPS, dst="a1", note=note),
        WaitLgkm(n=12, note=note), Mma(uses=("a0", "b0"), acc="C00", count=QUAD_MFMA, note=note),
        WaitLgkm(n=8, note=note), Mma(uses=("a0", "b1"), acc="C01", count=QUAD_MFMA, note=note),
        WaitLgkm(n=0, note=note), Mma(uses=("a1", "b0"), acc="C10", count=QUAD_MFMA, note=note),
        Mma(uses=("a1", "b1"), acc="C11", count=QUAD_MFMA, note=note),
    ]


def _self_load(s: int, tile: int, note: str) -> list:
    """4-wave loads: each group loads its own A half and one B half (003 §12.1.1 self-loading)."""
    out = []
    for g in BOTH:
        out += [Load(buf=f"As[{s}][{g}]", tile=tile, ops=4, who=(g,), note=note),
                Load(buf=f"Bs[{s}][{g}]", tile=tile, ops=4, who=(g,), note=note)]
    return out


def pingpong_phases(loading: str = "group"):
    """The simplified schedule's phases (003 §6.5 current code, §14.4 waits), as the kernel runs them.

    loading: "group": each group loads its own A half and one B half (4-wave loads, 003 §12.1.1);
             "all": all 8 waves load every half (2 loads per wave per half, like Buffers.load_a/b),
             which is what the Gluon kernel does (its direct-to-LDS layout gives each wave 8-row
             slices of both halves).
    Returns (prologue, body(k0, last), epilogue): body covers K tiles k0 (stage 0) and k0 + 1 (stage 1)
    and, unless last, reloads stage 0 with k0 + 2.
    """
    if loading not in ("group", "all"):
        raise ValueError(f"loading: expected 'group' or 'all', got {loading!r}")
    load = _self_load if loading == "group" else _all_load
    prologue = load(0, 0, "prologue") + [WaitVm(n=0, note="prologue"), Barrier(note="prologue"),
                                         Barrier(who=G1, note="stagger")]

    def body(k0: int, last: bool) -> list:
        k1 = k0 + 1
        st = [Barrier(note="sync 1")] + load(1, k1, "load stage 1") + [WaitVm(n=0, note="load stage 1")]
        st += [Barrier(note="sync 2")] + compute_stage(0, k0, "As[0][g]", "compute stage 0")
        st += [Barrier(note="sync 3")] + compute_stage(1, k1, "As[1][g]", "compute stage 1")
        if not last:
            st += [Barrier(note="sync 4")] + load(0, k0 + 2, "load stage 0") + [WaitVm(n=0, note="load stage 0")]
            if loading == "all":
                # Triton's AMD backend follows an async wait with a CTA barrier before the next LDS
                # read; the kernel writes it here so that the checked schedule has every barrier
                # the compiled code has.
                st.append(Barrier(note="sync 5 (after the reload's wait)"))
        return st
    return prologue, body, [Barrier(who=G0, note="re-align")]


def simplified(tiles: int = 4, loading: str = "group") -> Schedule:
    """003 §6.5 (current code) with §14.4's waits: vmcnt(0) after every batch of loads, a barrier
    between every phase, the stagger in the prologue and G0's re-align barrier at the end."""
    if tiles < 2 or tiles % 2:
        raise ValueError(f"tiles: the simplified schedule takes an even count >= 2, got {tiles}")
    prologue, body, epilogue = pingpong_phases(loading)
    st = list(prologue)
    for it in range(tiles // 2):
        st += body(2 * it, last=it == tiles // 2 - 1)
    st += epilogue
    name = "simplified" if loading == "group" else "cdna-pingpong"
    return Schedule(name, tuple(_own_a(st)), tiles=tiles,
                    about="seed 003 §6.5/§14.4: vmcnt(0) after each load batch, a barrier between phases" +
                    ("" if loading == "group" else "; 8-wave loads (the Gluon kernel's schedule)"))


def _own_a(steps):
    """Resolve the placeholder 'As[s][g]' (each group reads its own A half) into per-group steps."""
    out = []
    for st in steps:
        if isinstance(st, Read) and st.buf in ("As[0][g]", "As[1][g]"):
            for g in st.who:
                out.append(Read(buf=st.buf.replace("g", str(g)), tile=st.tile, ops=st.ops, dst=st.dst,
                                who=(g,), note=st.note))
        else:
            out.append(st)
    return out


# ---- HipKittens 256_256_64_32_with16x32 (003 §15.2) and the seeds' optimized schedule (§15.4, §15.13)
#
# All 8 waves load every buffer (2 loads per wave per half, 003 §15.5) and every wave reads all
# four buffers of a stage (A rows 64r..64r+63 of both halves, B rows 32c..32c+31 of both halves),
# so each half is written by both groups and read by both.

def _ld(buf, tile, note):
    return Load(buf=buf, tile=tile, ops=2, note=note)


def _hk_loop_body(t: int, vm_main: int, b0_early: bool) -> list:
    """One iteration of the main loop: tiles t (stage 0) and t+1 (stage 1), 16 barrier-separated
    clusters; odd clusters issue LDS reads and one global load, even clusters run MFMAs.

    b0_early: HipKittens reads stage 1's B tile 0 in cluster 7, before that cluster's vmcnt(6),
    which is the wait that retires its load (issued in cluster 11 of the iteration before, or in
    the prologue): the read is ordered after its write by latency alone. False moves the read to
    cluster 9, beside the A read, as cluster 1 does for stage 0.
    """
    def c(n):
        return f"loop k{t} cluster {n}"
    mm = dict(count=QUAD_MFMA)
    b0 = [Read(buf="Bs[1][0]", tile=t + 1, ops=B_OPS, dst="B0", note=c(7 if b0_early else 9))]
    return [
        Read(buf="Bs[0][0]", tile=t, ops=B_OPS, dst="B0", note=c(1)),
        Read(buf="As[0][0]", tile=t, ops=A_OPS, dst="A", note=c(1)),
        _ld("As[1][1]", t + 1, c(1)), WaitLgkm(n=8, note=c(1)), Barrier(note=c(1)),
        WaitLgkm(n=0, note=c(2)), Mma(uses=("A", "B0"), acc="C00", note=c(2), **mm), Barrier(note=c(2)),
        Read(buf="Bs[0][1]", tile=t, ops=B_OPS, dst="B1", note=c(3)), _ld("Bs[0][0]", t + 2, c(3)),
        Barrier(note=c(3)),
        WaitLgkm(n=0, note=c(4)), Mma(uses=("A", "B1"), acc="C01", note=c(4), **mm), Barrier(note=c(4)),
        Read(buf="As[0][1]", tile=t, ops=A_OPS, dst="A", note=c(5)), _ld("As[0][0]", t + 2, c(5)),
        Barrier(note=c(5)),
        WaitLgkm(n=0, note=c(6)), Mma(uses=("A", "B0"), acc="C10", note=c(6), **mm), Barrier(note=c(6)),
        *(b0 if b0_early else []), _ld("Bs[0][1]", t + 2, c(7)),
        WaitVm(n=vm_main, note=c(7)), Barrier(note=c(7)),
        Mma(uses=("A", "B1"), acc="C11", note=c(8), **mm), Barrier(note=c(8)),
        *([] if b0_early else b0),
        Read(buf="As[1][0]", tile=t + 1, ops=A_OPS, dst="A", note=c(9)), _ld("As[0][1]", t + 2, c(9)),
        WaitLgkm(n=8, note=c(9)), Barrier(note=c(9)),
        WaitLgkm(n=0, note=c(10)), Mma(uses=("A", "B0"), acc="C00", note=c(10), **mm), Barrier(note=c(10)),
        Read(buf="Bs[1][1]", tile=t + 1, ops=B_OPS, dst="B1", note=c(11)), _ld("Bs[1][0]", t + 3, c(11)),
        Barrier(note=c(11)),
        WaitLgkm(n=0, note=c(12)), Mma(uses=("A", "B1"), acc="C01", note=c(12), **mm), Barrier(note=c(12)),
        Read(buf="As[1][1]", tile=t + 1, ops=A_OPS, dst="A", note=c(13)), _ld("As[1][0]", t + 3, c(13)),
        Barrier(note=c(13)),
        WaitLgkm(n=0, note=c(14)), Mma(uses=("A", "B0"), acc="C10", note=c(14), **mm), Barrier(note=c(14)),
        _ld("Bs[1][1]", t + 3, c(15)), WaitVm(n=vm_main, note=c(15)), Barrier(note=c(15)),
        Mma(uses=("A", "B1"), acc="C11", note=c(16), **mm), Barrier(note=c(16)),
    ]


def _hk_epilogue(n: int, waits: tuple) -> list:
    """The last two tiles (n-2 in stage 0, n-1 in stage 1). `waits`: the vmcnt values of the
    epilogue, as (block 1, block 2 first, block 2 second or None)."""
    w1, w2, w3 = waits
    mm = dict(count=QUAD_MFMA)
    e1, e2 = f"epilogue k{n - 2}", f"epilogue k{n - 1}"
    st = [
        Read(buf="Bs[0][0]", tile=n - 2, ops=B_OPS, dst="B0", note=e1),
        Read(buf="As[0][0]", tile=n - 2, ops=A_OPS, dst="A", note=e1),
        _ld("As[1][1]", n - 1, e1), Barrier(note=e1),
        WaitLgkm(n=0, note=e1), Mma(uses=("A", "B0"), acc="C00", note=e1, **mm), Barrier(note=e1),
        Read(buf="Bs[0][1]", tile=n - 2, ops=B_OPS, dst="B1", note=e1), Barrier(note=e1),
        WaitLgkm(n=0, note=e1), Mma(uses=("A", "B1"), acc="C01", note=e1, **mm), Barrier(note=e1),
        Read(buf="As[0][1]", tile=n - 2, ops=A_OPS, dst="A", note=e1), WaitVm(n=w1, note=e1), Barrier(note=e1),
        WaitLgkm(n=0, note=e1), Mma(uses=("A", "B0"), acc="C10", note=e1, **mm),
        Mma(uses=("A", "B1"), acc="C11", note=e1, **mm), Barrier(note=e1),
        Read(buf="Bs[1][0]", tile=n - 1, ops=B_OPS, dst="B0", note=e2),
        Read(buf="As[1][0]", tile=n - 1, ops=A_OPS, dst="A", note=e2), WaitVm(n=w2, note=e2), Barrier(note=e2),
        WaitLgkm(n=0, note=e2), Mma(uses=("A", "B0"), acc="C00", note=e2, **mm), Barrier(note=e2),
        Read(buf="Bs[1][1]", tile=n - 1, ops=B_OPS, dst="B1", note=e2)]
    if w3 is not None:
        st.append(WaitVm(n=w3, note=e2))
    st += [
        Barrier(note=e2),
        WaitLgkm(n=0, note=e2), Mma(uses=("A", "B1"), acc="C01", note=e2, **mm), Barrier(note=e2),
        Read(buf="As[1][1]", tile=n - 1, ops=A_OPS, dst="A", note=e2), Barrier(note=e2),
        WaitLgkm(n=0, note=e2), Mma(uses=("A", "B0"), acc="C10", note=e2, **mm),
        Mma(uses=("A", "B1"), acc="C11", note=e2, **mm), Barrier(note=e2),
    ]
    return st


def _hk_like(name, tiles, prologue_waits, vm_main, epilogue_waits, about, b0_early=True):
    if tiles < 4 or tiles % 2:
        raise ValueError(f"tiles: {name} takes an even count >= 4 (two tiles per iteration + a "
                         f"two-tile epilogue), got {tiles}")
    p1, p2 = prologue_waits
    st = [_ld("Bs[0][0]", 0, "prologue"), _ld("As[0][0]", 0, "prologue"),
          _ld("Bs[0][1]", 0, "prologue"), _ld("As[0][1]", 0, "prologue"),
          Barrier(who=G1, note="stagger"),
          WaitVm(n=p1, note="prologue"), Barrier(note="prologue"),
          _ld("Bs[1][0]", 1, "prologue"), _ld("As[1][0]", 1, "prologue"), _ld("Bs[1][1]", 1, "prologue"),
          WaitVm(n=p2, note="prologue"), Barrier(note="prologue")]
    for t in range(0, tiles - 2, 2):
        st += _hk_loop_body(t, vm_main, b0_early)
    st += _hk_epilogue(tiles, epilogue_waits)
    st.append(Barrier(who=G0, note="re-align"))  # 001 §8.4: G0's extra barrier before the stores
    return Schedule(name, tuple(st), tiles=tiles, about=about)


def hipkittens(tiles: int = 4, b0_early: bool = True) -> Schedule:
    # Provenance of the (4, 2, 0) tail waits: the HipKittens source (HazyResearch/HipKittens,
    # kernels/gemm/bf16fp32/256_256_64_32_with16x32.cpp), not the seeds; 001 §5.5 lists the tail as
    # vmcnt(2), vmcnt(1), which the checker also flags (the As[1][1] epilogue read). The cluster-7
    # verdict does not depend on the tail.
    return _hk_like("hipkittens" + ("" if b0_early else "-fixed"), tiles, (4, 6), 6, (4, 2, 0),
                    "003 §15.2: HipKittens 256_256_64_32_with16x32, vmcnt(4)/(6) prologue, (6) loop, "
                    "(4)/(2)/(0) tail" + ("" if b0_early else "; stage-1 B tile 0 read in cluster 9"), b0_early)


def optimized_epilogue_vmcnt21(tiles: int = 4) -> Schedule:
    return _hk_like("optimized-epilogue-vmcnt21", tiles, (0, 0), 6, (2, 1, None),
                    "003 §15.4/§15.13: the optimized schedule before the fix, epilogue vmcnt(2) then vmcnt(1)")


def optimized_epilogue_vmcnt0(tiles: int = 4, b0_early: bool = True) -> Schedule:
    return _hk_like("optimized-epilogue-vmcnt0" + ("" if b0_early else "-fixed"), tiles, (0, 0), 6, (0, 0, None),
                    "003 §15.14: prologue vmcnt(0), loop vmcnt(6), epilogue vmcnt(0)" +
                    ("" if b0_early else "; stage-1 B tile 0 read in cluster 9"), b0_early)


# ---- two counters instead of barriers (003 §6)

def _sync_point(phase: int, note: str, leader_waits_first: bool) -> list:
    """003 §6.6: G0 (leader) signals, then waits for G1's previous phase; G1 waits for G0's
    current phase, then signals. leader_waits_first: G0 waits, then signals (see two_counter)."""
    sig = [Signal(counter="a", who=G0, note=note)]
    wait = [WaitCount(counter="b", count=phase - 1, who=G0, note=note)] if phase > 1 else []
    st = wait + sig if leader_waits_first else sig + wait
    return st + [WaitCount(counter="a", count=phase, who=G1, note=note), Signal(counter="b", who=G1, note=note)]


def _all_load(s: int, tile: int, note: str) -> list:
    """8-wave loads (001 §8.3 `Buffers.load_a/b`): order B h0, A h0, B h1, A h1 as in 003 §6.5."""
    return [_ld(f"Bs[{s}][0]", tile, note), _ld(f"As[{s}][0]", tile, note),
            _ld(f"Bs[{s}][1]", tile, note), _ld(f"As[{s}][1]", tile, note)]


def two_counter(tiles: int = 4, fixed: bool = False, prologue_wait: bool | None = None,
                leader_waits_first: bool | None = None) -> Schedule:
    """003 §6.5 (proposed code): LDS counters a (G0) and b (G1) replace every barrier.

    As listed, the checker finds two holes (fixed=True closes both):
    1. The prologue issues the stage-0 loads and goes straight to the stagger, so G0 reads
       G1's slices of stage 0 before G1's first vmcnt(0). Fix: vmcnt(0) before the stagger,
       as the barrier version's prologue has (003 §15.4).
    2. The counters order the groups, not the waves within G1: G1 learns about its own other
       waves only through G0's signals, and G0 signals before it waits for G1, so what G0
       passes on is one phase old. A G1 wave can read stage 1 (or overwrite a stage) while
       another G1 wave's slice is still in flight (or its read of the old tile is). Fix: G0
       waits for G1's previous phase, then signals, so its signal carries that knowledge.
    """
    if tiles < 2 or tiles % 2:
        raise ValueError(f"tiles: two-counter takes an even count >= 2, got {tiles}")
    prologue_wait = fixed if prologue_wait is None else prologue_wait
    leader_waits_first = fixed if leader_waits_first is None else leader_waits_first
    st = _all_load(0, 0, "prologue")
    if prologue_wait:
        st.append(WaitVm(n=0, note="prologue (fix 1)"))
    phase = 1
    st += [Signal(counter="a", who=G0, note="stagger"), WaitCount(counter="a", count=1, who=G1, note="stagger"),
           Signal(counter="b", who=G1, note="stagger")]
    for it in range(tiles // 2):
        k0, k1 = 2 * it, 2 * it + 1
        phase += 1
        st += _sync_point(phase, "sync 1", leader_waits_first) + _all_load(1, k1, "load stage 1") + \
            [WaitVm(n=0, note="load stage 1")]
        phase += 1
        st += _sync_point(phase, "sync 2", leader_waits_first) + compute_stage(0, k0, "As[0][g]", "compute stage 0")
        phase += 1
        st += _sync_point(phase, "sync 3", leader_waits_first) + compute_stage(1, k1, "As[1][g]", "compute stage 1")
        if it < tiles // 2 - 1:
            phase += 1
            st += _sync_point(phase, "sync 4", leader_waits_first) + _all_load(0, k0 + 2, "load stage 0") + \
                [WaitVm(n=0, note="load stage 0")]
    st.append(WaitCount(counter="b", count=phase, who=G0, note="re-align"))
    return Schedule("two-counter" + ("-fixed" if fixed else ""), tuple(_own_a(st)), counters={"a": 0, "b": 1},
                    tiles=tiles, about="003 §6.5: signal/wait on two LDS counters instead of s_barrier" +
                    ("; prologue vmcnt(0), leader waits before it signals" if fixed else ""))


# ---- 003 §10.2: the 4-wave interleave, and §13: the quadrant schedule

def four_wave(tiles: int = 4, publish_wait: bool = True) -> Schedule:
    """003 §10.2 as we read it (the seed describes the alternative and lists no steps): one wave per SIMD and no
    ping-pong (every wave runs one program, no stagger; each wave 128 x 128 of C), the next K tile's loads issued
    among this tile's quadrant MFMAs (the fine-grained interleave) into the other stage, and one barrier per K tile,
    after vmcnt(0): it publishes the next tile and tells the other waves that this stage's reads have retired (the
    loads that overwrite it are issued one tile later).

    publish_wait=False waits after the barrier instead (the interleave's temptation: the barrier then publishes
    loads still in flight): the next tile's reads race with the other waves' loads."""
    if tiles < 2:
        raise ValueError(f"tiles: the 4-wave interleave takes a count >= 2, got {tiles}")
    st = _all_load(0, 0, "prologue") + [WaitVm(n=0, note="prologue"), Barrier(note="prologue")]
    for t in range(tiles):
        s, note = t % 2, f"k{t}"
        nxt = _all_load(1 - s, t + 1, f"{note} (next tile's loads)") if t + 1 < tiles else []
        for step in compute_stage(s, t, f"As[{s}][g]", note):
            st.append(step)
            if isinstance(step, Mma) and nxt:
                st.append(nxt.pop(0))
        wait, bar = WaitVm(n=0, note=f"{note} publish"), Barrier(note=f"{note} publish")
        st += [wait, bar] if publish_wait else [bar, wait]
    return Schedule("4-wave" + ("" if publish_wait else "-late-wait"), tuple(_own_a(st)), tiles=tiles,
                    about="003 §10.2 (our reading): one program for every wave, the next tile's loads among the "
                          "MFMAs, vmcnt(0) + one barrier per K tile" + ("" if publish_wait else
                                                                         "; the vmcnt(0) after the barrier"))


def _own_load(s: int, tile: int, note: str, which: str = "AB") -> list:
    """003 §13.8: each group loads its own A half (g) and its own B half (h), 4 loads a wave per 128 x 64 half."""
    out = []
    for g in BOTH:
        if "A" in which:
            out.append(Load(buf=f"As[{s}][{g}]", tile=tile, ops=4, who=(g,), note=note))
        if "B" in which:
            out.append(Load(buf=f"Bs[{s}][{g}]", tile=tile, ops=4, who=(g,), note=note))
    return out


def _diagonal(s: int, tile: int, cross: bool, note: str) -> list:
    """A diagonal of 003 §13.3: group g multiplies its own A half by B half g (diagonal 1: Q0 / Q3) or by the other
    group's B half (diagonal 2: Q1 / Q2); 4 waves a 128 x 128 quadrant, each 64 x 64."""
    out = []
    for g in BOTH:
        h = 1 - g if cross else g
        q = {(0, 0): "Q0", (0, 1): "Q1", (1, 0): "Q2", (1, 1): "Q3"}[(g, h)]
        out += [Read(buf=f"Bs[{s}][{h}]", tile=tile, ops=B_OPS, dst="b", who=(g,), note=note),
                Read(buf=f"As[{s}][{g}]", tile=tile, ops=A_OPS, dst="a", who=(g,), note=note),
                WaitLgkm(n=0, who=(g,), note=note),
                Mma(uses=("a", "b"), acc=q, count=QUAD_MFMA, who=(g,), note=note)]
    return out


def quadrant(tiles: int = 4) -> Schedule:
    """003 §13.8 (phase 3): the quadrant schedule. Prologue: each group loads its own A and B halves of stage 0,
    vmcnt(0), barrier, G1's stagger barrier. Per two K tiles, six barrier-separated steps: (1) both stage-1 halves
    loaded, vmcnt(0); (2) diagonal 1 on stage 0 (own A x own B); (3) diagonal 2 on stage 0 (own A x the other
    group's B); (4) diagonal 1 on stage 1, then the next stage-0 A loads, no wait; (5) diagonal 2 on stage 1; (6)
    unless last, the next stage-0 B loads, vmcnt(0). G0's re-align barrier at the end."""
    if tiles < 2 or tiles % 2:
        raise ValueError(f"tiles: the quadrant schedule takes an even count >= 2, got {tiles}")
    st = _own_load(0, 0, "prologue") + [WaitVm(n=0, note="prologue"), Barrier(note="prologue"),
                                        Barrier(who=G1, note="stagger")]
    for it in range(tiles // 2):
        k0, k1, last = 2 * it, 2 * it + 1, it == tiles // 2 - 1
        st += [Barrier(note="step 1")] + _own_load(1, k1, "step 1: load stage 1") + [WaitVm(n=0, note="step 1")]
        st += [Barrier(note="step 2")] + _diagonal(0, k0, False, "step 2: diagonal 1, stage 0")
        st += [Barrier(note="step 3")] + _diagonal(0, k0, True, "step 3: diagonal 2, stage 0")
        st += [Barrier(note="step 4")] + _diagonal(1, k1, False, "step 4: diagonal 1, stage 1")
        if not last:
            st += _own_load(0, k0 + 2, "step 4: stage-0 A loads, no wait", "A")
        st += [Barrier(note="step 5")] + _diagonal(1, k1, True, "step 5: diagonal 2, stage 1")
        if not last:
            st += [Barrier(note="step 6")] + _own_load(0, k0 + 2, "step 6: stage-0 B loads", "B") + \
                [WaitVm(n=0, note="step 6")]
    st.append(Barrier(who=G0, note="re-align"))
    return Schedule("quadrant", tuple(st), tiles=tiles,
                    about="003 §13.8: own A x own B, then own A x the other group's B, six barriers per two K tiles")


# name -> (builder(tiles), tile counts the check runs, what the seeds say, what the checker says).
# Where the two differ, the docstring of the builder says why (and docs/kernels/cdna_pingpong.md).
SCHEDULES = {
    "simplified": (simplified, (2, 4, 6), True, True),
    "cdna-pingpong": (lambda tiles=4: simplified(tiles, loading="all"), (2, 4, 6), None, True),
    "hipkittens": (hipkittens, (4, 6, 8), True, False),
    "hipkittens-fixed": (lambda tiles=4: hipkittens(tiles, b0_early=False), (4, 6, 8), None, True),
    "optimized-epilogue-vmcnt21": (optimized_epilogue_vmcnt21, (4, 6, 8), False, False),
    "optimized-epilogue-vmcnt0": (optimized_epilogue_vmcnt0, (4, 6, 8), True, False),
    "optimized-epilogue-vmcnt0-fixed": (lambda tiles=4: optimized_epilogue_vmcnt0(tiles, b0_early=False),
                                        (4, 6, 8), None, True),
    "two-counter": (two_counter, (2, 4, 6), True, False),
    "two-counter-fixed": (lambda tiles=4: two_counter(tiles, fixed=True), (2, 4, 6), None, True),
    "4-wave": (four_wave, (2, 4, 6), None, True),
    "4-wave-late-wait": (lambda tiles=4: four_wave(tiles, publish_wait=False), (2, 4, 6), None, False),
    "quadrant": (quadrant, (2, 4, 6), None, True),
}


def get(name: str, tiles: int | None = None) -> Schedule:
    if name not in SCHEDULES:
        raise KeyError(f"unknown schedule {name!r}; known: {', '.join(SCHEDULES)}")
    build, sizes = SCHEDULES[name][:2]
    return build(tiles if tiles is not None else sizes[0])
