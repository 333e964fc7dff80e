"""`heaplayout simulate`: run a program under the hlsim Valgrind tool (simulator/) and report
cache, TLB and prefetch behaviour of the layout its allocator produces.

The tool does not replace malloc; the allocator under test (glibc, jemalloc, mimalloc,
tcmalloc, or our runtime) is preloaded through valgrind's own environment, which valgrind
passes to the client (as `heaplayout bench --cachegrind` does).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from . import allocators, paths
from .elf import is_elf
from .program_input import open_stdin
from .runtime_env import RuntimeConfig, allocator_env, for_program, runtime_env
from .sim_clocks import DEFAULT_SCALE, slowed_clock_env

TOOL = "hlsim"

# The runtime's pool-range defaults (runtime/src/tunables.h): the tool recognises the range
# by the client's MAP_NORESERVE mmap at the runtime's hint address (HL_RANGE_HINT, the tool's
# --pool-hint default), or where the hint was taken, of range + its alignment bytes.
RUNTIME_DEFAULT_RANGE = 16 << 30
RUNTIME_RANGE_ALIGN = 16 << 20  # hl_range_init aligns the range to this or a chunk, the larger
RUNTIME_DEFAULT_CHUNK = 1 << 20

# cachegrind's geometry used for validation: two levels, no TLB, no prefetcher.
CACHEGRIND_GEOMETRY = {"levels": "2", "L1": "32768,8,64", "LL": "4194304,16,64", "tlb_levels": "0",
                       "prefetch": "none", "hw": "no"}
CACHEGRIND_ARGS = ["--cache-sim=yes", "--D1=32768,8,64", "--LL=4194304,16,64"]

# Valgrind runs one thread at a time; by default the next to run is whichever the kernel
# wakes first, so a multi-threaded program's threads interleave differently on every run,
# and its counts with them (perl-threads, measuring input: LL misses 14.7M and 18.1M, a plan's
# L2 misses 0.884x and 1.006x the allocator's in two runs of one configuration). With a
# ticket lock the threads take turns in a fixed order: two runs agreed to 0.1% of L2 and
# 0.04% of the time estimate (docs/results.md section 19). Single-threaded programs: no change.
VALGRIND_SCHED_ARGS = ["--fair-sched=yes"]

# tool option name for each model setting (the keys of SimOptions.model)
MODEL_OPTIONS = {
    "L1": "--L1", "L2": "--L2", "LL": "--LL", "levels": "--levels", "line": "--line", "lat": "--lat",
    "dtlb": "--dtlb", "stlb": "--stlb", "tlb_levels": "--tlb-levels", "page_size": "--page-size",
    "prefetch": "--prefetch", "pf_level": "--pf-level", "pf_degree": "--pf-degree",
    "stride_entries": "--stride-entries", "stride_conf": "--stride-conf", "cc_block": "--cc-block",
    "pool_range": "--pool-range", "instr_cost": "--instr-cost", "exposed": "--exposed", "fault_cost": "--fault-cost",
    # issue 26: the native-time parts (simulator/tunables.h)
    "hw": "--hw", "timing": "--timing", "rob": "--rob", "mshr": "--mshr", "deps": "--deps", "dep_span": "--dep-span",
    "pf_adjacent": "--pf-adjacent", "pf_streamer": "--pf-streamer", "streamer": "--streamer", "dram": "--dram",
    "dram_geometry": "--dram-geometry", "dram_hit": "--dram-hit", "walk_cache": "--walk-cache",
    "phys_index": "--phys-index",
}
# every native-time part off: what --cachegrind-geometry and the pre-issue-26 estimate use
NATIVE_PARTS_OFF = {"hw": "no"}
PREFETCHERS = ("none", "nextline", "tagged", "stride", "cc-one", "cc-all")


class SimulateError(RuntimeError):
    pass


# libhlperturb (simulator/perturb/): placements of known kind for validating the estimate
PERTURB_MODES = ("order", "sizeclass", "random", "shuffle")


def perturb_library() -> Path:
    """The layout-perturbation allocator, build/simulator/perturb/libhlperturb.so."""
    lib = paths.build_dir() / "simulator" / "perturb" / "libhlperturb.so"
    if not lib.exists():
        raise paths.MissingArtifact(f"libhlperturb.so not found at {lib}; build it with: scripts/build.sh "
                                    "(or set HEAPLAYOUT_BUILD_DIR to your CMake build directory)")
    return lib


def perturb_env(mode: str, arenas: int = 4, seed: int = 1, reuse: bool = False) -> dict[str, str]:
    """The environment that runs a program under libhlperturb in `mode` (PERTURB_MODES)."""
    if mode not in PERTURB_MODES:
        raise ValueError(f"unknown perturbation {mode!r}; choose one of: {', '.join(PERTURB_MODES)}")
    return {"LD_PRELOAD": str(perturb_library()), "HLPERTURB_MODE": mode, "HLPERTURB_ARENAS": str(arenas),
            "HLPERTURB_SEED": str(seed), "HLPERTURB_FREE": "reuse" if reuse else "none"}


def simulator_lib_dir() -> Path:
    """The VALGRIND_LIB directory the build prepares (build/simulator/lib)."""
    d = paths.build_dir() / "simulator" / "lib"
    if not (d / f"{TOOL}-amd64-linux").exists():
        raise paths.MissingArtifact(
            f"the simulator tool {TOOL}-amd64-linux not found in {d}; build it with: scripts/build.sh "
            "(needs the valgrind package; or set HEAPLAYOUT_BUILD_DIR to your CMake build directory)")
    return d


def parse_size(text: str) -> int:
    t = str(text).strip().upper()
    mult = 1
    if t and t[-1] in "KMG":
        mult = 1 << {"K": 10, "M": 20, "G": 30}[t[-1]]
        t = t[:-1]
    return int(t, 0) * mult


@dataclass
class SimOptions:
    """One simulated configuration: the layout (allocator + runtime policy) and the model."""

    policy: str = "none"  # none = the allocator alone; off|callsite|plan = our runtime over it
    allocator: str = "glibc"
    plan: str | None = None
    runtime_options: dict[str, str] = field(default_factory=dict)
    model: dict[str, str] = field(default_factory=dict)
    oracle: bool = False
    oracle_hot: list[str] | None = None  # hex return addresses, hottest first (hot-first oracle)
    # track objects and call sites (implied by the oracle). Off by default only for speed: the
    # tool observes allocation calls without touching the client (simulator/hs_hooks.c).
    contexts: bool = False
    top_contexts: int = 50
    # the oracle in a helper process fed through shared memory (same counts; uses a second core)
    oracle_helper: bool = True
    # the allocators' wall-clock delays multiplied by this (sim_clocks.py; 1: as they are)
    clock_scale: int = DEFAULT_SCALE
    # the executable of the command's process tree to simulate and place in (a driver's
    # child, a script's binary: heaplayout/target.py); None: the command itself
    target: str | None = None

    def tracks_objects(self) -> bool:
        return bool(self.contexts or self.oracle or self.oracle_hot)

    def client_env(self) -> dict[str, str]:
        if self.policy == "none":
            return allocator_env(self.allocator)
        return runtime_env(RuntimeConfig(policy=self.policy, allocator=self.allocator, plan=self.plan,
                                         options=dict(self.runtime_options)))

    def tool_args(self) -> list[str]:
        args = []
        for key, value in self.model.items():
            if value is None:
                continue
            if key not in MODEL_OPTIONS:
                raise ValueError(f"unknown simulator option {key!r}")
            args.append(f"{MODEL_OPTIONS[key]}={value}")
        # how the tool recognises the runtime's pool range
        chunk = parse_size(self.runtime_options.get("chunk_size", RUNTIME_DEFAULT_CHUNK))
        rng = parse_size(self.runtime_options.get("range", RUNTIME_DEFAULT_RANGE))
        rng = (rng + chunk - 1) // chunk * chunk
        # the runtime maps the range plus its alignment: a chunk, at least 16 MiB (chunk.c)
        args += [f"--pool-chunk={chunk}", f"--pool-span={rng + max(chunk, RUNTIME_RANGE_ALIGN)}"]
        if "cc_block" not in self.model and "cc_block" in self.runtime_options:
            args.append(f"--cc-block={parse_size(self.runtime_options['cc_block'])}")
        if not self.tracks_objects():
            args.append("--contexts=no")
        args.append(f"--top-contexts={self.top_contexts}")
        if self.oracle or self.oracle_hot:
            args.append("--oracle=yes")
        if self.oracle_hot:
            args.append("--oracle-hot=" + ",".join(self.oracle_hot))
        if (self.oracle or self.oracle_hot) and not self.oracle_helper:
            args.append("--oracle-helper=no")
        return args

    def label(self) -> str:
        layout = self.allocator if self.policy == "none" else f"{self.policy}+{self.allocator}"
        return layout


def valgrind_env(client_env: dict[str, str], program: Sequence[str],
                 base: dict[str, str] | None = None, target: str | None = None) -> tuple[dict[str, str], str]:
    """Valgrind's own environment (valgrind passes it to the client): `base` (default: ours)
    with the layout's variables, and the user's LD_PRELOAD kept after the layout's libraries,
    as `heaplayout run` keeps it. Returns the environment and the user's part ("" if none)."""
    env = dict(os.environ if base is None else base)
    user = env.pop("LD_PRELOAD", "").strip(": ")
    add = for_program(client_env, program[0], target)
    env.update(allocators.merge_settings(env, add))
    if user:
        env["LD_PRELOAD"] = f"{add['LD_PRELOAD']}:{user}" if add.get("LD_PRELOAD") else user
    return env, user


def _is_script(argv0: str) -> bool:
    path = argv0 if os.sep in argv0 else shutil.which(argv0)
    return bool(path) and os.path.isfile(path) and not is_elf(Path(path))


def _same_exe(exe: object, target: str) -> bool:
    """Whether a process's executable (as valgrind was given it: the command's own may be a
    bare name found in PATH) is the file `target`."""
    if not isinstance(exe, str):
        return False
    path = exe if os.sep in exe else shutil.which(exe)
    try:
        return bool(path) and os.path.samefile(path, target)
    except OSError:
        return False


def _result_exe(path: Path) -> str:
    try:
        return str(json.loads(path.read_text()).get("exe", "?"))
    except (OSError, ValueError, AttributeError):
        return "?"


def _busiest_result(directory: Path, target: str | None = None) -> Path | None:
    """Of a traced command's processes, the result of the one that executed the most
    instructions (the binary a script runs, whether it execs it or waits for it); with
    `target`, the busiest of the processes that ran that executable (None if none did)."""
    best, most = None, -1
    for f in directory.glob("result.*.json"):
        try:
            doc = json.loads(f.read_text())
            n = int(doc.get("instructions", 0))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
        if target is not None and not _same_exe(doc.get("exe"), target):
            continue
        if n > most:
            best, most = f, n
    return best


def run_simulation(program: Sequence[str], opts: SimOptions, json_out: str | os.PathLike | None = None,
                   valgrind: str = "valgrind", stdout=None, stderr=None,
                   log_file: str | None = None, stdin: Path | None = None, cwd: Path | None = None,
                   env_base: dict[str, str] | None = None) -> dict:
    """Run `program` under hlsim; return the tool's result (parsed JSON) with a few additions.
    The program reads the file `stdin` from its start (None: /dev/null), runs in `cwd` (None:
    ours) with `env_base` (None: our environment) plus the layout's variables."""
    lib = simulator_lib_dir()
    vg = shutil.which(valgrind)
    if not vg:
        raise SimulateError(f"{valgrind} not found (install the valgrind package)")
    with tempfile.TemporaryDirectory(prefix="hlsim.") as tmp:
        # one file per process: a client's forked children run the tool's exit too, and must
        # not overwrite the result of the process we started (valgrind keeps its pid)
        argv = [vg, "-q", *VALGRIND_SCHED_ARGS, f"--tool={TOOL}", f"--out-file={Path(tmp) / 'result.%p.json'}", *opts.tool_args()]
        if log_file:
            argv.append(f"--log-file={log_file}")
        if opts.target is not None or _is_script(program[0]):
            # a wrapper script execs the binary that does the work, a driver runs it as a child:
            # follow them (one result per process; exec keeps the pid, so the same file)
            argv.append("--trace-children=yes")
        argv += list(program)
        # LD_PRELOAD in valgrind's environment; with a target, the runtime places in it alone
        env, user_preload = valgrind_env(opts.client_env(), program, env_base, opts.target)
        env.update(slowed_clock_env(env.get("LD_PRELOAD", ""), env, opts.clock_scale))
        env["VALGRIND_LIB"] = str(lib)
        with open_stdin(stdin) as inp:
            proc = subprocess.Popen(argv, env=env, stdin=inp, stdout=stdout, stderr=stderr, cwd=cwd)
            out = Path(tmp) / f"result.{proc.pid}.json"
            captured, _ = proc.communicate()
        if opts.target is not None:
            found = _busiest_result(Path(tmp), opts.target)
            if found is None:
                ran = sorted({_result_exe(f) for f in Path(tmp).glob("result.*.json")})
                raise SimulateError(f"no process of the command ran {opts.target} (valgrind exit {proc.returncode}; "
                                    f"the processes ran: {', '.join(ran) or 'nothing'})")
            out = found
        elif "--trace-children=yes" in argv:
            out = _busiest_result(Path(tmp)) or out
        if not out.exists():
            raise SimulateError(f"hlsim wrote no result (valgrind exit {proc.returncode})")
        result = json.loads(out.read_text())
    result["program"] = list(program)
    result["target"] = opts.target
    result["layout"] = {"policy": opts.policy, "allocator": opts.allocator, "plan": opts.plan,
                        "runtime_options": dict(opts.runtime_options), "user_preload": user_preload}
    result["valgrind_exit"] = proc.returncode
    if isinstance(captured, bytes):  # stdout=subprocess.PIPE
        result["program_stdout"] = captured.decode(errors="replace")
    if json_out:
        Path(json_out).write_text(json.dumps(result, indent=1) + "\n")
    return result


def hot_contexts(result: dict, limit: int = 32) -> list[str]:
    """Return addresses of the contexts of a run, hottest first (accesses per allocated byte),
    for the hot-first oracle."""
    ctxs = [c for c in result.get("contexts", []) if c["context"] >= 0 and c["accesses"] > 0]
    ctxs.sort(key=lambda c: -c["accesses"] / max(1, c["bytes"]))
    return [c["ra"] for c in ctxs[:limit]]


def baseline_of(opts: SimOptions) -> SimOptions | None:
    """The layout the user would otherwise run, against which a layout's gain is measured: the
    allocator alone under one of our runtime's policies, glibc under another allocator, none
    for glibc itself. The same model; no objects tracked (they change no count)."""
    from dataclasses import replace
    plain = dict(oracle=False, oracle_hot=None, contexts=False)
    if opts.policy != "none":
        return replace(opts, policy="none", plan=None, runtime_options={}, **plain)
    if opts.allocator != "glibc":
        return replace(opts, allocator="glibc", **plain)
    return None


def run_with_oracles(program: Sequence[str], opts: SimOptions, hot_first: bool = True, baseline: bool = False,
                     **kw) -> dict:
    """The layout plus the dense first-touch oracle (one run) and, when `hot_first`, the
    hot-first oracle (a second run that packs the first run's hottest contexts first). With
    `baseline`, one more run of baseline_of(opts) gives each oracle the share of the possible
    gain (baseline -> oracle, in time estimate) this layout obtained: `gain_share`."""
    from dataclasses import replace
    json_out = kw.pop("json_out", None)
    r = run_simulation(program, replace(opts, oracle=True, oracle_hot=None), **kw)
    if hot_first:
        hot = hot_contexts(r)
        if hot:
            r2 = run_simulation(program, replace(opts, oracle=True, oracle_hot=hot), **kw)
            r["oracle_hot"] = r2["oracle"]
            r["oracle_hot"]["hot_contexts"] = hot
    base_opts = baseline_of(opts) if baseline else None
    if base_opts:
        base = run_simulation(program, base_opts, **{**kw, "stdout": subprocess.DEVNULL})
        r["baseline"] = {"layout": base_opts.label(), "estimate": base["estimate"], "cycles": base["cycles"],
                         "misses": [lv["misses"] for lv in base["levels"]]}
        for key in ("oracle", "oracle_hot"):
            if r.get(key):
                r[key]["gain_share"] = gain_share(base["estimate"], r["estimate"], r[key]["estimate"])
    if json_out:
        Path(json_out).write_text(json.dumps(r, indent=1) + "\n")
    return r


def gain_share(base_cycles: int, layout_cycles: int, oracle_cycles: int) -> float | None:
    """Share of the possible gain (baseline -> oracle) that a layout obtained."""
    room = base_cycles - oracle_cycles
    return (base_cycles - layout_cycles) / room if room > 0 else None


def miss_rate(misses: int, accesses: int) -> str:
    return f"{100.0 * misses / accesses:.2f}%" if accesses else "-"


def format_result(r: dict) -> str:
    """The per-level table plus TLB, prefetch and time-estimate lines."""
    lines = []
    cfg = r["config"]
    geo = ", ".join(f"{lv['name']} {lv['size'] // 1024}K/{lv['ways']}w/{lv['line']}B" for lv in cfg["levels"])
    lines.append(f"layout {label_of(r)}; {geo}; prefetcher {cfg['prefetcher']}"
                 + (f" into L{cfg['pf_level']}" if cfg["prefetcher"] != "none" else ""))
    if r.get("target"):
        lines.append(f"process: {r.get('exe', '?')} (--program), the busiest of the command's processes that ran it")
    lines.append(f"{'level':<6} {'accesses':>14} {'misses':>12} {'miss rate':>9} {'pf issued':>10} "
                 f"{'pf useful':>10} {'pf useless':>10}")
    for lv in r["levels"]:
        useless = lv["pf_useless"] + lv.get("pf_resident", 0)
        lines.append(f"{lv['name']:<6} {lv['accesses']:>14,} {lv['misses']:>12,} "
                     f"{miss_rate(lv['misses'], lv['accesses']):>9} {lv['pf_issued']:>10,} "
                     f"{lv['pf_useful']:>10,} {useless:>10,}")
    for t in r["tlb"]:
        lines.append(f"{t['name']:<6} {t['accesses']:>14,} {t['misses']:>12,} {miss_rate(t['misses'], t['accesses']):>9}")
    lines.append(f"references {r['refs']:,} ({r['loads']:,} loads, {r['stores']:,} stores); "
                 f"demand hits on prefetched lines {r['covered']:,}")
    access = r["cycles"] - r.get("fault_cycles", 0)
    t = r.get("timing")
    if t:
        lines.append(f"time estimate {r['estimate']:,} cycles = core timing {t['cycles']:,} ({r['instructions']:,} "
                     f"instructions x {r['instr_cost'] / 100:.2f} + {t['stall_cycles']:,} stalled; "
                     f"{t['load_misses']:,} L1 load misses, {t['dependent']:,} of them dependent) + "
                     f"{r.get('page_faults', 0):,} page faults ({r.get('fault_cycles', 0):,})")
        extra = []
        if cfg.get("pf_adjacent") or cfg.get("pf_streamer"):
            extra.append(f"L2 prefetches {r['l2pf_issued']:,} ({r['l2pf_useful']:,} hit by demand)")
        if cfg.get("dram"):
            extra.append(f"DRAM reads {r['dram_accesses']:,} ({r['dram_row_hits']:,} open-row)")
        if cfg.get("walk_cache"):
            extra.append(f"page walks {r['walks']:,} ({r['walk_pde_misses']:,} PDE-cache misses, "
                         f"{r['walk_cycles']:,} cycles)")
        if extra:
            lines.append("; ".join(extra))
        return "\n".join(lines + format_tail(r))
    lines.append(f"time estimate {r['estimate']:,} cycles = data-access latency {access:,} "
                 f"({r['tlb_cycles']:,} of it TLB, {access / max(1, r['line_accesses']):.2f} per access) "
                 f"x {r['exposed'] / 1000:.3f} exposed + {r.get('page_faults', 0):,} page faults "
                 f"({r.get('fault_cycles', 0):,}) + {r['instructions']:,} instructions x {r['instr_cost'] / 100:.2f}")
    return "\n".join(lines + format_tail(r))


def format_tail(r: dict) -> list[str]:
    """The oracle, per-pool and per-context lines of the report."""
    lines: list[str] = []
    for key in ("oracle", "oracle_hot"):
        o = r.get(key)
        if not o:
            continue
        ms = ", ".join(f"{lv['name']} {lv['misses']:,}" for lv in o["levels"])
        tl = f", DTLB {o['tlb'][0]['misses']:,}" if o["tlb"] else ""
        lines.append(f"oracle ({o['layout']}): misses {ms}{tl}; time estimate {o['estimate']:,} cycles "
                     f"(this layout: {r['estimate'] / max(1, o['estimate']):.3f}x the oracle)")
        if "gain_share" in o:
            b = r["baseline"]
            if o["gain_share"] is None:
                lines.append(f"  the oracle is no better than {b['layout']} alone ({b['estimate']:,} cycles): "
                             "no gain to share")
            else:
                lines.append(f"  this layout obtained {100 * o['gain_share']:.0f}% of the possible gain over "
                             f"{b['layout']} alone ({b['estimate']:,} -> {o['estimate']:,} cycles)")
    pools = [p for p in r.get("pools", []) if p["pool"] >= 0 or p["pool"] == -2]
    if pools:
        names = [lv["name"] for lv in r["levels"]]
        lines.append("per heaplayout pool (pool -1: outside the pool range):")
        lines.append(f"  {'pool':>6} " + " ".join(f"{n + ' miss':>10}" for n in names) + f" {'TLB miss':>10} "
                     f"{'pf useful':>10} {'pf useless':>10}")
        for p in sorted(r["pools"], key=lambda p: -p["misses"][0])[:20]:
            tlb = p["tlb_misses"][0] if p["tlb_misses"] else 0
            lines.append(f"  {p['pool']:>6} " + " ".join(f"{m:>10,}" for m in p["misses"]) + f" {tlb:>10,} "
                         f"{p['pf_useful']:>10,} {p['pf_useless']:>10,}")
    ctxs = [c for c in r.get("contexts", []) if c["context"] >= 0]
    if ctxs:
        names = [lv["name"] for lv in r["levels"]]
        lines.append(f"per allocation context (call site), top {min(10, len(ctxs))} by L1 misses "
                     f"({r.get('contexts_seen', len(ctxs)):,} contexts, {r.get('objects', 0):,} objects):")
        lines.append(f"  {'objects':>10} " + " ".join(f"{n + ' miss':>10}" for n in names) + f" {'TLB miss':>10} "
                     f"{'pf useful':>10} {'pf useless':>10}  call site")
        for c in ctxs[:10]:
            tlb = c["tlb_misses"][0] if c["tlb_misses"] else 0
            lines.append(f"  {c['allocs']:>10,} " + " ".join(f"{m:>10,}" for m in c["misses"]) + f" {tlb:>10,} "
                         f"{c['pf_useful']:>10,} {c['pf_useless']:>10,}  {c['where'][:70]}")
        other = [c for c in r["contexts"] if c["context"] < 0 and sum(c["misses"])]
        for c in other:
            lines.append(f"  {'':>10} " + " ".join(f"{m:>10,}" for m in c["misses"]) + f" {'':>10} {'':>10} "
                         f"{'':>10}  {c['where']}")
    return lines


def label_of(r: dict) -> str:
    lay = r.get("layout") or {}
    if not lay:
        return "?"
    name = lay["allocator"]
    label = name if lay["policy"] == "none" else f"{lay['policy']}+{name}"
    if lay.get("user_preload"):
        label += f" (and the user's LD_PRELOAD={lay['user_preload']})"
    return label


# --------------------------------------------------------------------------- cachegrind

def run_cachegrind(program: Sequence[str], client_env: dict[str, str], valgrind: str = "valgrind") -> dict[str, int]:
    """D1 and LL data misses under cachegrind's validation geometry."""
    with tempfile.TemporaryDirectory(prefix="hlsim-cg.") as tmp:
        out = Path(tmp) / "cg.out"
        env, _ = valgrind_env(client_env, program)
        argv = [valgrind, "-q", *VALGRIND_SCHED_ARGS, "--tool=cachegrind", *CACHEGRIND_ARGS, f"--cachegrind-out-file={out}", *program]
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        events, summary = [], []
        for line in out.read_text().splitlines():
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                summary = [int(x) for x in line.split()[1:]]
        ev = dict(zip(events, summary))
    return {"D1": ev.get("D1mr", 0) + ev.get("D1mw", 0), "LL": ev.get("DLmr", 0) + ev.get("DLmw", 0),
            "refs": ev.get("Dr", 0) + ev.get("Dw", 0)}


def validation_pair(program: Sequence[str], opts: SimOptions | None = None, valgrind: str = "valgrind") -> dict:
    """hlsim and cachegrind misses for one program under the validation geometry."""
    opts = opts or SimOptions()
    sim_opts = SimOptions(policy=opts.policy, allocator=opts.allocator, plan=opts.plan,
                          runtime_options=opts.runtime_options, model=dict(CACHEGRIND_GEOMETRY), contexts=False)
    r = run_simulation(program, sim_opts, valgrind=valgrind, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cg = run_cachegrind(program, sim_opts.client_env(), valgrind=valgrind)
    return {"hlsim_D1": r["levels"][0]["misses"], "hlsim_LL": r["levels"][1]["misses"],
            "cg_D1": cg["D1"], "cg_LL": cg["LL"], "hlsim_refs": r["refs"], "cg_refs": cg["refs"]}


def rel_diff(a: int, b: int) -> float:
    """|a - b| relative to b (0 when both are 0)."""
    if b == 0:
        return 0.0 if a == 0 else float("inf")
    return abs(a - b) / b
