"""The HTML page: every section in order, one file with its style and script inline.

Sections whose input was not given are still there, saying which option would fill them
(data-available="0"), so a page always has the same shape.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from .. import __version__
from .affinity_graph import affinity_svg
from .bench_section import from_bench, from_optimize, measurements_table, rounds_svg
from .heatmap import Heatmap, build_heatmap
from .inputs import Loaded, ReportInputs, load_inputs
from .layout_model import allocator_layout, events, plan_layout
from .plan_groups import PlanGrouping, plan_grouping
from .script import JS
from .style import CSS
from .summary import program_of, summary_html
from .tables import context_table, group_table, sites_table

CANVAS_LEFT = 110  # pixels left of the plot for the address bands
CANVAS_BOTTOM = 20
CELL_PX = 2

SECTIONS = (("summary", "Summary"), ("heatmap", "Heap accesses over time"), ("affinity", "Affinity graph"),
            ("contexts", "Groups and contexts"), ("bench", "Measurements"))


@dataclass
class Report:
    html: str
    heatmaps: list[Heatmap] = field(default_factory=list)
    graph: dict = field(default_factory=dict)
    seconds: float = 0.0


def _section(key: str, title: str, body: str, available: bool) -> str:
    return (f'<section id="{key}" data-section="{key}" data-available="{int(available)}">'
            f"<h2>{escape(title)}</h2>\n{body}\n</section>")


def _unavailable(what: str) -> str:
    return f'<p class="unavailable">Not available: {what}.</p>'


def heatmap_section(maps: list[Heatmap]) -> str:
    how = ("Each dot is one heap reference of the profile's reference stream (program order, left to right) at "
           "the address of the object it touched (bottom to top). Addresses are <b>modelled</b>: the profile's "
           "allocations, frees and reallocs replayed through a model of glibc's malloc (before) and through the plan's pools "
           "(after); see docs/report.md. Colour: references per cell, log scale, the same scale in both maps. "
           "Bands on the left: kinds of memory and pool chunks, each shown only up to its highest byte used.")
    figs = []
    for i, m in enumerate(maps):
        cid = "heatmap-before" if i == 0 else "heatmap-after"
        notes = "; ".join(m.notes)
        figs.append(f'<figure><figcaption><b>{escape(m.title)}</b>: {m.references:,} references over '
                    f'{m.extent:,} bytes of address axis; {m.lines_per_window:,.0f} distinct lines and '
                    f'{m.pages_per_window:,.0f} pages per 10,000 references{"; " + escape(notes) if notes else ""}'
                    f'</figcaption><canvas class="heatmap" id="{cid}" width="{CANVAS_LEFT + m.time_bins * CELL_PX}" '
                    f'height="{m.address_bins * CELL_PX + CANVAS_BOTTOM}"></canvas>'
                    f'<div class="legend" id="{cid}-tip">&nbsp;</div></figure>')
    return f'<p class="how">{how}</p><div class="heatmaps">{"".join(figs)}</div>'


def heatmap_json(maps: list[Heatmap]) -> str:
    doc = {"left": CANVAS_LEFT, "bottom": CANVAS_BOTTOM,
           "max": max([max(m.cells.values(), default=0) for m in maps] + [1]),
           "maps": [{"canvas": "heatmap-before" if i == 0 else "heatmap-after", "time_bins": m.time_bins,
                     "address_bins": m.address_bins, "extent": m.extent, "bands": m.bands,
                     "references": m.references,
                     "cells": m.flat_cells()} for i, m in enumerate(maps)]}
    # "</" cannot end the script element early: JSON allows "<\/"
    return json.dumps(doc, separators=(",", ":")).replace("</", "<\\/")


def build_report(data: Loaded) -> Report:
    t0 = time.monotonic()
    prof, plan = data.profile, data.plan
    grouping: PlanGrouping | None = plan_grouping(plan, prof) if plan is not None and prof is not None else None
    group_of = grouping.group_of if grouping else None

    maps: list[Heatmap] = []
    if prof is not None and prof.stream and prof.objects:
        ordered = events(prof)
        maps.append(build_heatmap(prof, allocator_layout(prof, ordered)))
        if plan is not None and grouping is not None:
            maps.append(build_heatmap(prof, plan_layout(prof, plan, grouping.group_of, ordered)))

    body = []
    body.append(_section("summary", "Summary", summary_html(data, grouping, maps), True))

    if maps:
        hm = heatmap_section(maps)
        if len(maps) == 1:
            hm += _unavailable("the map under a plan needs --plan")
        body.append(_section("heatmap", "Heap accesses over time × address", hm, True))
    else:
        why = ("--profile with a reference stream and object records (heaplayout profile writes both by default)"
               if prof is None or not prof.stream or not prof.objects else "")
        body.append(_section("heatmap", "Heap accesses over time × address", _unavailable(why or "no profile"), False))

    graph: dict = {}
    if prof is not None:
        svg, graph = affinity_svg(prof, group_of)
        how = ("HALO's affinity graph: a node per allocation context (the most accessed ones; area ~ heap accesses, "
               "dark ring ~ affinity among its own objects), an edge per pair of contexts whose objects were "
               "accessed close together in time (width ~ weight); rings are the plan's groups. Hover for the "
               f"whole call chain. Showing {graph['nodes']} of {graph['contexts']} contexts and {graph['edges']} of "
               f"{graph['affinity_edges']} edges.")
        body.append(_section("affinity", "Affinity graph and groups", f'<p class="how">{how}</p>{svg}', True))
    else:
        body.append(_section("affinity", "Affinity graph and groups", _unavailable("needs --profile"), False))

    if prof is not None:
        parts = []
        if group_of is not None:
            parts.append("<h3>Per group</h3>" + group_table(prof, group_of, data.simulations)[0])
        parts.append("<h3>Per context</h3>" + context_table(prof, group_of, data.simulations)[0])
        if data.simulations:
            parts.append("<h3>Per call site (simulated)</h3>" + sites_table(data.simulations))
        else:
            parts.append(_unavailable("misses need --simulate with a `heaplayout simulate --contexts --json` result"))
        body.append(_section("contexts", "Groups and contexts", "\n".join(parts), True))
    elif data.simulations:
        body.append(_section("contexts", "Groups and contexts",
                             "<h3>Per call site (simulated)</h3>" + sites_table(data.simulations), True))
    else:
        body.append(_section("contexts", "Groups and contexts", _unavailable("needs --profile or --simulate"), False))

    # a bench run given on its own is the measurement asked for; optimize's race otherwise
    meas = from_bench(data.bench) if data.bench else from_optimize(data.optimize) if data.optimize else None
    if meas is not None:
        src = "heaplayout optimize's race" if meas.source == "optimize" else "heaplayout bench"
        how = (f"Wall time of every round from {src} (configurations run interleaved, one round = one run of each), "
               f"and each configuration's median with its paired per-round ratio to {escape(meas.baseline)}.")
        body.append(_section("bench", "Measurements", f'<p class="how">{how}</p>{measurements_table(meas)}'
                             f"{rounds_svg(meas)}", True))
    else:
        body.append(_section("bench", "Measurements", _unavailable("needs --bench (heaplayout bench --json) or "
                                                                   "--optimize (optimize.json)"), False))

    nav = "".join(f'<a href="#{k}">{escape(t)}</a>' for k, t in SECTIONS)
    title = f"heaplayout report: {program_of(data)}"
    html = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{CSS}</style></head>\n<body><header><h1>{escape(title)}</h1><nav>{nav}</nav></header>\n<main>\n"
            + "\n".join(body)
            + f'\n</main><footer>heaplayout {__version__}, report written {time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}'
            f' in {time.monotonic() - t0:.1f} s.</footer>\n'
            f'<script type="application/json" id="heatmap-data">{heatmap_json(maps)}</script>\n'
            f"<script>{JS}</script>\n</body></html>\n")
    return Report(html, maps, graph, time.monotonic() - t0)


def write_report(inputs: ReportInputs, out: str | Path) -> Report:
    """Read the inputs, build the page, write it; ReportError for a bad input."""
    report = build_report(load_inputs(inputs))
    Path(out).write_text(report.html, encoding="utf-8")
    return report
