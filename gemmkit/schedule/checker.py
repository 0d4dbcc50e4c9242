"""Exhaustive race check of a two-group ping-pong schedule.

The checker walks every interleaving of the two wave groups that the barriers
and counters allow: a depth-first search over states
    (pc of G0, pc of G1, which group waits at a barrier, what each group knows, signals so far)
with a visited set, so every reachable state is expanded once. A group at a
barrier waits for the other's matching barrier (or for the other to end); a
group at a counter wait waits for the owner's signals; everything else may run
at any time.

What a group "knows" is happens-before, tracked as a vector: knows[h][g] = n
means every wave of group g has finished its steps 0..n-1 before group h's
current step (a barrier both groups pass, or a signal group h waited for, gives
that). A group's own other waves count like another group: a group's waves
run the same program but are not in lockstep, so the slice of a buffer another
wave of the same group loads is only known to be there after a barrier (or a
signal chain) that follows that wave's wait.

Hazards, each reported with the step where it happens:
  read-before-write   a read of (buf, tile) where some group's slice of that tile
                      may be in flight (its load is not retired by a wait that is
                      ordered before the read) or not issued yet;
  write-over-read     a load into buf while some wave may still be reading an older
                      tile of buf (its read is not retired and ordered before the load);
  write-over-write    a load into buf while an older load of buf may still land;
  mma-operand         an MFMA on registers whose LDS read has not retired (lgkmcnt);
  deadlock            a state where neither group can move (a counter never reached);
  unpaired-barrier    a barrier the other group never meets because it has ended: the
                      hardware lets it pass, but the groups' barrier counts differ, so the
                      pairing the stagger is built on is not the one the schedule intends.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .model import (GROUPS, Barrier, Load, Mma, Read, Schedule, Signal, WaitCount, async_ops, bufs, program,
                    writers)


KINDS = ("deadlock", "unpaired-barrier", "read-before-write", "write-over-read", "write-over-write", "mma-operand")


@dataclass
class Hazard:
    kind: str
    group: int
    index: int  # step index in the group's program
    step: object
    message: str
    partner_pcs: set = field(default_factory=set)  # where the other group was, over the interleavings

    def where(self) -> str:
        note = f" [{self.step.note}]" if self.step.note else ""
        return f"G{self.group} step {self.index}{note}: {self.step.text()}"

    def describe(self) -> str:
        seen = ""
        if self.partner_pcs:
            lo, hi = min(self.partner_pcs), max(self.partner_pcs)
            seen = f"; the other group was at step {lo}" + (f"..{hi}" if hi != lo else "") + \
                " in the interleavings that reach it"
        return f"{self.kind}: {self.where()}\n    {self.message}{seen}"


@dataclass
class Result:
    schedule: Schedule
    states: int
    hazards: list

    @property
    def ok(self) -> bool:
        return not self.hazards

    def kinds(self) -> set:
        return {h.kind for h in self.hazards}


class _Checker:
    def __init__(self, s: Schedule):
        self.s = s
        self.progs = [program(s, g) for g in GROUPS]
        self.ops = [async_ops(p) for p in self.progs]  # (loads, reads) per group
        self.writers = writers(s)
        self.hazards = {}
        self.n_barriers = [sum(isinstance(st, Barrier) for st in p) for p in self.progs]
        for c, owner in s.counters.items():
            if owner not in GROUPS:
                raise ValueError(f"counter {c!r}: owner must be a group in {GROUPS}, got {owner!r}")

    # -- hazard bookkeeping -------------------------------------------------------------
    def _report(self, kind, g, i, key, message, partner_pc):
        k = (kind, g, i, key)
        h = self.hazards.get(k)
        if h is None:
            h = self.hazards[k] = Hazard(kind, g, i, self.progs[g][i], message)
        if partner_pc is not None:
            h.partner_pcs.add(partner_pc)

    def _ordered(self, knows_h, g, retired_at):
        return knows_h[g] > retired_at

    def _why(self, h, g, op, pcs, what):
        """Why op (group g's load/read) is not ordered before group h's current step."""
        who = f"G{g}" if g != h else f"another wave of G{g}"
        at = f"its step {op.index}"
        if op.retired_at == float("inf"):
            return f"{who}'s {what} ({at}) is never retired by a wait"
        if g == h:
            if pcs[h] <= op.retired_at:
                return f"the {what} ({at}) is still in flight here: the wait that retires it is step {op.retired_at}"
            return (f"{who} may not have finished its slice: the {what} ({at}, retired at step {op.retired_at}) "
                    "is not followed by a barrier or signal before this step")
        if pcs[g] <= op.index:
            return f"{who} may not have issued its {what} yet ({at})"
        if pcs[g] <= op.retired_at:
            return f"{who}'s {what} ({at}) may still be in flight (retired at its step {op.retired_at})"
        return (f"{who} retired its {what} ({at}) at its step {op.retired_at}, but no barrier or signal "
                "orders that before this step")

    def _check_step(self, g, pcs, knows):
        i = pcs[g]
        st = self.progs[g][i]
        kn = knows[g]
        other = 1 - g
        if isinstance(st, Read):
            for buf in bufs(st):
                ws = self.writers.get((buf, st.tile))
                if not ws:
                    self._report("read-before-write", g, i, (buf, st.tile),
                                 f"no step loads {buf} with k{st.tile}", pcs[other])
                for w in sorted(ws or ()):
                    for op in self.ops[w][0]:
                        if op.step.buf == buf and op.step.tile == st.tile and not self._ordered(kn, w, op.retired_at):
                            self._report("read-before-write", g, i, (buf, st.tile, w),
                                         self._why(g, w, op, pcs, f"load of {buf} k{st.tile}"), pcs[other])
        elif isinstance(st, Load):
            for h in GROUPS:
                loads, reads = self.ops[h]
                for op in reads:
                    if st.buf in bufs(op.step) and op.step.tile < st.tile and \
                            not self._ordered(kn, h, op.retired_at):
                        self._report("write-over-read", g, i, (st.buf, h, op.index),
                                     self._why(g, h, op, pcs, f"read of {st.buf} k{op.step.tile}"), pcs[other])
                for op in loads:
                    if op.step.buf == st.buf and op.step.tile < st.tile and not self._ordered(kn, h, op.retired_at):
                        self._report("write-over-write", g, i, (st.buf, h, op.index),
                                     self._why(g, h, op, pcs, f"load of {st.buf} k{op.step.tile}"), pcs[other])
        elif isinstance(st, Mma):
            prog = self.progs[g]
            for reg in st.uses:
                src = next((j for j in range(i - 1, -1, -1)
                            if isinstance(prog[j], Read) and prog[j].dst == reg), None)
                if src is None:
                    self._report("mma-operand", g, i, reg, f"no read fills {reg!r} before this MFMA", None)
                    continue
                op = next(o for o in self.ops[g][1] if o.index == src)
                if op.retired_at >= i:
                    self._report("mma-operand", g, i, reg,
                                 f"{reg!r} comes from step {src} ({prog[src].text()}), which no lgkmcnt wait "
                                 f"retires before this MFMA", None)

    # -- the search -----------------------------------------------------------------------
    def run(self) -> Result:
        n = [len(p) for p in self.progs]
        zero = tuple((0,) * len(GROUPS) for _ in GROUPS)
        start = ((0, 0), (False, False), zero, ())
        seen = {start}
        stack = [start]
        while stack:
            state = stack.pop()
            succ = list(self._successors(state, n))
            if not succ and state[0] != tuple(n):
                pcs, arrived = state[0], state[1]
                where = "; ".join(f"G{g} at step {pcs[g]} ({self.progs[g][pcs[g]].text()})"
                                  if pcs[g] < n[g] else f"G{g} finished" for g in GROUPS)
                g = next(g for g in GROUPS if pcs[g] < n[g])
                self._report("deadlock", g, pcs[g], None, f"no group can move: {where}", None)
            for nxt in succ:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        order = {k: i for i, k in enumerate(KINDS)}
        hz = sorted(self.hazards.values(), key=lambda h: (order[h.kind], h.group, h.index))
        return Result(self.s, len(seen), hz)

    def _successors(self, state, n):
        pcs, arrived, knows, signals = state
        for g in GROUPS:
            if pcs[g] >= n[g] or arrived[g]:
                continue
            st = self.progs[g][pcs[g]]
            if isinstance(st, Barrier):
                arr = list(arrived)
                arr[g] = True
                yield self._settle((pcs, tuple(arr), knows, signals), n)
                continue
            kn = [list(k) for k in knows]
            sig = signals
            if isinstance(st, WaitCount):
                snaps = dict(signals).get(st.counter, ())
                if len(snaps) < st.count:
                    continue  # blocked until the owner group signals
                if st.count > 0:
                    kn[g] = [max(a, b) for a, b in zip(kn[g], snaps[st.count - 1])]
            elif isinstance(st, Signal):
                if self.s.counters.get(st.counter) != g:
                    raise ValueError(f"G{g} signals {st.counter!r}, which group "
                                     f"{self.s.counters.get(st.counter)} owns")
                snap = list(kn[g])
                snap[g] = max(snap[g], pcs[g])  # every wave of g has done its steps before this one
                d = dict(signals)
                d[st.counter] = d.get(st.counter, ()) + (tuple(snap),)
                sig = tuple(sorted(d.items()))
            else:
                self._check_step(g, pcs, knows)
            new_pcs = list(pcs)
            new_pcs[g] += 1
            yield self._settle((tuple(new_pcs), arrived, tuple(map(tuple, kn)), sig), n)

    def _settle(self, state, n):
        """Complete a barrier once both groups are at it, or once the other group has ended."""
        pcs, arrived, knows, signals = state
        if all(arrived):
            kn = tuple(tuple(max(knows[h][g], pcs[g]) for g in GROUPS) for h in GROUPS)
            return (tuple(p + 1 for p in pcs), (False, False), kn, signals)
        for g in GROUPS:
            if arrived[g] and pcs[1 - g] >= n[1 - g]:  # the other group's waves have ended
                # The hardware lets it pass (ended waves leave the barrier), but no barrier of the
                # other group meets it: the groups' barrier counts differ, so the phase accounting
                # the stagger relies on is off (a stagger without its re-align, or the reverse).
                self._report("unpaired-barrier", g, pcs[g], None,
                             f"G{1 - g} has ended: the groups execute "
                             f"{self.n_barriers[g]} and {self.n_barriers[1 - g]} barriers", None)
                kn = [list(k) for k in knows]
                kn[g][g] = max(kn[g][g], pcs[g])
                new_pcs = list(pcs)
                new_pcs[g] += 1
                arr = list(arrived)
                arr[g] = False
                return (tuple(new_pcs), tuple(arr), tuple(map(tuple, kn)), signals)
        return state


def check(s: Schedule) -> Result:
    """Every LDS hazard and deadlock of schedule `s`, over every interleaving of its two groups."""
    return _Checker(s).run()
