"""Allocator clocks under simulation.

mimalloc returns emptied memory to the OS after delays measured in wall-clock time (2.0.9:
`decommit_delay` 25 ms, `segment_decommit_delay` 500 ms, `decommit_extend_delay` 1 ms), and
jemalloc purges dirty pages over `dirty_decay_ms` (10 s). Under the simulator a program runs
10-90x slower (docs/simulator.md, "Speed"), so these delays pass 10-90x sooner in the
program's own work, the allocator returns memory it natively keeps, and the program faults
it back in. lua5.4's measuring input on mimalloc: 74,482 page faults simulated against
about 30,700 natively (20,900 with decommit off, 80,140 with the three delays at 0). The
model charged those faults to mimalloc alone, not to our pools (which keep their chunks),
and rated a plan 0.948 of mimalloc that runs 1.076 natively (docs/results.md, section 20).

So a simulated run gets the delays multiplied by `scale`, the simulator's slowdown: what
the allocator decides after "500 ms" it decides after about the same amount of the
program's work as natively. A variable the user set is left alone, and so is a decay
time the user put in MALLOC_CONF (ours is appended to the user's other options).
"""

from __future__ import annotations

from typing import Mapping

# The simulator's slowdown, as a round figure: 10-32x for the model alone, 47-90x with
# `--hw` (docs/simulator.md, "Speed"). What matters is the order of magnitude: lua5.4's
# faults on mimalloc were 2.4x native with no scaling.
DEFAULT_SCALE = 50

# mimalloc 2.0.9's time options and their defaults in ms (`MIMALLOC_VERBOSE=1` prints them)
MIMALLOC_DELAYS_MS = {
    "MIMALLOC_DECOMMIT_DELAY": 25,
    "MIMALLOC_SEGMENT_DECOMMIT_DELAY": 500,
    "MIMALLOC_DECOMMIT_EXTEND_DELAY": 1,
}
# jemalloc 5.3's decay times in ms (`MALLOC_CONF=stats_print:true` prints them); muzzy is 0
# (no second stage), which no scale changes
JEMALLOC_DECAY_MS = {"dirty_decay_ms": 10_000}


def slowed_clock_env(preload: str, environ: Mapping[str, str], scale: int = DEFAULT_SCALE) -> dict[str, str]:
    """Variables to add to a simulated run whose LD_PRELOAD is `preload`, so that the
    allocators' wall-clock delays stretch with the run (`scale` 1: nothing)."""
    if scale <= 1:
        return {}
    add: dict[str, str] = {}
    if "libmimalloc" in preload:
        for var, ms in MIMALLOC_DELAYS_MS.items():
            if var not in environ:
                add[var] = str(ms * scale)
    if "libjemalloc" in preload:
        ours = ",".join(f"{opt}:{ms * scale}" for opt, ms in JEMALLOC_DECAY_MS.items())
        user = environ.get("MALLOC_CONF", "")
        if not any(opt in user for opt in JEMALLOC_DECAY_MS):
            add["MALLOC_CONF"] = f"{user},{ours}" if user else ours
    return add
