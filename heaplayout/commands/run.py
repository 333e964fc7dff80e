"""`heaplayout run`: run a program under the runtime, or print the environment that does."""

from __future__ import annotations

import argparse
import errno
import os
import shlex
import signal
import shutil
import sys
from pathlib import Path

from .. import allocators, elf, paths
from ..program_input import check_stdin_file, redirect_stdin
from ..plan_format import plan_refusal
from ..runtime_env import OPTION_DEFAULTS, POLICIES, RuntimeConfig, for_program, runtime_env
from ..target import resolve_program_option


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by every command that runs a program under the runtime."""
    parser.add_argument("--policy", choices=POLICIES, default=None,
                        help="placement policy (default: plan when --plan is given, else callsite)")
    parser.add_argument("--plan", metavar="FILE", help="plan file written by `heaplayout plan` (policy plan)")
    parser.add_argument(
        "--allocator",
        metavar="NAME|PATH",
        default="glibc",
        help="allocator underneath ours, for everything we do not place: "
        f"{', '.join(allocators.ALLOCATORS)}, or the path of a shared library that defines malloc (default: glibc)",
    )
    d = OPTION_DEFAULTS
    parser.add_argument("--min-objects", metavar="N",
                        help=f"pool a context after N objects (default {d['min_objects']}, DPA)")
    parser.add_argument("--max-size", metavar="BYTES",
                        help=f"pool only objects up to this size (default {d['max_size']}, DPA)")
    parser.add_argument("--chunk-size", metavar="BYTES",
                        help=f"pool chunk size, power of two (default {d['chunk_size']}, HALO)")
    parser.add_argument("--range", metavar="BYTES",
                        help=f"virtual range reserved for pools, 64M-1T (default {d['range']}; K, M, G, T suffixes)")
    parser.add_argument("--cc-block", metavar="BYTES", help=f"ccmalloc cc-block size (default {d['cc_block']})")
    parser.add_argument("--chunk-colors", metavar="N",
                        help=f"start offsets new chunks cycle through, 1-64 (default {d['chunk_colors']}; "
                        "1 = no colouring)")
    parser.add_argument("--spare-chunks", metavar="N",
                        help=f"empty chunks kept resident for reuse, 0-4096 (default {d['spare_chunks']}; "
                        "HALO keeps 1)")
    parser.add_argument("--span-bytes", metavar="BYTES",
                        help=f"fresh slots of one size class are carved together in spans of this size, "
                        f"256-1M (default {d['span_bytes']})")
    parser.add_argument("--min-align", metavar="N", choices=("8", "16"),
                        help="8: objects whose size is an odd multiple of 8 may be 8-aligned in every pool "
                        "(HALO; unsafe for clang-built code); 16: never (default: the plan's min_align, else 16)")
    parser.add_argument("--huge-pages", metavar="0|1", choices=("0", "1"),
                        help="1: our pools, and the allocator underneath where it has a setting for it (glibc, "
                        "jemalloc, mimalloc), ask the kernel for transparent huge pages (default "
                        f"{d['huge_pages']})")


def config_from_args(args: argparse.Namespace) -> RuntimeConfig:
    options = {
        name: getattr(args, name)
        for name in ("min_objects", "max_size", "chunk_size", "range", "cc_block", "chunk_colors", "spare_chunks",
                     "span_bytes", "min_align", "huge_pages")
        if getattr(args, name, None) is not None
    }
    policy = args.policy or ("plan" if getattr(args, "plan", None) else "callsite")
    return RuntimeConfig(
        policy=policy,
        plan=getattr(args, "plan", None),
        allocator=args.allocator,
        options=options,
        stats=getattr(args, "stats", False),
        stats_json=getattr(args, "stats_json", None),
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a program under the heaplayout runtime",
        description="Run PROG under libheaplayout.so with the given policy. The program's output, "
        "exit code and signals are its own. Usage: heaplayout run [options] -- PROG [ARGS...]",
    )
    add_runtime_options(p)
    p.add_argument("--stats", action="store_true", help="print per-pool statistics to stderr at exit")
    p.add_argument("--stats-json", metavar="FILE", help="also write the statistics as JSON to FILE")
    p.add_argument("--stdin", metavar="FILE", help="the program reads FILE on standard input")
    p.add_argument("--program", dest="program_exe", metavar="EXE",
                   help="the executable of the command's process tree that the runtime works in (a script's "
                   "interpreter, a driver's child such as cc1plus); default: the command itself, every process "
                   "for a script")
    p.add_argument(
        "--print-env",
        action="store_true",
        help="print the NAME=value assignments that make a run use the runtime, and exit",
    )
    p.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    try:
        env = runtime_env(config_from_args(args))
        stdin = check_stdin_file(getattr(args, "stdin", None))
        target = resolve_program_option(args.program_exe) if args.program_exe else None
    except (ValueError, paths.MissingArtifact) as err:
        print(f"heaplayout run: {err}", file=sys.stderr)
        return 2
    refusal = plan_refusal(args.plan) if getattr(args, "plan", None) else None
    if refusal is not None:  # the runtime would refuse it and run the program unoptimized: say so now
        print(f"heaplayout run: {refusal}", file=sys.stderr)
        return 2
    if args.stats_json:
        if os.path.isdir(args.stats_json):
            print(f"heaplayout run: --stats-json {args.stats_json} is a directory; give the file's name "
                  "(%p in it becomes each process's pid)", file=sys.stderr)
            return 2
        try:
            env["HEAPLAYOUT_STATS_JSON"] = os.path.abspath(args.stats_json)
        except OSError:  # a relative path, and the current directory was removed
            print(f"heaplayout run: --stats-json {args.stats_json}: the current directory no longer exists; "
                  "give an absolute path", file=sys.stderr)
            return 2
    if args.program or target:
        env = for_program(env, args.program[0] if args.program else "", target)
    if args.print_env:
        for name, value in env.items():
            print(f"{name}={value}")
        return 0
    if not args.program:
        print("heaplayout run: no program given; usage: heaplayout run [options] -- PROG [ARGS...]", file=sys.stderr)
        return 2
    exe = shutil.which(args.program[0])
    if exe and elf.is_static_executable(Path(exe)):
        print(f"heaplayout run: {shlex.quote(args.program[0])} is statically linked: the runtime cannot be "
              "preloaded into it, so it runs unoptimized" + (" and prints no statistics" if args.stats or
                                                             args.stats_json else ""), file=sys.stderr)
    secure = elf.secure_exec(Path(exe)) if exe else None
    if secure:  # the loader ignores LD_PRELOAD for it (found by a probe: --stats printed nothing, silently)
        print(f"heaplayout run: {shlex.quote(args.program[0])} is {secure}: the loader ignores LD_PRELOAD "
              "for it, so it runs without the runtime, unoptimized"
              + (", and prints no statistics" if args.stats or args.stats_json else ""), file=sys.stderr)
    foreign = elf.foreign_executable(Path(exe)) if exe else None
    if foreign:  # the loader would say "wrong ELF class" on the program's stderr, and ignore us
        print(f"heaplayout run: {shlex.quote(args.program[0])} is {foreign}: the runtime (x86-64) cannot be "
              "loaded into it, so it runs without the runtime, unoptimized"
              + (", and prints no statistics" if args.stats or args.stats_json else ""), file=sys.stderr)
        env.pop("LD_PRELOAD", None)
    sanitized = elf.sanitizer(Path(exe)) if exe else None
    if sanitized:
        print(f"heaplayout run: {shlex.quote(args.program[0])} is built with {sanitized}, whose own allocator "
              "serves every malloc (and must be loaded first): it runs without the runtime, unoptimized"
              + (", and prints no statistics" if args.stats or args.stats_json else ""), file=sys.stderr)
        env.pop("LD_PRELOAD", None)
    full_env = dict(os.environ)
    if full_env.get("LD_PRELOAD") and "LD_PRELOAD" in env:
        # keep what the user preloads, after ours and the chosen allocator
        env["LD_PRELOAD"] = env["LD_PRELOAD"] + ":" + full_env["LD_PRELOAD"]
    full_env.update(allocators.merge_settings(full_env, env))
    if stdin is not None:
        redirect_stdin(stdin)
    # Python starts with SIGPIPE and SIGXFSZ ignored, and an ignored signal stays ignored
    # across exec: `heaplayout run -- seq 1 1000000 | head -1` made seq print "write error:
    # Broken pipe" and exit 1 where it dies of SIGPIPE silently by itself
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvpe(args.program[0], args.program, full_env)
    except FileNotFoundError:
        print(f"heaplayout run: program not found: {shlex.quote(args.program[0])}", file=sys.stderr)
        return 127
    except PermissionError:
        print(f"heaplayout run: program not executable: {shlex.quote(args.program[0])}", file=sys.stderr)
        return 126
    except OSError as err:
        failure = err
    if failure.errno == errno.ENOEXEC and exe:
        # an executable text file without a #! line: execvp(3), env(1) and the shells run it
        # with /bin/sh, and so must we (os.execvpe does not; a traceback before)
        try:
            os.execve("/bin/sh", ["/bin/sh", exe, *args.program[1:]], full_env)
        except OSError as err:
            failure = err
    # anything else the kernel refuses (a symbolic link loop, an argument list too long once
    # our variables are added): one line and the shell's status, not a traceback
    print(f"heaplayout run: cannot run {shlex.quote(args.program[0])}: {failure.strerror}", file=sys.stderr)
    return 126
