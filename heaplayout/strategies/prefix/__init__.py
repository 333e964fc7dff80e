"""PreFix (Ananda et al., CGO'25): hot objects identified by (allocation context, instance),
placed at fixed offsets of one preallocated region in the order of their hot data streams,
with recycled slots for contexts whose objects live one after another. docs/prefix.md.

The analysis half: profile -> PrefixLayout (analyze.analyze). One concept per module:
params (tunables), hot (hot objects), complete (progressions the coverage cut left with
holes), streams (observed HDS), reconstitute (Algorithm 1), instances (counters and
patterns), recycle (recycled slots), layout (offsets and the cap), result (the typed
layout), analyze (the variants), replay (a layout on another profile), report (text and
JSON), __main__ (the command line).
"""

from .analyze import analyze
from .params import VARIANTS, PrefixParams
from .replay import ReplayStats, replay
from .result import ContextRule, PrefixAnalysis, PrefixLayout

__all__ = ["analyze", "replay", "VARIANTS", "PrefixParams", "ContextRule", "PrefixAnalysis", "PrefixLayout",
           "ReplayStats"]
