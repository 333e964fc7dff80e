"""From a profile to a plan, for every strategy: planner (strategy dispatch, profile frames
to plan frames, the plan records), identify (the rules that map call chains to groups, and
HALO's selectors for comparison), recursion (contexts compared modulo recursion), placement
(how much a run under a plan placed, from the runtime's statistics). The strategies
themselves are in heaplayout/strategies/. docs/planning.md.
"""
