"""PreFix by call site (heaplayout/strategies/prefix/sites.py): contexts through one return
address become one context whose instances count every allocation there, in allocation
order, per run; a call site with an unrecorded object is left out."""

from __future__ import annotations

from heaplayout.profile_model import Context, Object, Profile
from heaplayout.strategies.prefix.sites import by_call_site


def obj(oid: int, ctx: int, inst: int, run: int = 0, size: int = 32) -> Object:
    return Object(oid, ctx, inst, size, oid * 10, None, 1, 5, 1, 40, 8, run)


def profile(objects: list[Object], contexts: dict[int, list[tuple[int, int]]], header: dict | None = None) -> Profile:
    p = Profile(header=header or {})
    for cid, frames in contexts.items():
        p.contexts[cid] = Context(cid, "m", frames, objects=sum(o.context == cid for o in objects),
                                  loads=sum(o.loads for o in objects if o.context == cid))
    p.objects = objects
    return p


WRAPPER = (0, 0x100)  # the call to malloc inside an xmalloc-like wrapper
CONTEXTS = {1: [WRAPPER, (0, 0x200)], 2: [WRAPPER, (0, 0x300)], 3: [(0, 0x400), (0, 0x500)]}


def test_contexts_through_one_return_address_are_numbered_together_in_allocation_order():
    objs = [obj(1, 1, 0), obj(2, 2, 0), obj(3, 3, 0), obj(4, 1, 1), obj(5, 2, 1), obj(6, 2, 2)]
    sp = by_call_site(profile(objs, CONTEXTS))
    assert sp.site_of == {1: 1, 2: 1, 3: 3} and sp.left_out == 0
    assert {cid: c.frames for cid, c in sp.profile.contexts.items()} == {1: [WRAPPER], 3: [(0, 0x400)]}
    assert sp.profile.contexts[1].objects == 5 and sp.profile.contexts[1].loads == 25
    assert [(o.id, o.context, o.instance) for o in sp.profile.objects] == \
        [(1, 1, 0), (2, 1, 1), (3, 3, 0), (4, 1, 2), (5, 1, 3), (6, 1, 4)]


def test_a_site_of_one_context_keeps_its_exact_live_count():
    objs = [obj(1, 1, 0), obj(2, 2, 0), obj(3, 3, 0)]
    p = profile(objs, CONTEXTS)
    for c in p.contexts.values():
        c.max_live = 7
    sp = by_call_site(p)
    # one context: the profiler's count; several: unknown (their sum only bounds it), so 0
    assert sp.profile.contexts[3].max_live == 7 and sp.profile.contexts[1].max_live == 0


def test_each_merged_run_numbers_from_zero():
    objs = [obj(1, 1, 0, run=0), obj(2, 2, 0, run=0), obj(1, 2, 0, run=1), obj(2, 1, 0, run=1)]
    sp = by_call_site(profile(objs, {1: CONTEXTS[1], 2: CONTEXTS[2]}))
    assert sorted((o.run, o.id, o.instance) for o in sp.profile.objects) == [(0, 1, 0), (0, 2, 1), (1, 1, 0), (1, 2, 1)]


def test_a_call_site_with_unrecorded_objects_is_left_out():
    objs = [obj(1, 1, 0), obj(2, 2, 0), obj(3, 3, 0)]
    p = profile(objs, CONTEXTS)
    p.contexts[2].objects = 2  # one object of context 2 has no record: the site cannot be renumbered
    sp = by_call_site(p)
    assert sp.left_out == 1 and set(sp.profile.contexts) == {3}
    assert [o.context for o in sp.profile.objects] == [3]
    # a profile made with --objects=accessed leaves every site out
    assert by_call_site(profile(objs, CONTEXTS, {"objects": "accessed"})).left_out == 2
