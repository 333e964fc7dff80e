"""The measurements: a `heaplayout bench --json` document (heaplayout-bench/1) or the
candidates of a `heaplayout optimize` run (heaplayout-optimize/1), as a table (median
[q1–q3] of wall time and of the paired ratio to the baseline) and an SVG plot of every
round's wall time, so that noise and drift are seen rather than summarised away."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from .affinity_graph import PALETTE
from .tables import table_html

PLOT_W, PLOT_H = 900, 300
MARGIN_L, MARGIN_B, MARGIN_T, MARGIN_R = 60, 36, 14, 220


@dataclass
class Series:
    label: str
    rounds: list[float]  # wall seconds, in round order
    median: float | None
    q1: float | None
    q3: float | None
    ratio: dict | None  # median/q1/q3 of paired ratios to the baseline
    extra: list[str] = field(default_factory=list)  # further table cells (escaped)


@dataclass
class Measurements:
    source: str  # "bench" or "optimize"
    baseline: str
    series: list[Series]
    extra_header: list[str]
    command: str
    unit: str = "wall"  # what the times are: "wall" or "cpu" (the document's metric)


def _spread_cells(d: dict | None) -> tuple[float | None, float | None, float | None]:
    if not d:
        return None, None, None
    return d.get("median"), d.get("q1"), d.get("q3")


def _unit(doc: dict) -> str:
    return ((doc.get("metric") or {}).get("metric")) or "wall"


def from_bench(doc: dict) -> Measurements:
    series = []
    key = "cpu_s" if _unit(doc) == "cpu" else "wall_s"  # documents before the metric have wall_s only
    for c in doc.get("configs", []):
        times = c.get(key)
        med, q1, q3 = _spread_cells(times)
        rss = (c.get("peak_rss_kib") or {}).get("median")
        series.append(Series(c["label"], list((times or {}).get("values", [])), med, q1, q3, c.get("ratio"),
                             [escape(f"{rss / 1024:,.1f} MiB") if rss else "–",
                              "yes" if c.get("output_ok", True) else "<b>NO</b>"]))
    return Measurements("bench", doc.get("baseline", "?"), series, ["peak RSS (median)", "output as baseline"],
                        doc.get("command", ""), _unit(doc))


def from_optimize(doc: dict) -> Measurements:
    best = (doc.get("decision") or {}).get("best_allocator") or "?"
    series = []
    for c in doc.get("candidates", []):
        race = (c.get("race") or {})
        times = race.get("time_s") or race.get("wall_s")  # wall_s: documents before the metric
        med, q1, q3 = _spread_cells(times)
        series.append(Series(c["label"], list((times or {}).get("values", [])), med, q1, q3,
                             race.get("ratio_to_best_allocator"), [escape(c.get("status", ""))]))
    return Measurements("optimize", best, series, ["status"], doc.get("command", ""), _unit(doc))


def _fmt_s(v: float | None) -> str:
    return "–" if v is None else f"{v:.4f}"


def measurements_table(m: Measurements) -> str:
    header = ["configuration", "rounds", f"{'CPU' if m.unit == 'cpu' else 'wall'} s median [q1–q3]", f"ratio to {escape(m.baseline)} [q1–q3]",
              *m.extra_header]
    rows = []
    for s in m.series:
        r = s.ratio or {}
        ratio = "–" if not r else f"{r['median']:.3f} [{r['q1']:.3f}–{r['q3']:.3f}]"
        rows.append([escape(s.label), str(len(s.rounds)), f"{_fmt_s(s.median)} [{_fmt_s(s.q1)}–{_fmt_s(s.q3)}]",
                     ratio, *s.extra])
    return table_html("bench-table", header, rows)


def rounds_svg(m: Measurements) -> str:
    """The time of every round (wall or CPU: m.unit), one coloured line of dots per configuration."""
    plotted = [s for s in m.series if s.rounds]
    if not plotted:
        return '<p class="empty">No rounds were measured.</p>'
    lo = min(min(s.rounds) for s in plotted)
    hi = max(max(s.rounds) for s in plotted)
    pad = (hi - lo) * 0.08 or hi * 0.05 or 1.0
    lo, hi = max(0.0, lo - pad), hi + pad
    n = max(len(s.rounds) for s in plotted)
    iw, ih = PLOT_W - MARGIN_L - MARGIN_R, PLOT_H - MARGIN_T - MARGIN_B

    def px(i: int) -> float:
        return MARGIN_L + (iw * i / (n - 1) if n > 1 else iw / 2)

    def py(v: float) -> float:
        return MARGIN_T + ih * (1 - (v - lo) / (hi - lo))

    unit = "CPU" if m.unit == "cpu" else "wall"
    out = [f'<svg id="bench-plot" xmlns="http://www.w3.org/2000/svg" width="{PLOT_W}" height="{PLOT_H}" '
           f'viewBox="0 0 {PLOT_W} {PLOT_H}" role="img" aria-label="{unit} time per round">',
           f'<rect x="{MARGIN_L}" y="{MARGIN_T}" width="{iw}" height="{ih}" fill="#fafafa" stroke="#ccc"/>']
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        out.append(f'<line x1="{MARGIN_L}" x2="{MARGIN_L + iw}" y1="{py(v):.1f}" y2="{py(v):.1f}" stroke="#e4e4e4"/>'
                   f'<text x="{MARGIN_L - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.3f}</text>')
    step = max(1, n // 10)
    for i in range(0, n, step):
        out.append(f'<text x="{px(i):.1f}" y="{PLOT_H - MARGIN_B + 16}" text-anchor="middle">{i + 1}</text>')
    out.append(f'<text x="{MARGIN_L + iw / 2:.0f}" y="{PLOT_H - 4}" text-anchor="middle">round</text>'
               f'<text x="14" y="{MARGIN_T + ih / 2:.0f}" transform="rotate(-90 14 {MARGIN_T + ih / 2:.0f})" '
               f'text-anchor="middle">{unit} time (s)</text>')
    for k, s in enumerate(plotted):
        colour = PALETTE[k % len(PALETTE)]
        pts = " ".join(f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(s.rounds))
        out.append(f'<g class="series" data-label="{escape(s.label)}" data-rounds="{len(s.rounds)}">'
                   f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-opacity="0.5"/>')
        for i, v in enumerate(s.rounds):
            out.append(f'<circle cx="{px(i):.1f}" cy="{py(v):.1f}" r="2.8" fill="{colour}">'
                       f'<title>{escape(s.label)} round {i + 1}: {v:.4f} s</title></circle>')
        ly = MARGIN_T + 14 * k + 8
        out.append(f'<rect x="{PLOT_W - MARGIN_R + 12}" y="{ly - 8}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{PLOT_W - MARGIN_R + 28}" y="{ly + 1}">{escape(s.label[:30])}</text></g>')
    out.append("</svg>")
    return "\n".join(out)
