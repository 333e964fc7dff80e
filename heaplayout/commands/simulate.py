"""`heaplayout simulate`: cache, TLB and prefetch simulation of a program's heap layout.

    heaplayout simulate [--policy none|off|callsite|plan] [--plan FILE] [--allocator NAME]
                        [cache/TLB/prefetch options] [--json FILE] -- PROG [ARGS...]
    heaplayout simulate --study [--lines 32,64,128,256] [--prefetchers ...] -- PROG [ARGS...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import stat
import shutil
import signal
import sys
from pathlib import Path

from .. import allocators, elf, paths
from ..plan_format import plan_refusal
from ..program_input import check_stdin_file
from ..sim_clocks import DEFAULT_SCALE
from ..target import resolve_program_option
from ..simulate import (CACHEGRIND_GEOMETRY, PREFETCHERS, SimOptions, SimulateError, format_result,
                        run_simulation, run_with_oracles)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate",
        help="simulate caches, TLB and prefetchers on a program's heap layout (hlsim Valgrind tool)",
        description="Run PROG under the hlsim Valgrind tool, which feeds every data load and store to a "
        "model of L1D/L2/LLC, a two-level data TLB and a prefetcher, and print misses, prefetch usefulness "
        "and a time estimate per level. malloc is not replaced: the layout is the one the chosen allocator "
        "(and our runtime, with --policy) produces. See docs/simulator.md.",
    )
    p.add_argument("--policy", choices=("none", "off", "callsite", "plan"), default=None,
                   help="none: the allocator alone (default; plan when --plan is given); off/callsite/plan: "
                   "our runtime over the allocator")
    p.add_argument("--plan", metavar="FILE", help="plan file for policy plan")
    p.add_argument("--allocator", metavar="NAME|PATH", default="glibc",
                   help=f"the allocator (underneath ours with --policy): {', '.join(allocators.ALLOCATORS)}, or the "
                   "path of a shared library that defines malloc (default glibc)")
    p.add_argument("--stdin", metavar="FILE", help="the program reads FILE on standard input (each simulated run "
                   "reads it from its start; default: /dev/null, whatever is piped to heaplayout)")
    p.add_argument("--chunk-size", metavar="BYTES", help="runtime pool chunk size (default 1M)")
    p.add_argument("--range", metavar="BYTES", help="runtime pool range (default 16G)")
    p.add_argument("--cc-block", metavar="BYTES",
                   help="runtime ccmalloc cc-block size, also the cc prefetchers' block (default 256)")
    p.add_argument("--min-objects", metavar="N", help="runtime: pool a context after N objects")
    p.add_argument("--max-size", metavar="BYTES", help="runtime: pool objects up to this size")
    g = p.add_argument_group("model (defaults: docs/simulator.md)")
    g.add_argument("--L1", metavar="S,W,L", help="L1D size,ways,line (default 48K,12,64)")
    g.add_argument("--L2", metavar="S,W,L", help="L2 size,ways,line (default 2M,16,64)")
    g.add_argument("--LL", metavar="S,W,L", help="last level size,ways,line (default 4M,16,64)")
    g.add_argument("--levels", choices=("2", "3"), help="2 = L1 + LL only (cachegrind's hierarchy); default 3")
    g.add_argument("--line", metavar="BYTES", help="line size of every level")
    g.add_argument("--lat", metavar="L1,L2,LL,MEM", help="hit latencies in cycles (default 5,15,50,250)")
    g.add_argument("--instr-cost", metavar="CENTICYCLES",
                   help="cost of one instruction in the time estimate, in 1/100 cycle (default 25)")
    g.add_argument("--exposed", metavar="PERMILLE",
                   help="share of the data-access latency sum counted in the time estimate, per mille")
    g.add_argument("--fault-cost", metavar="CYCLES", help="cycles for a page's first touch (default 5000)")
    g.add_argument("--dtlb", metavar="E,W,P", help="DTLB entries,ways,miss penalty (default 64,4,7)")
    g.add_argument("--stlb", metavar="E,W,P", help="STLB entries,ways,miss penalty (default 1536,12,30)")
    g.add_argument("--tlb-levels", choices=("0", "1", "2"), help="TLB levels modelled (default 2)")
    g.add_argument("--page-size", metavar="BYTES", help="page size (default 4096; 2097152 for huge pages)")
    g.add_argument("--prefetch", choices=PREFETCHERS, help="prefetcher (default none)")
    g.add_argument("--pf-level", choices=("1", "2", "3"), help="cache level prefetches fill (default 1)")
    g.add_argument("--pf-degree", metavar="N", help="lines per prefetch trigger (default 1)")
    g.add_argument("--stride-entries", metavar="N", help="stride prefetcher table entries (default 256)")
    g.add_argument("--stride-conf", metavar="N", help="stride confirmations before issuing (default 2)")
    g.add_argument("--pool-range", metavar="LO-HI", help="heaplayout pool range in hex (default: detected)")
    n = p.add_argument_group("native-time model (issue 26; each part off by default, see docs/simulator.md)")
    n.add_argument("--hw", choices=("yes", "no"),
                   help="every part below plus the IP-stride prefetcher (--prefetch stride); later options override")
    n.add_argument("--timing", choices=("sum", "mlp"),
                   help="sum: exposed share of the latency sum (default); mlp: core timing with memory-level "
                   "parallelism and dependent loads")
    n.add_argument("--rob", metavar="N", help="reorder-buffer instructions (default 224)")
    n.add_argument("--mshr", metavar="N", help="fill buffers: misses in flight (default 12)")
    n.add_argument("--deps", choices=("value", "none", "all"),
                   help="which load misses wait for an earlier one (default value: address derived from a late load)")
    n.add_argument("--dep-span", metavar="BYTES", help="bytes above a loaded pointer that derive from it (default 128)")
    n.add_argument("--pf-adjacent", choices=("yes", "no"), help="L2 adjacent-line prefetcher")
    n.add_argument("--pf-streamer", choices=("yes", "no"), help="L2 streamer within 4 KiB pages")
    n.add_argument("--streamer", metavar="DIST,DEGREE", help="streamer lines ahead, prefetches per access (16,2)")
    n.add_argument("--dram", choices=("yes", "no"), help="DRAM row buffer (open-row hits are cheaper)")
    n.add_argument("--dram-geometry", metavar="BANKS,ROW", help="DRAM banks and row bytes (default 32,8192)")
    n.add_argument("--dram-hit", metavar="CYCLES", help="latency of an open-row access (default 180)")
    n.add_argument("--walk-cache", choices=("yes", "no"),
                   help="page walks read PTE/PDE lines through the caches instead of a fixed STLB penalty")
    n.add_argument("--phys-index", choices=("yes", "no"),
                   help="L2, LLC and DRAM rows see a pseudo-random page frame (physically indexed hardware)")
    g.add_argument("--cachegrind-geometry", action="store_true",
                   help="D1 32K/8/64 + LL 4M/16/64, two levels, no TLB, no prefetcher (validation against cachegrind)")
    p.add_argument("--oracle", choices=("first-touch", "hot-first"),
                   help="also simulate the oracle layout: every heap object packed densely in first-touch order; "
                   "hot-first adds a second run that packs the hottest call sites' objects first")
    p.add_argument("--no-baseline", action="store_true",
                   help="with --oracle, skip the extra run of the allocator alone (glibc for another allocator) "
                   "that gives the share of the possible gain this layout obtained")
    p.add_argument("--oracle-in-process", action="store_true",
                   help="simulate the oracle in the tool's own process instead of a helper process fed through "
                   "shared memory (same counts; the helper lets a second core carry the oracle's half of the work)")
    p.add_argument("--contexts", action="store_true",
                   help="track heap objects and call sites: misses per allocation call site; implied by --oracle. "
                   "The tool sees the malloc family's entries and returns; nothing is wrapped or replaced, so the "
                   "layout and the counts are those of an untracked run (the simulation takes about 30%% longer)")
    p.add_argument("--clock-scale", type=int, default=DEFAULT_SCALE, metavar="N",
                   help="multiply mimalloc's decommit delays and jemalloc's decay time by N, the simulator's "
                   "slowdown, so that they return memory after as much of the program's work as natively "
                   f"(default {DEFAULT_SCALE}; 1: as set; heaplayout/sim_clocks.py)")
    p.add_argument("--program", dest="program_exe", metavar="EXE",
                   help="simulate the process of the command that runs EXE (a compiler driver's cc1plus, the "
                   "binary a script starts) and place in it alone: valgrind follows the children, and the "
                   "result is that of the busiest process that ran EXE")
    p.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    p.add_argument("--study", action="store_true",
                   help="line sizes x prefetchers x layouts table (see --lines, --prefetchers, --layouts)")
    p.add_argument("--lines", default="32,64,128,256", help="study: line sizes")
    p.add_argument("--prefetchers", default="none,nextline,stride,cc-all", help="study: prefetchers")
    p.add_argument("--layouts", default="glibc,callsite", help="study: layouts (allocator names, or POLICY[+ALLOC])")
    p.add_argument("--valgrind", default="valgrind", help="valgrind executable")
    p.set_defaults(func=simulate_command)


# "hw" first: the tool applies options in order, so the single parts given with it override it
MODEL_KEYS = ("hw", "L1", "L2", "LL", "levels", "line", "lat", "dtlb", "stlb", "tlb_levels", "page_size", "prefetch",
              "pf_level", "pf_degree", "stride_entries", "stride_conf", "pool_range", "instr_cost", "exposed", "fault_cost",
              "timing", "rob", "mshr", "deps", "dep_span", "pf_adjacent", "pf_streamer", "streamer", "dram",
              "dram_geometry", "dram_hit", "walk_cache", "phys_index")


_NUM = r"(?:0x[0-9a-fA-F]+|[0-9]+)"
_TRIPLES = {"L1": (f"{_NUM}[KkMmGg]?", "SIZE,WAYS,LINE, e.g. 48K,12,64 (WAYS 0: fully associative)"),
            "L2": (f"{_NUM}[KkMmGg]?", "SIZE,WAYS,LINE, e.g. 2M,16,64 (WAYS 0: fully associative)"),
            "LL": (f"{_NUM}[KkMmGg]?", "SIZE,WAYS,LINE, e.g. 4M,16,64 (WAYS 0: fully associative)"),
            "dtlb": (_NUM, "ENTRIES,WAYS,PENALTY, e.g. 64,4,7"),
            "stlb": (_NUM, "ENTRIES,WAYS,PENALTY, e.g. 1536,12,30")}


def check_triples(args: argparse.Namespace) -> None:
    """The form of --L1/--L2/--LL/--dtlb/--stlb, checked here: the tool's own refusal of a
    malformed one was valgrind's 'Bad option ... Use --help' (whose --help is valgrind's) and
    'hlsim wrote no result'. The tool still checks the geometry itself (ways dividing lines)."""
    for key, (first, form) in _TRIPLES.items():
        v = getattr(args, key, None)
        if v is not None and not re.fullmatch(f"{first},{_NUM},{_NUM}", v):
            raise ValueError(f"--{key} {v}: wants {form}")


def options_from_args(args: argparse.Namespace) -> SimOptions:
    check_triples(args)
    runtime_options = {k: getattr(args, k) for k in ("chunk_size", "range", "cc_block", "min_objects", "max_size")
                       if getattr(args, k, None) is not None}
    model = dict(CACHEGRIND_GEOMETRY) if args.cachegrind_geometry else {}
    model.update({k: getattr(args, k) for k in MODEL_KEYS if getattr(args, k, None) is not None})
    if str(model.get("levels")) == "2" and getattr(args, "L2", None) is not None:
        # the tool models L1 + LL then and dropped --L2 without a word: the result looked like
        # that of the geometry asked for
        why = "--levels 2" if args.levels == "2" else "--cachegrind-geometry"
        raise ValueError(f"--L2 {args.L2}: the two-level hierarchy ({why}) is L1 + LL; give --LL, or three levels")
    policy = args.policy or ("plan" if args.plan else "none")
    return SimOptions(policy=policy, allocator=args.allocator, plan=args.plan,
                      runtime_options=runtime_options, model=model,
                      contexts=args.contexts or bool(args.oracle),
                      oracle_helper=not args.oracle_in_process, clock_scale=args.clock_scale,
                      target=resolve_program_option(args.program_exe) if getattr(args, "program_exe", None) else None)


def _input_waiting() -> bool:
    """Our standard input is a pipe or a non-empty file: input meant for the program."""
    try:
        st = os.fstat(0)
    except OSError:
        return False
    return stat.S_ISFIFO(st.st_mode) or (stat.S_ISREG(st.st_mode) and st.st_size > 0)


def simulate_command(args: argparse.Namespace) -> int:
    if not args.program:
        print("heaplayout simulate: no program given; usage: heaplayout simulate [options] -- PROG [ARGS...]",
              file=sys.stderr)
        return 2
    try:
        if args.json:  # checked before the simulation: writing it after was a traceback in a missing directory
            paths.check_output_file(args.json, "--json")
        opts = options_from_args(args)
        opts.client_env()  # validate the layout settings before the long run
        refusal = plan_refusal(args.plan) if args.plan else None
        if refusal is not None:  # the runtime would refuse it and simulate glibc under the plan's name
            raise ValueError(refusal)
        stdin = check_stdin_file(args.stdin)
        if stdin is None and _input_waiting():
            # `cat in | heaplayout simulate -- prog` simulated prog reading /dev/null: another run
            # than the user's, with no word of it
            print("heaplayout simulate: warning: standard input is not passed to the program, which reads "
                  "/dev/null; give the input as --stdin FILE", file=sys.stderr)
        exe = shutil.which(args.program[0])
        sanitized = elf.sanitizer(Path(exe)) if exe else None
        if sanitized:
            raise ValueError(f"{args.program[0]} is built with {sanitized}, which Valgrind cannot run (the "
                             "sanitizer's shadow memory and its own allocator); simulate a build without -fsanitize")
        if exe and elf.is_static_executable(Path(exe)):
            print(f"heaplayout simulate: warning: {args.program[0]} is statically linked: LD_PRELOAD has no effect "
                  "on it, so the layout simulated is its own malloc's whatever --policy and --allocator say",
                  file=sys.stderr)
        if opts.target is not None and (args.study or args.oracle):
            raise ValueError("--program is not supported with --study or --oracle yet: they simulate the command's "
                             "first process")
        if args.study:
            if stdin is not None:
                raise ValueError("--stdin is not supported with --study yet (heaplayout/study.py runs read /dev/null)")
            from ..study import run_study, format_study
            # checked here: the study's runs capture valgrind's messages, so a bad line size or
            # prefetcher was only 'hlsim wrote no result (valgrind exit 1)', 'abc' a bare int() error
            lines = []
            for x in args.lines.split(","):
                if not x.isdigit() or int(x) < 4 or int(x) > 4096 or int(x) & (int(x) - 1):
                    raise ValueError(f"--lines {args.lines}: {x!r} is not a line size (a power of two, 4 to 4096)")
                lines.append(int(x))
            bad = [x for x in args.prefetchers.split(",") if x not in PREFETCHERS]
            if bad:
                raise ValueError(f"--prefetchers {args.prefetchers}: unknown {', '.join(bad)}; choose from "
                                 f"{', '.join(PREFETCHERS)}")
            rows = run_study(args.program, opts, lines=lines,
                             prefetchers=args.prefetchers.split(","), layouts=args.layouts.split(","),
                             valgrind=args.valgrind)
            print(format_study(rows))
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)
            return 0
        sys.stdout.flush()
        if args.oracle:
            result = run_with_oracles(args.program, opts, hot_first=args.oracle == "hot-first",
                                      baseline=not args.no_baseline, json_out=args.json, valgrind=args.valgrind,
                                      stdin=stdin)
        else:
            result = run_simulation(args.program, opts, json_out=args.json, valgrind=args.valgrind, stdin=stdin)
    except (ValueError, paths.MissingArtifact, SimulateError, allocators.UnknownAllocator) as err:
        print(f"heaplayout simulate: {err}", file=sys.stderr)
        return 2
    print(format_result(result))
    rc = result.get("valgrind_exit", 0)
    if isinstance(rc, int) and rc < 0:
        # the program died by a signal (valgrind re-raises it): say so, as the counts above are
        # of its run up to then, and exit as a shell reports it (128 + N) rather than a bare 1
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        print(f"heaplayout simulate: the program was killed by {name}; the counts cover its run up to then",
              file=sys.stderr)
        return 128 - rc
    return rc if isinstance(rc, int) else 1


