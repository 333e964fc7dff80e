"""The report's size limits: beyond them it samples or keeps the top entries, so that a
profile of any size gives a page that opens and draws in well under a second."""

# Heatmap grid: time bins x address bins (a canvas pixel block per cell).
HEATMAP_TIME_BINS = 480
HEATMAP_ADDRESS_BINS = 200
# Reference-stream entries placed on the heatmap; a longer stream is sampled every k-th
# entry (k = ceil(length / this)); 2M entries take about 2 s of Python per layout.
HEATMAP_MAX_REFERENCES = 2_000_000
# Window of the "distinct pages per window" summary under each heatmap, in references.
PAGE_WINDOW = 10_000
PAGE_BYTES = 4096
LINE_BYTES = 64
# Affinity graph: the contexts with most accesses, and the heaviest edges among them.
GRAPH_MAX_NODES = 40
GRAPH_MAX_EDGES = 120
# Table rows per table (the rest are summed into one line).
TABLE_MAX_ROWS = 200
# Name a context by at most this many innermost frames (fewer when they already tell it apart).
NAME_MAX_FRAMES = 3
