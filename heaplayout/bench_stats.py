"""The statistics of `heaplayout bench` and `heaplayout optimize`: medians, quartiles and
paired per-round ratios (docs/bench.md, "Why interleaving and paired ratios")."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Spread:
    """Median and spread of a sample. Quartiles use statistics.quantiles(method='inclusive')."""

    median: float
    min: float
    max: float
    q1: float
    q3: float
    n: int

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    def to_json(self) -> dict:
        return {"median": self.median, "min": self.min, "max": self.max, "q1": self.q1, "q3": self.q3,
                "iqr": self.iqr, "n": self.n}


def spread(values: Sequence[float]) -> Spread:
    if not values:
        raise ValueError("spread of an empty sample")
    vals = sorted(values)
    if len(vals) == 1:
        q1 = q3 = vals[0]
    else:
        q1, _, q3 = statistics.quantiles(vals, n=4, method="inclusive")
    return Spread(median=statistics.median(vals), min=vals[0], max=vals[-1], q1=q1, q3=q3, n=len(vals))


def paired_ratios(times: dict[int, float], baseline: dict[int, float]) -> list[float]:
    """Per round, t_config / t_baseline of the same round (rounds present in both)."""
    return [times[r] / baseline[r] for r in sorted(times) if r in baseline and baseline[r] > 0]
