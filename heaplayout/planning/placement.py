"""How a run under a plan placed its allocations, from the runtime's statistics JSON
(HEAPLAYOUT_STATS_JSON, docs/runtime.md): the share of allocations and bytes that went to
the plan's groups, and how often identification walked the stack. A plan that generalizes
places about the same share on the measuring input as on the training input it was made
from (issue 20: at least 90% of it), with full walks on under 1% of allocations."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Placement:
    allocations: int  # every allocation the runtime saw: pooled and forwarded
    bytes: int
    grouped: int  # objects placed in a group of the plan
    grouped_bytes: int
    site_pooled: int  # objects in per-site pools (callsite policy, a plan's `rest callsite`)
    walks: int  # identifications that walked the stack in full
    replays: int  # ... that replayed a recorded walk
    speculated: int = 0  # ... given a walk's stable answer without walking

    @property
    def grouped_share(self) -> float:
        return self.grouped / self.allocations if self.allocations else 0.0

    @property
    def grouped_byte_share(self) -> float:
        return self.grouped_bytes / self.bytes if self.bytes else 0.0

    @property
    def walk_share(self) -> float:
        return self.walks / self.allocations if self.allocations else 0.0


def placement(stats: dict) -> Placement:
    """The placement summary of one statistics JSON object."""
    pools = stats.get("pools", [])
    grouped = [p for p in pools if p.get("group")]
    sites = [p for p in pools if not p.get("group") and p.get("kind") == "site"]
    fwd = stats.get("forwarded", {})
    pooled = sum(p["objects"] for p in pools)
    pooled_bytes = sum(p["bytes_requested"] for p in pools)
    return Placement(allocations=pooled + int(fwd.get("objects", 0)),
                     bytes=pooled_bytes + int(fwd.get("bytes_requested", 0)),
                     grouped=sum(p["objects"] for p in grouped),
                     grouped_bytes=sum(p["bytes_requested"] for p in grouped),
                     site_pooled=sum(p["objects"] for p in sites),
                     walks=int(stats.get("plan_walks", 0)), replays=int(stats.get("plan_replays", 0)),
                     speculated=int(stats.get("plan_speculated", 0)))


def read_placement(path: str | Path) -> Placement:
    return placement(json.loads(Path(path).read_text()))


def describe(p: Placement) -> str:
    return (f"{p.grouped_share:.1%} of {p.allocations:,} allocations ({p.grouped_byte_share:.1%} of bytes) placed "
            f"in the plan's groups; full stack walks for {p.walk_share:.2%} of allocations "
            f"({p.walks:,}; {p.replays:,} replayed walks, {p.speculated:,} given a walk's stable answer)")


def generalizes(training: Placement, measuring: Placement, keep: float = 0.9) -> bool:
    """The plan places at least `keep` of the share it placed on its training input."""
    return measuring.grouped_share >= keep * training.grouped_share
