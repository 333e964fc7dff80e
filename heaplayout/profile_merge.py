"""Merging heap profiles of the same binary (`heaplayout profile merge`): contexts matched
by their frames, counts added up, objects and reference streams of later runs shifted past
the earlier ones.
"""

from __future__ import annotations

from pathlib import Path

from .profile_model import Context, Module, Object, Profile


def main_module(p: Profile) -> Module | None:
    exe = p.header.get("exe", "")
    for m in p.modules.values():
        if not m.system and (m.path == exe or Path(m.path).name == Path(exe).name):
            return m
    return None


# profile header settings that change what the counts mean (heaplayout profile's options)
RECORDING_KEYS = ("depth", "affinity_distance", "max_object_size", "affinity", "pointer_edges", "trim")


def merge_profiles(profiles: list[Profile], *, force: bool = False) -> Profile:
    """Combine runs of the same binary: contexts are matched by their frames (module
    build-id or path, offset); counts, affinity weights and pointer edges add up; objects
    keep their per-run ids, instance numbers and clock, tagged with their run; the reference
    streams are concatenated (ids of later runs shifted past the earlier ones)."""
    if not profiles:
        raise ValueError("nothing to merge")
    if not force:
        keys = {(main_module(p).key if main_module(p) else ("", Path(p.header.get("exe", "")).name)) for p in profiles}
        if len(keys) > 1:
            raise ValueError("profiles come from different binaries (use --force to merge anyway)")
        # weights recorded under different settings do not add up: affinity at 64 and 128 bytes
        # summed under the first's distance, a run without affinity diluting the other's shares,
        # contexts cut at different depths never matching. They merged silently.
        for key in RECORDING_KEYS:
            values = {p.header.get(key) for p in profiles}
            if len(values) > 1:
                raise ValueError(f"profiles recorded with different {key.replace('_', '-')} "
                                 f"({', '.join(sorted(str(v) for v in values))}); their counts do not add up "
                                 "(use --force to merge anyway)")
    out = Profile()
    out.has_adjacent_links = all(p.has_adjacent_links or not p.pointer_edges for p in profiles)
    out.has_neighbours = all(p.has_neighbours for p in profiles)
    out.header = dict(profiles[0].header)
    out.args = list(profiles[0].args)
    out.complete = all(p.complete for p in profiles)
    out.has_totals = True
    mod_by_key: dict[tuple[str, str], int] = {}
    ctx_by_key: dict[tuple, int] = {}
    id_shift = 0
    run_base = 0
    for p in profiles:
        mod_map: dict[int, int] = {}
        for m in p.modules.values():
            k = m.key
            if k not in mod_by_key:
                mod_by_key[k] = len(mod_by_key)
                out.modules[mod_by_key[k]] = Module(mod_by_key[k], m.build_id, m.bias, m.system, m.path)
            mod_map[m.id] = mod_by_key[k]
        for (mid, off), s in p.symbols.items():
            if mid in mod_map:
                out.symbols.setdefault((mod_map[mid], off), s)
        ctx_map: dict[int, int] = {}
        for c in p.contexts.values():
            k = p.context_key(c)
            if k not in ctx_by_key:
                nid = len(ctx_by_key)
                ctx_by_key[k] = nid
                out.contexts[nid] = Context(nid, c.kind, [(mod_map.get(m, m), off) for m, off in c.frames])
            t = out.contexts[ctx_by_key[k]]
            ctx_map[c.id] = t.id
            t.objects += c.objects
            t.bytes += c.bytes
            t.max_live = max(t.max_live, c.max_live)
            t.loads += c.loads
            t.stores += c.stores
            t.load_bytes += c.load_bytes
            t.store_bytes += c.store_bytes
        runs = max(1, p.header_int("merged_runs", 1))
        for o in p.objects:
            out.objects.append(Object(o.id + id_shift, ctx_map[o.context], o.instance, o.size, o.alloc_time,
                                      o.free_time, o.tid, o.loads, o.stores, o.load_bytes, o.store_bytes,
                                      o.run + run_base))
        for (x, y), n in p.affinity.items():
            a, b = ctx_map[x], ctx_map[y]
            key = (min(a, b), max(a, b))
            out.affinity[key] = out.affinity.get(key, 0) + n
        for x, n in p.walk.items():
            out.walk[ctx_map[x]] = out.walk.get(ctx_map[x], 0) + n
        for (a, off, b), n in p.pointer_edges.items():
            key = (ctx_map[a], off, ctx_map[b])
            out.pointer_edges[key] = out.pointer_edges.get(key, 0) + n
            out.adjacent_links[key] = out.adjacent_links.get(key, 0) + p.adjacent_links.get((a, off, b), 0)
        for (a, b), n in p.neighbours.items():
            key = (ctx_map[a], ctx_map[b])
            out.neighbours[key] = out.neighbours.get(key, 0) + n
        out.stream.extend(oid + id_shift for oid in p.stream)
        out.stream_truncated |= p.stream_truncated
        for k, v in p.summary.items():
            out.summary[k] = max(out.summary.get(k, 0), v) if k == "stream_truncated" else out.summary.get(k, 0) + v
        id_shift += p.summary.get("objects", max((o.id for o in p.objects), default=0))
        run_base += runs
    out.header["merged_runs"] = str(run_base)
    periods = {p.header.get("sample_period", "1") for p in profiles}
    if len(periods) > 1:  # counts are estimates already scaled by each run's own period: they add up
        out.header["sample_period"] = "mixed"
        out.header.pop("sample_window", None)
        out.header.pop("sample_seed", None)
    if "contexts" in out.summary:
        out.summary["contexts"] = len(out.contexts)  # matched contexts are one
    return out
