"""A ping-pong schedule as data: the steps two wave groups execute, and what each step does.

A schedule is one list of steps, as the kernel source is one program: every step
names the wave groups that execute it (`who`), so the stagger is
`Barrier(who=(1,))` exactly as the kernel writes `if warp_id_m == 1: s_barrier()`.
`program(schedule, g)` is what group g executes.

Steps and the counters they move (per wave; a group is four waves running the
same program, 003 §14.1):

    Load(buf, tile, ops)      global -> LDS into `buf` (its copy of K tile `tile`),
                              each wave of every executing group writes its slice;
                              vmcnt += ops
    WaitVm(n)                 s_waitcnt vmcnt(n): the oldest loads retire until <= n remain
    Read(buf, tile, ops, dst) LDS -> registers `dst`; lgkmcnt += ops
    WaitLgkm(n)               s_waitcnt lgkmcnt(n): the same, FIFO, for LDS reads
    Mma(uses, acc)            MFMAs on the registers `uses` (their reads must have retired)
    Barrier()                 s_barrier: the k-th barrier a group executes meets the other
                              group's k-th (a wave that has ended no longer takes part)
    Signal(counter)           each wave of the group adds 1 to an LDS counter it owns
    WaitCount(counter, count) spin until every wave of the owner group signalled `count` times

Both counters are FIFO: `WaitVm(n)` retires exactly the loads issued before all but
the newest n (003 §14.1: vector memory returns in order; LDS reads of one type too).
A barrier is control flow only (003 §14.7): it publishes what a wave's waits have
retired, not what is still in flight.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

GROUPS = (0, 1)
WAVES_PER_GROUP = 4


@dataclass(frozen=True, kw_only=True)
class Step:
    who: tuple = GROUPS  # the wave groups that execute this step
    note: str = ""  # where it comes from (a seed's step name, a phase)

    kind = "step"

    def text(self) -> str:
        return self.kind


@dataclass(frozen=True, kw_only=True)
class Load(Step):
    buf: str
    tile: int
    ops: int = 1
    kind = "load"

    def text(self):
        return f"load {self.buf} <- k{self.tile}  vm+{self.ops}"


@dataclass(frozen=True, kw_only=True)
class WaitVm(Step):
    n: int
    kind = "wait_vm"

    def text(self):
        return f"s_waitcnt vmcnt({self.n})"


@dataclass(frozen=True, kw_only=True)
class Read(Step):
    buf: str | tuple  # a tuple: the group's waves read one of these each (B halves by warp column)
    tile: int
    ops: int = 1
    dst: str = ""
    kind = "read"

    def text(self):
        return f"read {'|'.join(bufs(self))} (k{self.tile}) -> {self.dst}  lgkm+{self.ops}"


@dataclass(frozen=True, kw_only=True)
class WaitLgkm(Step):
    n: int
    kind = "wait_lgkm"

    def text(self):
        return f"s_waitcnt lgkmcnt({self.n})"


@dataclass(frozen=True, kw_only=True)
class Mma(Step):
    uses: tuple = ()
    acc: str = ""
    count: int = 0  # MFMA instructions per wave (0: not stated)
    kind = "mma"

    def text(self):
        return f"mma {self.acc} += {' x '.join(self.uses)}" + (f"  ({self.count} mfma)" if self.count else "")


@dataclass(frozen=True, kw_only=True)
class Barrier(Step):
    kind = "barrier"

    def text(self):
        return "s_barrier" + (f"  [only G{self.who[0]}: {self.note or 'conditional'}]" if len(self.who) == 1 else "")


@dataclass(frozen=True, kw_only=True)
class Signal(Step):
    counter: str
    kind = "signal"

    def text(self):
        return f"signal {self.counter} += 1"


@dataclass(frozen=True, kw_only=True)
class WaitCount(Step):
    counter: str
    count: int
    kind = "wait_count"

    def text(self):
        return f"wait {self.counter} >= {WAVES_PER_GROUP}*{self.count}"


@dataclass(frozen=True)
class Schedule:
    name: str
    steps: tuple
    counters: dict = field(default_factory=dict)  # counter name -> the group that signals it
    tiles: int = 0  # K tiles the steps were unrolled for
    about: str = ""  # one line: what it is and where it comes from

    def replace(self, **kw) -> "Schedule":
        return dataclasses.replace(self, **kw)


def bufs(st) -> tuple:
    """The LDS buffers a Load or Read step touches."""
    return st.buf if isinstance(st.buf, tuple) else (st.buf,)


def program(s: Schedule, g: int) -> list:
    """The steps group g executes, in order."""
    return [st for st in s.steps if g in st.who]


def writers(s: Schedule) -> dict:
    """(buf, tile) -> the groups that write a slice of it."""
    out = {}
    for st in s.steps:
        if isinstance(st, Load):
            out.setdefault((st.buf, st.tile), set()).update(st.who)
    return out


@dataclass(frozen=True)
class Op:
    """One asynchronous operation of a group's program: where it was issued and retired."""
    index: int  # step index in the group's program
    step: Step
    retired_at: float  # index of the wait that retires it (inf: never waited for)


def async_ops(prog: list) -> tuple[list, list]:
    """Loads and reads of one program with the step that retires each (FIFO counters)."""
    vm, lgkm = [], []  # outstanding [index, step]
    loads, reads = [], []
    retire = {}
    for i, st in enumerate(prog):
        if isinstance(st, Load):
            vm.extend([(i, st)] * st.ops)
        elif isinstance(st, Read):
            lgkm.extend([(i, st)] * st.ops)
        elif isinstance(st, (WaitVm, WaitLgkm)):
            q = vm if isinstance(st, WaitVm) else lgkm
            while len(q) > st.n:
                j, _ = q.pop(0)
                # an op of several instructions retires with its last one
                if not any(k == j for k, _ in q):
                    retire[j] = i
    for i, st in enumerate(prog):
        op = Op(i, st, retire.get(i, float("inf")))
        if isinstance(st, Load):
            loads.append(op)
        elif isinstance(st, Read):
            reads.append(op)
    return loads, reads
