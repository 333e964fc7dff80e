"""The report's pieces without a browser or valgrind: the address models behind the heatmap,
the heatmap's sampling of long streams, the size limits that keep a big profile's page
small, context names, and the bench section's reading of a bench document."""

from __future__ import annotations

import json
from pathlib import Path

from heaplayout.plan_format import Plan, PlanGroup
from heaplayout.profile_model import Context, Module, Object, Profile, Symbol
from heaplayout.report.bench_section import from_bench, from_optimize, rounds_svg
from heaplayout.report.heatmap import build_heatmap
from heaplayout.report.inputs import ReportInputs, load_inputs
from heaplayout.report.glibc_model import HEAP, GlibcModel
from heaplayout.report.layout_model import ALLOC, FREE, REALLOC, allocator_layout, events, plan_layout, slot_size
from heaplayout.report.limits import GRAPH_MAX_NODES, HEATMAP_ADDRESS_BINS, HEATMAP_MAX_REFERENCES, \
    HEATMAP_TIME_BINS, TABLE_MAX_ROWS
from heaplayout.report.naming import context_names
from heaplayout.report.page import build_report


def profile_of(objs: list[tuple[int, int, int, int | None]], stream: list[int], contexts: int | None = None) -> Profile:
    """objs: (context, size, alloc_t, free_t) in allocation order; ids from 1."""
    p = Profile()
    p.header["exe"] = "/bin/prog"
    p.modules[0] = Module(0, "ab", 0x1000, False, "/bin/prog")
    for cid in range(contexts or (max(o[0] for o in objs) + 1)):
        p.symbols[(0, 0x100 + cid)] = Symbol(f"site{cid}", "prog.c", 10 + cid)
        p.contexts[cid] = Context(cid, "m", [(0, 0x100 + cid), (0, 0x50)])
    p.symbols[(0, 0x50)] = Symbol("main", "prog.c", 3)
    for i, (cid, size, at, ft) in enumerate(objs, start=1):
        p.objects.append(Object(i, cid, 0, size, at, ft, 1, 1, 0, 8, 0))
        c = p.contexts[cid]
        c.objects += 1
        c.bytes += size
        c.loads += 1
    p.stream = stream
    p.summary["heap_accesses"] = len(stream)
    return p


def test_glibc_model_reuses_the_last_freed_chunk_of_a_size():
    m = GlibcModel()
    a = m.malloc(24)[1]
    b = m.malloc(24)[1]
    c = m.malloc(100)[1]
    assert (a, b, c) == (16, 48, 80)  # 32-byte chunks, then a 112-byte one; pointers 16 past the chunk
    m.free(HEAP, a, 24)
    m.free(HEAP, b, 24)
    assert m.malloc(20)[1] == b and m.malloc(17)[1] == a  # the thread cache: LIFO, same chunk size (32)
    assert m.malloc(24)[1] == 80 + 112  # no free chunk of the size left: the top grows
    assert m.malloc(1 << 20)[0] == ("mmap", 0)


def test_glibc_model_fastbin_refill_reverses_the_order():
    m = GlibcModel()
    ptrs = [m.malloc(40)[1] for _ in range(10)]  # 48-byte chunks
    for p in ptrs:
        m.free(HEAP, p, 40)  # 7 into the cache, 3 into the fastbin
    got = [m.malloc(40)[1] for _ in range(10)]
    # the cache LIFO (6..0), then the fastbin's head (9), whose other two move to the cache
    # reversed and come out 7, 8
    assert got == [ptrs[i] for i in (6, 5, 4, 3, 2, 1, 0, 9, 7, 8)]


def test_glibc_model_coalesces_and_splits_large_chunks():
    m = GlibcModel()
    a, b, guard = (m.malloc(2000)[1] for _ in range(3))  # 2016-byte chunks, past the cache
    m.free(HEAP, a, 2000)
    m.free(HEAP, b, 2000)  # coalesced with a: one free 4032-byte chunk
    assert m.malloc(3000)[1] == a  # it fits there (best fit, split off 3008 bytes)
    assert m.malloc(500)[1] == a + 3008  # the remainder serves the next request
    m.free(HEAP, guard, 2000)  # next to the top, and after the free 512-byte rest: both join the top
    assert m.top == (a - 16) + 3008 + 512


def test_glibc_model_realloc_in_place_and_moving():
    m = GlibcModel()
    a = m.malloc(100)[1]
    assert m.realloc(HEAP, a, 100, 300)[1] == a  # next to the top: grows in place (320-byte chunk)
    b = m.malloc(50)[1]
    assert b == a + 320
    assert m.realloc(HEAP, a, 300, 40)[1] == a  # shrinks in place; its 272-byte tail is freed ...
    assert m.malloc(256)[1] == a + 48  # ... into the cache, which serves a request of that chunk size
    moved = m.realloc(HEAP, a, 40, 100)[1]  # the chunk after a is in use: a moves to the top
    assert moved == b + 64 and m.malloc(30)[1] == a  # and its old 48-byte chunk is reused


def test_events_free_before_allocation_at_one_clock():
    p = profile_of([(0, 16, 0, 5), (0, 16, 5, None), (0, 16, 7, 7)], [1])
    order = [(e.action, e.obj.id) for e in events(p)]
    assert order == [(ALLOC, 1), (FREE, 1), (ALLOC, 2), (ALLOC, 3), (FREE, 3)]


def test_a_realloc_is_one_event_with_the_object_it_replaces():
    p = profile_of([(0, 16, 0, 5), (1, 64, 5, None), (1, 8, 9, None)], [1])
    p.contexts[1].kind = "r"  # context 1 calls realloc: object 2 replaces object 1 at clock 5
    assert [(e.action, e.obj.id, e.old.id if e.old else None) for e in events(p)] == [
        (ALLOC, 1, None), (REALLOC, 2, 1), (ALLOC, 3, None)]  # object 3: realloc(NULL, 8)


def test_slot_sizes_follow_the_runtime_classes():
    assert [slot_size(s, 16) for s in (1, 16, 17, 40, 256)] == [16, 16, 32, 48, 256]
    assert [slot_size(s, 8) for s in (1, 17, 40)] == [8, 24, 40]
    assert [slot_size(s, 16) for s in (257, 320, 321, 1000)] == [320, 320, 384, 1024]


def test_plan_layout_puts_a_group_in_its_own_chunk_in_allocation_order():
    # A (ctx 0) and C (ctx 1) interleaved: glibc puts them side by side, the plan packs A together
    objs = [(i % 2, 48, i, None) for i in range(20)]
    p = profile_of(objs, [1 + 2 * k for k in range(10)])
    plan = Plan(strategy="halo", groups=[PlanGroup(1, 1, 1)])
    before = allocator_layout(p)
    after = plan_layout(p, plan, {0: 1, 1: 0})
    a_ids = [o.id for o in p.objects if o.context == 0]
    gaps_before = {before.position[y] - before.position[x] for x, y in zip(a_ids, a_ids[1:])}
    gaps_after = {after.position[y] - after.position[x] for x, y in zip(a_ids, a_ids[1:])}
    assert gaps_before == {128} and gaps_after == {48}  # two 64-byte chunks apart; 48-byte slots in a row
    assert [b.label for b in after.bands] == ["allocator heap", "group 1"]


def test_a_spans_group_keeps_each_size_class_together():
    # one group of two contexts, 32 and 64 bytes, allocated alternately
    objs = [(i % 2, 32 if i % 2 == 0 else 64, i, None) for i in range(20)]
    p = profile_of(objs, [1 + k for k in range(20)])
    for spans, gap32 in ((False, 96), (True, 32)):
        plan = Plan(strategy="halo", groups=[PlanGroup(1, 2, 1, spans=spans)])
        after = plan_layout(p, plan, {0: 1, 1: 1})
        small = [o.id for o in p.objects if o.context == 0]
        assert {after.model_address[y] - after.model_address[x] for x, y in zip(small, small[1:])} == {gap32}


def test_a_long_stream_is_sampled_and_the_grid_stays_fixed():
    n = HEATMAP_MAX_REFERENCES * 2 + 10
    objs = [(k % 3, 32, 0, None) for k in range(300)]
    p = profile_of(objs, [1 + (i * 7) % 300 for i in range(n)])
    hm = build_heatmap(p, allocator_layout(p))
    assert hm.sampled_every == 3 and hm.references == len(range(0, n, 3))
    assert len(hm.cells) <= HEATMAP_TIME_BINS * HEATMAP_ADDRESS_BINS
    assert max(t for t, _a in hm.cells) == HEATMAP_TIME_BINS - 1
    assert any(note.startswith("1 in 3 of ") for note in hm.notes)


def test_a_large_profile_gives_a_bounded_page(tmp_path: Path):
    contexts = TABLE_MAX_ROWS + 100
    objs = [(k % contexts, 16 + k % 64, k, None) for k in range(20_000)]
    p = profile_of(objs, [1 + (i * 13) % 20_000 for i in range(200_000)], contexts=contexts)
    for a in range(contexts - 1):
        p.affinity[(a, a + 1)] = a + 1
    from heaplayout.report.inputs import Loaded
    rep = build_report(Loaded(ReportInputs(profile=tmp_path / "p.prof"), profile=p))
    assert rep.graph["nodes"] == GRAPH_MAX_NODES and rep.graph["contexts"] == contexts
    assert f"{contexts - TABLE_MAX_ROWS:,} more contexts" in rep.html
    assert rep.html.count('<tr>') < TABLE_MAX_ROWS + 10
    assert len(rep.html) < 2_000_000


def test_context_names_take_as_many_frames_as_tell_them_apart():
    p = profile_of([(0, 8, 0, None), (1, 8, 0, None)], [1, 2])
    p.symbols[(0, 0x101)] = Symbol("site0", "prog.c", 10)  # both contexts allocate at site0:10 ...
    p.contexts[1].frames = [(0, 0x101), (0, 0x60)]  # ... called from different lines of main
    p.symbols[(0, 0x60)] = Symbol("main", "prog.c", 4)
    names = context_names(p)
    assert names == {0: "site0:10 ← main:3", 1: "site0:10 ← main:4"}


def test_bench_document_to_table_and_plot(tmp_path: Path):
    doc = {"schema": "heaplayout-bench/1", "baseline": "glibc", "command": "heaplayout bench ...", "configs": [
        {"label": "glibc", "wall_s": {"median": 1.0, "q1": 0.9, "q3": 1.1, "values": [1.0, 0.9, 1.1]},
         "ratio": {"median": 1.0, "q1": 1.0, "q3": 1.0}, "peak_rss_kib": {"median": 2048}, "output_ok": True},
        {"label": "plan", "wall_s": {"median": 0.5, "q1": 0.45, "q3": 0.55, "values": [0.5, 0.45, 0.55]},
         "ratio": {"median": 0.5, "q1": 0.48, "q3": 0.52}, "peak_rss_kib": {"median": 3072}, "output_ok": False}]}
    m = from_bench(doc)
    assert [s.rounds for s in m.series] == [[1.0, 0.9, 1.1], [0.5, 0.45, 0.55]]
    svg = rounds_svg(m)
    assert svg.count("<circle") == 6 and "plan round 2: 0.4500 s" in svg
    (tmp_path / "b.json").write_text(json.dumps(doc))
    loaded = load_inputs(ReportInputs(bench=tmp_path / "b.json"))
    rep = build_report(loaded)
    assert "<b>NO</b>" in rep.html and "0.500 [0.480–0.520]" in rep.html


def test_rounds_are_shown_in_the_metric_the_document_compared():
    """A bench document compared by CPU time shows its CPU times (wall_s is still the wall
    clock's); an optimize document's race times are time_s, or wall_s before the metric."""
    doc = {"schema": "heaplayout-bench/1", "baseline": "glibc", "metric": {"metric": "cpu"}, "configs": [
        {"label": "glibc", "wall_s": {"median": 2.0, "q1": 2.0, "q3": 2.0, "values": [2.0, 2.0]},
         "cpu_s": {"median": 1.0, "q1": 1.0, "q3": 1.0, "values": [1.0, 1.0]}}]}
    m = from_bench(doc)
    assert m.unit == "cpu" and m.series[0].rounds == [1.0, 1.0] and "CPU time per round" in rounds_svg(m)
    assert from_bench({**doc, "metric": {"metric": "wall"}}).series[0].rounds == [2.0, 2.0]
    opt = {"schema": "heaplayout-optimize/1", "metric": {"metric": "cpu"}, "decision": {"best_allocator": "glibc"},
           "candidates": [{"label": "glibc", "race": {"time_s": {"median": 1.0, "q1": 1.0, "q3": 1.0,
                                                                   "values": [1.0, 1.5]}}}]}
    m = from_optimize(opt)
    assert m.unit == "cpu" and m.series[0].rounds == [1.0, 1.5]


def test_bench_rounds_are_shown_before_optimize_rounds(tmp_path: Path):
    bench = {"schema": "heaplayout-bench/1", "baseline": "glibc", "configs": [
        {"label": "from-bench", "wall_s": {"median": 1.0, "q1": 1.0, "q3": 1.0, "values": [1.0]}}]}
    opt = {"schema": "heaplayout-optimize/1", "decision": {"best_allocator": "glibc"}, "candidates": [
        {"label": "from-optimize", "race": {"wall_s": {"median": 1.0, "q1": 1.0, "q3": 1.0, "values": [1.0]}}}]}
    (tmp_path / "b.json").write_text(json.dumps(bench))
    (tmp_path / "o.json").write_text(json.dumps(opt))
    both = build_report(load_inputs(ReportInputs(bench=tmp_path / "b.json", optimize=tmp_path / "o.json"))).html
    assert 'data-label="from-bench"' in both and 'data-label="from-optimize"' not in both
    alone = build_report(load_inputs(ReportInputs(optimize=tmp_path / "o.json"))).html
    assert 'data-label="from-optimize"' in alone
