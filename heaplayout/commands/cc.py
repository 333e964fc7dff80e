"""`heaplayout cc`: clang-16 with the Automatic Pool Allocation pass plugin (issue 27).

Usable as `CC="heaplayout cc"` (or `CC=compiler/bin/heaplayout-cc`): every argument goes to
clang-16 unchanged; the driver adds `-fpass-plugin=<build>/compiler/libHeapLayoutAPA.so`
and, when the command links, the runtime that implements the pool API (libheaplayout.so,
with an rpath). Its own options come first, before any of the compiler's:

  --stats              print what the pass did to each translation unit (stderr)
  --stats-file=PATH    append the pass's JSON lines to PATH (one per translation unit)
  --no-pool            compile without the plugin but link the runtime the same way
                       (the A/B baseline: same compiler, same allocator library)
  --collocate=maximal  APA's MaximalDS heuristic: connected heap nodes of one function
                       share one pool (default: one pool per data structure node)
  --collocate=collection  APA's OnePoolPerCollection heuristic: each recursive structure or
                       array node of a function gets one pool, shared with the heap nodes
                       reachable only from it (docs/compiler.md)
  --global-pools       this translation unit is the whole program: give data structures
                       reachable from global variables pools (automatic when one command
                       compiles and links a single C source)

The analysis sees one translation unit at a time (docs/compiler.md). It runs only at -O1
and above (clang's pipeline start), so a build without -O gets no pools.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import paths

COMPILER_ENV = "HEAPLAYOUT_CC_COMPILER"  # which clang to drive (default clang-16)
DEFAULT_COMPILER = "clang-16"  # the plugin is built against LLVM 16's C++ API
STATS_ENV = "HEAPLAYOUT_CC_STATS"  # read by the plugin (compiler/src/Tunables.h)
DISABLE_ENV = "HEAPLAYOUT_CC_DISABLE"
WHOLE_PROGRAM_ENV = "HEAPLAYOUT_CC_WHOLE_PROGRAM"
COLLOCATE_ENV = "HEAPLAYOUT_CC_COLLOCATE"
COLLOCATIONS = ("node", "maximal", "collection")
SOURCE_SUFFIXES = (".c", ".i")
INPUT_SUFFIXES = (".o", ".a", ".so", ".obj", ".lo")
NO_LINK_FLAGS = ("-c", "-S", "-E", "-M", "-MM", "-fsyntax-only")


def plugin_path() -> Path:
    return paths.build_dir() / "compiler" / "libHeapLayoutAPA.so"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cc",
        help="compile C with Automatic Pool Allocation (clang-16 + pass plugin); usable as CC=",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.set_defaults(func=lambda args: run_driver(list(args.program)))


def split_options(argv: list[str]) -> tuple[dict[str, str | bool], list[str]]:
    """Our options (leading, before the compiler's) and the compiler's arguments."""
    ours: dict[str, str | bool] = {"stats": False, "stats_file": "", "no_pool": False, "global_pools": False,
                                   "collocate": "node"}
    rest = list(argv)
    while rest:
        a = rest[0]
        if a == "--stats":
            ours["stats"] = True
        elif a.startswith("--stats-file="):
            ours["stats_file"] = a.split("=", 1)[1]
        elif a == "--no-pool":
            ours["no_pool"] = True
        elif a == "--global-pools":
            ours["global_pools"] = True
        elif a.startswith("--collocate="):
            value = a.split("=", 1)[1]
            if value not in COLLOCATIONS:
                raise ValueError(f"--collocate must be one of {', '.join(COLLOCATIONS)}, not {value!r}")
            ours["collocate"] = value
        elif a == "--":
            rest.pop(0)
            break
        else:
            break
        rest.pop(0)
    return ours, rest


def links(compiler_args: list[str]) -> bool:
    """Whether this compiler command produces an executable (so the runtime must be linked)."""
    if any(a in NO_LINK_FLAGS for a in compiler_args):
        return False
    return any(not a.startswith("-") for a in compiler_args)


def whole_program(compiler_args: list[str]) -> bool:
    """One command that compiles exactly one C source and links it with nothing else of ours:
    that translation unit is the whole program (libraries only see what it hands them)."""
    if not links(compiler_args) or any(a in ("-shared", "-r", "-Wl,-r") for a in compiler_args):
        return False  # a library or a partial link is not a program
    inputs = [a for a in compiler_args if not a.startswith("-")]
    # the value of -o and of options taking a separate argument are not inputs
    for i, a in enumerate(compiler_args[:-1]):
        if a in ("-o", "-I", "-L", "-D", "-U", "-include", "-isystem", "-x", "-MF", "-MT", "-MQ"):
            nxt = compiler_args[i + 1]
            if nxt in inputs:
                inputs.remove(nxt)
    sources = [a for a in inputs if a.endswith(SOURCE_SUFFIXES)]
    others = [a for a in inputs if a.endswith(INPUT_SUFFIXES)]
    return len(sources) == 1 and not others and len(inputs) == 1


def driver_command(compiler_args: list[str], use_plugin: bool) -> list[str]:
    cmd = [os.environ.get(COMPILER_ENV, DEFAULT_COMPILER)]
    if use_plugin:
        cmd.append(f"-fpass-plugin={plugin_path()}")
    cmd += compiler_args
    if links(compiler_args):
        runtime = paths.runtime_library()
        cmd += [str(runtime), f"-Wl,-rpath,{runtime.parent}"]
    return cmd


def read_stats(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line:
            out.append(json.loads(line))
    return out


def summarize(records: list[dict]) -> str:
    """The paper's tables 1/2 as far as built, per translation unit, plus what stayed on malloc."""
    if not records:
        return "heaplayout cc: the pass reported nothing (no -O1 or higher, or nothing compiled)\n"
    lines = []
    for r in records:
        lines.append(
            f"heaplayout cc: {r['module']}: {r['static_pools']} pools ({r['bump_pointer_pools']} bump-pointer, "
            f"{r['single_size_pools']} single-size, {r.get('align8_pools', 0)} 8-byte aligned), "
            f"{r['cloned_functions']} cloned functions, "
            f"{r['pool_args_total']} pool arguments (max {r['pool_args_max']}); "
            f"{r['alloc_sites_pooled']} allocation and {r['free_sites_pooled']} free calls on pools "
            f"({r.get('free_sites_eliminated', 0)} frees eliminated), "
            f"{r.get('pools_destroyed_early', 0)} pools destroyed before a return, "
            f"{r.get('pools_created_late', 0)} created after the entry, "
            f"{r['alloc_sites_kept']} allocation calls kept on malloc; analysis {r['analysis_seconds']:.4f} s"
        )
        if "topdown_args_to_malloc" in r:
            lines.append(
                f"  top-down:       {r['topdown_args_to_malloc']} pool-argument nodes no caller passes a pool for "
                f"(now malloc), {r['topdown_args_to_global']} passed one global pool by every caller (now that pool); "
                f"{r['topdown_pool_args_removed']} pool parameters and {r['topdown_clones_avoided']} clones fewer; "
                f"{r['topdown_args_external_from_caller']} pool-argument nodes some caller passes unknown memory into"
            )
        if "indirect_calls" in r:
            lines.append(
                f"  indirect calls: {r['indirect_calls']}, {r['indirect_calls_promoted']} promoted to calls of "
                f"known callees; of the others {r['indirect_calls_ec_candidates']} with a known callee set "
                f"({r['indirect_calls_ec_candidates_heap']} passing heap memory)"
            )
        for reason, n in sorted(r["kept_reasons"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  kept on malloc: {n:4d}  {reason}")
        for kind, n in sorted(r["heap_nodes"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  heap nodes:     {n:4d}  {kind}")
    return "\n".join(lines) + "\n"


def run_driver(argv: list[str]) -> int:
    try:
        ours, compiler_args = split_options(argv)
    except ValueError as e:
        print(f"heaplayout cc: {e}", file=sys.stderr)
        return 2
    if not compiler_args:
        print(__doc__, file=sys.stderr)
        return 2
    use_plugin = not ours["no_pool"]
    if use_plugin and not plugin_path().exists():
        print(
            f"heaplayout cc: the pass plugin is not built ({plugin_path()}); it needs llvm-16-dev "
            "(scripts/setup.sh installs it, then scripts/build.sh). Compiling without pools.",
            file=sys.stderr,
        )
        use_plugin = False
    try:
        cmd = driver_command(compiler_args, use_plugin)
    except paths.MissingArtifact as e:
        print(f"heaplayout cc: {e}", file=sys.stderr)
        return 1
    env = dict(os.environ)
    tmp: tempfile.TemporaryDirectory | None = None
    stats_path: Path | None = None
    if ours["stats_file"]:
        stats_path = Path(str(ours["stats_file"]))
    elif ours["stats"]:
        tmp = tempfile.TemporaryDirectory(prefix="hlcc-")
        stats_path = Path(tmp.name) / "stats.jsonl"
    if stats_path is not None:
        env[STATS_ENV] = str(stats_path)
    env[COLLOCATE_ENV] = str(ours["collocate"])
    if ours["global_pools"] or whole_program(compiler_args):
        env[WHOLE_PROGRAM_ENV] = "1"
    else:
        env.pop(WHOLE_PROGRAM_ENV, None)
    try:
        rc = subprocess.call(cmd, env=env)
        if ours["stats"] and stats_path is not None:
            sys.stderr.write(summarize(read_stats(stats_path)))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return rc
