"""The ping-pong schedule checker (gemmkit/schedule): every named schedule's verdict, the hazards
behind each race pinned to their steps, the CLI, and mutations of race-free schedules (a dropped
wait, a weakened vmcnt, a removed stagger) that the checker must catch. Pure Python, no Triton."""
import dataclasses

import pytest

from gemmkit import cli
from gemmkit.schedule import SCHEDULES, check, get
from gemmkit.schedule.model import (Barrier, Load, Mma, Read, Schedule, Signal, WaitCount, WaitLgkm, WaitVm,
                                    async_ops, program)
from gemmkit.schedule.show import timeline

RACE_FREE = [n for n, v in SCHEDULES.items() if v[3]]


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_verdict(name):
    """A schedule is race-free when it is at every K-tile count it is checked at."""
    results = [check(get(name, t)) for t in SCHEDULES[name][1]]
    assert all(r.ok for r in results) == SCHEDULES[name][3], \
        "\n".join(h.describe() for r in results for h in r.hazards)
    assert all(r.states > 100 for r in results)  # the search really walked the interleavings


def _where(r):
    return {(h.kind, h.group, h.step.note) for h in r.hazards}


@pytest.mark.parametrize("tiles", [4, 6, 8])
def test_hipkittens_race_is_the_cluster7_read(tiles):
    """HipKittens reads stage 1's B tile 0 in cluster 7, before the vmcnt(6) that retires its load."""
    r = check(get("hipkittens", tiles))
    assert {(h.kind, type(h.step), h.step.buf, h.step.note.split()[-1]) for h in r.hazards} == \
        {("read-before-write", Read, "Bs[1][0]", "7")}
    assert {h.group for h in r.hazards} == {0, 1}
    assert len({h.step.note for h in r.hazards}) == (tiles - 2) // 2  # once per loop iteration


@pytest.mark.parametrize("tiles", [4, 6, 8])
def test_epilogue_vmcnt21_is_the_seeds_race(tiles):
    """003 §15.13: vmcnt(1) in the last block leaves the last A load in flight when it is read. With
    vmcnt(0) the epilogue is clean; what remains in both is the cluster-7 read of the main loop."""
    bad, good = check(get("optimized-epilogue-vmcnt21", tiles)), check(get("optimized-epilogue-vmcnt0", tiles))
    last = f"epilogue k{tiles - 1}"
    tail = {h for h in _where(bad) if h[2].startswith("epilogue")}
    assert tail == {("read-before-write", 0, last), ("read-before-write", 1, last)}
    assert all(h.step.buf == "As[1][1]" for h in bad.hazards if h.step.note == last)
    assert _where(bad) - tail == _where(good)
    assert all(h.step.note.endswith("cluster 7") for h in good.hazards)
    assert good.ok == (tiles == 4)  # one loop iteration: its B tile was loaded before the prologue's vmcnt(0)
    assert check(get("optimized-epilogue-vmcnt0-fixed", tiles)).ok


def test_two_counter_holes():
    """003 §6.5 as listed: (1) no wait after the prologue loads, (2) G1's waves are not ordered among
    themselves. Each fix alone leaves the other hole."""
    from gemmkit.schedule import library

    r = check(get("two-counter", 4))
    assert ("read-before-write", 0, "compute stage 0") in _where(r)  # hole 1: G0 reads G1's stage-0 slices
    g1 = [h for h in r.hazards if h.group == 1 and "another wave of G1" in h.message]
    assert {h.kind for h in g1} == {"read-before-write", "write-over-read"}  # hole 2
    only_wait = check(library.two_counter(4, prologue_wait=True, leader_waits_first=False))
    only_order = check(library.two_counter(4, prologue_wait=False, leader_waits_first=True))
    assert not only_wait.ok and {h.group for h in only_wait.hazards} == {1}
    assert not only_order.ok and ("read-before-write", 0, "compute stage 0") in _where(only_order)
    assert check(get("two-counter-fixed", 4)).ok


# ---- mutations: each must be caught -------------------------------------------------------------

def _mutants(s, kinds, change):
    for i, st in enumerate(s.steps):
        if isinstance(st, kinds):
            steps = list(s.steps)
            new = change(st)
            if new is None:
                del steps[i]
            else:
                steps[i] = new
            yield i, st, s.replace(steps=tuple(steps))


@pytest.mark.parametrize("name", ["simplified", "hipkittens-fixed", "two-counter-fixed"])
def test_dropping_any_wait_is_caught(name):
    s = get(name, 4)
    missed = [f"{i}: {st.text()} [{st.note}]" for i, st, m in _mutants(s, (WaitVm, WaitLgkm), lambda st: None)
              if check(m).ok]
    assert not missed, f"dropping these waits of {name} went unnoticed: {missed}"


@pytest.mark.parametrize("name", ["simplified", "hipkittens-fixed", "two-counter-fixed"])
def test_weakening_any_vmcnt_is_caught(name):
    """vmcnt(n) -> vmcnt(n + 1): one more load op may stay in flight. Every vmcnt of these is exact."""
    s = get(name, 4)
    missed = [f"{i}: {st.text()} [{st.note}]"
              for i, st, m in _mutants(s, WaitVm, lambda st: dataclasses.replace(st, n=st.n + 1)) if check(m).ok]
    assert not missed, f"weakening these waits of {name} went unnoticed: {missed}"


@pytest.mark.parametrize("name", RACE_FREE)
def test_strengthening_a_vmcnt_keeps_it_race_free(name):
    """The other direction, vmcnt(n) -> vmcnt(n - 1), only waits longer: never a new hazard."""
    s = get(name, 4)
    for i, st, m in _mutants(s, WaitVm, lambda st: dataclasses.replace(st, n=max(0, st.n - 1))):
        assert check(m).ok, f"{name}: {st.text()} at {i} made stricter was flagged"


def test_the_seeds_race_as_a_mutation():
    """003 §15.13 as a mutation of the fixed schedule: the epilogue's vmcnt(0)s -> vmcnt(2), vmcnt(1).
    Either alone is harmless (the other vmcnt(0) drains the same loads); together they race."""
    s = get("optimized-epilogue-vmcnt0-fixed", 6)
    e1, e2 = [i for i, st in enumerate(s.steps) if isinstance(st, WaitVm) and st.note.startswith("epilogue")]

    def with_waits(n1, n2):
        steps = list(s.steps)
        steps[e1], steps[e2] = dataclasses.replace(steps[e1], n=n1), dataclasses.replace(steps[e2], n=n2)
        return check(s.replace(steps=tuple(steps)))

    assert with_waits(2, 0).ok and with_waits(0, 1).ok
    r = with_waits(2, 1)
    assert {(h.kind, h.step.buf, h.step.note) for h in r.hazards} == {("read-before-write", "As[1][1]", "epilogue k5")}


@pytest.mark.parametrize("name", ["simplified", "hipkittens-fixed", "optimized-epilogue-vmcnt0-fixed"])
def test_removing_the_stagger_is_caught(name):
    """Without G1's conditional barrier, G0's re-align barrier meets no barrier of G1."""
    s = get(name, 4)
    m = s.replace(steps=tuple(st for st in s.steps if not (isinstance(st, Barrier) and st.note == "stagger")))
    r = check(m)
    assert not r.ok and r.kinds() == {"unpaired-barrier"}
    assert r.hazards[0].group == 0 and r.hazards[0].step.note == "re-align"


def test_lockstep_is_not_a_race():
    """Removing the stagger and the re-align together runs both groups in lockstep: slower (no
    compute/memory overlap), not wrong, and the checker says so rather than guessing."""
    for name in ["simplified", "hipkittens-fixed"]:
        s = get(name, 4)
        m = s.replace(steps=tuple(st for st in s.steps if not (isinstance(st, Barrier) and len(st.who) == 1)))
        assert check(m).ok


def test_dropping_a_counter_wait_is_caught():
    s = get("two-counter-fixed", 4)
    i = next(i for i, st in enumerate(s.steps) if isinstance(st, WaitCount) and st.who == (1,)
             and st.note == "sync 2")
    r = check(s.replace(steps=s.steps[:i] + s.steps[i + 1:]))
    assert "read-before-write" in r.kinds()


def test_a_missing_lgkm_wait_is_an_operand_hazard():
    s = get("simplified", 2)
    i = next(i for i, st in enumerate(s.steps) if isinstance(st, WaitLgkm) and st.n == 12)
    r = check(s.replace(steps=s.steps[:i] + s.steps[i + 1:]))
    assert r.kinds() == {"mma-operand"} and all(h.step.acc == "C00" for h in r.hazards)


# ---- the model itself ---------------------------------------------------------------------------

def test_fifo_retirement():
    prog = [Load(buf="X", tile=0, ops=2), Load(buf="Y", tile=0, ops=2), WaitVm(n=3), WaitVm(n=2), WaitVm(n=0),
            Read(buf="X", tile=0, ops=4), Read(buf="Y", tile=0, ops=8), WaitLgkm(n=8)]
    loads, reads = async_ops(prog)
    assert [op.retired_at for op in loads] == [3, 4]  # vmcnt(3) retires half of X: not X yet
    assert [op.retired_at for op in reads] == [7, float("inf")]


def _tiny(g0, g1, counters=None):
    steps = tuple(dataclasses.replace(s, who=(0,)) for s in g0) + tuple(dataclasses.replace(s, who=(1,)) for s in g1)
    return Schedule("tiny", steps, counters=counters or {}, tiles=1)


def test_exhaustive_state_count():
    """Two groups of three unsynchronised steps: (3+1) x (3+1) interleaving states, all visited."""
    mm = Mma(uses=())
    assert check(_tiny([mm] * 3, [mm] * 3)).states == 16


def test_publication_needs_wait_then_signal():
    load, wait, sig = Load(buf="X", tile=0, ops=1), WaitVm(n=0), Signal(counter="a")
    reader = [WaitCount(counter="a", count=1), Read(buf="X", tile=0, ops=1)]
    assert check(_tiny([load, wait, sig], reader, {"a": 0})).ok
    r = check(_tiny([load, sig, wait], reader, {"a": 0}))  # signalled before the data landed
    assert r.kinds() == {"read-before-write"} and "may still be in flight" in r.hazards[0].message
    r = check(_tiny([load, wait, sig], reader[1:], {"a": 0}))  # reader does not wait at all
    assert r.kinds() == {"read-before-write"}
    assert r.hazards[0].partner_pcs == {0, 1, 2, 3}  # seen before the load, in flight, and after


def test_deadlock():
    r = check(_tiny([Signal(counter="a")], [WaitCount(counter="a", count=2)], {"a": 0}))
    assert r.kinds() == {"deadlock"}


def test_programs_and_conditional_barrier():
    s = get("simplified", 2)
    p0, p1 = program(s, 0), program(s, 1)
    assert sum(isinstance(x, Barrier) for x in p0) == sum(isinstance(x, Barrier) for x in p1)
    assert [x.note for x in p1 if isinstance(x, Barrier) and x.who == (1,)] == ["stagger"]


# ---- CLI ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["simplified", "hipkittens", "two-counter-fixed", "optimized-epilogue-vmcnt21"])
def test_cli_check_exit_code(name, capsys):
    rc = cli.main(["schedule", "check", name])
    out = capsys.readouterr().out
    assert rc == (0 if SCHEDULES[name][3] else 1)
    assert out.strip().endswith(f"{name}: {'race-free' if rc == 0 else 'RACE'}")
    if rc:
        assert "read-before-write: G0 step" in out


def test_cli_show_and_list(capsys):
    assert cli.main(["schedule", "show", "hipkittens"]) == 0
    out = capsys.readouterr().out
    assert "| G0" in out and "!!" in out and "[only G1: stagger]" in out
    assert cli.main(["schedule", "check", "list"]) == 0
    out = capsys.readouterr().out
    assert all(n in out for n in SCHEDULES)
    assert cli.main(["schedule", "check", "nope"]) == 2


def test_timeline_rows_pair_barriers():
    text = timeline(get("simplified", 2))
    assert "| !!" not in text and text.count("compute stage 0") >= 2
    assert "| !!" in timeline(get("two-counter", 2))


# ---- 003 §10.2 (4-wave interleave) and §13 (quadrants) --------------------------------------------

@pytest.mark.parametrize("tiles", [2, 4, 6])
def test_four_wave_late_wait_races_at_every_next_tile_read(tiles):
    """The barrier before the vmcnt(0) publishes loads still in flight: every K tile after the first reads a stage
    another wave may still be loading."""
    r = check(get("4-wave-late-wait", tiles))
    assert {(h.kind, type(h.step), h.step.note) for h in r.hazards} == \
        {("read-before-write", Read, f"k{t}") for t in range(1, tiles)}


def test_four_wave_waits_and_barriers_each_matter():
    """Every wait and barrier of the 4-wave interleave is needed, but the last tile's publish (nothing follows)."""
    s = get("4-wave", 4)
    last = "k3 publish"
    for i, st, m in _mutants(s, (WaitVm, WaitLgkm, Barrier), lambda st: None):
        assert check(m).ok == (st.note == last), f"dropping {st.text()} [{st.note}]"


def test_quadrant_steps_each_matter_or_are_covered():
    """The quadrant schedule (003 §13.8): dropping step 1's vmcnt(0), an lgkm wait, step 6's barrier or step 4's
    (where step 4 issues the next A loads: not in the last iteration) races; the prologue's and step 6's vmcnt(0),
    the barriers of steps 2, 3 and 5 (and, in the first iteration only, the prologue's and step 1's, which order
    the same thing twice) are each covered by the schedule's other waits: each alone can go, not all together."""
    s = get("quadrant", 4)
    first_step1 = next(i for i, st in enumerate(s.steps) if st.kind == "barrier" and st.note == "step 1")
    covered = {i for i, st in enumerate(s.steps)
               if (st.kind, st.note) in {("wait_vm", "prologue"), ("wait_vm", "step 6"), ("barrier", "step 2"),
                                         ("barrier", "step 3"), ("barrier", "step 5"), ("barrier", "prologue")}
               and len(st.who) == 2} | {first_step1}
    covered.add(max(i for i, st in enumerate(s.steps) if st.kind == "barrier" and st.note == "step 4"))
    for i, st, m in _mutants(s, (WaitVm, WaitLgkm, Barrier), lambda st: None):
        r = check(m)
        if st.kind == "barrier" and len(st.who) == 1:  # the stagger or the re-align: one left unpaired
            assert r.kinds() == {"unpaired-barrier"}, (i, st.note)
        else:
            assert r.ok == (i in covered), f"dropping {st.text()} [{st.note}] at {i}: {sorted(r.kinds())}"
    lean = tuple(st for i, st in enumerate(s.steps) if i not in covered)
    assert not check(s.replace(steps=lean)).ok
