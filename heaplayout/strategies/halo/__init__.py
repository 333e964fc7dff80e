"""HALO (Savage and Jones, CGO'20): allocation contexts grouped by affinity, placed in
per-group pools. grouping (the affinity graph and HALO's greedy grouping, section 4.2), and
what we contract before grouping, beyond HALO: shape (contexts linked into one data
structure by pointer edges, after DPA 3.2) and companions (contexts allocated side by side
and used together). Identification and the plan records are shared with the other
strategies (heaplayout/planning/). docs/planning.md.
"""
