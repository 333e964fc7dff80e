"""The page's stylesheet, inlined into every report (no network, no files beside it)."""

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #222; background: #fff; }
header { background: #23324a; color: #fff; padding: 12px 24px; }
header h1 { font-size: 20px; margin: 0 0 4px 0; font-weight: 600; }
header nav a { color: #cfe0ff; margin-right: 16px; text-decoration: none; }
main { padding: 8px 24px 40px 24px; max-width: 1300px; }
section { border-bottom: 1px solid #e3e3e3; padding: 8px 0 18px 0; }
h2 { font-size: 17px; margin: 14px 0 8px 0; }
h3 { font-size: 14px; margin: 12px 0 6px 0; }
p.how { color: #555; max-width: 1000px; margin: 4px 0 10px 0; }
p.unavailable, p.empty { color: #8a5a00; background: #fff7e6; padding: 6px 10px; display: inline-block; }
p.verdict { font-size: 15px; background: #eef6ee; border-left: 4px solid #2ca02c; padding: 8px 12px; }
p.verdict.none { background: #f4f4f4; border-left-color: #999; }
dl.facts { display: grid; grid-template-columns: 260px 1fr; gap: 3px 14px; margin: 8px 0; }
dl.facts dt { color: #555; }
dl.facts dd { margin: 0; }
code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; background: #f3f3f3; padding: 1px 3px; }
table { border-collapse: collapse; margin: 6px 0 14px 0; font-size: 13px; }
caption { text-align: left; color: #555; padding-bottom: 4px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; }
th { background: #f2f4f7; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
span.shared { color: #888; font-size: 11px; }
.heatmaps { display: flex; flex-direction: column; gap: 12px; }
figure { margin: 0; }
figcaption { color: #444; margin: 2px 0 4px 0; }
canvas.heatmap { border: 1px solid #ccc; image-rendering: pixelated; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg .cluster-label { font-weight: 600; font-size: 12px; }
.legend { color: #555; font-size: 12px; }
footer { color: #777; font-size: 12px; padding: 12px 24px; }
"""
