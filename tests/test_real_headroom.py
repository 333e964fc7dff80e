"""benchmarks/real/headroom.py: the shares it reads from one simulated run."""

from __future__ import annotations

import pytest

from benchmarks.real import headroom


def _result(heap_misses, other_misses, stall, estimate, faults=0):
    return {
        "estimate": estimate, "instructions": 1_000_000, "fault_cycles": faults,
        "timing": {"stall_cycles": stall},
        "levels": [{"misses": heap_misses[0] + other_misses[0]}, {"misses": 0},
                   {"misses": heap_misses[2] + other_misses[2]}],
        "contexts": [
            {"context": 0, "allocs": 10, "bytes": 640, "misses": [heap_misses[0] // 3, 0, heap_misses[2]]},
            {"context": 7, "allocs": 2, "bytes": 4096, "misses": [heap_misses[0] - heap_misses[0] // 3, 0, 0]},
            {"context": -2, "allocs": 0, "bytes": 0, "misses": list(other_misses)},
        ],
    }


def test_heap_stall_is_the_stall_times_the_heap_share_of_l1_misses():
    h = headroom.headroom(_result([300, 0, 40], [100, 0, 10], stall=200, estimate=1000, faults=50))
    assert h["stall_share"] == pytest.approx(0.2)
    assert h["fault_share"] == pytest.approx(0.05)
    assert h["heap_l1_share"] == pytest.approx(0.75)
    assert h["heap_ll_share"] == pytest.approx(0.8)
    assert h["heap_stall_share"] == pytest.approx(0.15)
    assert h["l1_mpki"] == pytest.approx(0.4)
    assert h["ll_mpki"] == pytest.approx(0.05)
    # 200 of the 300 heap misses on one site
    assert h["top_site_share"] == pytest.approx(2 / 3)


def test_misses_off_the_heap_leave_no_heap_headroom():
    h = headroom.headroom(_result([0, 0, 0], [500, 0, 90], stall=400, estimate=1000))
    assert h["stall_share"] == pytest.approx(0.4)
    assert h["heap_stall_share"] == 0
    assert h["top_site_share"] == 0


def test_table_shows_failures_and_rows():
    ok = {"program": "p", "input": "train", "allocator": "glibc",
          "headroom": headroom.headroom(_result([300, 0, 40], [100, 0, 10], 200, 1000))}
    bad = {"program": "q", "input": "train", "allocator": "glibc", "error": "simulate failed (1)"}
    text = headroom.table([ok, bad])
    assert "| p | train | glibc | 1M | 20.0% |" in text
    assert "| 15.0% |" in text
    assert text.splitlines()[2].endswith("| 67% |")
    assert "| q | train | glibc | simulate failed (1) |" in text
