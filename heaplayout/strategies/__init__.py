"""Placement strategies that are more than a grouping of contexts (prefix/: PreFix's
preallocated region of hot objects identified by (context, instance))."""
