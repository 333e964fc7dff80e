"""`heaplayout optimize`: choose the allocator and the layout strategy for a program.

    heaplayout optimize [--train "ARGS"] [--stdin FILE] [--budget SECONDS] -- PROG ARGS

1. profile PROG on the training input (--train, --train-stdin; default: the measuring input)
   with the hlprof tool;
2. plan the layout from the profile for each plan strategy (default halo, and halo with
   ungrouped objects in per-site pools), and give each group the layout (a span per size
   class, or sizes interleaved) under which the simulator charges its pool the least on the
   training input (--group-layout choose, budget permitting);
3. measure every candidate on the measuring input: each allocator alone (glibc, jemalloc,
   mimalloc, tcmalloc: those installed, or --allocator), our callsite policy and each plan
   on each allocator; interleaved race rounds drop losers early, then the best strategy is
   confirmed against every allocator alone left on fresh paired rounds;
4. recommend the best strategy only if those rounds resolve its advantage over every
   allocator alone left, else the best allocator alone (docs/optimize.md).

Everything goes into one directory (default ./heaplayout-out/PROG): the profile, the plans,
optimize.json, optimize.md, recommended.env and report.html (heaplayout report; --no-report
leaves it out). The whole command plans to end within
--budget seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import shutil
from pathlib import Path

from .. import allocators, elf, machine_load, paths
from ..bench_check import (check_patterns, files_difference, files_snapshot, files_state, files_unwritten,
                           first_difference, ignoring_digest, normalizer,
                           stderr_tail)
from ..profile_reader import read_header
from ..bench_config import BenchError, config_env, parse_config, program_env, resolve_program
from ..bench_launch import build_launcher, fmt_seconds, run_once
from ..output_stability import unstable_patterns
from ..runtime_env import for_program
from ..target import Census, command_file, resolve_program_option, take_census, unprofiled_processes
from ..timing_metric import METRICS, choose_metric
from ..optimize_report import (OptimizeRun, env_file_text, recommendation_env, terminal_table, to_json, to_markdown,
                               verdict_lines)
from ..optimize_runner import CandidateRunner, NondeterministicOutput
from ..optimize_search import (DEFAULT_STRATEGIES, POLICY_STRATEGIES, Candidate, Measurement, SearchResult,
                               SearchSettings, huge_page_twin, make_candidates, plan_variants, run_search,
                               strategy_names)
from ..planning import group_layout, planner
from ..program_input import check_stdin_file

PROG = "heaplayout optimize"
# A program whose measuring run takes 5 s, profiled on a smaller training input, ends
# within 15 minutes (docs/optimize.md has the arithmetic).
DEFAULT_BUDGET_S = 900.0
FORBIDDEN_IN_SPECS = ":,="  # a bench configuration spec cannot carry these in a path
GROUP_LAYOUT_CHOICES = ("choose", *planner.GROUP_LAYOUTS)
# Choosing the groups' layouts simulates the training input twice per plan; it is skipped
# when that would take more than this share of the budget left, so that measuring, which
# decides the recommendation, keeps at least three quarters of it.
LAYOUT_BUDGET_SHARE = 0.25
# The page (report.html) is made after the decision, from the profile; a large profile's
# takes long (yosys's 159 MB profile: 10 minutes, after a 360 s budget). It gets what is
# left of the budget, and at least this, then is given up with the command that makes it.
REPORT_MIN_S = 60.0
# A simulated run of the training input, as a multiple of its profiling run: 0.8-1.8x on the
# corpus (gawk: profile 4.9 s, six simulated runs 54 s; docs/results.md §17), so the
# estimate takes the upper end.
SIM_RUN_PER_PROFILE = 2.0
# Choosing where in a cache line the groups' objects start: four runs with the native-time
# model, which costs about twice the default model's (docs/results.md, "Cost of --hw"), two
# at a time: about four simulated runs of wall time per plan. Done after the spans/interleave
# choice when both fit in LAYOUT_BUDGET_SHARE of the budget left.
LINE_SIM_RUNS = 4.0


class UsageError(Exception):
    pass


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "optimize",
        help="choose allocator and layout strategy: profile, plan, race the candidates, recommend",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--train", metavar="ARGS", help="arguments for the profiling run (default: the measured ones)")
    p.add_argument("--stdin", metavar="FILE", help="the measured runs read FILE on standard input (each from its start)")
    p.add_argument("--train-stdin", metavar="FILE", help="the profiling run reads FILE on standard input "
                   "(default: the --stdin file)")
    p.add_argument("--allocator", action="append", metavar="NAME|PATH",
                   help="allocators to consider, repeatable or comma-separated: built-in names or library paths "
                   f"(default: those of {', '.join(allocators.ALLOCATORS)} that are installed)")
    p.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES), metavar="LIST",
                   help=f"strategies on each allocator, from: {', '.join(strategy_names())} "
                   f"(default {','.join(DEFAULT_STRATEGIES)})")
    p.add_argument("--huge-pages", choices=("auto", "on", "off"), default="auto",
                   help="also race every candidate on transparent huge pages (the allocators' own setting, and "
                   "ours for our pools): auto (default) when the kernel's THP mode is madvise, where a process "
                   "gets them only by asking (docs/optimize.md)")
    p.add_argument("--ignore", action="append", default=[], metavar="REGEX",
                   help="parts of stdout that may differ between identical runs (a timing line): matches are "
                        "left out of the output check; repeatable")
    p.add_argument("--output-file", action="append", default=[], metavar="PATH",
                   help="a file the program writes (its result, when that is not stdout): compared after every run "
                        "with the reference run's, like stdout; repeatable")
    p.add_argument("--no-auto-ignore", action="store_true",
                   help="when two runs of the program alone print different outputs, stop instead of ignoring "
                        "the tokens that differed (the default; they are printed)")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, metavar="SECONDS",
                   help=f"time for the whole command, profiling included (default {DEFAULT_BUDGET_S:.0f})")
    p.add_argument("--runs", type=int, default=SearchSettings.confirm_rounds, metavar="N",
                   help=f"confirmation rounds of the finalists, at least {SearchSettings.min_confirm_rounds} "
                   f"(default {SearchSettings.confirm_rounds})")
    p.add_argument("--race-rounds", type=int, default=SearchSettings.race_rounds, metavar="N",
                   help=f"most rounds of all surviving candidates (default {SearchSettings.race_rounds})")
    p.add_argument("--min-gain", type=float, default=SearchSettings.min_gain, metavar="X",
                   help="the finalist's median paired ratio must be at most 1 - X (default "
                   f"{SearchSettings.min_gain})")
    p.add_argument("--max-rss-ratio", type=float, default=SearchSettings.max_rss_ratio, metavar="X",
                   help="drop a strategy whose peak resident memory passes X times the best allocator alone's, "
                   f"however fast (default {SearchSettings.max_rss_ratio:g}; 0: no limit)")
    p.add_argument("--group-layout", choices=GROUP_LAYOUT_CHOICES, default="choose",
                   help="the plans' groups: each in the layout the simulator finds cheaper on the training input "
                        "(choose, if the budget allows: else spans), or all in spans or interleaved "
                        "(default choose; docs/optimize.md)")
    p.add_argument("--metric", choices=METRICS, default="auto",
                   help="what the races compare: wall time, or the CPU time (user + system) the program used; "
                        "auto (default): CPU time when the program keeps one CPU busy from start to exit in the "
                        "reference runs (stage 0), else wall time (docs/optimize.md)")
    p.add_argument("--profile", metavar="FILE", help="use this profile instead of profiling again")
    p.add_argument("--program", dest="program_exe", metavar="EXE",
                   help="the executable of the command's process tree to optimize (default: the one that takes "
                   "the most CPU time in a native run of the training input: a script's interpreter, a compiler "
                   "driver's cc1plus)")
    p.add_argument("--json", metavar="FILE", help="also write the evidence JSON here (always in the output directory)")
    p.add_argument("-o", "--output", metavar="DIR", help="where the profile, plans and evidence go")
    p.add_argument("--keep-temp", action="store_true", help="keep the runs' stdout/stderr files")
    p.add_argument("--no-report", action="store_true",
                   help="do not write report.html (heaplayout report) into the output directory")
    p.set_defaults(func=optimize_command)


def _say(msg: str) -> None:
    # one write per line: the line-offset simulations report from two threads at once, and
    # print() writes the text and its newline separately
    sys.stderr.write(f"[optimize] {msg}\n")
    sys.stderr.flush()


def _allocator_list(values: list[str] | None) -> list[str]:
    if not values:
        found = allocators.available_allocators()
        return found or ["glibc"]
    names = [v.strip() for value in values for v in value.split(",") if v.strip()]
    for name in names:
        try:
            allocators.allocator_library(name)
        except allocators.UnknownAllocator as err:
            raise UsageError(str(err)) from None
        if allocators.is_library_path(name) and any(ch in name for ch in FORBIDDEN_IN_SPECS):
            raise UsageError(f"allocator path {name} contains one of {FORBIDDEN_IN_SPECS!r}, which a configuration "
                             "spec cannot carry")
    absolute = [str(allocators.allocator_library(n)) if allocators.is_library_path(n) else n for n in names]
    if len(set(absolute)) != len(absolute):
        raise UsageError("an allocator is named twice")
    return absolute


def _strategy_list(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    known = strategy_names()
    for s in names:
        if s not in known:
            raise UsageError(f"unknown strategy {s!r}; choose from: {', '.join(known)}")
    return list(dict.fromkeys(names))


def _settings(args: argparse.Namespace) -> SearchSettings:
    if args.runs < SearchSettings.min_confirm_rounds:
        raise UsageError(f"--runs must be at least {SearchSettings.min_confirm_rounds}: the decision needs that many "
                         "paired rounds")
    if args.race_rounds < 1:
        raise UsageError("--race-rounds must be at least 1")
    if not 0 <= args.min_gain < 1:
        raise UsageError("--min-gain must be in [0, 1)")
    if args.budget <= 0:
        raise UsageError("--budget must be positive")
    if args.max_rss_ratio != 0 and args.max_rss_ratio < 1:
        raise UsageError("--max-rss-ratio must be 0 (no limit) or at least 1")
    return SearchSettings(race_rounds=args.race_rounds, confirm_rounds=args.runs, min_gain=args.min_gain,
                          max_rss_ratio=args.max_rss_ratio)


def optimize_command(args: argparse.Namespace) -> int:
    start = time.monotonic()
    try:
        if not args.program:
            raise UsageError("no program given; usage: heaplayout optimize [options] -- PROG [ARGS...]")
        program = resolve_program(args.program)
        sanitized = elf.sanitizer(Path(program[0]))
        if sanitized:
            raise UsageError(f"{program[0]} is built with {sanitized}: its own allocator serves every malloc (and "
                             "must be loaded first), and Valgrind cannot profile it; optimize a build without "
                             "-fsanitize")
        if elf.is_static_executable(Path(program[0])):
            raise UsageError(f"{program[0]} is statically linked: neither an allocator nor the runtime can be "
                             "preloaded into it, so every configuration would run its own malloc; nothing to choose")
        stdin = check_stdin_file(args.stdin)
        train_stdin = check_stdin_file(args.train_stdin, "--train-stdin") if args.train_stdin else stdin
        allocs = _allocator_list(args.allocator)
        strategies = _strategy_list(args.strategies)
        settings = _settings(args)
        ignore = check_patterns(args.ignore)
        output_files = [Path(f).resolve() for f in args.output_file]
        if strategies:
            paths.runtime_library()
        out = Path(args.output or Path("heaplayout-out") / Path(program[0]).name).resolve()
        if any(ch in str(out) for ch in FORBIDDEN_IN_SPECS):
            raise UsageError(f"the output directory {out} contains one of {FORBIDDEN_IN_SPECS!r}, which the plans' "
                             "configuration specs cannot carry; choose another with -o")
        target = resolve_program_option(args.program_exe) if args.program_exe else None
        given_profile = Path(args.profile).resolve() if args.profile else None
        if given_profile is not None and not given_profile.is_file():
            raise UsageError(f"profile not found: {args.profile}")
        if given_profile is not None and not read_header(given_profile):
            raise UsageError(f"--profile {args.profile} is not a heaplayout profile (heaplayout profile writes one)")
        if out.exists() and not out.is_dir():
            raise UsageError(f"the output directory {out} is a file; choose another with -o")
    except (UsageError, BenchError, ValueError, paths.MissingArtifact) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"{PROG}: cannot make the output directory {out}: {err.strerror}", file=sys.stderr)
        return 2
    lock = _lock_output(out)
    if lock is None:
        print(f"{PROG}: another heaplayout optimize is writing into {out}; wait for it, or choose another "
              "directory with -o", file=sys.stderr)
        return 2
    # 0. before anything long: does the program run, and is its output the same twice?
    try:
        derived, clock = _reference_runs(program, stdin, allocs[0], ignore, not args.no_auto_ignore, output_files)
    except (BenchError, _Unstable) as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return 1
    metric = choose_metric(args.metric, clock)
    _say(f"  the races compare {metric.reason}")
    if derived:
        ignore = [*ignore, *derived]
        args.ignore = [*args.ignore, *derived]  # the command line in the evidence repeats them
    train = shlex.split(args.train) if args.train is not None else list(program[1:])
    census = None
    if strategies:
        census = _census([program[0], *train], train_stdin, args.budget)
    if target is None and census is not None and census.delegated():
        target = census.target()
        _say(f"stage 0/4: the training run's CPU time by executable: {census.describe()}; the work is not done by "
             f"{Path(program[0]).name} itself, so {target} is profiled and placed (--program names another)")
    args.program_exe = target  # the command line in the evidence names it
    run = OptimizeRun(command=_command_line(args, program, train, allocs, strategies, out), program=program,
                      train=[program[0], *train], stdin=stdin, train_stdin=train_stdin, budget_s=args.budget,
                      settings=settings, started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      search=SearchResult([]), ignore=ignore, group_layout=args.group_layout, target=target,
                      metric=metric, output_files=output_files)
    deadline = start + args.budget
    variants = [s for s in strategies if s not in POLICY_STRATEGIES]
    if derived:
        run.notes.append("two runs of the program alone printed different outputs; ignored in every output check: "
                         + ", ".join(repr(d) for d in derived))

    # 1. profile
    profile = given_profile
    t = time.monotonic()
    if variants and profile is None:
        profile = _profile(program, train, train_stdin, out, run, target)
        if profile is not None and census is not None:
            _check_profiled_processes(profile, census, target or command_file(program[0]) or program[0], run)
    run.stage_s["profile"] = time.monotonic() - t
    run.profile = profile

    # 2. plan
    t = time.monotonic()
    if variants and profile is not None:
        run.plans = _plan(profile, variants, out, Path(program[0]).name, run,
                          "spans" if args.group_layout == "choose" else args.group_layout)
    elif variants:
        run.notes.append("no profile, so no plan strategies: only the allocators and the callsite policy were measured")
    run.stage_s["plan"] = time.monotonic() - t
    if args.group_layout == "choose" and run.plans:
        t = time.monotonic()
        _choose_layouts(run, [program[0], *train], train_stdin, deadline)
        run.stage_s["layout"] = time.monotonic() - t

    # 3. measure
    t = time.monotonic()
    huge, why_not = huge_pages_wanted(args.huge_pages)
    if why_not:
        run.notes.append(why_not)
    candidates = make_candidates(allocs, strategies, run.plans)
    twins = [t for t in map(huge_page_twin, candidates) if t is not None] if huge else []
    _say(f"stage 3/4: measure {len(candidates)} candidates on {shlex.join(program)}"
         f"{' < ' + str(stdin) if stdin else ''}; {max(0.0, deadline - time.monotonic()):.0f} s of the budget left"
         + (f"; the survivors of round {settings.min_drop_rounds} are joined by their twins on transparent huge "
            "pages" if twins else ""))
    tmp = Path(tempfile.mkdtemp(prefix="heaplayout-optimize-"))
    try:
        try:
            runner = CandidateRunner(program, [*candidates, *twins], tmp, stdin=stdin,
                                     digest=ignoring_digest(ignore) if ignore else None, normalize=normalizer(ignore),
                                     target=target, metric=metric.metric, output_files=output_files)
        except BenchError as err:
            print(f"{PROG}: {err}", file=sys.stderr)
            return 2

        def timed(cand: Candidate, phase: str, rnd: int) -> Measurement:
            m = runner(cand, phase, rnd)
            if m.problem is None and m.seconds is not None:
                _say(f"  {phase} {rnd} {cand.label} {fmt_seconds(m.seconds)}")
            return m

        warmup = [c.label for c in candidates if c.alone] + [c.label for c in candidates if not c.alone][:1]
        try:
            run.search = run_search(candidates, timed, deadline, time.monotonic, settings, _say, warmup,
                                    twin=huge_page_twin if twins else None)
        except NondeterministicOutput as err:
            print(f"{PROG}: {err}", file=sys.stderr)
            return 1
        if run.search.overrun:
            run.notes.append(run.search.overrun)
        run.peak_rss_kib = runner.peak_rss_kib
        run.clock = runner.clock
        run.load = machine_load.summary(runner.loads)
        busy = machine_load.busy_note(run.load)
        if busy:
            run.notes.append(busy)
            _say(f"note: {busy}")
        run.runs = runner.runs
        rec = run.recommended
        cost = max(run.search.race.get(rec.label, {}).values(), default=0.0) if rec is not None else 0.0
        if rec is not None and not rec.alone and time.monotonic() + cost <= deadline:
            _say(f"one more run of {rec.label} for the runtime's statistics")
            run.runtime_stats = runner.runtime_stats(rec)
        hint = _output_hint(runner.unstable)
        if hint:
            run.notes.append(hint)
        if runner.reference_status is not None and not runner.reference_status.ok:
            run.notes.append(f"the reference run did not exit 0 ({runner.reference_status.describe()}): every "
                             "candidate was compared with a failing run")
        differed = [label for label, e in run.search.eliminated.items() if "output differs" in e.reason]
        raced = len(run.search.candidates)  # the twins that joined included
        if len(differed) * 2 > raced:
            # a program that crashes now and then, or prints what changes from run to run,
            # passed stage 0 by luck: the "recommendation" then only means the reference's runs agreed
            run.notes.append(f"{len(differed)} of {raced} candidates were dropped because a run's output or "
                             "exit status differed from the reference run's (e.g. " +
                             run.search.eliminated[differed[0]].reason + "): the program may not behave the same "
                             "from run to run; check it with `heaplayout bench --runs 9` on the allocator alone")
            _say(f"warning: {run.notes[-1]}")
    finally:
        if args.keep_temp:
            _say(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    run.stage_s["measure"] = time.monotonic() - t
    run.elapsed_s = time.monotonic() - start

    # 4. report
    _say("stage 4/4: decision")
    print(f"{shlex.join(program)}: {len(run.search.candidates)} candidates, {run.search.race_rounds} race rounds, "
          f"{run.runs} runs in {run.elapsed_s:.0f} s (budget {args.budget:.0f} s)")
    print(terminal_table(run))
    print()
    for line in verdict_lines(run):
        print(line)
    for note in run.notes:
        print(f"note: {note}")
    doc = to_json(run)
    (out / "optimize.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "optimize.md").write_text(to_markdown(run))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    if rec is not None:
        (out / "recommended.env").write_text(env_file_text(recommendation_env(rec, program, target)))
    if not args.no_report:
        limit = max(REPORT_MIN_S, deadline - time.monotonic())
        _say(f"report.html: heatmaps from the profile (at most {limit:.0f} s; --no-report skips it)")
        report, why = write_report_within(out, doc, limit)
        if why:
            print(f"{PROG}: warning: {why}", file=sys.stderr)
        elif report is not None:
            print(f"report: {report}")
    print(f"evidence: {out / 'optimize.json'}, {out / 'optimize.md'}"
          + (f"; environment: {out / 'recommended.env'}" if rec is not None else ""))
    return 0 if rec is not None else 1


def _output_hint(unstable: dict[str, list[str] | None]) -> str | None:
    """What to tell the user when candidates were dropped for printing other output than the
    reference: where the difference was a few tokens in the same lines for all of them (a
    program printing its own memory use: every allocator gives another figure), the
    --ignore patterns that would have kept them in the race, for the user to judge."""
    if not unstable:
        return None
    patterns: list[str] = []
    for label, pats in unstable.items():
        if not pats:
            return None
        patterns += [p for p in pats if p not in patterns]
    if len(patterns) > 4:
        return None
    return (f"{len(unstable)} candidate(s) ({', '.join(unstable)}) printed other output than the reference only in "
            "tokens of these lines; if they report measurements (memory, time) rather than results, run again with "
            + " ".join(f"--ignore {shlex.quote(p)}" for p in patterns))


class _Unstable(Exception):
    """Two runs of the program alone differ in a way optimize cannot check around."""


def _lock_output(out: Path):
    """An exclusive lock on the output directory for this process's life (the open file), or
    None when another optimize holds it: two runs into one directory overwrote each other's
    evidence, and each printed paths to files the other had written."""
    import fcntl
    f = open(out / ".optimize.lock", "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    return f


def _reference_runs(program: list[str], stdin: Path | None, allocator: str, ignore: list[str],
                    auto_ignore: bool, output_files: list[Path] | None = None) -> tuple[list[str], list[tuple[float, float]]]:
    """Run the program twice under `allocator` alone, as the race's reference will be run.
    Returns the patterns that mask what differed between the two outputs (none when they
    agree under `ignore`), and the two runs' wall and CPU seconds; raises _Unstable when the exit status differs, or the outputs
    differ other than token for token, or auto_ignore is off. A program that fails to start
    is found here, in seconds, not after its profile."""
    _say(f"stage 0/4: the output check's reference: {shlex.join(program)}{' < ' + str(stdin) if stdin else ''}"
         f" twice under {allocator} alone")
    env = program_env(dict(os.environ), for_program(config_env(parse_config(allocator)), program[0]))
    tmp = Path(tempfile.mkdtemp(prefix="heaplayout-reference-"))
    try:
        launcher = build_launcher(tmp)
        output_files = output_files or []
        runs, files = [], []
        for i in (1, 2):
            before = files_snapshot(output_files)
            runs.append(run_once(program, env, tmp, f"ref{i}", launcher, stdin=stdin))
            files.append(files_state(output_files, before))
        clock = [(r.wall_s, r.cpu_s, r.ready_s) for r in runs]
        status1, out1 = runs[0].status, runs[0].stdout
        status2, out2, err2 = runs[1].status, runs[1].stdout, runs[1].stderr
        _say(f"  {fmt_seconds(runs[0].wall_s)}, {fmt_seconds(runs[1].wall_s)} (CPU {fmt_seconds(runs[0].cpu_s)}, "
             f"{fmt_seconds(runs[1].cpu_s)}); {status1.describe()}")
        if status1 != status2:
            raise _Unstable(f"two runs of the program alone ended differently ({status1.describe()}, then "
                            f"{status2.describe()}; stderr ends {stderr_tail(err2)}): optimize cannot check "
                            "its configurations against a reference")
        changed = files_difference(output_files, files[0], files[1])
        if changed:
            raise _Unstable(f"two runs of the program alone wrote different files ({changed.replace('baseline', 'first')}): "
                            "optimize cannot check its configurations against them; leave out --output-file for "
                            "a file that is not the same twice")
        unwritten = files_unwritten(output_files, files[0]) or files_unwritten(output_files, files[1])
        if unwritten:
            raise _Unstable(f"the program alone did not write {', '.join(map(str, unwritten))} (an --output-file): "
                            "optimize cannot check its configurations' results there")
        normalize = normalizer(ignore)
        a, b = normalize(out1.read_bytes()), normalize(out2.read_bytes())
        if a == b:
            return [], clock
        where = first_difference(out1, out2) or "stdout differs"
        patterns = unstable_patterns(a, b) if auto_ignore else None
        if not patterns:
            raise _Unstable(f"two runs of the program alone printed different outputs ({where}): give what may differ "
                            "between identical runs with --ignore REGEX (for example a timing line: --ignore "
                            "'Time used: .*')" + ("" if auto_ignore else "; --no-auto-ignore is set"))
        _say(f"  its output differs between the two runs ({where}); these parts are left out of every output "
             f"check: {', '.join(repr(p) for p in patterns)} (--no-auto-ignore stops here instead)")
        return patterns, clock
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


THP_MODE_FILE = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def huge_pages_wanted(choice: str, mode_file: Path = THP_MODE_FILE) -> tuple[bool, str]:
    """Whether to race the huge-page twins, and a note when `auto` decides against it. Only
    in THP mode `madvise` does asking make a difference: `always` gives every process huge
    pages already (each twin would be its original), `never` gives none."""
    if choice != "auto":
        return choice == "on", ""
    try:
        text = mode_file.read_text()
    except OSError:
        return False, f"no huge-page candidates: {mode_file} cannot be read (a kernel without transparent huge pages)"
    mode = text[text.find("[") + 1:text.find("]")] if "[" in text else text.strip()
    if mode == "madvise":
        return True, ""
    return False, (f"no huge-page candidates: the kernel's THP mode is {mode!r} ({mode_file}), so asking for huge "
                   "pages changes nothing" + (" (every process has them already)" if mode == "always" else ""))


def _command_line(args: argparse.Namespace, program: list[str], train: list[str], allocs: list[str],
                  strategies: list[str], out: Path) -> str:
    """The optimize command line that repeats this one (every choice spelled out)."""
    words = ["heaplayout", "optimize", "--train", shlex.join(train)]
    if args.stdin:
        words += ["--stdin", str(Path(args.stdin).resolve())]
    if args.train_stdin:
        words += ["--train-stdin", str(Path(args.train_stdin).resolve())]
    words += ["--allocator", ",".join(allocs), "--strategies", ",".join(strategies), "--budget", f"{args.budget:g}",
              "--metric", args.metric,
              "--runs", str(args.runs), "--race-rounds", str(args.race_rounds), "--min-gain", f"{args.min_gain:g}",
              "--max-rss-ratio", f"{args.max_rss_ratio:g}", "--group-layout", args.group_layout, "--huge-pages", args.huge_pages, "-o", str(out)]
    if args.profile:
        words += ["--profile", str(Path(args.profile).resolve())]
    if args.program_exe:
        words += ["--program", args.program_exe]
    for pat in args.ignore:
        words += ["--ignore", pat]
    for f in args.output_file:
        words += ["--output-file", str(Path(f).resolve())]
    return shlex.join([*words, "--", *program])


def _census(train: list[str], stdin: Path | None, budget: float) -> Census | None:
    """Which processes the training command runs and their CPU time (target.py), or None."""
    try:
        return take_census(train, stdin=stdin, timeout=max(60.0, budget / 4))
    except (OSError, paths.MissingArtifact) as err:
        _say(f"stage 0/4: which executable does the work: the native run failed ({err}); optimizing the command")
        return None


def _check_profiled_processes(profile: Path, census: Census, exe: str, run: OptimizeRun) -> None:
    from ..profile_reader import read_header
    try:
        runs = max(1, int(read_header(profile).get("merged_runs", "1")))
    except ValueError:
        return
    note = unprofiled_processes(census, exe, runs)
    if note:
        run.notes.append(note)
        _say(f"  note: {note}")


def _profile(program: list[str], train: list[str], stdin: Path | None, out: Path, run: OptimizeRun,
             target: str | None = None) -> Path | None:
    name = Path(program[0]).name
    profile = out / f"{name}.prof"
    cmd = [sys.executable, "-m", "heaplayout.cli", "profile", "-o", str(profile)]
    cmd += ["--program", target or "self"]  # optimize took the census already
    if stdin is not None:
        cmd += ["--stdin", str(stdin)]
    cmd += ["--", program[0], *train]
    _say(f"stage 1/4: profile the training input under valgrind: {shlex.join([program[0], *train])}"
         f"{' < ' + str(stdin) if stdin else ''} (its output goes to {out / 'profile.stdout'})")
    profile.unlink(missing_ok=True)
    t = time.monotonic()
    with open(out / "profile.stdout", "wb") as f:
        rc = subprocess.run(cmd, stdout=f).returncode
    if not profile.exists():
        run.notes.append(f"profiling failed (exit {rc}): no plan strategies were measured")
        _say(f"profiling failed (exit {rc}); going on without plans")
        return None
    _say(f"profiled in {time.monotonic() - t:.1f} s -> {profile}")
    return profile


def _plan(profile: Path, variants: list[str], out: Path, name: str, run: OptimizeRun,
          layout: str) -> dict[str, Path]:
    _say(f"stage 2/4: plan {', '.join(variants)}")
    plans = {}
    known = plan_variants()

    def make(v: str) -> tuple[str, Path, subprocess.CompletedProcess]:
        pv = known[v]
        plan = out / f"{name}.{v}.plan"
        cmd = [sys.executable, "-m", "heaplayout.cli", "plan", "--strategy", pv.strategy, "--rest", pv.rest,
               "--group-layout", layout, *pv.plan_args, "-o", str(plan), str(profile)]
        return v, plan, subprocess.run(cmd, capture_output=True, text=True)

    # each plan reads the whole profile and plans alone (yosys's: 44 s, 1 GB): one per CPU
    # at a time, reported in the order asked
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=max(1, min(len(variants), os.cpu_count() or 1))) as pool:
        for v, plan, proc in pool.map(make, variants):
            if proc.returncode != 0 or not plan.exists():
                why = (proc.stderr.strip().splitlines() or ["no message"])[-1]
                run.notes.append(f"planning {v} failed: {why}")
                _say(f"  {v}: planning failed: {why}")
                continue
            _say(f"  {v}: {proc.stdout.strip()}")
            plans[v] = plan
    return plans


def _choose_layouts(run: OptimizeRun, train: list[str], stdin: Path | None, deadline: float) -> None:
    """Each plan's groups in the layout the simulator finds cheaper on the training input
    (planning/group_layout.py), the plan files rewritten; skipped, spans kept, when the two
    simulations per plan would take more than LAYOUT_BUDGET_SHARE of the budget left (each
    estimated at SIM_RUN_PER_PROFILE profiling runs: both tools run the program under Valgrind)."""
    from ..plan_format import read_plan, write_plan
    from ..simulate import SimOptions, SimulateError
    todo = {}
    for v, path in run.plans.items():
        plan = read_plan(path)
        if plan.groups and plan.strategy != "hds":
            todo[v] = (path, plan)
        else:
            run.group_layouts[v] = {"chosen": False, "why": "no groups" if not plan.groups else "hds plans keep allocation order"}
    if not todo:
        return
    per_run = run.stage_s.get("profile", 0.0)
    left = deadline - time.monotonic()
    estimate = 2 * len(todo) * per_run * SIM_RUN_PER_PROFILE
    if estimate > LAYOUT_BUDGET_SHARE * left:
        why = (f"the {2 * len(todo)} simulations would take about {estimate:.0f} s of the {max(0.0, left):.0f} s left; "
               "every group keeps a span per size class")
        run.notes.append(f"group layouts not chosen: {why}")
        _say(f"  group layouts: not chosen: {why}")
        for v in todo:
            run.group_layouts[v] = {"chosen": False, "why": why}
        return
    _say(f"  group layouts: simulating the training input under each plan with its groups in spans and interleaved "
         f"({2 * len(todo)} runs)")
    for v, (path, plan) in todo.items():
        try:
            choice = group_layout.choose_by_simulation(plan, train, stdin=stdin, sim_options=SimOptions(target=run.target),
                                                       say=lambda m, v=v: _say(f"  {v}: {m}"))
        except (SimulateError, OSError, paths.MissingArtifact) as err:
            run.notes.append(f"group layouts of {v} not chosen: {err}")
            _say(f"  {v}: group layouts not chosen: {err}")
            run.group_layouts[v] = {"chosen": False, "why": str(err)}
            continue
        write_plan(choice.plan, path)
        inter = [c.group for c in choice.costs if c.choice == "interleave"]
        run.group_layouts[v] = {"chosen": True, "groups": len(choice.costs), "interleaved": inter,
                                "simulated_cost": choice.totals, "seconds": round(choice.seconds, 3),
                                "costs": [{"group": c.group, "spans": c.spans, "interleave": c.interleave}
                                          for c in choice.costs]}
        _say(f"  {v}: {len(inter)} of {len(choice.costs)} groups interleaved, the rest in spans "
             f"(simulated miss cost: all spans {choice.totals['spans']:,}, all interleaved "
             f"{choice.totals['interleave']:,} cycles; {choice.seconds:.0f} s)")
        _choose_line(run, v, path, choice.plan, train, stdin, deadline)


def _choose_line(run: OptimizeRun, v: str, path: Path, plan, train: list[str], stdin: Path | None,
                 deadline: float) -> None:
    """Where in a cache line the plan's groups' objects start, chosen by the native-time
    model (planning/group_layout.py, choose_line_by_simulation), when its runs fit in
    LAYOUT_BUDGET_SHARE of the budget left; else the line's start, as before."""
    from ..plan_format import write_plan
    from ..simulate import SimOptions, SimulateError
    left = deadline - time.monotonic()
    estimate = LINE_SIM_RUNS * run.stage_s.get("profile", 0.0) * SIM_RUN_PER_PROFILE
    entry = run.group_layouts[v]
    if estimate > LAYOUT_BUDGET_SHARE * left:
        entry["line"] = {"chosen": False, "why": f"the runs would take about {estimate:.0f} s of the "
                                                 f"{max(0.0, left):.0f} s left"}
        _say(f"  {v}: line offsets not chosen: {entry['line']['why']}")
        return
    try:
        lines = group_layout.choose_line_by_simulation(plan, train, stdin=stdin, sim_options=SimOptions(target=run.target),
                                                        say=lambda m, v=v: _say(f"  {v}: {m}"))
    except (SimulateError, OSError, KeyError, paths.MissingArtifact) as err:
        run.notes.append(f"line offsets of {v} not chosen: {err}")
        entry["line"] = {"chosen": False, "why": str(err)}
        return
    write_plan(lines.plan, path)
    entry["line"] = {"chosen": True, "offset": lines.line, "estimates": {str(k): e for k, e in lines.estimates.items()},
                     "seconds": round(lines.seconds, 3)}
    est = ", ".join(f"{k}: {e:,}" for k, e in lines.estimates.items())
    _say(f"  {v}: objects {lines.line} bytes into their cache lines (--hw estimate by offset: {est} cycles; "
         f"{lines.seconds:.0f} s)")


def _report_child(out: Path, doc: dict, queue) -> None:
    from ..report.optimize_evidence import write_evidence_report
    page, why = write_evidence_report(out, doc)
    queue.put((None if page is None else str(page), why))


def write_report_within(out: Path, doc: dict, limit_s: float) -> tuple[Path | None, str | None]:
    """report.html from optimize's evidence, made in a child process given `limit_s` seconds:
    (the page, None), or (None, why not) with the command that makes it when time ran out."""
    import multiprocessing
    import queue as queue_mod
    from ..report.optimize_evidence import REPORT_NAME, plan_to_draw
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    child = ctx.Process(target=_report_child, args=(out, doc, results), daemon=True)
    child.start()
    try:
        page, why = results.get(timeout=max(0.0, limit_s))
    except queue_mod.Empty:
        child.terminate()
        child.join()
        words = ["heaplayout", "report"]
        if doc.get("profile"):
            plan = plan_to_draw(doc)
            words += ["--profile", str(doc["profile"])] + (["--plan", str(plan)] if plan else [])
        words += ["--optimize", str(out / "optimize.json"), "-o", str(out / REPORT_NAME)]
        return None, (f"the HTML report was not finished within {limit_s:.0f} s (the budget left, or at least "
                      f"{REPORT_MIN_S:.0f} s) and was given up; make it with: {shlex.join(words)}")
    child.join()
    return (Path(page) if page else None), why
