"""How busy the machine was while candidates ran, and what to tell the user about it.

Other programs running beside the measured one share its caches, memory bandwidth and, on
virtual machines, often its core's sibling thread: they inflate and scatter its times even
when it never waits for a CPU (the ready time timing_metric.py counts). The 1-minute load
average, sampled after every run, says how much other work there was: it counts the
measured program itself as about 1.
"""

from __future__ import annotations

import os
import statistics
from typing import Sequence

# other work, in CPUs busy on average beside the measured program, from which a note says
# the machine was busy: at load 4-5 on 2 CPUs lua5.4's confirmation ratios of one
# configuration spread 0.70-1.18 where at load 1.3-2.8 they spread 0.85-0.97
# (docs/results.md §32, §33)
BUSY_OTHER_CPUS = 0.5


def sample() -> float | None:
    """The 1-minute load average now (None where the system has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def summary(loads: Sequence[float], cpus: int | None = None) -> dict | None:
    """The loads sampled over the runs: median, max, the CPU count; None without samples."""
    if not loads:
        return None
    return {"cpus": cpus or os.cpu_count() or 1, "median": round(statistics.median(loads), 2),
            "max": round(max(loads), 2), "samples": len(loads)}


def busy_note(s: dict | None) -> str | None:
    """A note for the report when other work ran beside the candidates, else None."""
    if s is None or s["median"] - 1.0 < BUSY_OTHER_CPUS:
        return None
    return (f"the machine was busy while the candidates ran (load average median {s['median']:.1f}, up to "
            f"{s['max']:.1f}, on {s['cpus']} CPUs; the measured program counts about 1): other programs' work "
            "inflates and scatters the times, so an advantage of a few percent may not resolve; run optimize "
            "again when the machine is quieter")
