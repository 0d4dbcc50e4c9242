"""CDNA ping-pong schedules as data, and an exhaustive race checker for them.

    model.py    step types (global->LDS load, waits, barrier, LDS read, MFMA, counter signal/wait)
    checker.py  every interleaving of the two wave groups; LDS hazards with the step they happen at
    library.py  the seeds' schedules by name (`SCHEDULES`)
    show.py     the two groups' timeline as text
    cli.py      `gemmkit schedule check|show NAME`
"""
from .checker import Hazard, Result, check
from .library import SCHEDULES, get

__all__ = ["check", "get", "SCHEDULES", "Hazard", "Result"]
