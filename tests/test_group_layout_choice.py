"""Each group's layout chosen by simulation (heaplayout/planning/group_layout.py,
`heaplayout plan choose-layout`): the cost rule on synthetic simulator results, and the
whole choice on a suite workload whose group the two layouts place differently."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heaplayout import paths
from heaplayout.plan_format import Plan, PlanGroup, read_plan
from heaplayout.planning import group_layout
from heaplayout.planning.group_layout import GroupLayoutCost


def result(pools: dict[int, list[int]], lat=(5, 14, 50), mem=250, tlb: dict[int, list[int]] | None = None) -> dict:
    """An hlsim result with the given per-pool misses per level (and TLB misses per TLB level)."""
    levels = [{"name": f"L{i + 1}", "latency": x} for i, x in enumerate(lat)]
    return {"config": {"levels": levels, "mem_latency": mem, "tlb": [{"penalty": 7}, {"penalty": 30}]},
            "pools": [{"pool": p, "misses": m, "tlb_misses": (tlb or {}).get(p, [])} for p, m in pools.items()]}


def plan_of(n: int, strategy: str = "halo", spans: bool = True) -> Plan:
    return Plan(strategy=strategy, groups=[PlanGroup(g, 1, 1, False, spans) for g in range(1, n + 1)])


def test_a_miss_costs_the_next_levels_latency_over_this_ones() -> None:
    r = result({3: [10, 4, 1], -1: [100, 0, 0]})
    # 10 L1 misses: +9 each (L2 14 - L1 5); 4 L2 misses: +36 (LL 50 - 14); 1 LL miss: +200
    assert group_layout.pool_costs(r) == {3: 10 * 9 + 4 * 36 + 200, -1: 900}
    assert group_layout.total_cost(r) == 90 + 144 + 200 + 900
    # a DTLB miss costs its penalty, an STLB miss (a page walk) its own
    assert group_layout.pool_costs(result({3: [0, 0, 0]}, tlb={3: [3, 1]})) == {3: 3 * 7 + 30}


def test_group_g_is_pool_g_plus_two_and_each_takes_its_cheaper_layout() -> None:
    plan = plan_of(3)
    spans = result({3: [100, 0, 0], 4: [100, 0, 0], 5: [50, 0, 0], 6: [1000, 0, 0]})
    inter = result({3: [200, 0, 0], 4: [10, 0, 0], 5: [50, 0, 0], 6: [0, 0, 0]})
    costs = group_layout.group_costs(plan, spans, inter)
    assert costs == [GroupLayoutCost(1, 900, 1800), GroupLayoutCost(2, 900, 90), GroupLayoutCost(3, 450, 450)]
    chosen = group_layout.choose(plan, costs)
    assert [g.spans for g in chosen.groups] == [True, False, True]  # a tie keeps spans
    assert [g.spans for g in plan.groups] == [True, True, True]  # the input plan is left alone


def test_a_group_with_no_pool_in_the_results_costs_nothing_and_keeps_spans() -> None:
    costs = group_layout.group_costs(plan_of(2), result({3: [5, 0, 0]}), result({3: [7, 0, 0]}))
    assert costs[1] == GroupLayoutCost(2, 0, 0) and costs[1].choice == "spans"


def test_hds_plans_keep_allocation_order() -> None:
    plan = plan_of(2, strategy="hds", spans=False)
    chosen = group_layout.choose(plan, [GroupLayoutCost(1, 1, 100), GroupLayoutCost(2, 1, 100)])
    assert not any(g.spans for g in chosen.groups)


def test_with_layout_by_map_and_bad_value() -> None:
    plan = plan_of(3, spans=False)
    assert [g.spans for g in group_layout.with_layout(plan, {2: "spans"}).groups] == [False, True, False]
    assert all(g.spans for g in group_layout.with_layout(plan, "spans").groups)
    with pytest.raises(ValueError, match="group layout 'apart'"):
        group_layout.with_layout(plan, "apart")


# --------------------------------------------------------------------------- end to end

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")


def hl(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "heaplayout.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def recycle_plan(build_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], Path]:
    """prefix_recycle's small input and a halo plan with spans: a window of live requests
    and payloads of many sizes recycled, which spans spread over one span per class."""
    exe = build_dir / "workloads" / "fp" / "prefix_recycle"
    if not exe.exists() or not (build_dir / "simulator" / "lib" / "hlsim-amd64-linux").exists():
        pytest.fail(f"prefix_recycle or the simulator not built in {build_dir}: run scripts/build.sh")
    argv = [str(exe), "500000", "64"]
    tmp = tmp_path_factory.mktemp("layout")
    r = hl("profile", "-o", str(tmp / "p.prof"), "--", *argv)
    assert r.returncode == 0, r.stderr[-2000:]
    r = hl("plan", "--group-layout", "spans", "-o", str(tmp / "spans.plan"), str(tmp / "p.prof"))
    assert r.returncode == 0, r.stderr[-2000:]
    return argv, tmp / "spans.plan"


@needs_valgrind
def test_the_choice_is_no_worse_than_either_layout_for_the_whole_plan(recycle_plan) -> None:
    argv, spans_plan = recycle_plan
    plan = read_plan(spans_plan)
    assert plan.groups and all(g.spans for g in plan.groups)
    choice = group_layout.choose_by_simulation(plan, argv, check=True)
    # the groups' pools are where the plan's misses are: the pool ids are the runtime's
    assert any(c.spans and c.interleave for c in choice.costs)
    t = choice.totals
    assert t["spans"] != t["interleave"]  # the layouts differ here, so there is a choice to make
    assert t["chosen"] <= min(t["spans"], t["interleave"]) * 1.001, t
    flags = {g.id: g.spans for g in choice.plan.groups}
    assert flags == {c.group: c.choice == "spans" for c in choice.costs}


@needs_valgrind
def test_a_plan_that_places_nothing_on_the_run_is_kept(recycle_plan) -> None:
    """Another program: the plan's module is never loaded, its groups take no object, so there
    is nothing to choose by and every group keeps its layout."""
    _, spans_plan = recycle_plan
    plan = group_layout.with_layout(read_plan(spans_plan), {1: "interleave"})
    said: list[str] = []
    choice = group_layout.choose_by_simulation(plan, [shutil.which("true") or "/bin/true"], say=said.append)
    assert all(c.spans == 0 and c.interleave == 0 for c in choice.costs)
    assert [g.spans for g in choice.plan.groups] == [g.spans for g in plan.groups]
    assert any("the plan's layouts are kept" in m for m in said)


@needs_valgrind
def test_plan_choose_layout_command(recycle_plan, tmp_path: Path) -> None:
    argv, spans_plan = recycle_plan
    out = tmp_path / "chosen.plan"
    r = hl("plan", "choose-layout", str(spans_plan), "-o", str(out), "--", *argv)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "simulating the plan with groups interleave" in r.stderr  # progress
    chosen = read_plan(out)
    for g in chosen.groups:
        assert f"group {g.id}: {'spans' if g.spans else 'interleave'} " in r.stdout
    # errors: a missing program, no program, a missing plan
    r = hl("plan", "choose-layout", str(spans_plan), "-o", str(out), "--", str(tmp_path / "nope"))
    assert r.returncode == 1 and "program not found" in r.stderr
    r = hl("plan", "choose-layout", str(spans_plan), "-o", str(out))
    assert r.returncode == 2 and "usage" in r.stderr
    r = hl("plan", "choose-layout", str(tmp_path / "none.plan"), "-o", str(out), "--", *argv)
    assert r.returncode == 1 and "none.plan" in r.stderr


# --------------------------------------------------------------------------- line offsets

def test_an_offset_replaces_the_line_s_start_only_by_the_minimum_gain() -> None:
    gain = group_layout.LINE_MIN_GAIN
    assert group_layout.pick_line({0: 1000, 16: 990, 32: 900, 48: 905}) == 32
    # within the model's error of the line's start: the start stays
    assert group_layout.pick_line({0: 1000, 16: 1000 * (1 - gain / 2), 32: 1001, 48: 1002}) == 0
    assert group_layout.pick_line({0: 900, 16: 1000, 32: 950, 48: 990}) == 0


def test_with_line_sets_every_group_and_refuses_other_offsets() -> None:
    plan = group_layout.with_line(plan_of(3), 48)
    assert [g.line for g in plan.groups] == [48, 48, 48]
    with pytest.raises(ValueError, match="line offset 8"):
        group_layout.with_line(plan_of(1), 8)


def test_the_line_is_chosen_on_the_native_time_model_s_estimates(monkeypatch, tmp_path) -> None:
    seen: list[tuple[int, dict]] = []
    fake = {0: 560_000, 16: 546_000, 32: 489_000, 48: 482_000}  # tsp's, training input

    def run_simulation(program, opts, **kw):
        line = read_plan(Path(opts.plan)).groups[0].line
        seen.append((line, dict(opts.model)))
        return {"estimate": fake[line]}

    monkeypatch.setattr(group_layout, "run_simulation", run_simulation)
    choice = group_layout.choose_line_by_simulation(plan_of(2), ["/bin/true"])
    assert choice.line == 48 and [g.line for g in choice.plan.groups] == [48, 48]
    assert choice.estimates == fake
    assert sorted(line for line, _ in seen) == [0, 16, 32, 48]
    assert all(model.get("hw") == "yes" for _, model in seen)


@needs_valgrind
def test_plan_choose_layout_line_command(recycle_plan, tmp_path: Path) -> None:
    argv, spans_plan = recycle_plan
    out = tmp_path / "chosen.plan"
    r = hl("plan", "choose-layout", str(spans_plan), "--line", "-o", str(out), "--", *argv)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "bytes into their lines (--hw yes)" in r.stderr  # progress
    lines = {g.line for g in read_plan(out).groups}
    assert len(lines) == 1 and lines <= set(group_layout.LINE_OFFSETS)
    assert f"objects {lines.pop()} bytes into their cache lines (--hw time estimate by offset: 0: " in r.stdout
