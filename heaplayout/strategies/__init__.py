"""Placement strategies, one module or folder per paper: halo/ (HALO's grouping of contexts by
affinity, with shape and companion merging), hds (the hot-data-stream baseline and the
per-call-site baseline, both identified by the immediate call site), prefix/ (PreFix's
preallocated region of hot objects identified by (context, instance)). What every strategy
shares, from identification to the plan records, is in heaplayout/planning/."""
