"""`heaplayout plan`: group allocation contexts of a profile and write a plan for the runtime.

    heaplayout plan [--strategy halo|hds|callsite] [options] PROFILE -o PLAN [--json FILE]
    heaplayout plan show PLAN [--profile PROFILE]
    heaplayout plan choose-layout PLAN -o PLAN2 [--stdin FILE] -- PROG ARGS
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..paths import check_output_file
from ..plan_format import Plan, PlanError, read_plan, write_plan
from ..planning import identify, planner
from ..profile_model import Profile
from ..profile_reader import ProfileError, read_profile
from ..strategies import hds
from ..strategies.halo import grouping


GROUPING_HELP = {
    "coverage": "keep the most accessed contexts up to this share of accesses (HALO 4.1)",
    "min_edge_weight": "drop affinity edges lighter than this share of accesses",
    "merge_tol": "merge tolerance T of the merge benefit (HALO Figure 8)",
    "max_group_members": "most contexts in one group",
    "gthresh": "keep a group only if its edges weigh this share of accesses",
    "shape_merge": "1: contract contexts linked into one data structure before grouping (beyond HALO); 0: off",
    "shape_min_share": "a pointer link merges contexts when it joins this share of the smaller one's objects",
    "walk_weight": "share of each context's walk weight (own objects co-accessed, not co-allocatable) added to its loop (beyond HALO); 0: off",
    "companion_share": "contexts allocated next to each other for this share of the rarer one's objects, and used "
                       "together, are grouped together or not at all (beyond HALO); 0: off",
    "companion_use": "... used together: affinity of at least this share of the rarer one's accesses",
}
HDS_HELP = {
    "min_len": "shortest hot data stream (objects)",
    "max_len": "longest hot data stream (objects)",
    "coverage": "hot streams cover this share of the references",
    "min_repeats": "a stream must occur this often",
    "max_refs": "references analysed from the start of the stream",
    "gthresh": "keep a group only if its streams cover this share of references",
    "max_group_members": "most call sites in one group",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="compute allocation groups from a profile and write a plan file",
        description="Forms: 'heaplayout plan [options] PROFILE -o PLAN' groups the profile's "
        "allocation contexts (HALO by default) and writes the plan the runtime's plan policy reads; "
        "'heaplayout plan show PLAN [--profile PROFILE]' explains a plan in words; "
        "'heaplayout plan choose-layout PLAN -o PLAN2 -- PROG ARGS' gives each group the layout (spans or "
        "interleave) under which its pool costs least when the simulator runs PROG (docs/planning.md).",
    )
    p.add_argument("inputs", nargs="+", metavar="PROFILE | show PLAN | choose-layout PLAN -- PROG",
                   help="profile to plan from, 'show PLAN', or 'choose-layout PLAN -- PROG ARGS'")
    p.add_argument("-o", "--output", metavar="PLAN", help="plan file to write")
    p.add_argument("--strategy", choices=planner.STRATEGIES + planner.PREFIX_STRATEGIES, default="halo",
                   help="halo: affinity grouping, full-context rules (default); hds: hot data streams, "
                   "immediate call site; callsite: one group per hot call site; prefix:VARIANT: hot objects "
                   "at fixed places in one preallocated region (docs/prefix.md)")
    p.add_argument("--prefix-rest", choices=("allocator", "halo"), default="allocator",
                   help="with --strategy prefix:...: objects outside the region go to the allocator underneath "
                        "(default) or to the HALO plan's groups, written into the same plan")
    p.add_argument("--dominance", type=float, default=planner.DEFAULT_DOMINANCE, metavar="SHARE",
                   help="a chain prefix whose profiled allocations are at least this share one label's is decided "
                        "by that prefix alone, sparing the stack walks that telling the rest apart costs "
                        f"(default {planner.DEFAULT_DOMINANCE}; 1: exact rules)")
    p.add_argument("--walk-budget", type=float, default=planner.DEFAULT_WALK_BUDGET, metavar="SHARE",
                   help="most share of the profiled allocations whose call site may need a stack walk to be "
                        "identified; past it, the sites whose distinctions gain the fewest accesses per walk "
                        f"are decided by their call site alone (default {planner.DEFAULT_WALK_BUDGET}; 1: no budget)")
    p.add_argument("--group-layout", choices=planner.GROUP_LAYOUTS, default=planner.DEFAULT_GROUP_LAYOUT,
                   help="fresh space of a group: a span per size class, as every other pool (spans), or all "
                        "sizes in allocation order, HALO's (interleave); hds plans always interleave "
                        f"(default {planner.DEFAULT_GROUP_LAYOUT}; docs/planning.md)")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="plan from a profile whose run was cut short (no END record); its affinity "
                        "and pointer records, written at exit, are missing, so few groups result")
    p.add_argument("--json", metavar="FILE", help="also write a JSON report (groups, members, identification sizes)")
    p.add_argument("--profile", metavar="PROFILE", help="show: symbolize the plan's frames with this profile")
    p.add_argument("--stdin", metavar="FILE", type=Path,
                   help="choose-layout: PROG reads FILE on standard input (each simulated run from its start)")
    p.add_argument("--allocator", default="glibc", metavar="NAME|PATH",
                   help="choose-layout: the allocator underneath the plan in the simulated runs (default glibc)")
    p.add_argument("--line", action="store_true",
                   help="choose-layout: also choose where in a cache line the groups' objects start (0, 16, 32 or "
                        "48 bytes), by four more runs with the native-time model (--hw yes); docs/planning.md")
    p.add_argument("--chunk-size", type=int, default=planner.DEFAULT_CHUNK_SIZE, metavar="BYTES",
                   help="chunk size for group chunks (default 1 MiB, HALO)")
    p.add_argument("--max-object-size", type=int, metavar="BYTES",
                   help="larger requests are never grouped (default: the profile's, else 4096, HALO)")
    p.add_argument("--rest", choices=("allocator", "callsite"), default=planner.DEFAULT_REST,
                   help="where ungrouped objects go: the allocator underneath (HALO), or per-site "
                   f"pools like the callsite policy (default {planner.DEFAULT_REST})")
    p.add_argument("--rest-max-size", type=int, default=planner.DEFAULT_REST_MAX_SIZE, metavar="BYTES",
                   help="with --rest callsite: largest ungrouped object pooled "
                   f"(default {planner.DEFAULT_REST_MAX_SIZE}, DPA 3.3.2)")
    p.add_argument("--min-align", choices=planner.MIN_ALIGNS, default="auto",
                   help="minimum alignment of grouped objects whose size is an odd multiple of 8: "
                   "8 packs them closer (HALO), and is only safe for a program that does not rely on malloc's "
                   "16-byte alignment (no aligned vector stores, no tags in the 4 low bits of pointers); "
                   "auto and 16: 16 (default auto)")
    g = p.add_argument_group("grouping (halo; coverage and gthresh also for callsite); see docs/planning.md")
    for f in fields(grouping.GroupingParams):
        g.add_argument(f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default,
                       metavar="N", help=f"{GROUPING_HELP[f.name]} (default {f.default})")
    h = p.add_argument_group("hot data streams (hds)")
    for f in fields(hds.HdsParams):
        h.add_argument(f"--hds-{f.name.replace('_', '-')}", dest=f"hds_{f.name}", type=type(f.default),
                       default=f.default, metavar="N", help=f"{HDS_HELP[f.name]} (default {f.default})")
    p.set_defaults(func=plan_command, positional_tail="inputs")


def plan_command(args: argparse.Namespace) -> int:
    if args.inputs[0] == "show":
        if len(args.inputs) != 2:
            print("heaplayout plan: usage: heaplayout plan show PLAN [--profile PROFILE]", file=sys.stderr)
            return 2
        return show_command(Path(args.inputs[1]), args.profile)
    if args.inputs[0] == "choose-layout":
        program = list(getattr(args, "program", None) or [])
        if len(args.inputs) != 2 or not program or not args.output:
            print("heaplayout plan: usage: heaplayout plan choose-layout PLAN -o PLAN2 [--stdin FILE] -- PROG ARGS",
                  file=sys.stderr)
            return 2
        return choose_layout_command(Path(args.inputs[1]), Path(args.output), program, args.stdin,
                                     args.allocator, args.line)
    if len(args.inputs) != 1 or not args.output:
        print("heaplayout plan: usage: heaplayout plan [options] PROFILE -o PLAN", file=sys.stderr)
        return 2
    if os.path.isdir(args.output):
        print(f"heaplayout plan: -o {args.output} is a directory; give the plan file's name", file=sys.stderr)
        return 2
    try:  # before planning: --json in a missing directory was a traceback after the plan was written
        check_output_file(args.output, "-o")
        if args.json:
            check_output_file(args.json, "--json")
    except ValueError as err:
        print(f"heaplayout plan: {err}", file=sys.stderr)
        return 2
    try:
        gp = grouping.GroupingParams(**{f.name: getattr(args, f.name) for f in fields(grouping.GroupingParams)})
        hp = hds.HdsParams(**{f.name: getattr(args, f"hds_{f.name}") for f in fields(hds.HdsParams)})
        check_params(gp, hp)
        if not 0.5 < args.dominance <= 1:
            raise ValueError("dominance must be in (0.5, 1]")
        if not 0 <= args.walk_budget <= 1:
            raise ValueError("walk budget must be in [0, 1]")
        wants_objects = args.strategy == "hds" or args.strategy.startswith("prefix:")
        profile = read_profile(args.inputs[0], with_objects=wants_objects, with_stream=wants_objects)
        if not profile.complete and not args.allow_incomplete:
            print(f"heaplayout plan: {args.inputs[0]} is incomplete (no END record: the profiled run was "
                  "killed or the file was cut). The affinity and pointer records are written at exit, so a "
                  "plan from it would group next to nothing. Profile again, or pass --allow-incomplete.",
                  file=sys.stderr)
            return 1
        result = planner.make_plan(profile, args.strategy, grouping_params=gp, hds_params=hp,
                                   chunk_size=args.chunk_size, max_object_size=args.max_object_size,
                                   rest=args.rest, rest_max_size=args.rest_max_size,
                                   min_align=args.min_align, source=args.inputs[0], dominance=args.dominance,
                                   walk_budget=args.walk_budget, prefix_rest=args.prefix_rest,
                                   group_layout=args.group_layout)
        write_plan(result.plan, args.output)
    except (OSError, ProfileError, PlanError, ValueError) as err:
        print(f"heaplayout plan: {err}", file=sys.stderr)
        return 1
    if not profile.complete:
        print("heaplayout plan: warning: the profile has no END record (the run was cut short)", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(report(result, profile, args.inputs[0]), indent=2) + "\n")
    t = result.rules
    print(f"{args.output}: {len(result.groups)} groups ({args.strategy}), {len(t.rules)} rules with "
          f"{t.total_frames} frames; HALO selectors: {result.selectors.terms} terms")
    print(f"  {planner.walk_budget_comment(t.walk_budget)}")
    if result.plan.prefix.region_bytes:
        pre = result.plan.prefix
        print(f"  prefix region {pre.region_bytes} bytes: {len(pre.slots)} slots, {len(pre.counters)} counters, "
              f"{len(pre.sites)} sites, {len(pre.rules)} prefix_select rules")
    elif not result.groups:
        print("heaplayout plan: no group passed the thresholds; the plan groups nothing", file=sys.stderr)
    return 0


def choose_layout_command(plan_path: Path, out: Path, program: list[str], stdin: Path | None,
                          allocator: str, line: bool = False) -> int:
    """Each group of the plan in the layout under which the simulator charges its pool the
    least, running the program (its training input) once with every group interleaved and
    once with every group in spans (planning/group_layout.py)."""
    from .. import paths
    from ..allocators import UnknownAllocator, allocator_library
    from ..bench_config import BenchError, resolve_program
    from ..planning import group_layout
    from ..simulate import SimulateError
    try:
        plan = read_plan(plan_path)
        check_output_file(out, "-o")  # before the simulations, not after them
        if stdin is not None and not stdin.is_file():
            raise ValueError(f"--stdin {stdin}: no such file")
        allocator_library(allocator)  # a clear error now rather than a failed simulation
        program = resolve_program(program)
        say = lambda m: print(f"[plan choose-layout] {m}", file=sys.stderr, flush=True)  # noqa: E731
        choice = group_layout.choose_by_simulation(plan, program, stdin=stdin, allocator=allocator, say=say)
        lines = None
        if line and choice.plan.groups:
            lines = group_layout.choose_line_by_simulation(choice.plan, program, stdin=stdin, allocator=allocator,
                                                           say=say)
        write_plan(lines.plan if lines else choice.plan, out)
    except (OSError, PlanError, ValueError, UnknownAllocator, BenchError, SimulateError, paths.MissingArtifact) as err:
        print(f"heaplayout plan: {err}", file=sys.stderr)
        return 1
    t = choice.totals
    print(f"{out}: {len(choice.costs)} groups; simulated miss cost with every group interleaved "
          f"{t['interleave']:,} cycles, in spans {t['spans']:,} ({choice.seconds:.1f} s)")
    for c in choice.costs:
        print(f"  group {c.group}: {c.choice:<10} (its pool: interleaved {c.interleave:,}, spans {c.spans:,} cycles)")
    if lines is not None:
        est = ", ".join(f"{k}: {v:,}" for k, v in lines.estimates.items())
        print(f"  objects {lines.line} bytes into their cache lines (--hw time estimate by offset: {est} cycles; "
              f"{lines.seconds:.1f} s)")
    return 0


def check_params(gp: grouping.GroupingParams, hp: hds.HdsParams) -> None:
    if not 0 < gp.coverage <= 1 or not 0 < hp.coverage <= 1:
        raise ValueError("coverage must be in (0, 1]")
    if not 0 <= gp.merge_tol < 1:
        raise ValueError("merge-tol must be in [0, 1)")
    if gp.max_group_members < 1 or hp.max_group_members < 1:
        raise ValueError("max-group-members must be at least 1")
    if gp.min_edge_weight < 0 or gp.gthresh < 0 or hp.gthresh < 0:
        raise ValueError("thresholds must not be negative")
    if not 2 <= hp.min_len <= hp.max_len:
        raise ValueError("need 2 <= hds-min-len <= hds-max-len")
    if hp.min_repeats < 2 or hp.max_refs < 1:
        raise ValueError("hds-min-repeats must be at least 2 and hds-max-refs at least 1")


def _frames(profile: Profile, frames: list[tuple[int, int]]) -> list[str]:
    return [profile.describe_frame(m, off) for m, off in frames]


def report(result: planner.PlanResult, profile: Profile, source: str) -> dict[str, Any]:
    total = profile.heap_accesses or 1
    groups = []
    for g in result.groups:
        members = [profile.contexts[c] for c in g.contexts]
        groups.append({
            "id": g.id,
            "weight": g.weight,
            "score": g.score,
            "accesses": sum(c.accesses for c in members),
            "access_share": sum(c.accesses for c in members) / total,
            "sites": [profile.describe_frame(m, off) for m, off in g.sites],
            "members": [{"context": c.id, "accesses": c.accesses, "objects": c.objects, "bytes": c.bytes,
                         "frames": _frames(profile, c.frames)} for c in members],
        })
    t, s = result.rules, result.selectors
    return {
        "profile": source,
        "exe": profile.header.get("exe"),
        "strategy": result.plan.strategy,
        "parameters": result.plan.comments[1].removeprefix("parameters: "),
        "heap_accesses": profile.heap_accesses,
        "contexts": len(profile.contexts),
        "usable_contexts": len(result.usable),
        "hot_streams": result.hot_streams if result.plan.strategy == "hds" else None,
        "groups": groups,
        "identification": {
            "apcc": {"rules": len(t.rules), "frames": t.total_frames, "max_depth": t.max_depth,
                     "ungrouping_rules": t.ungrouping_rules,
                     "depth_histogram": {str(k): v for k, v in t.depth_histogram().items()},
                     "indistinguishable_contexts": len(t.overruled),
                     "indistinguishable": [{"context": c, "wanted": w, "got": g} for c, (w, g) in t.overruled.items()],
                     "walk_budget": dataclasses.asdict(t.walk_budget) if t.walk_budget else None},
            "halo_selectors": {"conjunctions": s.conjunctions, "terms": s.terms, "sites": s.sites,
                               "unresolved_members": len(s.unresolved)},
        },
        "plan": {"modules": [{"index": m.index, "build_id": m.build_id, "path": m.path} for m in result.plan.modules],
                 "skip": result.plan.skips, "chunk_size": result.plan.chunk_size,
                 "max_object_size": result.plan.max_object_size,
                 "rest": result.plan.rest, "rest_max_size": result.plan.rest_max_size,
                 "min_align": result.plan.min_align, "packed_groups": [g.id for g in result.plan.groups if g.packed],
                 "spans_groups": [g.id for g in result.plan.groups if g.spans]},
    }


def short_function(name: str) -> str:
    """A C++ name without template arguments, parameter lists and clone suffixes:
    'std::vector<Node*>::emplace_back<Node*>(Node*&&) [clone .isra.0]' -> 'std::vector::emplace_back'."""
    text = name.replace("(anonymous namespace)", "{anon}").split(" [clone")[0]
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    short = "".join(out).strip().replace("{anon}", "(anon)")
    if " " in short and not short.startswith("operator"):
        short = short.split(" ")[-1]  # drop a leading return type
    return short


def short_frame(profile: Profile, module: int, offset: int) -> str:
    """'function (file:line) [module+0xoffset]' with the function name shortened."""
    mod = profile.modules.get(module)
    where = f"{Path(mod.path).name if mod else f'module{module}'}+0x{offset:x}"
    sym = profile.frame_symbol(module, offset)
    if sym is None:
        return where
    text = short_function(sym.function) if sym.function else "??"
    if sym.file:
        text += f" ({sym.file}:{sym.line})"
    return f"{text} [{where}]"


def show_command(path: Path, profile_path: str | None) -> int:
    try:
        plan = read_plan(path)
        profile = read_profile(profile_path, with_objects=False, with_stream=False) if profile_path else None
    except (PlanError, ProfileError, OSError) as err:
        print(f"heaplayout plan show: {err}", file=sys.stderr)
        return 1
    print("\n".join(describe_plan(plan, str(path), profile)))
    return 0


def describe_plan(plan: Plan, name: str, profile: Profile | None = None) -> list[str]:
    """The plan in words; with the profile, frames are symbolized and each group lists the
    profiled contexts the rules send to it."""
    out = [f"{name}: plan format {plan.version}, strategy {plan.strategy}"]
    out += [f"  note: {c}" for c in plan.comments]
    out.append(f"  grouped objects: up to {plan.max_object_size} bytes, from {plan.chunk_size // 1024} KiB chunks, "
               + ("8-aligned where the size is an odd multiple of 8 (40, 72, ... bytes; 24 too in packed groups)"
                  if plan.min_align == 8 else "16-aligned"))
    if plan.rest == "callsite":
        out.append(f"  ungrouped objects up to {plan.rest_max_size} bytes: a pool per call site (as policy callsite)")
    else:
        out.append("  ungrouped objects: the allocator underneath")
    out.append(f"  tied to {len(plan.modules)} module{'s' if len(plan.modules) != 1 else ''} "
               "(the runtime refuses the plan if a build-id differs):")
    for m in plan.modules:
        out.append(f"    {m.index}: {m.path}  build-id {m.build_id or '(none: path only)'}")
    out.append(f"  stack walk skips modules whose file name contains: {', '.join(plan.skips) or '(nothing)'}")
    pre = plan.prefix
    if pre.region_bytes:  # docs/prefix.md
        kinds: dict[str, int] = {}
        for c in pre.counters:
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
        out.append(f"  PreFix region: {pre.region_bytes} bytes, {len(pre.slots)} slots, {len(pre.sites)} sites on "
                   f"{len(pre.counters)} counters ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), "
                   f"{len(pre.rules)} prefix_select rules")
    t = identify.RuleTable([identify.Rule(r.group, r.frames) for r in plan.rules])
    first_frames = {r.frames[0] for r in plan.rules}
    deep = {r.frames[0] for r in plan.rules if len(r.frames) > 1}
    out.append(f"  identification: {len(t.rules)} rules, {t.total_frames} frames, longest {t.max_depth}; "
               f"{len(first_frames) - len(deep)} of {len(first_frames)} return addresses decide alone; "
               f"{t.ungrouping_rules} rules send chains back to ungrouped; by depth "
               + ", ".join(f"{d}: {n}" for d, n in t.depth_histogram().items()))
    # rules and, with a profile, the contexts they capture (in profile frames)
    mod_map: dict[int, int | None] = {}
    chains: dict[int, tuple[tuple[int, int], ...]] = {}
    if profile is not None:
        mod_map = {m.index: planner.profile_module_for(profile, m) for m in plan.modules}
        missing = [plan.modules[i].path for i, v in mod_map.items() if v is None]
        if missing:
            out.append(f"  warning: the profile has no module {', '.join(missing)}")
        back = {i: v for i, v in mod_map.items() if v is not None}
        prof_rules = [identify.Rule(r.group, tuple((back.get(m, -1), planner.profile_frame(o)) for m, o in r.frames))
                      for r in plan.rules]
        captured: dict[int, list[int]] = {}
        for c in profile.contexts.values():
            g = identify.classify(prof_rules, tuple(c.frames))
            if g:
                captured.setdefault(g, []).append(c.id)
        chains = {c.id: tuple(c.frames) for c in profile.contexts.values()}
    total = profile.heap_accesses if profile is not None and profile.heap_accesses else 0

    def frame_text(m: int, off: int) -> str:
        pm = mod_map.get(m)
        if profile is not None and pm is not None:
            return short_frame(profile, pm, planner.profile_frame(off))
        return f"{m}:0x{off:x}"

    for g in plan.groups:
        out.append(f"  group {g.id}: {g.contexts} contexts, weight {g.weight}{', packed' if g.packed else ''}"
                   f"{', a span per size class' if g.spans else ', sizes interleaved in allocation order'}")
        for r in plan.rules:
            if r.group == g.id:
                out.append("    rule: " + " <- ".join(frame_text(m, o) for m, o in r.frames))
        if profile is not None:
            ids = captured.get(g.id, [])
            acc = sum(profile.contexts[c].accesses for c in ids)
            share = f" ({100 * acc / total:.1f}% of heap accesses)" if total else ""
            out.append(f"    captures {len(ids)} profiled contexts, {acc} accesses{share}:")
            for c in sorted(ids, key=lambda i: -profile.contexts[i].accesses)[:8]:
                ctx = profile.contexts[c]
                out.append(f"      context {c}: {ctx.objects} objects, {ctx.accesses} accesses, "
                           + " <- ".join(short_frame(profile, m, o) for m, o in chains[c][:4])
                           + (" ..." if len(chains[c]) > 4 else ""))
            if len(ids) > 8:
                out.append(f"      ... and {len(ids) - 8} more")
    ungroup = [r for r in plan.rules if r.group == 0]
    if ungroup:
        out.append(f"  back to ungrouped ({len(ungroup)} rules):")
        for r in ungroup[:10]:
            out.append("    rule: " + " <- ".join(frame_text(m, o) for m, o in r.frames))
        if len(ungroup) > 10:
            out.append(f"    ... and {len(ungroup) - 10} more")
    return out
