"""PreFix hot objects: ranking by accesses, coverage, eligibility (hand-built profiles).

`make_profile` is shared by the other test_prefix_* files."""

from __future__ import annotations

from dataclasses import replace

from heaplayout.profile_model import Context, Module, Object, Profile
from heaplayout.strategies.prefix.hot import aggregate, complete_objects, excluded_contexts, select_hot
from heaplayout.strategies.prefix.params import PrefixParams


def make_profile(objs: list[tuple], stream: list[int] | None = None, kinds: dict[int, str] | None = None,
                 heap_accesses: int | None = None, system_contexts: set[int] = frozenset()) -> Profile:
    """objs: (context, size, accesses[, alloc_time, free_time, tid, run]) in allocation order;
    object ids count from 1 per run, instances per (run, context) from 0."""
    p = Profile()
    p.header["objects"] = "all"
    p.modules[0] = Module(0, "ab", 0, False, "/bin/prog")
    p.modules[1] = Module(1, "cd", 0, True, "/lib/libc.so.6")
    next_id: dict[int, int] = {}
    inst: dict[tuple[int, int], int] = {}
    for t in objs:
        ctx, size, acc = t[0], t[1], t[2]
        alloc_t = t[3] if len(t) > 3 else 0
        free_t = t[4] if len(t) > 4 else None
        tid = t[5] if len(t) > 5 else 1
        run = t[6] if len(t) > 6 else 0
        if ctx not in p.contexts:
            mod = 1 if ctx in system_contexts else 0
            p.contexts[ctx] = Context(ctx, (kinds or {}).get(ctx, "m"), [(mod, 0x100 + ctx)])
        oid = next_id.get(run, 0) + 1
        next_id[run] = oid
        i = inst.get((run, ctx), 0)
        inst[(run, ctx)] = i + 1
        p.objects.append(Object(oid, ctx, i, size, alloc_t, free_t, tid, acc, 0, acc * 8, 0, run))
        c = p.contexts[ctx]
        c.objects += 1
        c.bytes += size
        c.loads += acc
    # the profiler's exact max_live; at equal clocks the free came first (a program frees
    # before it allocates again when no heap access lies between)
    events = sorted((t, k, o.run, o.context) for o in p.objects
                    for t, k in ((o.alloc_time, 1), (o.free_time, 0)) if t is not None)
    live: dict[tuple[int, int], int] = {}
    for _, k, run, ctx in events:
        live[(run, ctx)] = live.get((run, ctx), 0) + (1 if k else -1)
        p.contexts[ctx].max_live = max(p.contexts[ctx].max_live, live[(run, ctx)])
    p.has_totals = True
    p.stream = list(stream or [])
    p.summary["heap_accesses"] = heap_accesses if heap_accesses is not None else sum(o.accesses for o in p.objects)
    p.complete = True
    return p


def test_ranked_by_accesses_up_to_coverage():
    p = make_profile([(0, 16, 10), (0, 16, 50), (1, 32, 5), (1, 32, 30), (2, 8, 5)])
    sel = select_hot(p, PrefixParams(coverage=0.9))
    # 50 + 30 = 80 < 90, + 10 = 90: three ids, most accessed first
    assert [h.key for h in sel.objects] == [(0, 1), (1, 1), (0, 0)]
    assert sel.accesses == 90 and abs(sel.coverage - 0.9) < 1e-9
    assert [h.key for h in select_hot(p, PrefixParams(coverage=0.5)).objects] == [(0, 1)]
    assert len(select_hot(p, PrefixParams(coverage=1.0)).objects) == 5


def test_coverage_is_of_all_heap_accesses():
    # accesses outside the object records (e.g. objects not written) still count in the total
    p = make_profile([(0, 16, 50), (1, 16, 30), (2, 16, 20)], heap_accesses=200)
    sel = select_hot(p, PrefixParams(coverage=0.9))
    assert len(sel.objects) == 3 and abs(sel.coverage - 0.5) < 1e-9


def test_unaccessed_objects_are_never_hot():
    p = make_profile([(0, 16, 10), (0, 16, 0)])
    assert [h.key for h in select_hot(p, PrefixParams(coverage=1.0)).objects] == [(0, 0)]


def test_ineligible_contexts():
    p = make_profile([(0, 16, 10), (1, 16, 10), (2, 16, 10, 0, None, 1), (2, 16, 10, 0, None, 2), (3, 16, 10)],
                     kinds={1: "a"}, system_contexts={3})
    why = excluded_contexts(p, PrefixParams())
    assert why == {1: "aligned allocation", 2: "allocated by several threads", 3: "no program frame"}
    assert [h.key for h in select_hot(p, PrefixParams(coverage=1.0)).objects] == [(0, 0)]
    both = excluded_contexts(p, replace(PrefixParams(), single_thread_contexts=False))
    assert 2 not in both


def test_runs_of_a_merged_profile_add_up_per_id():
    p = make_profile([(0, 16, 10, 0, None, 1, 0), (0, 16, 1, 0, None, 1, 0),
                      (0, 48, 10, 0, None, 1, 1), (0, 16, 30, 0, None, 1, 1)])
    agg = aggregate(p.objects, set())
    assert agg[(0, 0)].accesses == 20 and agg[(0, 0)].size == 48 and agg[(0, 0)].first == (0, 1)
    assert agg[(0, 1)].accesses == 31
    assert [h.key for h in select_hot(p, PrefixParams(coverage=0.6)).objects] == [(0, 1)]


def test_complete_objects_needs_every_record():
    p = make_profile([(0, 16, 1), (1, 16, 1)])
    assert complete_objects(p) == {0, 1}
    p.contexts[1].objects = 2  # one allocation of context 1 has no O record
    assert complete_objects(p) == {0}
    p.header["objects"] = "accessed"
    assert complete_objects(p) == set()
