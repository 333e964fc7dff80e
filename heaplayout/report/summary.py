"""The summary at the top of the page: the program, the inputs, the recommendation with its
evidence (from an optimize result), and the headline numbers of each other input."""

from __future__ import annotations

import shlex
from html import escape
from pathlib import Path

from ..profile_model import Profile
from .heatmap import Heatmap
from .inputs import Loaded
from .plan_groups import PlanGrouping
from .tables import num


def program_of(data: Loaded) -> str:
    if data.optimize and data.optimize.get("program"):
        return shlex.join(data.optimize["program"])
    if data.profile is not None:
        return shlex.join([data.profile.header.get("exe", "?"), *data.profile.args])
    if data.bench and data.bench.get("program"):
        return shlex.join(data.bench["program"])
    for s in data.simulations:
        if s.result.get("program"):
            return shlex.join(s.result["program"])
    return "(unknown program)"


def _dl(items: list[tuple[str, str]]) -> str:
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


def recommendation_html(doc: dict) -> str:
    rec = doc.get("recommendation")
    dec = doc.get("decision") or {}
    if not rec:
        return (f'<p class="verdict none" id="recommendation">No recommendation: '
                f'{escape(str(dec.get("reason", "nothing was measured")))}</p>')
    ratio = rec.get("ratio_to_best_allocator")
    if rec.get("resolved") and ratio:
        head = (f"<b>{escape(rec['label'])}</b>: {ratio['median']:.3f}x the time of "
                f"{escape(str(rec.get('best_allocator')))} alone (paired confirmation rounds, "
                f"q1–q3 {ratio['q1']:.3f}–{ratio['q3']:.3f}, {ratio.get('n', len(ratio.get('values', [])))} rounds)")
    else:
        head = (f"<b>{escape(rec['label'])}</b> alone: no strategy beat the best allocator alone by a margin the "
                "rounds resolve")
    items = [("why", escape(str(rec.get("reason", "")))), ("run it", f"<code>{escape(rec.get('command', ''))}</code>")]
    if rec.get("bench_command"):
        items.append(("re-measure", f"<code>{escape(rec['bench_command'])}</code>"))
    if dec.get("confirmation_ratios"):
        items.append(("confirmation ratios", ", ".join(f"{r:.3f}" for r in dec["confirmation_ratios"])))
    items.append(("optimize run", f"{escape(str(doc.get('started_utc', '')))}, {doc.get('elapsed_s', 0):.0f} s, "
                  f"{doc.get('race_rounds', 0)} race rounds ({escape(str(doc.get('stop_reason', '')))}); "
                  f"<code>{escape(doc.get('command', ''))}</code>"))
    return f'<p class="verdict" id="recommendation">Recommended: {head}</p>' + _dl(items)


def profile_facts(p: Profile) -> list[tuple[str, str]]:
    stream = f"{num(len(p.stream))} entries" + (" (cut at --stream-max)" if p.stream_truncated else "")
    return [("profile", f"{num(len(p.contexts))} contexts, {num(len(p.objects))} object records, "
                        f"{num(p.heap_accesses)} heap accesses, {num(sum(c.bytes for c in p.contexts.values()))} "
                        f"bytes allocated; reference stream {stream}; {num(len(p.affinity))} affinity edges"
                        + ("" if p.complete else "; <b>incomplete</b> (the run was cut short)"))]


def plan_facts(data: Loaded, grouping: PlanGrouping | None) -> list[tuple[str, str]]:
    plan = data.plan
    if plan is None:
        return []
    text = (f"strategy {escape(plan.strategy)}, {len(plan.groups)} groups, {len(plan.rules)} rules, "
            f"chunks of {plan.chunk_size // 1024} KiB, objects up to {plan.max_object_size} bytes, "
            f"min_align {plan.min_align}, rest: {escape(plan.rest)}")
    if data.optimize:
        rec = data.optimize.get("recommendation") or {}
        rec_plan = (data.optimize.get("plans") or {}).get(rec.get("strategy") or "")
        if rec_plan is None or Path(rec_plan) != data.inputs.plan:
            text += "; <b>measured by optimize but not recommended</b>"
    if plan.prefix.region_bytes:
        text += f"; a PreFix region of {num(plan.prefix.region_bytes)} bytes (not drawn)"
    if grouping is not None and data.profile is not None:
        grouped = [c for c, g in grouping.group_of.items() if g]
        acc = sum(data.profile.contexts[c].accesses for c in grouped)
        total = data.profile.heap_accesses or 1
        text += (f"; captures {len(grouped)} of {len(data.profile.contexts)} profiled contexts, "
                 f"{100 * acc / total:.1f}% of heap accesses")
        if grouping.missing_modules:
            text += f"; <b>the profile has no module</b> {escape(', '.join(grouping.missing_modules))}"
        if grouping.note:
            text += f"; {escape(grouping.note)}"
    return [("plan", text)]


def simulation_facts(data: Loaded) -> list[tuple[str, str]]:
    out = []
    first = None
    for s in data.simulations:
        r = s.result
        levels = ", ".join(f"{lv['name']} {num(lv['misses'])}" for lv in r.get("levels", []))
        tlb = f", DTLB {num(r['tlb'][0]['misses'])}" if r.get("tlb") else ""
        text = f"misses {levels}{tlb}; time estimate {num(r.get('estimate'))} cycles"
        if first is None:
            first = r
        elif first.get("levels") and r.get("levels"):
            a, b = first["levels"][0]["misses"], r["levels"][0]["misses"]
            if a:
                text += f" (L1 misses {100 * (b - a) / a:+.1f}% against {escape(data.simulations[0].label)})"
        out.append((f"simulated {escape(s.label)}", text))
    return out


def heatmap_facts(maps: list[Heatmap]) -> list[tuple[str, str]]:
    if not maps:
        return []
    text = "; ".join(f"{escape(m.title)}: {m.lines_per_window:,.0f} lines, {m.pages_per_window:,.0f} pages"
                     for m in maps)
    return [("distinct 64-byte lines and 4 KiB pages per 10,000 references (modelled addresses)", text)]


def summary_html(data: Loaded, grouping: PlanGrouping | None, maps: list[Heatmap]) -> str:
    items = [("program", f"<code>{escape(program_of(data))}</code>")]
    items.append(("inputs", "<br>".join(f"{k}: <code>{escape(str(p))}</code>" for k, p in data.inputs.given())))
    if data.profile is not None:
        items += profile_facts(data.profile)
    items += plan_facts(data, grouping)
    items += simulation_facts(data)
    items += heatmap_facts(maps)
    if data.bench:
        items.append(("bench", f"{len(data.bench.get('configs', []))} configurations, {data.bench.get('runs', '?')} "
                               f"rounds, baseline {escape(str(data.bench.get('baseline')))}; "
                               f"<code>{escape(data.bench.get('command', ''))}</code>"))
    rec = recommendation_html(data.optimize) if data.optimize else (
        '<p class="verdict none" id="recommendation">No optimize result given (--optimize optimize.json): '
        'no recommendation on this page.</p>')
    return rec + _dl(items)
