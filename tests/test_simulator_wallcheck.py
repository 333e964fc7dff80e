"""simulator/wallcheck.py's scoring (issue 26): which pairs of layouts count, when an estimate
orders a pair as the native times do, and the log-ratio error."""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "simulator"))

import wallcheck  # noqa: E402


def row(cpu: list[float], est: int) -> dict:
    return {"cpu": cpu, "wall": cpu, "sim": {"hw": {"estimate": est}}}


def test_pairs_counts_resolved_pairs_and_errors():
    rows = {
        "a": row([1.0, 1.1, 0.9], 100),  # median 1.0
        "b": row([2.0, 2.0, 2.1], 150),  # 2x slower, estimate 1.5x: ordered right
        "c": row([1.02, 1.03, 1.01], 110),  # within 5% of a: not resolved, but in the error
        "d": row([0.5, 0.5, 0.5], 400),  # faster than all, estimate slowest: wrong
    }
    ok, total, errs, wrong = wallcheck.pairs(rows, "hw", 0.05)
    assert total == 5  # of the 6 pairs, a-c is a tie
    assert ok == 2  # a<b, c<b; the pairs with d are all wrong
    assert len(wrong) == 3 and all(w.startswith("d < ") for w in wrong)
    assert len(errs) == 6
    assert math.isclose(errs[0], abs(math.log(100 / 150) - math.log(1.0 / 2.0)))


def test_layouts_have_their_environment():
    opts, extra = wallcheck.layout_env("jemalloc", False, None)
    assert opts.allocator == "jemalloc" and extra == {}
    opts, extra = wallcheck.layout_env("random4", True, None)
    assert opts.allocator.endswith("libhlperturb.so")
    assert extra["HLPERTURB_MODE"] == "random" and extra["HLPERTURB_ARENAS"] == "4" and extra["HLPERTURB_FREE"] == "reuse"
