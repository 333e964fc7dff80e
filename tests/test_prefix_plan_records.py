"""The PreFix plan records (docs/plan-format.md): what plan_format writes it reads back, and
random layouts of slots (many of them overlapping, values skipped or repeated) get the same
verdict, line and reason from both readers (runtime/src/plan_parse.c and plan_prefix.py)."""

from __future__ import annotations

import random
from pathlib import Path

from heaplayout.plan_format import Plan, PlanError, PlanModule, SelectRule, parse_plan_bytes, plan_text
from heaplayout.plan_prefix import PrefixCounter, PrefixRecords, PrefixSite, PrefixSlot
from test_plan_conformance import c_verdicts, python_verdict


def records(counters: list[PrefixCounter], slots: list[PrefixSlot], region: int = 4096) -> PrefixRecords:
    return PrefixRecords(region, 16, counters, [PrefixSite(c.id, c.id) for c in counters],
                         [SelectRule(c.id, ((0, 0x100 + 16 * c.id),)) for c in counters], slots)


def test_written_records_read_back_unchanged() -> None:
    counters = [PrefixCounter(1, "all", 2), PrefixCounter(2, "regular", 3, 5, 16, (0, 1)),
                PrefixCounter(3, "fixed", 2, ranges=((3, 3), (7, 9))), PrefixCounter(4, "recycle", 2)]
    values = {1: [0, 1], 2: [0, 1, 5, 21, 37], 3: [3, 7, 8, 9], 4: [0, 1]}
    slots, off = [], 0
    for c in counters:
        for v in values[c.id]:
            slots.append(PrefixSlot(c.id, v, c.id, off, 32))
            off += 32
    plan = Plan(strategy="prefix:hds+hot", modules=[PlanModule(0, "ab12", "/p")], prefix=records(counters, slots))
    back = parse_plan_bytes(plan_text(plan).encode())
    assert back.prefix == plan.prefix
    assert [list(c.values()) for c in back.prefix.counters] == [values[c.id] for c in counters]


def random_plan(rng: random.Random) -> bytes:
    n = rng.randint(1, 12)
    kind = rng.choice(["all", "recycle", "fixed"])
    counter = PrefixCounter(1, kind, n) if kind != "fixed" else PrefixCounter(1, "fixed", 1, ranges=((2, 1 + n),))
    values = list(counter.values())
    if rng.random() < 0.2 and len(values) > 1:  # a value skipped, repeated or out of order
        i = rng.randrange(len(values) - 1)
        values[i], values[i + 1] = rng.choice([(values[i + 1], values[i]), (values[i], values[i]), (values[i], -1)])
        values = [v for v in values if v >= 0]
    slots = [PrefixSlot(1, v, 1, 16 * rng.randrange(0, 40), 16 * rng.randint(1, 4)) for v in values]
    text = "heaplayout-plan 1\nstrategy prefix:hot\nchunk_size 1048576\nmax_object_size 4096\nmodule 0 - /p\n"
    text += "\n".join(records([counter], []).lines()) + "\n"
    text += "".join(f"prefix_slot {s.counter} {s.value} {s.site} {s.offset} {s.size}\n" for s in slots)
    return (text + "end\n").encode()


def test_random_slot_layouts_get_one_verdict_from_both_readers(build_dir: Path, tmp_path: Path) -> None:
    rng = random.Random(22)
    files = []
    for i in range(400):
        path = tmp_path / f"r{i}.plan"
        path.write_bytes(random_plan(rng))
        files.append(path)
    c = c_verdicts(build_dir, files)
    py = {str(p): python_verdict(p) for p in files}
    assert {k: v for k, v in c.items() if v != py[k]} == {}
    reasons = {v[2].split(":")[0] if v[0] == "error" else "ok" for v in py.values()}
    # both verdicts, and the overlap refusal among the reasons, so the comparison means something
    assert "ok" in reasons and any("overlaps" in v[2] for v in py.values() if v[0] == "error"), reasons


def test_slot_lines_the_runtimes_short_path_leaves_to_the_general_one(build_dir: Path, tmp_path: Path) -> None:
    """runtime/src/plan_parse.c parses a slot line written as the planner writes it on a short
    path (fast_slot) and leaves every other spelling to the general one: each of these
    second slot lines must get the verdict and reason the Python reader gives."""
    head = ("heaplayout-plan 1\nstrategy prefix:hot\nchunk_size 1048576\nmax_object_size 4096\nmodule 0 - /p\n"
            + "\n".join(records([PrefixCounter(1, "all", 2)], []).lines()) + "\nprefix_slot 1 0 1 0 32\n")
    seconds = ["prefix_slot 1 1 1 32 32", "prefix_slot 0x1 1 1 32 32", "prefix_slot 1 1 1 0032 32",
               "prefix_slot 1 1 1 32 0x20", "prefix_slot 1 1 1 32  32", "prefix_slot 1 1 1 32 32 ",
               "prefix_slot 1 1 1 32", "prefix_slot 1 1 1 32 32 7", "prefix_slot 1 1 1 99999999999 32",
               "prefix_slot 1 1 1 4096 32", "prefix_slot 1 1 1 4080 32", "prefix_slot 1 1 1 33 32",
               "prefix_slot 2 1 1 32 32", "prefix_slot 1 1 2 32 32", "prefix_slot 1 2 1 32 32",
               "prefix_slot 1 0 1 32 32", "prefix_slot 1 1 1 16 32", "prefix_slot 1 1 1 32 0",
               "prefix_slot 1 1 1 32 4097", "prefix_slot 1 4294967296 1 32 32", "prefix_slot 1 1 1 3a 32",
               "prefix_slot 01 1 1 32 32", "prefix_slot 1 1 1 32 32\rx"]
    files = []
    for i, line in enumerate(seconds):
        path = tmp_path / f"s{i}.plan"
        path.write_bytes((head + line + "\nend\n").encode())
        files.append(path)
    c = c_verdicts(build_dir, files)
    py = {str(p): python_verdict(p) for p in files}
    assert {k: (v, py[k]) for k, v in c.items() if v != py[k]} == {}
    verdicts = [py[str(p)][0] for p in files]
    assert verdicts[0] == "ok" and verdicts.count("error") >= 15, verdicts


def test_a_plan_refused_names_the_line() -> None:
    text = random_plan(random.Random(5)).replace(b"prefix_region 4096 16", b"prefix_region 4096 24")
    try:
        parse_plan_bytes(text)
    except PlanError as err:
        assert err.line == 6 and "power of two" in err.reason
    else:
        raise AssertionError("an alignment of 24 was accepted")


def test_the_hottest_counters_within_the_runtimes_limits_are_kept(monkeypatch) -> None:
    """yosys's profile gave 4,112 counters and the plan was refused by its own check; now the
    coldest counters are dropped, each with all its contexts (a counter counting only some
    of its contexts would shift every later value)."""
    from heaplayout.strategies.prefix import plan as prefix_plan
    from heaplayout.strategies.prefix.result import ContextRule, PrefixLayout, VariantStats

    def rule(context: int, counter: int, accesses: int) -> ContextRule:
        return ContextRule(context, counter, "all", 0, 1, 1, (), (), False, 1, accesses)

    # counter 2 is shared by contexts 20 and 21 (together the hottest)
    rules = [rule(10, 1, 10), rule(20, 2, 30), rule(21, 2, 30), rule(30, 3, 30), rule(40, 4, 20), rule(50, 5, 40)]
    layout = PrefixLayout("hot", 4096, 16, rules, [], VariantStats("hot", 4096, 0, 0, 0, 0, 0))
    monkeypatch.setattr(prefix_plan, "MAX_COUNTERS", 3)
    monkeypatch.setattr(prefix_plan, "MAX_SITES", 1000)
    assert prefix_plan.within_runtime_limits(layout) == {20, 21, 50, 30}
    monkeypatch.setattr(prefix_plan, "MAX_SITES", 2)  # counter 2's two contexts fill the sites
    assert prefix_plan.within_runtime_limits(layout) == {20, 21}
