"""Transparent huge pages on the corpus: each allocator as it ships, each with its own
huge-page setting, and our `callsite` policy on the best of them with `huge_pages=1`, in one
interleaved bench per program (heaplayout's bench engine: paired ratios, output checks).

    python3 -m benchmarks.real.huge_pages --out build/real [--programs a,b] [--runs 7]

Inputs must exist (`python3 -m benchmarks.real.run` writes them under OUT/inputs). Writes
OUT/<program>/huge_pages.json and OUT/huge_pages.md. The table gives, per program, the best
allocator as it ships in these rounds, then each configuration's median paired ratio to it
[q1-q3], and peak RSS against it: the question is whether huge pages, which the allocators
can have without us, are worth what `optimize --huge-pages` spends racing them.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.real import corpus, measure, report  # noqa: E402
from heaplayout import allocators  # noqa: E402

SHIPPED = measure.ALLOCATORS
# the best allocator as shipped per program where OUT/<program>/allocators.json is missing:
# the one optimize found best alone on the measuring input (docs/results.md section 18)
KNOWN_BEST = {"sqlite3": "glibc", "lua5.4": "mimalloc", "python3": "jemalloc", "perl-threads": "mimalloc",
              "gcc-cc1": "jemalloc", "cppcheck": "jemalloc", "graphviz-dot": "tcmalloc", "xsltproc": "jemalloc",
              "z3": "glibc", "clasp": "jemalloc", "glpsol": "mimalloc", "jq": "mimalloc", "gawk": "mimalloc",
              "yosys": "jemalloc", "swipl": "glibc", "tidy": "tcmalloc", "xalan": "jemalloc"}
HUGE = tuple(f"{a}:huge_pages=1" for a in SHIPPED if a in allocators.HUGE_PAGE_SETTINGS)


def configs(best: str | None) -> list[str]:
    """The allocators as they ship, each with its setting, and callsite on `best` both ways."""
    out = [*SHIPPED, *HUGE]
    if best is not None:
        on = "callsite" if best == "glibc" else f"callsite+{best}"
        out += [on, f"{on}:huge_pages=1"]
    return out


def peak_rss(doc: dict, label: str) -> float | None:
    c = next((c for c in doc["configs"] if c["label"] == label), None)
    rss = (c or {}).get("peak_rss_kib")
    return rss.get("median") if isinstance(rss, dict) else rss


def table_row(name: str, doc: dict) -> list[str]:
    """program, best as shipped, each huge-page setting, the allocator `callsite` ran on, then
    `callsite` both ways: median ratio to the best [q1-q3] and peak RSS against the best's."""
    labels = [c["label"] for c in doc["configs"]]
    best = min(SHIPPED, key=lambda a: report.summary(report.paired(doc, a, "glibc"))["median"])
    cells = [name, best]
    for label in labels[len(SHIPPED):]:
        if label.startswith("callsite") and ":" not in label:
            cells.append(label.partition("+")[2] or "glibc")
        s = report.summary(report.paired(doc, label, best))
        rss, base_rss = peak_rss(doc, label), peak_rss(doc, best)
        cells.append(report.fmt(s) + (f" ({rss / base_rss:.2f}x)" if rss and base_rss else ""))
    cells += ["—"] * (2 + len(HUGE) + 3 - len(cells))
    return cells


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/real")
    ap.add_argument("--programs", metavar="A,B")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=1)
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    programs = corpus.select(corpus.load_corpus(), args.programs.split(",") if args.programs else None)
    rows = []
    for p in programs:
        dirs = {which: out / "inputs" / p.name / which for which in corpus.INPUTS}
        if not dirs["measure"].is_dir():
            print(f"[huge] {p.name}: no inputs in {dirs['measure']} (python3 -m benchmarks.real.run writes them)",
                  file=sys.stderr)
            continue
        alloc_doc = report_json(out / p.name / "allocators.json")
        best = measure.best_allocator(alloc_doc) if alloc_doc else KNOWN_BEST.get(p.name)
        doc = measure.run_configs(p, dirs["measure"], configs(best), out / p.name / "tmp-huge", args.runs,
                                  args.warmup, lambda m: print(m, file=sys.stderr))
        measure.write_json(out / p.name / "huge_pages.json", doc)
        rows.append(table_row(p.name, doc))
    command = "python3 -m benchmarks.real.huge_pages " + shlex.join(argv if argv is not None else sys.argv[1:])
    head = ["program", "best as shipped", *(f"`{h}`" for h in HUGE), "`callsite` on", "`callsite`",
            "`callsite`, `huge_pages=1`"]
    lines = [f"Command: `{command}`", "", "Median paired ratio to the best allocator as shipped [q1–q3], "
             "(peak RSS against its)", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    (out / "huge_pages.md").write_text(text)
    print(text)
    return 0


def report_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


if __name__ == "__main__":
    sys.exit(main())
