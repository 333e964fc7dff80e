"""Plans that generalize (issue 20): contexts compared modulo recursion, and companions
(objects allocated side by side and used together) kept together."""

from __future__ import annotations

from heaplayout.planning import planner, recursion
from heaplayout.strategies.halo import companions, grouping
from heaplayout.profile_model import Context, Module, Profile


def _profile(affinity: dict, neighbours: dict) -> Profile:
    """0: list cells (walked: a strong loop), 1: the records the cells point to, 2: another
    structure the records are also used with. Records and cells are allocated in pairs."""
    p = Profile()
    p.header = {"exe": "/nonexistent/prog"}
    p.modules[0] = Module(0, None, 0, False, "/nonexistent/prog")
    for c, accesses in {0: 1200, 1: 1000, 2: 1100}.items():
        p.contexts[c] = Context(c, "m", [(0, 0x100 + 0x10 * c), (0, 0x500)], objects=1000, bytes=24000,
                                max_live=1000, loads=accesses)
    p.affinity = dict(affinity)
    p.neighbours = dict(neighbours)
    p.has_neighbours = bool(neighbours)
    p.summary = {"heap_accesses": 3300}
    p.complete = p.has_totals = True
    return p


AFFINITY = {(0, 0): 1100, (1, 2): 900, (0, 1): 200, (2, 2): 500}
PAIRED = {(1, 0): 990, (0, 1): 980}


def _labels(p: Profile, **params) -> dict[int, int]:
    return planner.make_plan(p, "halo", grouping_params=grouping.GroupingParams(**params)).labels


def test_companions_are_grouped_together() -> None:
    p = _profile(AFFINITY, PAIRED)
    torn = _labels(p, companion_share=0)
    assert torn.get(0, 0) != torn.get(1, 0), "HALO alone should tear the pair apart in this profile"
    kept = _labels(p)
    assert kept.get(0, 0) == kept.get(1, 0) != 0


def test_allocated_together_but_used_apart_is_no_reason() -> None:
    apart = {k: v for k, v in AFFINITY.items() if k != (0, 1)}
    assert companions.companion_pairs(_profile(apart, PAIRED), {0, 1, 2}, 0.5, 0.1) == []
    assert companions.companion_pairs(_profile(AFFINITY, PAIRED), {0, 1, 2}, 0.5, 0.1) == [(0, 1)]


def test_rare_neighbours_are_no_pairing() -> None:
    few = {(1, 0): 100, (0, 1): 90}  # chance interleaving, not one cell per record
    assert companions.companion_pairs(_profile(AFFINITY, few), {0, 1, 2}, 0.5, 0.1) == []


def test_join_merges_parts() -> None:
    rep = {1: 1, 2: 1, 3: 3, 4: 4}
    assert companions.join(rep, [(2, 4)]) == {1: 1, 2: 1, 3: 3, 4: 1}


# ---- recursion ----

FM = recursion.FunctionMap(starts={0: [0x100, 0x200, 0x300, 0x400, 0x1000]})  # f, g, h, main; end


def test_chain_keeps_the_innermost_frame_of_each_function() -> None:
    # alloc in f, called from g (0x210), g recursing through three call sites, then main
    chain = [(0, 0x110), (0, 0x210), (0, 0x250), (0, 0x230), (0, 0x290), (0, 0x410)]
    assert recursion.collapse_chain(chain, FM) == ((0, 0x110), (0, 0x210), (0, 0x410))
    # mutual recursion g -> h -> g -> h
    mutual = [(0, 0x110), (0, 0x210), (0, 0x310), (0, 0x220), (0, 0x320), (0, 0x410)]
    assert recursion.collapse_chain(mutual, FM) == ((0, 0x110), (0, 0x210), (0, 0x310), (0, 0x410))
    # frames of unknown function (another module) are kept, repeats dropped
    assert recursion.collapse_chain([(0, 0x110), (1, 5), (1, 5), (1, 9)], FM) == ((0, 0x110), (1, 5), (1, 9))


def test_paths_through_a_recursion_become_one_context() -> None:
    p = Profile()
    p.modules[0] = Module(0, None, 0, False, "/nonexistent/prog")
    p.contexts[0] = Context(0, "m", [(0, 0x110), (0, 0x210), (0, 0x410)], objects=3, max_live=2, loads=9)
    p.contexts[1] = Context(1, "m", [(0, 0x110), (0, 0x210), (0, 0x250), (0, 0x410)], objects=5, max_live=5,
                            loads=1)
    p.contexts[2] = Context(2, "m", [(0, 0x120), (0, 0x410)], objects=1, max_live=1)
    p.affinity = {(0, 1): 4, (1, 2): 2}
    p.neighbours = {(1, 0): 3}
    c = recursion.collapse_profile(p, FM)
    assert sorted(c.profile.contexts) == [0, 2] and c.merged_from == {0: [0, 1], 2: [2]}
    merged = c.profile.contexts[0]
    assert (merged.objects, merged.max_live, merged.loads) == (8, 7, 10)
    assert c.profile.affinity == {(0, 0): 4, (0, 2): 2} and c.profile.neighbours == {(0, 0): 3}
    assert c.functions == {(0, 0x100), (0, 0x200), (0, 0x400)}


def test_placement_from_statistics() -> None:
    from heaplayout.planning import placement
    stats = {"pools": [{"id": 3, "kind": "group", "group": 1, "objects": 60, "bytes_requested": 600},
                       {"id": 4, "kind": "site", "group": 0, "objects": 10, "bytes_requested": 100}],
             "forwarded": {"objects": 30, "bytes_requested": 1300}, "plan_walks": 2, "plan_replays": 5}
    p = placement.placement(stats)
    assert (p.allocations, p.grouped, p.site_pooled) == (100, 60, 10)
    assert p.grouped_share == 0.6 and p.grouped_byte_share == 0.3 and p.walk_share == 0.02
    assert "60.0% of 100 allocations" in placement.describe(p)
    assert placement.generalizes(p, placement.placement({**stats, "forwarded": {"objects": 40}}))
    assert not placement.generalizes(p, placement.placement({**stats, "forwarded": {"objects": 100}}))


# ---- end to end: profile at one depth, run deeper ----

def test_plan_made_at_depth_7_places_a_run_at_depth_10(build_dir, tmp_path) -> None:
    """hp_recursive_eval keeps the values of one phase (grouped) and frees those of the
    other; telling them apart needs the frame beyond a 16-call-site recursion. Profiled at
    depth 7, the plan must place the depth-10 run's values as it places depth 7's: with
    chains compared modulo recursion (planner) and walks collapsed the same way (runtime).
    Without them the deeper run's paths were never seen (the share placed fell, and the
    plan held thousands of rules)."""
    import os
    import shutil
    import subprocess
    import sys

    import pytest

    from heaplayout import paths
    from heaplayout.planning import placement
    from heaplayout.plan_format import read_plan

    if shutil.which("valgrind") is None:
        pytest.fail("valgrind is needed (scripts/setup.sh installs it)")
    prog = build_dir / "tests" / "profiler" / "hp_recursive_eval"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cli = [sys.executable, "-m", "heaplayout.cli"]

    def run(*args: str) -> subprocess.CompletedProcess:
        r = subprocess.run(cli + list(args), env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r

    prof, plan = tmp_path / "r.prof", tmp_path / "r.plan"
    run("profile", "-o", str(prof), "--", str(prog), "7")
    run("plan", str(prof), "-o", str(plan))
    p = read_plan(plan)
    assert p.recursion_function and len(p.rules) <= 4, p.rules
    shares = {}
    for depth in ("7", "10"):
        native = subprocess.run([str(prog), depth], capture_output=True, text=True, env=env).stdout
        stats = tmp_path / f"s{depth}.json"
        r = run("run", "--plan", str(plan), "--stats-json", str(stats), "--", str(prog), depth)
        assert r.stdout == native
        shares[depth] = placement.read_placement(stats)
    # the kept phase is half of all allocations at every depth
    assert 0.45 <= shares["7"].grouped_share <= 0.55
    assert placement.generalizes(shares["7"], shares["10"])
    # a stable answer is given without walking the recursion each time (walks < 1%) ...
    assert shares["10"].walk_share < 0.01, placement.describe(shares["10"])
    # ... and where the answer keeps changing (phases alternating tree by tree) the key stops
    # speculating and placement stays exact: half, give or take one budget per change
    stats = tmp_path / "mix.json"
    r = run("run", "--plan", str(plan), "--stats-json", str(stats), "--", str(prog), "10", "mix")
    assert r.stdout == subprocess.run([str(prog), "10", "mix"], capture_output=True, text=True, env=env).stdout
    mix = placement.read_placement(stats)
    assert 0.49 <= mix.grouped_share <= 0.52, placement.describe(mix)
