"""Tables of the corpus run: per program, allocators, callsite and plans as paired ratios.

Every ratio is taken round by round inside one interleaved bench (t(config) / t(other) of
the same round, both divided by the same round's glibc time), then summarized as median
[q1-q3] over the rounds; a ratio whose q1-q3 straddles 1 is not resolved.
"""

from __future__ import annotations

import statistics
from typing import Sequence

from .measure import ALLOCATORS, PLAN_STRATEGIES, plan_label


def paired(doc: dict | None, label: str, base: str) -> list[float] | None:
    """Per round t(label) / t(base), from bench's per-round ratios to its glibc baseline."""
    if doc is None:
        return None
    values = {c["label"]: c["ratio"]["values"] for c in doc["configs"]}
    mine, theirs = values.get(label), values.get(base)
    if not mine or not theirs or len(mine) != len(theirs):
        return None
    return [a / b for a, b in zip(mine, theirs)]


def summary(values: Sequence[float] | None) -> dict | None:
    if not values:
        return None
    vals = sorted(values)
    q1, _, q3 = statistics.quantiles(vals, n=4, method="inclusive") if len(vals) > 1 else (vals[0],) * 3
    return {"median": statistics.median(vals), "q1": q1, "q3": q3, "min": vals[0], "max": vals[-1], "n": len(vals)}


def fmt(s: dict | None, bold_above: float | None = None) -> str:
    if s is None:
        return "—"
    text = f"{s['median']:.3f} [{s['q1']:.2f}–{s['q3']:.2f}]"
    if bold_above is not None and s["q1"] > bold_above:
        text = f"**{text}**"  # slower in at least three rounds of four
    return text


def plan_statistics(doc: dict | None, label: str) -> dict | None:
    """From the runtime's statistics of a plan configuration's last warm-up run: how many
    allocations it saw, how many its groups placed, and its full and replayed stack walks."""
    if doc is None:
        return None
    stats = next((c.get("runtime_stats") for c in doc["configs"] if c["label"] == label), None)
    if not isinstance(stats, dict) or "pools" not in stats:
        return None
    pools = stats["pools"]
    grouped = sum(int(p["objects"]) for p in pools if p.get("kind") == "group")
    total = sum(int(p["objects"]) for p in pools) + int(stats.get("forwarded", {}).get("objects", 0))
    return {"allocations": total, "grouped": grouped, "walks": stats.get("plan_walks"),
            "replays": stats.get("plan_replays")}


def output_verdict(*docs: dict | None) -> str:
    bad = sorted({c["label"] for d in docs if d for c in d["configs"] if not c["output_ok"]})
    return "same" if not bad else "MISMATCH: " + ", ".join(bad)


def program_summary(name: str, check: list[dict], alloc_doc: dict | None, plan_doc: dict | None,
                    best: str | None, failures: list[str]) -> dict:
    """The JSON summary of one program (what the markdown tables show)."""
    measure = next((c for c in check if c["input"] == "measure"), None)
    rebuilt = [what for what, d in (("allocators", alloc_doc), ("plans", plan_doc))
               if d and "build" in d and d["build"]["start"]["runtime_sha256"] != d["build"]["end"]["runtime_sha256"]]
    failures = failures + [f"the runtime library was rebuilt during the {what} bench (two builds mixed)"
                           for what in rebuilt]
    row: dict = {"program": name, "best_allocator": best, "failures": failures,
                 "check_ok": all(c["ok"] for c in check) if check else None,
                 "allocations_measure": measure["allocations"] if measure else None,
                 "native_measure_s": min((r["seconds"] for r in measure["runs"] if r["what"].startswith("native")),
                                         default=None) if measure else None}
    if alloc_doc:
        glibc = next(c for c in alloc_doc["configs"] if c["label"] == "glibc")
        row["glibc_median_s"] = glibc["wall_s"]["median"]
        row["alone"] = {a: summary(paired(alloc_doc, a, "glibc")) for a in ALLOCATORS}
        row["callsite_vs_underneath"] = {
            a: summary(paired(alloc_doc, "callsite" if a == "glibc" else f"callsite+{a}", a)) for a in ALLOCATORS}
        if best:
            row["callsite_vs_best"] = {
                a: summary(paired(alloc_doc, "callsite" if a == "glibc" else f"callsite+{a}", best)) for a in ALLOCATORS}
        row["allocators_output"] = output_verdict(alloc_doc)
    if plan_doc and best:
        row["plans_vs_underneath"], row["plans_vs_best"] = {}, {}
        for alloc in dict.fromkeys(["glibc", best]):
            for strategy in PLAN_STRATEGIES:
                label = plan_label(strategy, alloc)
                row["plans_vs_underneath"][label] = summary(paired(plan_doc, label, alloc))
                row["plans_vs_best"][label] = summary(paired(plan_doc, label, best))
        row["plan_statistics"] = {plan_label(s, "glibc"): plan_statistics(plan_doc, plan_label(s, "glibc"))
                                  for s in PLAN_STRATEGIES}
        row["plans_output"] = output_verdict(plan_doc)
    return row


def _count(n: int | None) -> str:
    if n is None:
        return "—"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.1f}{unit}"
    return str(n)


def markdown(rows: list[dict], command: str, note: str) -> str:
    out = [f"Command: `{command}`", "", note, "",
           "Allocators alone and `callsite` on each (measuring input; paired ratios, median [q1–q3] over the rounds; "
           "**bold**: q1 above 1.02, slower in three rounds of four):", "",
           "| program | allocations | glibc | jemalloc / glibc | mimalloc / glibc | tcmalloc / glibc | best alone | "
           "callsite / glibc | cs+jemalloc / jemalloc | cs+mimalloc / mimalloc | cs+tcmalloc / tcmalloc | "
           "best callsite / best alone | output |",
           "|---|---:|---:|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "alone" not in r:
            out.append(f"| {r['program']} | {_count(r['allocations_measure'])} | not measured |" + " |" * 10)
            continue
        cs_best = min((s for s in r.get("callsite_vs_best", {}).values() if s), key=lambda s: s["median"], default=None)
        out.append(
            f"| {r['program']} | {_count(r['allocations_measure'])} | {r['glibc_median_s']:.2f}s | "
            + " | ".join(fmt(r["alone"][a]) for a in ALLOCATORS[1:])
            + f" | {r['best_allocator']} | "
            + " | ".join(fmt(r["callsite_vs_underneath"][a], 1.02) for a in ALLOCATORS)
            + f" | {fmt(cs_best, 1.02)} | {r['allocators_output']} |")
    planned = [r for r in rows if "plans_vs_underneath" in r]
    if planned:
        out += ["", "HALO plans (profiled on the training input, measured on the measuring input), on glibc and on "
                "the best allocator alone; paired ratios to the allocator underneath and to the best allocator "
                "alone, measured in the same rounds:", "",
                "| program | best alone | " + " | ".join(f"{s}.glibc / glibc" for s in PLAN_STRATEGIES)
                + " | " + " | ".join(f"{s}.best / best" for s in PLAN_STRATEGIES)
                + " | best plan / best alone | output |",
                "|---|---|" + "---|" * (2 * len(PLAN_STRATEGIES) + 2)]
        for r in planned:
            best = r["best_allocator"]
            under = r["plans_vs_underneath"]
            on_glibc = [fmt(under.get(plan_label(s, "glibc")), 1.02) for s in PLAN_STRATEGIES]
            on_best = [fmt(under.get(plan_label(s, best)), 1.02) if best != "glibc" else "(= glibc)"
                       for s in PLAN_STRATEGIES]
            vs_best = [(s, lab) for lab, s in r["plans_vs_best"].items() if s]
            top = min(vs_best, key=lambda x: x[0]["median"], default=None)
            top_text = f"{fmt(top[0], 1.02)} ({top[1]})" if top else "—"
            out.append(f"| {r['program']} | {best} | " + " | ".join(on_glibc + on_best)
                       + f" | {top_text} | {r['plans_output']} |")
    stats_rows = [(r["program"], r["plan_statistics"].get(plan_label("halo", "glibc"))) for r in planned]
    stats_rows = [(n, st) for n, st in stats_rows if st and st["allocations"]]
    if stats_rows:
        out += ["", "The halo plan on glibc at run time (runtime statistics of the last warm-up run on the measuring "
                "input): allocations seen, the share its groups placed, and stack walks per allocation (full walks "
                "and replayed ones):", "",
                "| program | allocations | placed in groups | full walks / allocation | replays / allocation |",
                "|---|---:|---:|---:|---:|"]
        for name, st in stats_rows:
            n = st["allocations"]
            out.append(f"| {name} | {_count(n)} | {100 * st['grouped'] / n:.1f}% | "
                       f"{(st['walks'] or 0) / n:.3f} | {(st['replays'] or 0) / n:.3f} |")
    failed = [(r["program"], f) for r in rows for f in r["failures"]]
    if failed:
        out += ["", "Failures:", ""] + [f"- {p}: {f}" for p, f in failed]
    return "\n".join(out) + "\n"


def check_markdown(checks: list[dict]) -> str:
    out = ["| program | input | native s | callsite s | allocations | pooled | bytes requested | output and exit |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    for c in checks:
        native = min((r["seconds"] for r in c["runs"] if r["what"].startswith("native")), default=None)
        cs = next((r["seconds"] for r in c["runs"] if r["what"] == "callsite"), None)
        verdict = "same" if c["ok"] else "; ".join(c["problems"]).replace("|", "\\|")
        out.append(f"| {c['program']} | {c['input']} | {native:.3f} | " if native is not None else f"| {c['program']} | {c['input']} | — | ")
        out[-1] += (f"{cs:.3f} | " if cs is not None else "— | ") + \
            f"{_count(c['allocations'])} | {_count(c['pooled'])} | {_count(c['bytes_requested'])} | {verdict} |"
    return "\n".join(out) + "\n"
