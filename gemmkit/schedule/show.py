"""Text timeline of a schedule: the two groups side by side, one row per sync interval.

Row k holds what each group does between its k-th and (k+1)-th sync: a barrier
(the k-th barrier of one group meets the k-th of the other, so with barriers a
row is exactly what runs at the same time) or a signal (with counters a group's
row k starts after its k-th signal). The stagger shows as G1 doing one row of
nothing; steps the checker flags are marked `!!`.
"""
from __future__ import annotations

from .checker import check
from .model import GROUPS, Barrier, Signal, program

WIDTH = 50


def _rows(prog) -> list:
    rows = [[]]
    for i, st in enumerate(prog):
        if isinstance(st, Barrier):
            if len(st.who) == 1:
                rows[-1].append((i, st))
            rows.append([])
        elif isinstance(st, Signal):
            rows[-1].append((i, st))
            rows.append([])
        else:
            rows[-1].append((i, st))
    return rows


def _cell(i, st, flagged) -> str:
    mark = "!!" if (i in flagged) else "  "
    return f"{mark}{i:3d} {st.text()}"[:WIDTH]


def timeline(s, hazards=None) -> str:
    if hazards is None:
        hazards = check(s).hazards
    flagged = {g: {h.index for h in hazards if h.group == g} for g in GROUPS}
    cols = [_rows(program(s, g)) for g in GROUPS]
    sync = "barrier" if any(isinstance(st, Barrier) for st in s.steps) else "signal"
    out = [f"schedule {s.name} ({s.tiles} K tiles): {s.about}",
           f"G0 = waves 0-3 (warp_id_m 0), G1 = waves 4-7; one row per {sync} interval; "
           "!! = a step the checker flags", ""]
    out.append(f"{'':6s}| {'G0':{WIDTH}s} | G1")
    for k in range(max(len(c) for c in cols)):
        cells = [c[k] if k < len(c) else [] for c in cols]
        notes = [next((st.note for _, st in cs if st.note), "") for cs in cells]
        out.append(f"{'-' * 6}+- {notes[0][:WIDTH - 2]:{WIDTH - 2}s} -+- {notes[1][:WIDTH - 2]}")
        for j in range(max(1, max(len(c) for c in cells))):
            left = _cell(*cells[0][j], flagged[0]) if j < len(cells[0]) else ""
            right = _cell(*cells[1][j], flagged[1]) if j < len(cells[1]) else ""
            label = f"{k:4d}  " if j == 0 else "      "
            out.append(f"{label}| {left:{WIDTH}s} | {right}".rstrip())
    return "\n".join(out)
