"""`heaplayout profile`: record how a program uses its heap, under the hlprof Valgrind tool.

    heaplayout profile [-o FILE] [options] -- PROG [ARGS...]
    heaplayout profile show FILE [--top N]
    heaplayout profile merge A B [...] -o C
    heaplayout profile export FILE [--pprof OUT] [--folded OUT]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import elf, paths
from ..program_input import check_stdin_file
from ..profile_merge import merge_profiles
from ..profile_model import Profile
from ..profile_reader import ProfileError, read_header, read_profile
from ..profile_writer import write_profile
from ..target import resolve_program_option, same_file, take_census

TOOL = "hlprof"


def profiler_lib_dir() -> Path:
    """The VALGRIND_LIB directory the build prepares (build/profiler/lib)."""
    d = paths.build_dir() / "profiler" / "lib"
    if not (d / f"{TOOL}-amd64-linux").exists():
        raise paths.MissingArtifact(
            f"the profiler tool {TOOL}-amd64-linux not found in {d}; build it with: scripts/build.sh "
            "(needs the valgrind package; or set HEAPLAYOUT_BUILD_DIR to your CMake build directory)")
    return d


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="profile a program's heap use (contexts, objects, affinity, pointer edges)",
        description="Run PROG under the hlprof Valgrind tool and write one profile file. "
        "Forms: 'heaplayout profile [-o FILE] [options] -- PROG [ARGS...]', "
        "'heaplayout profile show FILE', 'heaplayout profile merge A B [...] -o C', "
        "'heaplayout profile export FILE --pprof OUT --folded OUT'. "
        "The program's output and exit status are its own. Workers it forks without exec are profiled "
        "too, and merged into the one file.",
    )
    p.add_argument("action", nargs="*", metavar="show FILE | merge FILES... | export FILE",
                   help="'show FILE' prints a summary; 'merge A B ... -o C' combines runs; "
                   "'export FILE --pprof OUT --folded OUT' writes it for pprof and flame-graph tools")
    p.add_argument("-o", "--output", metavar="FILE", help="profile to write (default: heaplayout.profile)")
    p.add_argument("--depth", type=int, metavar="N", help="frames kept per allocation context (default 12)")
    p.add_argument("--max-unwind", type=int, metavar="N", help="raw frames unwound per allocation (default 128)")
    p.add_argument("--affinity-distance", type=int, metavar="BYTES", help="HALO affinity distance (default 128)")
    p.add_argument("--max-object-size", type=int, metavar="BYTES",
                   help="larger objects are counted but kept out of the affinity graph (default 4096)")
    p.add_argument("--stream-max", type=int, metavar="N", help="reference stream entries kept, 0 = none (default 10M)")
    p.add_argument("--objects", choices=("all", "accessed", "none"), help="which object records to write (default all)")
    p.add_argument("--progress", type=int, metavar="N", default=100_000_000,
                   help="progress line on stderr every N heap accesses (default 100M, 0 = never)")
    p.add_argument("--trim", metavar="LIST", help="comma-separated module name parts whose frames are dropped")
    p.add_argument("--no-pointer-edges", action="store_true", help="do not record pointer edges")
    p.add_argument("--no-affinity", action="store_true", help="do not build the affinity graph")
    p.add_argument("--sample", action="store_true",
                   help="profile heap accesses in one time window of every --sample-period "
                   "(docs/results.md: its cost); access counts are written times the period, unbiased estimates "
                   "(docs/profile-format.md)")
    p.add_argument("--sample-period", type=int, metavar="R", help="with --sample: one window in R (default 10)")
    p.add_argument("--sample-window", type=int, metavar="BLOCKS",
                   help="with --sample: window length in executed superblocks (default 100000, Valgrind's time "
                   "slice; a 0.05 s program runs a few hundred)")
    p.add_argument("--sample-seed", type=int, metavar="S", help="with --sample: which window of each period (default 1)")
    p.add_argument("--sample-phase", type=int, metavar="J",
                   help="with --sample: shifts the chosen window by J; phases 0..R-1 of one seed cover the run once")
    p.add_argument("--sample-retranslate", action="store_true",
                   help="with --sample: unprofiled windows run uninstrumented code, all code being retranslated "
                   "at every switch; pays only with windows of millions of blocks (docs/results.md)")
    p.add_argument("--context-cache", action=argparse.BooleanOptionalAction, default=None,
                   help="look contexts up by the 16 innermost frames, a full unwind checking every 16th use "
                   "(default: on with --sample, off otherwise; mismatches are counted in the profile)")
    p.add_argument("--graph-max", type=int, metavar="N",
                   help="keys kept per graph (affinity, pointer edges, neighbours); later new keys are dropped "
                   "and counted (default 4194304, 0 = no cap)")
    p.add_argument("--objects-max", type=int, metavar="N",
                   help="object records written at most (default 10M, 0 = no cap)")
    p.add_argument("--log-file", metavar="FILE",
                   help="Valgrind's and the tool's messages (progress, fatal-signal reports) go to FILE, not stderr")
    p.add_argument("--valgrind", default="valgrind", help="valgrind executable (default: valgrind)")
    p.add_argument("--stdin", metavar="FILE", help="the program reads FILE on standard input")
    p.add_argument("--program", dest="program_exe", metavar="EXE|auto|self",
                   help="profile the processes of the command that run EXE (a script's interpreter, a compiler "
                   "driver's cc1): Valgrind follows every child, and the profiles of EXE's processes are kept "
                   "(merged when several ran). 'auto' (the default): the executable with the most CPU time in one "
                   "native run first (heaplayout/target.py), the command itself when that is it; 'self': the "
                   "command itself, no native run")
    p.add_argument("--top", type=int, default=15, help="show: how many contexts and edges to list (default 15)")
    p.add_argument("--force", action="store_true", help="merge: allow profiles of different binaries")
    p.add_argument("--pprof", metavar="OUT", help="export: write the profile as a gzipped pprof profile.proto")
    p.add_argument("--folded", metavar="OUT", help="export: write folded stacks (flame-graph input)")
    p.add_argument("--folded-value", choices=("objects", "bytes", "accesses"), default="bytes",
                   help="export: the value of each folded stack (default bytes)")
    p.set_defaults(func=profile_command, positional_tail="action")


def tool_argv(args: argparse.Namespace, out: str) -> list[str]:
    argv = [args.valgrind, "-q", f"--tool={TOOL}", f"--out-file={out}"]
    for opt in ("depth", "max_unwind", "affinity_distance", "max_object_size", "stream_max", "objects",
                "progress", "trim", "sample_period", "sample_window", "sample_seed", "sample_phase", "graph_max",
                "objects_max"):
        v = getattr(args, opt, None)
        if v is not None:
            argv.append(f"--{opt.replace('_', '-')}={v}")
    if args.no_pointer_edges:
        argv.append("--pointer-edges=no")
    if args.no_affinity:
        argv.append("--affinity=no")
    if getattr(args, "sample", False):
        argv.append("--sample=yes")
    if getattr(args, "sample_retranslate", False):
        argv.append("--sample-retranslate=yes")
    if getattr(args, "context_cache", None) is not None:
        argv.append(f"--context-cache={'yes' if args.context_cache else 'no'}")
    if args.log_file:
        argv.append(f"--log-file={os.path.abspath(args.log_file)}")
    return argv


def profile_command(args: argparse.Namespace) -> int:
    action = args.action or []
    if action and action[0] == "show":
        return show_command(action[1:], args)
    if action and action[0] == "merge":
        return merge_command(action[1:], args)
    if action and action[0] == "export":
        from .profile_export import export_command
        return export_command(action[1:], args)
    if action:
        print(f"heaplayout profile: unknown action {action[0]!r}; use show, merge, export, or -- PROG", file=sys.stderr)
        return 2
    if not args.program:
        print("heaplayout profile: no program given; usage: heaplayout profile [-o FILE] -- PROG [ARGS...]",
              file=sys.stderr)
        return 2
    try:
        lib = profiler_lib_dir()
        stdin = check_stdin_file(args.stdin)
    except (paths.MissingArtifact, ValueError) as err:
        print(f"heaplayout profile: {err}", file=sys.stderr)
        return 2
    valgrind = shutil.which(args.valgrind)
    if not valgrind:
        print(f"heaplayout profile: {args.valgrind} not found (install the valgrind package)", file=sys.stderr)
        return 2
    exe = shutil.which(args.program[0])
    sanitized = elf.sanitizer(Path(exe)) if exe else None
    if sanitized:
        print(f"heaplayout profile: {args.program[0]} is built with {sanitized}, which Valgrind cannot run (the "
              "sanitizer's shadow memory and its own allocator); profile a build without -fsanitize", file=sys.stderr)
        return 2
    foreign = elf.foreign_executable(Path(exe)) if exe else None
    if foreign:  # Valgrind said only "failed to start tool 'hlprof' for platform 'x86-linux'"
        print(f"heaplayout profile: {args.program[0]} is {foreign}; the profiler (and the runtime) are built "
              "for x86-64 programs only", file=sys.stderr)
        return 2
    if exe and elf.is_static_executable(Path(exe)):
        print(f"heaplayout profile: warning: {args.program[0]} is statically linked: the profiler sees allocations "
              "through the dynamic loader, which this program does not use, so the profile will hold no heap "
              "objects", file=sys.stderr)
    out = os.path.abspath(args.output or "heaplayout.profile")
    if os.path.isdir(out):
        print(f"heaplayout profile: -o {args.output} is a directory; give the profile file's name", file=sys.stderr)
        return 2
    where = os.path.dirname(out)
    if not os.path.isdir(where) or not os.access(where, os.W_OK | os.X_OK):
        print(f"heaplayout profile: cannot write the profile into {where}: "
              f"{'no such directory' if not os.path.isdir(where) else 'not writable'}", file=sys.stderr)
        return 2
    try:  # where the per-process profiles go: os.access passes root on /proc or a read-only mount
        os.rmdir(tempfile.mkdtemp(prefix="heaplayout-profiles-", dir=where))
    except OSError as err:
        print(f"heaplayout profile: cannot write the profile into {where}: {err.strerror}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    env["VALGRIND_LIB"] = str(lib)
    program_opt = args.program_exe or "auto"
    if program_opt == "auto":
        program_opt = _busiest_executable(args.program, stdin)
    if program_opt != "self":
        return _profile_following(args, program_opt, valgrind, env, stdin, out)
    return _profile_self(args, env, stdin, out)


def _profile_header_exe(path: Path) -> str | None:
    return read_header(path).get("exe")


def _has_end(path: Path) -> bool:
    """The profile ends with its END record (the tool's exit wrote it)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 64))
            return b"\nEND " in b"\n" + f.read()
    except OSError:
        return False


def _busiest_executable(program: list[str], stdin: Path | None) -> str:
    """--program auto: the executable that does the command's work (one native run, the
    census of target.py), or "self" when that is the command itself, or when nothing
    reported (a static executable, a command that fails at once)."""
    try:
        census = take_census(program, stdin=stdin)
    except (OSError, paths.MissingArtifact):
        return "self"  # the profiled run reports what is wrong
    if not census.delegated():
        return "self"  # workers it forks without exec are profiled too (_profile_self)
    target = census.target() or "self"
    print(f"heaplayout profile: CPU time by executable in a native run: {census.describe()}; profiling {target} "
          "(--program self profiles the command itself)", file=sys.stderr)
    return target


def _profile_following(args: argparse.Namespace, program_opt: str, valgrind: str, env: dict[str, str],
                       stdin: Path | None, out: str) -> int:
    """Profile the command's processes that run the target executable (Valgrind follows
    every child; one profile file per process), keep those, merged when several ran, and
    return the command's exit status."""
    try:
        target = resolve_program_option(program_opt)
    except ValueError as err:
        print(f"heaplayout profile: {err}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="heaplayout-profiles-", dir=os.path.dirname(out)))
    try:
        argv = tool_argv(args, str(tmp / "prof.%p")) + ["--trace-children=yes", *args.program]
        sys.stdout.flush()
        stdin_f = open(stdin, "rb") if stdin is not None else None
        try:
            rc = subprocess.run(argv, env=env, stdin=stdin_f).returncode
        finally:
            if stdin_f is not None:
                stdin_f.close()
        mine = [f for f in sorted(tmp.glob("prof.*")) if same_file(_profile_header_exe(f), target)]
        whole = [f for f in mine if _has_end(f)]
        if whole and len(whole) < len(mine):
            # a process killed by a signal, or a forked child that exec'd a program valgrind did
            # not follow, leaves a cut profile; the complete ones are the run's
            print(f"heaplayout profile: {len(mine) - len(whole)} of the {len(mine)} processes that ran "
                  f"{Path(target).name} left an incomplete profile (killed, or exec'd without being followed); "
                  "the complete ones are kept", file=sys.stderr)
            mine = whole
        if not mine:
            seen = sorted({Path(e).name for f in tmp.glob("prof.*") if (e := _profile_header_exe(f))})
            print(f"heaplayout profile: no process of the command ran {target} (profiled: {', '.join(seen) or 'none'}); "
                  "no profile written", file=sys.stderr)
            return rc if rc > 0 else 2
        if len(mine) == 1:
            shutil.move(str(mine[0]), out)
        else:
            try:
                merged = merge_profiles([read_profile(f) for f in mine])
            except (OSError, ProfileError, ValueError) as err:
                print(f"heaplayout profile: {len(mine)} processes ran {target}; merging their profiles failed: {err}",
                      file=sys.stderr)
                return 1
            write_profile(merged, out)
            print(f"heaplayout profile: {len(mine)} processes ran {Path(target).name}; their profiles merged into {out}",
                  file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rc if rc >= 0 else 128 - rc


def _profile_self(args: argparse.Namespace, env: dict[str, str], stdin: Path | None, out: str) -> int:
    """Profile the command's own process, and the workers it forks without exec (each
    writes a profile of its own under %p; a child that execs another program writes none):
    the complete profiles merged when there are several, else the command's (cut if it was
    killed). The program's exit code and fatal signal are passed through."""
    tmp = Path(tempfile.mkdtemp(prefix="heaplayout-profiles-", dir=os.path.dirname(out)))
    try:
        argv = tool_argv(args, str(tmp / "prof.%p")) + list(args.program)
        sys.stdout.flush()
        sys.stderr.flush()
        stdin_f = open(stdin, "rb") if stdin is not None else None
        try:
            proc = subprocess.Popen(argv, env=env, stdin=stdin_f)
            previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the program; we collect
            try:
                rc = proc.wait()
            finally:
                signal.signal(signal.SIGINT, previous)
        finally:
            if stdin_f is not None:
                stdin_f.close()
        own = tmp / f"prof.{proc.pid}"
        whole = [f for f in sorted(tmp.glob("prof.*")) if _has_end(f)]
        if len(whole) > 1:
            try:
                merged = merge_profiles([read_profile(f) for f in whole])
            except (OSError, ProfileError, ValueError) as err:
                print(f"heaplayout profile: {len(whole)} processes (the command and workers it forked); merging "
                      f"their profiles failed: {err}", file=sys.stderr)
                return 1
            write_profile(merged, out)
            print(f"heaplayout profile: {len(whole)} processes ran {Path(args.program[0]).name} (the command and "
                  f"workers it forked); their profiles merged into {out}", file=sys.stderr)
        elif whole:
            shutil.move(str(whole[0]), out)
        elif own.exists():
            shutil.move(str(own), out)  # cut (killed, or exec'd): the reader says so
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rc in (-signal.SIGINT, -signal.SIGTERM) and os.path.exists(out):
        # a server profiled until Ctrl-C is a use, so the profile stays; but it is of the run
        # up to the signal, which the user should know before planning from it
        print(f"heaplayout profile: the program was stopped by {signal.Signals(-rc).name}: {out} covers its run "
              "up to then", file=sys.stderr)
    if rc < 0:  # die by the program's signal, as the program did
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            signal.signal(-rc, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL and SIGSTOP have no handler to reset
        os.kill(os.getpid(), -rc)
    return rc


def show_command(files: list[str], args: argparse.Namespace) -> int:
    if len(files) != 1:
        print("heaplayout profile show: give exactly one profile file", file=sys.stderr)
        return 2
    try:
        # object records and the stream are not needed for a complete profile's summary
        prof = read_profile(files[0], with_objects=False, with_stream=False)
        if not prof.complete:
            prof = read_profile(files[0])
    except (OSError, ProfileError) as err:
        print(f"heaplayout profile show: {err}", file=sys.stderr)
        return 1
    print(format_summary(prof, top=args.top))
    return 0


def merge_command(files: list[str], args: argparse.Namespace) -> int:
    if len(files) < 2 or not args.output:
        print("heaplayout profile merge: usage: heaplayout profile merge A B [...] -o C", file=sys.stderr)
        return 2
    try:  # -o in a missing directory was a traceback from write_profile, after reading every input
        paths.check_output_file(args.output, "-o")
    except ValueError as err:
        print(f"heaplayout profile merge: {err}", file=sys.stderr)
        return 2
    try:
        merged = merge_profiles([read_profile(f) for f in files], force=args.force)
        write_profile(merged, args.output)
    except (OSError, ProfileError, ValueError) as err:
        print(f"heaplayout profile merge: {err}", file=sys.stderr)
        return 1
    print(f"merged {len(files)} profiles into {args.output}: {len(merged.contexts)} contexts, "
          f"{len(merged.objects)} objects", file=sys.stderr)
    return 0


def format_summary(p: Profile, top: int = 15) -> str:
    lines = []
    exe = p.header.get("exe", "?")
    lines.append(f"profile of: {' '.join([exe] + p.args)}")
    state = "complete" if p.complete else "INCOMPLETE (the run was cut short; totals rebuilt from freed objects)"
    runs = p.header.get("merged_runs")
    lines.append(f"format {p.version}, {state}" + (f", merged from {runs} runs" if runs else ""))
    period = p.header_int("sample_period", 1)
    if p.header.get("sample_period") == "mixed":
        # a merge of sampled and other runs (profile_merge.py): header_int read 'mixed' as 1 and
        # the summary said nothing of the estimates
        lines.append("SAMPLED: merged from runs of different sample periods; access counts, affinity and "
                     "pointer-edge weights are in part estimates (each run's sampled counts x its period)")
    elif period > 1:
        on = p.summary.get("sample_on_blocks", 0)
        total = p.summary.get("sample_blocks", 0)
        duty = f", {100.0 * on / total:.1f}% of the run profiled" if total else ""
        lines.append(f"SAMPLED: one window in {period} (windows of {p.header.get('sample_window', '?')} blocks{duty}); "
                     f"access counts, affinity and pointer-edge weights are estimates (sampled counts x {period})")
    dropped = {k: v for k, v in p.summary.items() if k.endswith("_dropped_adds") or k == "objects_dropped"}
    if dropped:
        lines.append("CAPPED: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items()))
                     + f" (--graph-max {p.header.get('graph_max', '?')}, --objects-max {p.header.get('objects_max', '?')})")
    accesses = sum(c.accesses for c in p.contexts.values())
    nobj = p.summary.get("objects", sum(c.objects for c in p.contexts.values()))
    lines.append(f"contexts: {len(p.contexts)}   objects: {nobj}   "
                 f"heap accesses: {p.summary.get('heap_accesses', accesses)}")
    lines.append(f"affinity edges: {len(p.affinity)} (total weight {sum(p.affinity.values())}, "
                 f"distance {p.header.get('affinity_distance', '?')} B)   pointer edges: {len(p.pointer_edges)}")
    stream = f"stream: {p.summary.get('stream_entries', len(p.stream))} entries"
    if p.stream_truncated:
        stream += f" (TRUNCATED at --stream-max, {p.summary.get('stream_dropped', '?')} dropped)"
    lines.append(stream)
    lines.append("")
    lines.append("top contexts by accesses:")
    ranked = sorted(p.contexts.values(), key=lambda c: c.accesses, reverse=True)[:top]
    for c in ranked:
        share = 100.0 * c.accesses / accesses if accesses else 0.0
        lines.append(f"  #{c.id} [{c.kind}] {c.accesses} accesses ({share:.1f}%), loads {c.loads}, stores {c.stores}, "
                     f"{c.objects} objects, {c.bytes} bytes, max live {c.max_live}")
        for m, off in c.frames:
            lines.append(f"      {p.describe_frame(m, off)}")
    if p.affinity:
        lines.append("")
        lines.append("strongest affinity edges:")
        for (x, y), w in sorted(p.affinity.items(), key=lambda kv: kv[1], reverse=True)[:top]:
            lines.append(f"  #{x} -- #{y}: {w}")
    if p.pointer_edges:
        lines.append("")
        lines.append("most frequent pointer edges (from context, field offset, to context):")
        for (a, off, b), n in sorted(p.pointer_edges.items(), key=lambda kv: kv[1], reverse=True)[:top]:
            where = "*" if off < 0 else f"+{off}"
            lines.append(f"  #{a}{where} -> #{b}: {n} stores")
    return "\n".join(lines)
