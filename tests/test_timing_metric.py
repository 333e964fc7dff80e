"""The choice between wall time and CPU time (heaplayout/timing_metric.py)."""

from __future__ import annotations

import pytest

from heaplayout.timing_metric import CPU_BOUND_MAX, CPU_BOUND_MIN, choose_metric, run_seconds


def test_one_busy_thread_is_timed_by_cpu_even_when_a_run_lost_its_cpu():
    """A run that was descheduled for half its wall time does not make the program look
    like one that waits: the least disturbed run decides."""
    c = choose_metric("auto", [(2.0, 1.0), (1.01, 1.0), (1.5, 1.0)])
    assert c.metric == "cpu" and c.cpu_per_wall == pytest.approx(1.0 / 1.01)
    assert "one CPU busy" in c.reason


@pytest.mark.parametrize("runs, why", [
    ([(1.0, 0.5), (1.0, 0.6)], "waits"),                 # I/O, sleeps, a child it does not wait for
    ([(1.0, 1.9), (1.0, 1.95)], "more than one CPU"),    # two busy threads
])
def test_waiting_or_parallel_programs_are_timed_by_the_wall_clock(runs, why):
    c = choose_metric("auto", runs)
    assert c.metric == "wall" and why in c.reason


def test_the_bounds():
    assert choose_metric("auto", [(1.0, CPU_BOUND_MIN)]).metric == "cpu"
    assert choose_metric("auto", [(1.0, CPU_BOUND_MIN - 0.01)]).metric == "wall"
    assert choose_metric("auto", [(1.0, CPU_BOUND_MAX)]).metric == "cpu"
    assert choose_metric("auto", [(1.0, CPU_BOUND_MAX + 0.01)]).metric == "wall"


def test_asked_metric_wins_and_unknown_is_refused():
    assert choose_metric("wall", [(1.0, 1.0)]).metric == "wall"
    c = choose_metric("cpu", [(1.0, 0.2)])
    assert c.metric == "cpu" and c.asked == "cpu" and "as asked" in c.reason
    assert choose_metric("auto", []).metric == "wall"  # nothing measured: the wall clock
    assert choose_metric("auto", [(1.0, None)]).metric == "wall"
    with pytest.raises(ValueError, match="unknown time metric"):
        choose_metric("ticks", [])


def test_run_seconds():
    assert run_seconds("cpu", 2.0, 1.5) == 1.5 and run_seconds("wall", 2.0, 1.5) == 2.0
    with pytest.raises(ValueError):
        run_seconds("cpu", 2.0, None)


def test_ready_time_counts_as_busy():
    """A program that lost the CPU to other jobs for half of every run still keeps one CPU
    busy whenever it may: with the ready time it is timed by CPU time; a sleeper is not, and
    a second busy thread (CPU + ready past the wall time) is not."""
    loaded = [(2.0, 1.0, 0.98), (2.2, 1.0, 1.15)]
    assert choose_metric("auto", [(w, c) for w, c, _ in loaded]).metric == "wall"  # as before ready time
    c = choose_metric("auto", loaded)
    assert c.metric == "cpu" and abs(c.cpu_per_wall - 0.99) < 1e-9 and "ready" in c.reason
    assert choose_metric("auto", [(2.0, 0.1, 0.05)]).metric == "wall"
    assert choose_metric("auto", [(2.0, 1.5, 1.0)]).metric == "wall"
    assert choose_metric("auto", [(2.0, 1.0, None)]).metric == "wall"  # no schedstat: CPU / wall alone
