"""PreFix layout: offsets, the byte cap, the variants end to end, and the command line."""

from __future__ import annotations

import json
from dataclasses import replace

from heaplayout.profile_writer import write_profile
from heaplayout.strategies.prefix import PrefixParams, analyze
from heaplayout.strategies.prefix.__main__ import main
from heaplayout.strategies.prefix.layout import apply_cap, place, slot_bytes
from heaplayout.strategies.prefix.recycle import Recycled
from heaplayout.strategies.prefix.replay import replay
from heaplayout.strategies.prefix.streams import sample_stream, streams_to_ohds

from test_prefix_hot import make_profile


def test_slot_bytes():
    assert [slot_bytes(s, 16) for s in (0, 1, 16, 17, 24, 100)] == [16, 16, 16, 32, 32, 112]


def test_offsets_follow_the_order_and_are_aligned():
    sizes = {(1, 0): 24, (2, 0): 8, (1, 1): 100}
    slots, region = place([(2, 0), (1, 1), (1, 0)], sizes, {}, {1: 1, 2: 2}, {(1, 0): 0, (1, 1): 1, (2, 0): 0}, 16)
    assert [(s.context, s.index, s.offset, s.size) for s in slots] == [(2, 0, 0, 16), (1, 1, 16, 112), (1, 0, 128, 32)]
    assert region == 160 and all(s.offset % 16 == 0 for s in slots)


def test_recycled_slots_sit_where_the_first_object_comes():
    rec = {5: Recycled(5, 3, 20, 50, 500)}
    order = [(1, 0), (5, 7), (2, 0), (5, 8)]
    sizes = {(1, 0): 16, (2, 0): 16, (5, 7): 20, (5, 8): 20}
    slots, region = place(order, sizes, rec, {1: 1, 2: 2, 5: 3}, {(1, 0): 0, (2, 0): 0}, 16)
    assert [(s.context, s.index, s.recycled) for s in slots] == [(1, 0, False), (5, 0, True), (5, 1, True),
                                                                (5, 2, True), (2, 0, False)]
    assert [s.offset for s in slots] == [0, 16, 48, 80, 112] and region == 128


def test_cap_drops_the_least_accessed_and_keeps_the_order():
    order = [(1, 0), (2, 0), (3, 0), (5, 0), (5, 1)]
    sizes = {(1, 0): 64, (2, 0): 16, (3, 0): 32, (5, 0): 16, (5, 1): 16}
    acc = {(1, 0): 10, (2, 0): 50, (3, 0): 40, (5, 0): 1, (5, 1): 1}
    rec = {5: Recycled(5, 2, 16, 40, 45)}  # 32 bytes, 45 accesses
    kept, kept_rec = apply_cap(order, sizes, acc, rec, 100, 16)
    # by accesses: (2,0) 16, recycled 5: 32, (3,0) 32 -> 80; (1,0) 64 no longer fits
    assert kept == [(2, 0), (3, 0), (5, 0), (5, 1)] and set(kept_rec) == {5}
    assert apply_cap(order, sizes, acc, rec, None, 16) == (order, rec)
    assert apply_cap(order, sizes, acc, rec, 0, 16) == ([], {})


def test_streams_map_object_ids_to_prefix_ids():
    key_of = {1: (0, 0), 2: (0, 1), 3: (1, 0), 4: (1, 1)}
    ohds = streams_to_ohds([((1, 3, 1), 9), ((2, 4), 5), ((4, 2), 7), ((1, 2), 1)], key_of,
                           {(0, 0), (0, 1), (1, 0), (1, 1)} - {(0, 0)})
    # (1,3,1) keeps only (1,0): no stream; {2,4} twice: heats add, first order kept
    assert [(o.objects, o.heat) for o in ohds] == [(((0, 1), (1, 1)), 12)]


def test_sample_stream_windows():
    s = list(range(100))
    assert sample_stream(s, 200, 4) == s
    assert sample_stream(s, 20, 4) == [0, 1, 2, 3, 4, 32, 33, 34, 35, 36, 63, 64, 65, 66, 67, 95, 96, 97, 98, 99]
    assert sample_stream(s, 20, 1) == s[:20]


def _stream_profile():
    # ids 1..6: ctx 1 allocates 1,2,3 ; ctx 2 allocates 4,5,6. Objects 3 and 5 are used
    # together over and over; 1 is hot alone; 2, 4, 6 are cold.
    p = make_profile([(1, 24, 300), (1, 16, 1), (1, 40, 200), (2, 16, 1), (2, 8, 200), (2, 16, 1)])
    p.stream = [1] * 3 + [3, 5] * 100 + [1] * 3
    p.summary["heap_accesses"] = 703
    return p


def test_variants_end_to_end():
    a = analyze(_stream_profile(), PrefixParams(coverage=0.95))
    hot, hds, both = (a.layouts[v] for v in ("hot", "hds", "hds+hot"))
    # hot: ids 1,3,5 in allocation order, sizes 24, 40, 8 -> 32, 48, 16
    assert [(s.context, s.index, s.offset) for s in hot.slots] == [(1, 0, 0), (1, 2, 32), (2, 1, 80)]
    assert hot.region_bytes == 96 and hot.stats.accesses == 700
    # hds: the one stream (3, 5) only
    assert [(s.context, s.index) for s in hds.slots] == [(1, 2), (2, 1)] and hds.region_bytes == 64
    assert hds.streams.ohds == 1 and hds.streams.rhds == 1
    # hds+hot: the stream first, then the rest in allocation order
    assert [(s.context, s.index, s.offset) for s in both.slots] == [(1, 2, 0), (2, 1, 48), (1, 0, 64)]
    rules = {r.context: r for r in both.rules}
    assert (rules[1].pattern, rules[1].values, rules[2].pattern, rules[2].values) == ("fixed", (0, 2), "fixed", (1,))
    assert rules[1].counter != rules[2].counter
    # with shared counters: one over ctx 1's and ctx 2's six allocations; the hot ones are
    # its values 0, 2 and 4, a progression
    both = analyze(_stream_profile(), PrefixParams(coverage=0.95, share_counters=True)).layouts["hds+hot"]
    rules = {r.context: r for r in both.rules}
    assert rules[1].counter == rules[2].counter and rules[1].shared
    assert (rules[1].pattern, rules[1].start, rules[1].stride, rules[1].count) == ("regular", 0, 2, 3)
    assert [s.value for s in both.slots] == [2, 4, 0]
    assert abs(both.stats.coverage - 700 / 703) < 1e-9


def test_cap_in_analyze():
    a = analyze(_stream_profile(), replace(PrefixParams(coverage=0.95), max_bytes=50), ["hot"])
    lay = a.layouts["hot"]
    # 1 (300 accesses, 32 B) fits, 3 (200, 48 B) does not, 5 (200, 16 B) does
    assert [(s.context, s.index) for s in lay.slots] == [(1, 0), (2, 1)] and lay.region_bytes == 48
    assert lay.dropped_by_cap == 1 and lay.stats.accesses == 500


def test_recycling_in_analyze():
    objs = [(1, 32, 5, 10 * i, 10 * i + 5) for i in range(64)] + [(2, 16, 1000, 0, None)]
    a = analyze(make_profile(objs), PrefixParams(coverage=1.0), ["hot"])
    lay = a.layouts["hot"]
    rules = {r.context: r for r in lay.rules}
    assert rules[1].pattern == "recycle" and rules[1].count == 1
    assert rules[2].pattern == "all"
    assert lay.stats.slots == 2 and lay.stats.objects == 65 and lay.region_bytes == 48


def test_command_line(tmp_path, capsys):
    prof = tmp_path / "p.prof"
    write_profile(_stream_profile(), prof)
    out = tmp_path / "p.json"
    assert main([str(prof), "--coverage", "0.95", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "hds+hot" in text and "region" in text
    doc = json.loads(out.read_text())
    assert doc["variants"]["hot"]["region_bytes"] == 96
    assert len(doc["variants"]["hds"]["slots"]) == 2
    assert main([str(tmp_path / "missing.prof")]) == 2


def test_replay_on_its_own_profile_places_what_was_planned():
    p = _stream_profile()
    a = analyze(p, PrefixParams(coverage=0.95))
    for lay in a.layouts.values():
        r = replay(lay, p, p, {(1, 0), (1, 2), (2, 1)})
        assert r.placed == len(lay.slots) == r.slots_used == r.hot_placed
        assert r.accesses == lay.stats.accesses
        assert (r.too_large, r.other_context, r.busy, r.missing_contexts) == (0, 0, 0, 0)


def test_replay_on_another_input():
    p = _stream_profile()
    lay = analyze(p, PrefixParams(coverage=0.95)).layouts["hot"]
    # another input: ctx 1's third object (64 bytes) no longer fits its 48-byte slot, and
    # ctx 2's second object is now a rarely used one of 8 bytes (it still takes its slot)
    other = make_profile([(1, 24, 100), (1, 16, 1), (1, 64, 100), (2, 16, 0), (2, 8, 1), (2, 8, 50)])
    r = replay(lay, p, other)
    # ctx 1's counter: 0 -> (1,0) fits; 2 -> (1,2) 64 > 48; ctx 2's: 1 -> (2,1) 8 <= 16 fits
    assert (r.placed, r.too_large, r.accesses) == (2, 1, 101)
    assert replay(lay, p, make_profile([(7, 16, 5)])).missing_contexts == 2
    # a shared counter (values 0, 2, 4 over both contexts) meets another interleaving: ctx 2
    # allocating first shifts every value, and value 2 now lands on ctx 1's slot from ctx 2
    shared = analyze(p, PrefixParams(coverage=0.95, share_counters=True)).layouts["hot"]
    swapped = make_profile([(2, 16, 1), (2, 8, 50), (1, 24, 100), (1, 16, 1), (1, 40, 100), (2, 16, 0)])
    r = replay(shared, p, swapped)
    # values in this run: (2,0)=0 meets (1,0)'s slot: another context, refused; (2,1)=1 has
    # no slot; (1,0)=2 takes (1,2)'s slot (same context, 24 <= 48: placed, though it is not
    # the object the slot was meant for); (1,2)=4 meets (2,1)'s slot: refused
    assert (r.placed, r.other_context) == (1, 2)


def test_replay_recycled_slots():
    objs = [(1, 32, 5, 10 * i, 10 * i + 15) for i in range(64)]
    p = make_profile(objs)
    lay = analyze(p, PrefixParams(coverage=1.0), ["hot"]).layouts["hot"]
    assert lay.rules[0].pattern == "recycle" and lay.rules[0].count == 2
    assert replay(lay, p, p).placed == 64
    # on an input where each object lives three times as long, every other one finds its slot taken
    longer = make_profile([(1, 32, 5, 10 * i, 10 * i + 25) for i in range(64)])
    r = replay(lay, p, longer)
    assert r.busy > 0 and r.placed + r.busy == 64


def test_a_profile_without_objects_gives_empty_layouts(tmp_path, capsys):
    p = make_profile([])
    a = analyze(p)
    assert all(lay.region_bytes == 0 and lay.slots == [] for lay in a.layouts.values())
    prof = tmp_path / "empty.prof"
    write_profile(p, prof)
    assert main([str(prof)]) == 0
    assert "hot objects: 0 ids" in capsys.readouterr().out
