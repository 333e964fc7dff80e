"""Which profiled contexts a plan puts in which group: the plan's selection rules applied to
the profile's chains, as the runtime applies them to return addresses (the same longest-
prefix classification as `plan show --profile`, and modulo recursion when the plan says
`recursion function`, as the runtime's walks collapse)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..plan_format import Plan
from ..planning import identify, planner, recursion
from ..profile_model import Profile


@dataclass
class PlanGrouping:
    group_of: dict[int, int]  # context id -> group (0: ungrouped)
    missing_modules: list[str] = field(default_factory=list)  # plan modules the profile lacks
    note: str = ""

    def members(self, group: int) -> list[int]:
        return sorted(c for c, g in self.group_of.items() if g == group)

    def groups(self) -> list[int]:
        return sorted({g for g in self.group_of.values() if g})


def plan_grouping(plan: Plan, profile: Profile) -> PlanGrouping:
    mod_map = {m.index: planner.profile_module_for(profile, m) for m in plan.modules}
    missing = [plan.modules[i].path for i, v in mod_map.items() if v is None]
    rules = [identify.Rule(r.group, tuple((mod_map.get(m) if mod_map.get(m) is not None else -1,
                                           planner.profile_frame(o)) for m, o in r.frames))
             for r in plan.rules]
    classify = identify.Classifier(rules)
    note = ""
    fm = None
    if plan.recursion_function:
        fm = recursion.function_map(profile)
        if fm.unreadable:
            note = ("chains compared as profiled for modules whose files could not be read: "
                    + ", ".join(sorted(fm.unreadable.values())))
    group_of = {}
    for c in profile.contexts.values():
        chain = tuple(c.frames) if fm is None else recursion.collapse_chain(c.frames, fm)
        group_of[c.id] = classify(chain)
    return PlanGrouping(group_of, missing, note)
