"""`gemmkit schedule check NAME | show NAME | list`: the entry points behind gemmkit/cli.py."""
from __future__ import annotations

from . import library
from .checker import check
from .show import timeline


def _list() -> int:
    print("named schedules (seeds' verdict -> checker's verdict):")
    for name, (build, sizes, seed, found) in library.SCHEDULES.items():
        said = {True: "race-free", False: "race", None: "-"}[seed]
        print(f"  {name:34s} seeds: {said:9s} checker: {'race-free' if found else 'RACE':9s} {build(sizes[0]).about}")
    return 0


def check_named(name: str, out=print) -> bool:
    """Check `name` at each of its K-tile counts; print the verdict and every hazard. True: race-free."""
    _, sizes, seed, _ = library.SCHEDULES[name]
    ok = True
    for tiles in sizes:
        r = check(library.get(name, tiles))
        ok &= r.ok
        verdict = "race-free" if r.ok else f"RACE ({len(r.hazards)} hazards)"
        out(f"{name} with {tiles} K tiles: {verdict}; {r.states} states explored")
        for h in r.hazards:
            out("  " + h.describe().replace("\n", "\n  "))
    if seed is not None and seed != ok:
        out(f"note: the seeds call {name} {'race-free' if seed else 'racy'}; see docs/kernels/cdna_pingpong.md")
    out(f"{name}: {'race-free' if ok else 'RACE'}")
    return ok


def run(args) -> int:
    name = args.name
    if name == "list":
        return _list()
    if name not in library.SCHEDULES:
        print(f"unknown schedule {name!r}; known: {', '.join(library.SCHEDULES)} (or 'list')")
        return 2
    if args.schedule_cmd == "show":
        print(timeline(library.get(name)))
        return 0
    return 0 if check_named(name) else 1
