"""Which time `bench` and `optimize` compare configurations by: wall time, or the CPU time
(user + system) the program itself used.

Wall time counts every moment between start and exit, also those in which the program was
not running at all: another process had its CPU, or the hypervisor took the virtual CPU away
(steal time). On the shared VMs this project is measured on that added up to 0.37 s on one
0.43 s run, and it made single runs 2x slower at random (docs/results.md section 27). A
program that keeps one CPU busy from start to exit is slowed by a heap layout only through
the CPU time it spends, so for such a program CPU time measures the same effect without that
noise. A program that waits (for input, a timer, a child) or runs on several CPUs at once is
measured by wall time: its waiting or its parallelism is part of what the user waits for.

The choice is made from runs of the program itself: the largest ratio (CPU time + ready
time) / wall time over the runs, where ready time is how long the program's main thread was
runnable but waited for a CPU (the kernel's schedstat, as the launcher reads it). A program
that computes whenever it may has CPU + ready = wall however loaded the machine; one that
waits for input, a timer or a child has less; one with a second busy thread has more (its
CPU time counts both threads). Between CPU_BOUND_MIN and CPU_BOUND_MAX the program is one busy
thread. Without the ready time (a kernel without schedstat) the ratio is CPU / wall, taken
from the least disturbed run (losing the CPU only lowers it): on a machine so loaded that
every run lost the CPU for a tenth of its time, that ratio chose wall time, the noisiest
measure, for a program that never waits (lua5.4 at load 6 on 2 CPUs: 0.50)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

METRICS = ("auto", "wall", "cpu")

# Below: the program waits for a tenth of its run or more, even in its least disturbed run. Above: a second thread does work in
# parallel for 5% of the run or more, which CPU time would count as if it were serial.
CPU_BOUND_MIN = 0.9
CPU_BOUND_MAX = 1.05


@dataclass(frozen=True)
class MetricChoice:
    metric: str  # "wall" or "cpu"
    reason: str  # one line for the terminal and the evidence
    cpu_per_wall: float | None  # the largest ratio over the runs (None: no CPU time measured)
    asked: str = "auto"  # what the user asked for: "auto", "wall" or "cpu"

    def to_json(self) -> dict:
        return {"metric": self.metric, "asked": self.asked, "reason": self.reason, "cpu_per_wall": self.cpu_per_wall}


def busy_ratio(wall: float, cpu: float, ready: float | None = None) -> float:
    """(CPU + ready) / wall of one run: 1 for a program that computes whenever it may."""
    return (cpu + (ready or 0.0)) / wall


def choose_metric(asked: str, runs: Iterable[tuple[float, float | None] | tuple[float, float | None, float | None]]
                  ) -> MetricChoice:
    """The metric for `asked` ("auto", "wall" or "cpu") given runs as (wall s, CPU s) or
    (wall s, CPU s, ready s)."""
    if asked not in METRICS:
        raise ValueError(f"unknown time metric {asked!r} (choose from {', '.join(METRICS)})")
    ratios = [busy_ratio(run[0], run[1], run[2] if len(run) > 2 else None)
              for run in runs if run[1] is not None and run[0] > 0]
    r = max(ratios) if ratios else None
    if asked != "auto":
        why = ("CPU time (user + system)" if asked == "cpu" else "wall time") + ", as asked (--metric)"
        return MetricChoice(asked, why if r is None else f"{why}; (CPU + ready time) / wall time {r:.2f}", r, asked)
    if r is None:
        return MetricChoice("wall", "wall time (no CPU time was measured)", None)
    if r < CPU_BOUND_MIN:
        return MetricChoice("wall", f"wall time: the program waits for part of its run ((CPU + ready time) / wall "
                                    f"time {r:.2f})", r)
    if r > CPU_BOUND_MAX:
        return MetricChoice("wall", f"wall time: the program runs on more than one CPU at once ((CPU + ready time) / "
                                    f"wall time {r:.2f})", r)
    return MetricChoice("cpu", f"CPU time (user + system): the program keeps one CPU busy whenever it may "
                               f"((CPU + ready time) / wall time {r:.2f}), and wall time would add the moments it "
                               "was not running (another process or the hypervisor had the CPU)", r)


def run_seconds(metric: str, wall_s: float, cpu_s: float | None) -> float:
    """A run's time under `metric` ("wall" or "cpu")."""
    if metric == "cpu":
        if cpu_s is None:
            raise ValueError("CPU time was not measured for this run")
        return cpu_s
    return wall_s
