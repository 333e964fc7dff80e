"""What a report is made from: the files given on the command line, read and checked, each
optional. A file that is not what its option says gives one ReportError naming it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..plan_format import Plan, PlanError, read_plan
from ..profile_model import Profile
from ..profile_reader import ProfileError, read_profile
from .tables import Simulation

BENCH_SCHEMA = "heaplayout-bench/1"
OPTIMIZE_SCHEMA = "heaplayout-optimize/1"


class ReportError(ValueError):
    pass


@dataclass
class ReportInputs:
    profile: Path | None = None
    plan: Path | None = None
    bench: Path | None = None
    simulate: list[Path] = field(default_factory=list)
    optimize: Path | None = None

    def given(self) -> list[tuple[str, Path]]:
        out = [(k, p) for k, p in (("profile", self.profile), ("plan", self.plan), ("bench", self.bench),
                                   ("optimize", self.optimize)) if p is not None]
        return out + [("simulate", p) for p in self.simulate]


@dataclass
class Loaded:
    inputs: ReportInputs
    profile: Profile | None = None
    plan: Plan | None = None
    bench: dict | None = None
    optimize: dict | None = None
    simulations: list[Simulation] = field(default_factory=list)


def _json(path: Path, what: str) -> dict:
    try:
        doc = json.loads(path.read_text())
    except OSError as err:
        raise ReportError(f"{what} {path}: {err.strerror or err}") from None
    except ValueError as err:
        raise ReportError(f"{what} {path}: not JSON ({err})") from None
    if not isinstance(doc, dict):
        raise ReportError(f"{what} {path}: not a JSON object")
    return doc


def load_simulation(path: Path) -> Simulation:
    doc = _json(path, "simulation")
    if doc.get("tool") != "hlsim" or not isinstance(doc.get("levels"), list):
        raise ReportError(f"simulation {path}: not a `heaplayout simulate --json` result (no hlsim levels)")
    lay = doc.get("layout") or {}
    policy = lay.get("policy", "none")
    label = lay.get("allocator", "?") if policy == "none" else f"{policy}+{lay.get('allocator', '?')}"
    return Simulation(label, policy, doc)


def load_inputs(inputs: ReportInputs) -> Loaded:
    if not inputs.given():
        raise ReportError("nothing to report: give at least one of --profile, --plan, --bench, --simulate, --optimize")
    out = Loaded(inputs)
    if inputs.profile is not None:
        try:
            out.profile = read_profile(inputs.profile)
        except OSError as err:
            raise ReportError(f"profile {inputs.profile}: {err.strerror or err}") from None
        except ProfileError as err:
            raise ReportError(str(err)) from None
    if inputs.plan is not None:
        try:
            out.plan = read_plan(inputs.plan)
        except OSError as err:
            raise ReportError(f"plan {inputs.plan}: {err.strerror or err}") from None
        except PlanError as err:
            raise ReportError(f"plan {inputs.plan}: {err}") from None
    if inputs.bench is not None:
        out.bench = _json(inputs.bench, "bench result")
        if out.bench.get("schema") != BENCH_SCHEMA:
            raise ReportError(f"bench result {inputs.bench}: schema {out.bench.get('schema')!r}, expected "
                              f"{BENCH_SCHEMA!r} (heaplayout bench --json FILE)")
    if inputs.optimize is not None:
        out.optimize = _json(inputs.optimize, "optimize result")
        if out.optimize.get("schema") != OPTIMIZE_SCHEMA:
            raise ReportError(f"optimize result {inputs.optimize}: schema {out.optimize.get('schema')!r}, expected "
                              f"{OPTIMIZE_SCHEMA!r} (optimize.json in optimize's output directory)")
    if out.plan is not None and out.profile is not None and out.plan.modules:
        # a plan of another program drew an "after" heatmap identical to glibc's and groups that
        # capture nothing, as if the plan did nothing for this program
        from ..planning.planner import profile_module_for
        if all(profile_module_for(out.profile, m) is None for m in out.plan.modules):
            raise ReportError(f"plan {inputs.plan} is tied to {', '.join(m.path for m in out.plan.modules)}, which "
                              f"profile {inputs.profile} (of {out.profile.header.get('exe', '?')}) does not hold; "
                              "give the profile the plan was made from")
    out.simulations = [load_simulation(p) for p in inputs.simulate]
    return out
