"""How much time could any heap layout save on each corpus program? The simulator's answer.

    python3 -m benchmarks.real.headroom --out build/real                      # training inputs
    python3 -m benchmarks.real.headroom --out build/real --input measure --programs lua5.4,jq
    python3 -m benchmarks.real.headroom --out build/real --input measure --LL 33554432,16,64 --plan halo

Each program runs once under `heaplayout simulate --hw yes --contexts` on the
allocator optimize found best for it (OUT/<program>/optimize/optimize.json; glibc when there
is none, or `--allocator`). From that one run:

- `stall`: the share of the time estimate the core spends waiting on data (the model's
  memory-level-parallel stall cycles), and `faults` the share spent on first-touch page faults;
- `heap L1` / `heap LL`: the share of the L1 and LL misses that fall on heap objects (the
  rest -- stack, globals, the allocator's own metadata, mapped files -- no heap layout moves);
- `heap stall`: stall x heap share of L1 misses, the model's estimate of the time a perfect
  heap layout could save at most; a program under 10% here cannot be made 10% faster by
  placement alone (as far as the model sees: it underrates pointer-chasing stalls by up to
  2x, docs/results.md "Simulator fidelity");
- `top site`: the share of the heap's L1 misses on the one call site (return address of the
  malloc call) with the most. Pools per site or per group place sites apart or together;
  they cannot reorder one site's objects among themselves, so a program whose misses sit
  on one site (often a wrapper all objects come through) gains from placement only what
  splitting that site by deeper contexts (HALO's chains) or ordering its objects (PreFix)
  can give.

The simulator's dense first-touch oracle is left out: it never reuses a freed address, so on
programs that free and reallocate it touches up to 5x the pages and comes out slower than the
allocator's layout (sqlite3's training input: 2,018 page faults against 428).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import subprocess
import sys
from pathlib import Path

from . import corpus

HL = [sys.executable, "-m", "heaplayout.cli"]


def best_allocator(out: Path, name: str) -> str:
    path = out / name / "optimize" / "optimize.json"
    try:
        return json.loads(path.read_text())["decision"]["best_allocator"] or "glibc"
    except (OSError, KeyError, ValueError):
        return "glibc"


def simulate(program: corpus.Program, input_dir: Path, allocator: str, dest: Path,
             extra: list[str] | None = None) -> dict:
    """One simulated run with per-context attribution; the JSON result (raises on failure)."""
    cmd = [*HL, "simulate", "--hw", "yes", "--contexts", "--allocator", allocator, *(extra or []),
           "--json", str(dest)]
    stdin = program.stdin_path(input_dir)
    if stdin is not None:
        cmd += ["--stdin", str(stdin)]
    cmd += ["--", *program.argv(input_dir)]
    env = None
    if program.env:
        import os
        env = {**os.environ, **program.env}
    done = subprocess.run(cmd, cwd=input_dir, env=env, capture_output=True, text=True)
    # the program's own exit status passes through (clasp exits 20 on UNSAT): the JSON says
    # whether the simulation itself worked
    if not dest.exists() or not json.loads(dest.read_text()).get("instructions"):
        raise RuntimeError(f"{program.name}: simulate failed ({done.returncode}): {done.stderr[-600:]}")
    return json.loads(dest.read_text())


def miss_split(result: dict) -> tuple[list[int], list[int]]:
    """(heap misses per level, other misses per level) from the per-context table."""
    heap = [0, 0, 0]
    other = [0, 0, 0]
    for ctx in result.get("contexts", []):
        into = heap if ctx["context"] >= 0 else other
        for i, m in enumerate(ctx["misses"][:3]):
            into[i] += m
    return heap, other


def top_site_share(result: dict) -> float:
    """The share of the heap's L1 misses on the one call site with the most: a pool per site
    or per group cannot reorder one site's objects among themselves."""
    sites = [c["misses"][0] for c in result.get("contexts", []) if c["context"] >= 0]
    return max(sites) / sum(sites) if sites and sum(sites) else 0.0


def headroom(result: dict) -> dict:
    est = max(1, result["estimate"])
    stall = result["timing"]["stall_cycles"]
    heap, other = miss_split(result)
    share = [h / max(1, h + o) for h, o in zip(heap, other)]
    instr = max(1, result["instructions"])
    levels = result["levels"]
    return {
        "instructions": result["instructions"],
        "estimate": result["estimate"],
        "stall_share": stall / est,
        "fault_share": result["fault_cycles"] / est,
        "heap_l1_share": share[0],
        "heap_ll_share": share[2],
        "heap_stall_share": stall / est * share[0],
        "l1_mpki": 1000 * levels[0]["misses"] / instr,
        "ll_mpki": 1000 * levels[-1]["misses"] / instr,
        "top_site_share": top_site_share(result),
    }


def table(rows: list[dict]) -> str:
    head = ("| program | input | allocator | instructions | stall | faults | heap L1 | heap LL | "
            "heap stall | L1 MPKI | LL MPKI | top site |")
    lines = [head, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['program']} | {r['input']} | {r['allocator']} | {r['error']} |" + " |" * 8)
            continue
        h = r["headroom"]
        lines.append(
            f"| {r['program']} | {r['input']} | {r['allocator']} | {h['instructions'] / 1e6:,.0f}M | "
            f"{h['stall_share']:.1%} | {h['fault_share']:.1%} | {h['heap_l1_share']:.0%} | "
            f"{h['heap_ll_share']:.0%} | {h['heap_stall_share']:.1%} | {h['l1_mpki']:.1f} | "
            f"{h['ll_mpki']:.2f} | {h['top_site_share']:.0%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=lambda s: Path(s).resolve(), default=Path("build/real").resolve(), help="the corpus run's directory")
    ap.add_argument("--programs", help="comma-separated names (default: all)")
    ap.add_argument("--input", choices=corpus.INPUTS, default="train")
    ap.add_argument("--allocator", help="one allocator for all (default: optimize's best alone, else glibc)")
    ap.add_argument("--LL", metavar="S,W,L", help="the simulated last-level cache (default: the simulator's)")
    ap.add_argument("--plan", metavar="STRATEGY",
                    help="simulate optimize's plan of this strategy (OUT/<program>/optimize/<exe>.STRATEGY.plan) "
                         "on the same allocator instead of the allocator alone")
    ap.add_argument("--jobs", type=int, default=1, help="simulations at once (each also uses a helper core)")
    ap.add_argument("--force", action="store_true", help="simulate again where OUT/headroom/ has the run's JSON")
    args = ap.parse_args(argv)

    programs = corpus.select(corpus.load_corpus(), args.programs.split(",") if args.programs else None)
    dest_dir = args.out / "headroom"
    dest_dir.mkdir(parents=True, exist_ok=True)
    tag = args.input + (f".LL{args.LL.split(',')[0]}" if args.LL else "") + (f".{args.plan}" if args.plan else "")

    def one(program: corpus.Program) -> dict:
        alloc = args.allocator or best_allocator(args.out, program.name)
        input_dir = corpus.write_input(program, args.input, args.out / "inputs")
        row = {"program": program.name, "input": args.input, "allocator": alloc}
        extra = ["--LL", args.LL] if args.LL else []
        if args.plan:
            # optimize names its plans after the executable (perl.halo.plan for perl-threads)
            plans = sorted((args.out / program.name / "optimize").glob(f"*.{args.plan}.plan"))
            if len(plans) != 1:
                row["error"] = f"no single {args.plan} plan in {args.out / program.name / 'optimize'}"
                return row
            plan = plans[0]
            extra += ["--plan", str(plan)]
            row["allocator"] = f"{args.plan}+{alloc}"
        dest = dest_dir / f"{program.name}.{tag}.json"
        try:
            if not args.force and dest.exists() and json.loads(dest.read_text()).get("instructions"):
                result = json.loads(dest.read_text())  # an earlier run's (same program, input, options)
            else:
                result = simulate(program, input_dir, alloc, dest, extra)
            row["headroom"] = headroom(result)
        except RuntimeError as e:
            row["error"] = str(e).splitlines()[0][:120]
        print(f"headroom: {program.name} done", file=sys.stderr, flush=True)
        return row

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(one, programs))
    (dest_dir / f"headroom.{tag}.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
