"""Per-group and per-context tables: objects, bytes, accesses and lifetimes from the profile,
misses from `heaplayout simulate --contexts` results.

hlsim charges misses to the allocation call site (the return address of the outermost
allocation call, docs/simulator.md), not to the profile's full context: a context's misses
are those of its call site, shared with every other context allocated there (marked). Under
a plan, hlsim also charges misses to the runtime's pools; the plan's group g is pool g + 2
(pool ids from 3 are handed out to the groups in order when the plan loads, runtime/src/plan.c).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from html import escape
from pathlib import Path

from ..profile_model import Profile
from .limits import TABLE_MAX_ROWS
from .naming import context_names, full_chain

FIRST_GROUP_POOL = 3
_WHERE = re.compile(r"^(?:0x[0-9A-Fa-f]+: )?(?P<fn>.*?)(?: \((?P<file>[^():]*):(?P<line>\d+)\))?$")


@dataclass
class Simulation:
    label: str  # the layout: glibc, plan+glibc, ...
    policy: str
    result: dict

    def level_names(self) -> list[str]:
        return [lv["name"] for lv in self.result.get("levels", [])]


def site_key(function: str | None, file: str | None, line: int) -> tuple[str, str, int]:
    return (function or "", Path(file).name if file else "", line)


def parse_where(where: str) -> tuple[str, str, int] | None:
    m = _WHERE.match(where)
    if not m or where.startswith("("):
        return None
    return site_key(m.group("fn"), m.group("file"), int(m.group("line") or 0))


def contexts_by_site(profile: Profile) -> dict[tuple[str, str, int], list[int]]:
    """call site (innermost frame's function, file, line) -> the contexts allocated there."""
    out: dict[tuple[str, str, int], list[int]] = {}
    for c in profile.contexts.values():
        if not c.frames:
            continue
        sym = profile.frame_symbol(*c.frames[0])
        if sym is None:
            continue
        out.setdefault(site_key(sym.function, sym.file, sym.line), []).append(c.id)
    return out


def site_misses(profile: Profile, sim: Simulation) -> dict[int, tuple[int, int]]:
    """context id -> (L1 misses of its call site, how many contexts share that site)."""
    by_site = contexts_by_site(profile)
    out: dict[int, tuple[int, int]] = {}
    for c in sim.result.get("contexts", []):
        if c.get("context", -1) < 0:
            continue
        key = parse_where(c.get("where", ""))
        members = by_site.get(key, []) if key else []
        for cid in members:
            prev = out.get(cid, (0, len(members)))
            out[cid] = (prev[0] + c["misses"][0], len(members))
    return out


def object_lifetimes(profile: Profile) -> tuple[dict[int, list[int]], dict[int, int]]:
    """context id -> its objects' lifetimes in heap accesses (an object live at exit lives
    until the end of the run), and context id -> how many were live at exit."""
    end = profile.heap_accesses
    per: dict[int, list[int]] = {}
    live: dict[int, int] = {}
    for o in profile.objects:
        if o.free_time is None:
            per.setdefault(o.context, []).append(max(0, end - o.alloc_time))
            live[o.context] = live.get(o.context, 0) + 1
        else:
            per.setdefault(o.context, []).append(o.free_time - o.alloc_time)
    return per, live


def lifetimes(profile: Profile) -> dict[int, tuple[float, float]]:
    """context id -> (median lifetime in heap accesses, share of objects live at exit)."""
    per, live = object_lifetimes(profile)
    return {c: (statistics.median(v), live.get(c, 0) / len(v)) for c, v in per.items()}


def num(v: float | int | None) -> str:
    if v is None:
        return "–"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:,.1f}"
    return f"{int(v):,}"


def table_html(table_id: str, header: list[str], rows: list[list[str]], numeric_from: int = 1,
               caption: str = "") -> str:
    """Cells are HTML already (escaped by the caller); columns from numeric_from right-aligned."""
    out = [f'<table id="{table_id}">']
    if caption:
        out.append(f"<caption>{caption}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f'<td class="{"n" if i >= numeric_from else "t"}">{v}</td>'
                                    for i, v in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def context_table(profile: Profile, group_of: dict[int, int] | None, sims: list[Simulation]) -> tuple[str, int]:
    names = context_names(profile)
    life = lifetimes(profile)
    misses = [site_misses(profile, s) for s in sims]
    header = ["context", "group", "objects", "bytes", "accesses", "max live", "median lifetime",
              "live at exit"] + [f"L1 misses of its site ({escape(s.label)})" for s in sims]
    ranked = sorted(profile.contexts.values(), key=lambda c: (-c.accesses, c.id))
    rows = []
    for c in ranked[:TABLE_MAX_ROWS]:
        lt = life.get(c.id)
        row = [f'<span title="{escape(full_chain(profile, c.id))}">#{c.id} {escape(names[c.id])}</span>',
               "–" if group_of is None else (str(group_of.get(c.id, 0)) if group_of.get(c.id, 0) else "none"),
               num(c.objects), num(c.bytes), num(c.accesses), num(c.max_live),
               "–" if lt is None else num(lt[0]), "–" if lt is None else f"{100 * lt[1]:.0f}%"]
        for m in misses:
            v = m.get(c.id)
            row.append("–" if v is None else num(v[0]) + (f' <span class="shared">(site of {v[1]})</span>'
                                                          if v[1] > 1 else ""))
        rows.append(row)
    rest = ranked[TABLE_MAX_ROWS:]
    if rest:
        rows.append([f"{len(rest):,} more contexts", "", num(sum(c.objects for c in rest)),
                     num(sum(c.bytes for c in rest)), num(sum(c.accesses for c in rest)), "", "", ""]
                    + [""] * len(sims))
    return table_html("context-table", header, rows, numeric_from=2,
                      caption="Lifetimes in heap accesses (the profile's clock)."), len(rows)


def group_table(profile: Profile, group_of: dict[int, int], sims: list[Simulation]) -> tuple[str, int]:
    """One row per group and one for the ungrouped contexts; misses from a simulation under
    the plan come from its pools, the other simulations' from call sites that only this
    group's contexts allocate at."""
    per, _live = object_lifetimes(profile)
    by_site = contexts_by_site(profile)
    groups = sorted({g for g in group_of.values()}, key=lambda g: (g == 0, g))
    header = ["group", "contexts", "objects", "bytes", "accesses", "median lifetime"]
    for s in sims:
        header.append(f"L1 misses ({escape(s.label)}{', its pool' if s.policy == 'plan' else ', its sites'})")
    rows = []
    for g in groups:
        members = [profile.contexts[c] for c in sorted(group_of) if group_of[c] == g]
        lts = [v for c in members for v in per.get(c.id, ())]
        row = [f"group {g}" if g else "ungrouped", num(len(members)), num(sum(c.objects for c in members)),
               num(sum(c.bytes for c in members)), num(sum(c.accesses for c in members)),
               num(statistics.median(lts)) if lts else "–"]
        for s in sims:
            row.append(_group_misses(s, g, group_of, by_site))
        rows.append(row)
    return table_html("group-table", header, rows, caption="Lifetimes in heap accesses (the profile's clock), "
                      "median over the group's objects."), len(rows)


def _group_misses(sim: Simulation, group: int, group_of: dict[int, int],
                  by_site: dict[tuple[str, str, int], list[int]]) -> str:
    if sim.policy == "plan":
        pools = {p["pool"]: p["misses"][0] for p in sim.result.get("pools", [])}
        if group == 0:
            v = pools.get(-1)
            return "–" if v is None else f'{num(v)} <span class="shared">(outside the pools)</span>'
        v = pools.get(group + FIRST_GROUP_POOL - 1)
        return "–" if v is None else num(v)
    total, shared = 0, False
    for c in sim.result.get("contexts", []):
        key = parse_where(c.get("where", "")) if c.get("context", -1) >= 0 else None
        members = by_site.get(key, []) if key else []
        owners = {group_of.get(m, 0) for m in members}
        if group in owners:
            if len(owners) > 1:
                shared = True
            else:
                total += c["misses"][0]
    return "–" if shared else num(total)


def sites_table(sims: list[Simulation]) -> str:
    """Every call site of every simulation, misses per cache level and DTLB."""
    out = []
    for s in sims:
        names = s.level_names()
        header = ["call site", "objects", "bytes"] + [f"{n} misses" for n in names] + ["DTLB misses"]
        ctxs = sorted(s.result.get("contexts", []), key=lambda c: -(c["misses"][0] if c["misses"] else 0))
        rows = []
        for c in ctxs[:TABLE_MAX_ROWS]:
            if not any(c["misses"]) and c.get("allocs", 0) == 0:
                continue
            rows.append([escape(c.get("where", "?")), num(c.get("allocs")), num(c.get("bytes"))]
                        + [num(m) for m in c["misses"]] + [num(c["tlb_misses"][0]) if c.get("tlb_misses") else "–"])
        out.append(table_html(f"sites-{len(out)}", header, rows,
                              caption=f"heaplayout simulate --contexts, layout {escape(s.label)}"))
    return "\n".join(out)
