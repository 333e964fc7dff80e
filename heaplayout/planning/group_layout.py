"""Each group's layout chosen by simulation: its sizes interleaved in allocation order
(HALO's) or a span per size class (docs/planning.md, "a group's sizes interleaved or apart").

Which layout a group wants depends on how the run's allocations and accesses interleave
(docs/results.md §17): no statistic of the profile we tried ordered the groups, while the
simulator attributes every miss to the pool it falls in. So the plan is simulated twice on
the training input, once with every group interleaved and once with every group in spans,
and each group keeps the layout under which its own pool cost less. A pool's cost is the
latency its misses add over L1 hits, with the simulator's own latencies (a miss that the
next level serves costs that level's latency minus this one's; a TLB miss its penalty): a
miss to memory weighs as the model says, not as an L1 miss. The simulator's default model
(three cache levels, two TLB levels, no prefetcher) is used.

Choosing per group from two whole-plan runs assumes groups barely change each other's
misses (they live in different chunks; they only share cache sets). `choose_by_simulation`
can simulate the mixed plan as well, so that the assumption is checked rather than trusted
(benchmarks/real/group_layout.py --choose reports all three).
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..plan_format import Plan, write_plan
from ..simulate import SimOptions, run_simulation

LAYOUTS = ("spans", "interleave")
# runtime/src/internal.h HL_POOL_FIRST_DYNAMIC: plan.c takes the plan's groups' pool ids
# first, in order, so group g is pool g + 2 (the simulator reports misses by pool id)
FIRST_GROUP_POOL = 3


def pool_of_group(group: int) -> int:
    return FIRST_GROUP_POOL + group - 1


@dataclass(frozen=True)
class GroupLayoutCost:
    """One group's simulated cost (cycles its misses add over L1 hits) under each layout."""

    group: int
    spans: int
    interleave: int

    @property
    def choice(self) -> str:
        """The cheaper layout; a tie keeps spans, the default."""
        return "interleave" if self.interleave < self.spans else "spans"


def with_layout(plan: Plan, layout: str | dict[int, str]) -> Plan:
    """The plan with every group in `layout`, or each group in its entry of a {group: layout}
    map (groups not in it keep theirs)."""
    def pick(gid: int, spans: bool) -> bool:
        want = layout if isinstance(layout, str) else layout.get(gid)
        if want is None:
            return spans
        if want not in LAYOUTS:
            raise ValueError(f"group layout {want!r}: expected one of {', '.join(LAYOUTS)}")
        return want == "spans"
    return dataclasses.replace(plan, groups=[dataclasses.replace(g, spans=pick(g.id, g.spans)) for g in plan.groups])


def pool_costs(result: dict) -> dict[int, int]:
    """{pool id: cycles that pool's misses add over L1 and DTLB hits} from an hlsim result:
    each cache miss the next level's latency minus this one's, each TLB miss its penalty."""
    cfg = result["config"]
    lat = [lv["latency"] for lv in cfg["levels"]] + [cfg["mem_latency"]]
    step = [lat[i + 1] - lat[i] for i in range(len(cfg["levels"]))]
    tlb = [t["penalty"] for t in cfg.get("tlb", [])]
    return {p["pool"]: sum(m * s for m, s in zip(p["misses"], step))
            + sum(m * t for m, t in zip(p.get("tlb_misses", []), tlb))
            for p in result.get("pools", [])}


def group_costs(plan: Plan, spans_result: dict, interleave_result: dict) -> list[GroupLayoutCost]:
    s, i = pool_costs(spans_result), pool_costs(interleave_result)
    return [GroupLayoutCost(g.id, s.get(pool_of_group(g.id), 0), i.get(pool_of_group(g.id), 0))
            for g in plan.groups]


def choose(plan: Plan, costs: Sequence[GroupLayoutCost]) -> Plan:
    """The plan with each group in its cheaper layout. hds plans keep allocation order:
    their groups are hot data streams laid out in stream order."""
    if plan.strategy == "hds":
        return with_layout(plan, "interleave")
    return with_layout(plan, {c.group: c.choice for c in costs})


def total_cost(result: dict) -> int:
    """Cycles every miss of the run adds over L1 hits (all pools and the rest of memory)."""
    return sum(pool_costs(result).values())


@dataclass
class LayoutChoice:
    plan: Plan
    costs: list[GroupLayoutCost]
    totals: dict[str, int]  # layout ("spans", "interleave", "chosen") -> total_cost of its run
    seconds: float = 0.0


def choose_by_simulation(plan: Plan, program: Sequence[str], stdin: Path | None = None,
                         allocator: str = "glibc", check: bool = False, cwd: Path | None = None,
                         env_base: dict[str, str] | None = None,
                         say: Callable[[str], None] = lambda s: None,
                         sim_options: SimOptions | None = None) -> LayoutChoice:
    """Simulate `program` (the training input) under the plan with every group interleaved and
    with every group in spans, and give each group the cheaper; `check` simulates the chosen
    plan too. The allocator underneath serves only the objects outside the groups."""
    t0 = time.monotonic()
    base = sim_options or SimOptions()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="hl-layout.") as tmp:
        def run(name: str, p: Plan) -> dict:
            path = Path(tmp) / f"{name}.plan"
            write_plan(p, path)
            opts = dataclasses.replace(base, policy="plan", allocator=allocator, plan=str(path))
            say(f"simulating the plan with groups {name}")
            return run_simulation(program, opts, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  cwd=cwd, env_base=env_base)
        for layout in LAYOUTS:
            results[layout] = run(layout, with_layout(plan, layout))
        costs = group_costs(plan, results["spans"], results["interleave"])
        if plan.groups and not any(c.spans or c.interleave for c in costs):
            # a refused plan (another build of the program) or groups that met no object on
            # this input: nothing to choose by, so the plan stays as it was
            say("no group's pool had a miss in the simulated runs; the plan's layouts are kept")
            return LayoutChoice(plan, costs, {k: total_cost(r) for k, r in results.items()},
                                time.monotonic() - t0)
        chosen = choose(plan, costs)
        totals = {k: total_cost(r) for k, r in results.items()}
        if check:
            totals["chosen"] = total_cost(run("chosen", chosen))
    return LayoutChoice(chosen, costs, totals, time.monotonic() - t0)



# ---- where in a cache line the groups' objects start (a plan's `group ... line N`) ----
#
# Which offset suits a structure depends on which of its fields a walk touches and in what
# order it meets the objects: Olden tsp's 56-byte records in allocation order ran 0.93x
# glibc's time 32 or 48 bytes into their lines and 1.37x on them, while graphviz's 456-byte
# node records lost 8% of their L1 and L2 hits off the line (docs/results.md sections 19
# and 21). The default model counts the same misses at every offset; `--hw yes` sees the
# prefetches a record's tail into the next line brings in time, and ranks tsp's offsets as
# the native run does. So the offset is chosen on the whole run's `--hw` time estimate,
# one offset for every group of the plan (the model's stalls are not attributed to pools).
LINE_OFFSETS = (0, 16, 32, 48)
# an offset must cut the --hw estimate by this share to replace the line's start: the
# model's estimates of one layout agree to 0.1%, but it rated tsp's best offset 0.87x where
# the native run gave 0.68x, so smaller gains are within its error
LINE_MIN_GAIN = 0.02
LINE_HW_MODEL = {"hw": "yes"}


def with_line(plan: Plan, line: int) -> Plan:
    """The plan with every group's objects starting `line` bytes into a cache line."""
    if line not in LINE_OFFSETS:
        raise ValueError(f"line offset {line}: expected one of {', '.join(map(str, LINE_OFFSETS))}")
    return dataclasses.replace(plan, groups=[dataclasses.replace(g, line=line) for g in plan.groups])


def pick_line(estimates: dict[int, int], min_gain: float = LINE_MIN_GAIN) -> int:
    """The offset whose run the model estimated fastest, if it beats the line's start (0) by
    `min_gain`; else 0."""
    best = min(sorted(estimates), key=lambda k: estimates[k])
    return best if 0 in estimates and estimates[best] <= (1 - min_gain) * estimates[0] else 0


@dataclass
class LineChoice:
    plan: Plan
    line: int
    estimates: dict[int, int]  # offset -> the --hw time estimate of the run, cycles
    seconds: float = 0.0


def choose_line_by_simulation(plan: Plan, program: Sequence[str], stdin: Path | None = None,
                              allocator: str = "glibc", cwd: Path | None = None,
                              env_base: dict[str, str] | None = None,
                              say: Callable[[str], None] = lambda s: None,
                              sim_options: SimOptions | None = None, jobs: int = 2) -> LineChoice:
    """Simulate `program` (the training input) under the plan with every group at each of
    LINE_OFFSETS, with the native-time model (`--hw yes`), `jobs` runs at a time, and give
    the groups the offset of the fastest estimate (pick_line)."""
    from concurrent.futures import ThreadPoolExecutor
    t0 = time.monotonic()
    base = sim_options or SimOptions()
    with tempfile.TemporaryDirectory(prefix="hl-line.") as tmp:
        def run(line: int) -> int:
            path = Path(tmp) / f"line{line}.plan"
            write_plan(with_line(plan, line), path)
            opts = dataclasses.replace(base, policy="plan", allocator=allocator, plan=str(path),
                                       model={**base.model, **LINE_HW_MODEL})
            say(f"simulating the plan with its objects {line} bytes into their lines (--hw yes)")
            r = run_simulation(program, opts, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=cwd, env_base=env_base)
            return int(r["estimate"])
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            estimates = dict(zip(LINE_OFFSETS, pool.map(run, LINE_OFFSETS)))
    line = pick_line(estimates)
    return LineChoice(with_line(plan, line), line, estimates, time.monotonic() - t0)
