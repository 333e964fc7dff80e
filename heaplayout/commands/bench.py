"""`heaplayout bench`: run a program (or the workload suite) under several configurations,
interleaved, and report wall or CPU time (timing_metric.py), paired ratios to the baseline, peak RSS, output checks
and optionally cachegrind miss counts. The engine is heaplayout/bench.py; docs/bench.md."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from .. import bench as engine
from .. import elf, paths
from ..bench_check import check_patterns, files_unwritten, ignoring_digest, normalizer
from ..plan_format import plan_refusal
from ..program_input import check_stdin_file
from ..target import resolve_program_option
from ..timing_metric import METRICS

PROG = "heaplayout bench"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="compare allocators and policies on a program: interleaved runs, paired ratios, output checks",
        description="Run PROG under several configurations with interleaved runs (A B C A B C ...) and\n"
        "report per configuration the median time (--metric) and spread, the paired per-round ratio to\n"
        "the baseline (the first configuration), peak RSS, and whether stdout and the exit code\n"
        "equal the baseline's (exit 1 if not). See docs/bench.md.\n\n"
        "  heaplayout bench [options] -- PROG [ARGS...]\n"
        "  heaplayout bench --suite [--input small|ref] [--only NAME,...] [options]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="configurations (first = baseline; default: " + ",".join(engine.DEFAULT_CONFIGS) + "):\n"
        "  glibc jemalloc mimalloc tcmalloc   plain allocators\n"
        "  off callsite dpa                   our runtime (policy) on glibc\n"
        "  /PATH/libfoo.so                    another allocator: a shared library that defines malloc\n"
        "  POLICY+ALLOCATOR                   our runtime on another allocator, e.g. callsite+mimalloc\n"
        "  SPEC:OPT=V,OPT=V                   runtime options, e.g. callsite:min_objects=10,max_size=256\n"
        "  NAME=SPEC                          a label for a spec, e.g. small=callsite:max_size=64\n"
        "  plan=FILE, plan+ALLOCATOR=FILE     a plan file (heaplayout plan) for the plan policy\n"
        "  (ALLOCATOR: a name above or a library path, e.g. plan+/opt/lib/libfoo.so=prog.plan)",
    )
    p.add_argument("--runs", type=int, default=5, metavar="N", help="timed rounds (default 5)")
    p.add_argument("--warmup", type=int, default=1, metavar="K", help="untimed warm-up rounds first (default 1)")
    p.add_argument("--config", action="append", metavar="CONFIG",
                   help="a configuration; repeat or separate with commas (default: %s)" % ",".join(engine.DEFAULT_CONFIGS))
    p.add_argument("--json", metavar="FILE", help="write the results as JSON (schema in docs/bench.md)")
    p.add_argument("--markdown", metavar="FILE", help="write the table as markdown")
    p.add_argument("--cachegrind", action="store_true",
                   help="also run each configuration once under cachegrind and report I refs, D1 and LL data misses")
    p.add_argument("--LL", default=engine.DEFAULT_LL, metavar="SIZE,WAYS,LINE",
                   help=f"cachegrind last-level cache (default {engine.DEFAULT_LL})")
    p.add_argument("--D1", default=engine.DEFAULT_D1, metavar="SIZE,WAYS,LINE",
                   help=f"cachegrind L1 data cache (default {engine.DEFAULT_D1})")
    p.add_argument("--suite", action="store_true", help="run every workload of the suite instead of PROG")
    p.add_argument("--input", choices=("small", "ref"), default="small", help="suite input size (default small)")
    p.add_argument("--only", metavar="NAME,...", help="with --suite: only these workloads")
    p.add_argument("--variant", choices=("fp", "nofp"), default="fp",
                   help="with --suite: workload binaries with (fp) or without (nofp) frame pointers")
    p.add_argument("--stdin", metavar="FILE",
                   help="every run reads FILE on standard input, from its start (default: /dev/null)")
    p.add_argument("--ignore", action="append", default=[], metavar="REGEX",
                   help="parts of stdout that may differ between identical runs (a timing line): matches are "
                        "left out of the output check; repeatable")
    p.add_argument("--output-file", action="append", default=[], metavar="PATH",
                   help="a file the program writes (its result, when that is not stdout): compared after every run "
                        "with the baseline's first run, like stdout; repeatable")
    p.add_argument("--program", dest="program_exe", metavar="EXE",
                   help="the executable of the command's process tree that the runtime works in (a script's "
                   "interpreter, a driver's child); default: the command itself, every process for a script")
    p.add_argument("--metric", choices=METRICS, default="auto",
                   help="what times and ratios compare: wall time, or the CPU time (user + system) the program "
                        "used; auto (default): CPU time when the program keeps one CPU busy from start to exit "
                        "(wall time then only adds the moments it was not running), else wall time")
    p.add_argument("--keep-temp", action="store_true", help="keep the temporary directory with outputs and stderr")
    p.set_defaults(func=bench_command)


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _error(msg: str) -> int:
    print(f"{PROG}: {msg}", file=sys.stderr)
    return 2


def _write(path: str, text: str) -> None:
    Path(path).write_text(text if text.endswith("\n") else text + "\n")


def bench_command(args: argparse.Namespace) -> int:
    try:
        configs = engine.parse_configs(args.config)
        for c in configs:  # missing allocator packages or runtime library: fail before any run
            engine.config_env(c)
            plan = dict(c.options).get("plan")
            refusal = plan_refusal(plan) if plan else None
            if refusal is not None:  # the runtime would refuse it: the configuration would measure nothing
                raise engine.BenchError(f"configuration {c.label!r}: {refusal}")
        cache = None
        if args.cachegrind:
            if shutil.which("valgrind") is None:
                raise engine.BenchError("--cachegrind needs valgrind; install it with: apt-get install valgrind")
            cache = engine.CacheSpec(LL=engine.check_cache_geometry(args.LL, "LL"),
                                     D1=engine.check_cache_geometry(args.D1, "D1"))
        if args.runs < 1:
            raise engine.BenchError("--runs must be at least 1")
        try:
            args.ignore = check_patterns(args.ignore)
        except ValueError as err:
            raise engine.BenchError(str(err)) from None
        args.digest = ignoring_digest(args.ignore) if args.ignore else None
        if args.warmup < 0:
            raise engine.BenchError("--warmup cannot be negative")
        try:
            args.stdin = check_stdin_file(args.stdin)
        except ValueError as err:
            raise engine.BenchError(str(err)) from None
        if args.suite:
            if args.stdin is not None:
                raise engine.BenchError("--stdin is for one program; the suite's workloads read no input")
            if args.program:
                raise engine.BenchError("--suite runs the workloads; do not also give a program after --")
            if args.output_file:
                raise engine.BenchError("--output-file applies to a program, not to --suite")
            return _bench_suite(args, configs, cache)
        if args.only:
            raise engine.BenchError("--only applies to --suite")
        program = engine.resolve_program(args.program)
        if args.program_exe:
            try:
                args.program_exe = resolve_program_option(args.program_exe)
            except ValueError as err:
                raise engine.BenchError(str(err)) from None
        sanitized = elf.sanitizer(Path(program[0]))
        if sanitized:
            raise engine.BenchError(f"{program[0]} is built with {sanitized}: its own allocator serves every malloc "
                                    "(and must be loaded first), so no allocator or policy can be compared on it; "
                                    "build it without -fsanitize")
        if elf.is_static_executable(Path(program[0])):
            print(f"{PROG}: warning: {program[0]} is statically linked: LD_PRELOAD has no effect on it, so every "
                  "configuration runs the program's own malloc", file=sys.stderr)
        return _bench_program(args, configs, cache, program)
    except engine.BenchError as err:
        return _error(str(err))


def _report_failures(bench: engine.BenchResult, name: str = "") -> None:
    prefix = f"{PROG}: {name + ': ' if name else ''}"
    baseline = bench.baseline.config.label
    for c in bench.configs:  # the first mismatch of each configuration, and how many runs differed
        if c.mismatches:
            more = len(c.mismatches) - 1
            extra = f" (and {more} more of its runs differ)" if more else ""
            print(prefix + c.mismatches[0].message(baseline) + extra, file=sys.stderr)
    if bench.baseline_unstable:
        print(prefix + f"the baseline {baseline!r} itself gave different outputs: the program is not "
              "deterministic, so output checks cannot be trusted", file=sys.stderr)
        if bench.baseline_masks:
            print(prefix + "its runs differed only in tokens of these lines (timings?); to leave them out of the "
                  "check, run again with " + " ".join(f"--ignore {shlex.quote(m)}" for m in bench.baseline_masks),
                  file=sys.stderr)
    unwritten = files_unwritten(bench.output_files, bench.reference_files)
    if unwritten:
        print(prefix + f"warning: the baseline's first run did not write {', '.join(map(str, unwritten))} "
              "(--output-file): those files were not checked", file=sys.stderr)
    if bench.reference_status is not None and not bench.reference_status.ok:
        print(prefix + f"warning: the baseline's first run did not exit 0: {bench.reference_status.describe()}",
              file=sys.stderr)


def _bench_program(args: argparse.Namespace, configs: list[engine.Config], cache: engine.CacheSpec | None,
                   program: list[str]) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="heaplayout-bench-"))
    try:
        bench = engine.run_bench(program, configs, tmp, runs=args.runs, warmup=args.warmup, cache=cache,
                                 progress=_progress, stdin=args.stdin, digest=args.digest,
                                 normalize=normalizer(args.ignore), target=args.program_exe, metric=args.metric,
                                 output_files=[Path(f).resolve() for f in args.output_file])
        header, rows = engine.table_rows(bench)
        print(engine.describe_run(bench))
        print(engine.format_table(header, rows))
        if args.markdown:
            _write(args.markdown, engine.describe_run(bench) + "\n\n" + engine.format_markdown(header, rows)
                   + "\n\nCommand: `" + engine.command_line(bench) + "`")
        if args.json:
            _write(args.json, json.dumps(engine.result_to_json(bench), indent=2))
        _report_failures(bench)
        if not bench.ok:
            print(f"{PROG}: FAILED: output differs from the baseline (see above)", file=sys.stderr)
            return 1
        return 0
    finally:
        if args.keep_temp:
            print(f"{PROG}: kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _bench_suite(args: argparse.Namespace, configs: list[engine.Config], cache: engine.CacheSpec | None) -> int:
    try:
        from .. import workloads
    except ImportError as err:
        raise engine.BenchError(f"the workload suite is not available ({err})") from None
    try:
        suite = workloads.load_suite()
    except Exception as err:  # a broken manifest: one line, not a traceback
        raise engine.BenchError(f"cannot load the workload suite: {type(err).__name__}: {err}") from None
    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    selected = engine.select_workloads(suite, only)
    if not selected:
        raise engine.BenchError("the workload suite is empty")
    programs = []
    for w in selected:  # every binary must be there before we start
        try:
            programs.append(engine.resolve_program([str(w.binary(args.variant)), *w.args(args.input)]))
        except (paths.MissingArtifact, OSError, ValueError) as err:
            raise engine.BenchError(f"workload {w.name}: {err}") from None
    entries: list[engine.SuiteEntry] = []
    tmp = Path(tempfile.mkdtemp(prefix="heaplayout-bench-suite-"))
    try:
        for i, (w, program) in enumerate(zip(selected, programs), 1):
            _progress(f"[bench] workload {i}/{len(selected)} {w.name}: {' '.join(program)}")
            bench = engine.run_bench(program, configs, tmp / w.name, runs=args.runs, warmup=args.warmup,
                                     cache=cache, progress=_progress, metric=args.metric)
            entries.append(engine.SuiteEntry(w.name, getattr(w, "paper", ""), getattr(w, "pattern", ""),
                                             program, bench))
            _report_failures(bench, w.name)
    finally:
        if args.keep_temp:
            print(f"{PROG}: kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    header, rows = engine.suite_rows(entries)
    first = entries[0].result
    by = sorted({e.result.metric.metric for e in entries})
    title = (f"suite ({args.input} input, {args.variant} binaries): {args.runs} interleaved rounds after "
             f"{args.warmup} warm-up; cells are per-round t/t({first.baseline.config.label}) median [min–max], "
             f"t = {' or '.join('CPU time' if m == 'cpu' else 'wall time' for m in by)}")
    if cache is not None:
        title += f"; D1/LL = cachegrind data-miss ratios (--D1={cache.D1} --LL={cache.LL})"
    print(title)
    print(engine.format_table(header, rows))
    command = ["heaplayout", "bench", "--suite", "--input", args.input, "--variant", args.variant, "--runs",
               str(args.runs), "--warmup", str(args.warmup), "--config",
               ",".join(engine.config_text(c) for c in configs)]
    if args.only:
        command += ["--only", args.only]
    if args.metric != "auto":
        command += ["--metric", args.metric]
    if cache is not None:
        command += ["--cachegrind", f"--LL={cache.LL}", f"--D1={cache.D1}"]
    markdown = title + "\n\n" + engine.format_markdown(header, rows) + "\n\nCommand: `" + shlex.join(command) + "`"
    _write(args.markdown or "bench-suite.md", markdown)
    doc = {"command": shlex.join(command), **engine.suite_to_json(entries, args.input, args.variant)}
    _write(args.json or "bench-suite.json", json.dumps(doc, indent=2))
    print(f"{PROG}: wrote {args.markdown or 'bench-suite.md'} and {args.json or 'bench-suite.json'}", file=sys.stderr)
    bad = [e.name for e in entries if not e.result.ok]
    if bad:
        print(f"{PROG}: FAILED: output differs from the baseline in: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0
