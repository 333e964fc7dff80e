"""Olden under `heaplayout optimize`: build each program from a source tree the user has,
run optimize on it as a user would (profiled on the training input, measured on the
measuring input), and tabulate what it recommended against the best allocator alone.

    python3 -m benchmarks.olden.run --source DIR [--out build/olden] [--budget 420]
                                    [--stage build|optimize|table] [--programs a,b] [--force]

DIR holds one subdirectory per program (the LLVM test suite's
MultiSource/Benchmarks/Olden). The table (the corpus's, benchmarks/real/optimize_stage.py)
goes to OUT/olden.md; each program's evidence to OUT/opt/NAME/optimize.json. docs/olden.md
says what the programs are and how to read the table.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from benchmarks.real.optimize_stage import markdown, summary_row

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "programs.toml"
BASE_CFLAGS = ("-O2", "-g", "-DTORONTO")  # TORONTO: the sequential build of the Olden sources
HL = (sys.executable, "-m", "heaplayout")


@dataclass(frozen=True)
class OldenProgram:
    name: str
    dir: str
    sources: tuple[str, ...]
    train: tuple[str, ...]
    measure: tuple[str, ...]
    cflags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    why: str = ""


def load_manifest(path: Path = MANIFEST) -> list[OldenProgram]:
    doc = tomllib.loads(path.read_text())
    programs = []
    for i, e in enumerate(doc.get("program", [])):
        missing = [k for k in ("name", "dir", "sources", "train", "measure") if k not in e]
        if missing:
            raise ValueError(f"{path}: program {i + 1}: missing {', '.join(missing)}")
        programs.append(OldenProgram(
            name=e["name"], dir=e["dir"], sources=tuple(e["sources"]), train=tuple(e["train"]),
            measure=tuple(e["measure"]), cflags=tuple(e.get("cflags", ())), libs=tuple(e.get("libs", ())),
            why=e.get("why", "")))
    return programs


def build_command(p: OldenProgram, source: Path, out: Path) -> list[str]:
    d = source / p.dir
    return ["gcc", *BASE_CFLAGS, *p.cflags, *(str(d / s) for s in p.sources), *p.libs, "-o", str(out)]


def build(p: OldenProgram, source: Path, bin_dir: Path, force: bool) -> Path:
    exe = bin_dir / p.name
    if exe.exists() and not force:
        return exe
    missing = [s for s in p.sources if not (source / p.dir / s).is_file()]
    if missing:
        raise FileNotFoundError(f"{p.name}: {source / p.dir} lacks {', '.join(missing)} (is --source the "
                                "Olden directory of the LLVM test suite?)")
    bin_dir.mkdir(parents=True, exist_ok=True)
    cmd = build_command(p, source, exe)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{p.name}: build failed:\n$ {shlex.join(cmd)}\n{r.stderr[-2000:]}")
    return exe


def optimize_command(p: OldenProgram, exe: Path, out: Path, budget: float) -> list[str]:
    return [*HL, "optimize", "--train", shlex.join(p.train), "--budget", f"{budget:g}", "-o", str(out),
            "--no-report", "--", str(exe), *p.measure]


def run_optimize(p: OldenProgram, exe: Path, out_dir: Path, budget: float, force: bool) -> dict | None:
    out = out_dir / p.name
    path = out / "optimize.json"
    if path.exists() and not force:
        return json.loads(path.read_text())
    out.mkdir(parents=True, exist_ok=True)
    cmd = optimize_command(p, exe, out, budget)
    log = out_dir / f"{p.name}.log"
    print(f"[olden] {p.name}: heaplayout optimize, budget {budget:g} s (progress in {log})", flush=True)
    t0 = time.monotonic()
    with open(log, "wb") as lf:
        lf.write(("$ " + shlex.join(cmd) + "\n").encode())
        lf.flush()
        rc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT).returncode
    if rc != 0 or not path.exists():
        print(f"[olden] {p.name}: optimize failed (exit {rc}); see {log}", flush=True)
        return None
    doc = json.loads(path.read_text())
    rec = doc.get("recommendation") or {}
    print(f"[olden] {p.name}: recommends {rec.get('label')} in {time.monotonic() - t0:.0f} s", flush=True)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.olden.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, help="the Olden source directory (one subdirectory per program)")
    ap.add_argument("--out", type=Path, default=Path("build/olden"))
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--programs", help="comma-separated names (default: all in the manifest)")
    ap.add_argument("--budget", type=float, default=420.0, help="optimize's --budget per program (default 420)")
    ap.add_argument("--stage", choices=("build", "optimize", "table"), default="table",
                    help="stop after this stage (default: all three)")
    ap.add_argument("--force", action="store_true", help="rebuild and run optimize again")
    a = ap.parse_args(argv)
    programs = load_manifest(a.manifest)
    if a.programs:
        wanted = [n.strip() for n in a.programs.split(",") if n.strip()]
        unknown = sorted(set(wanted) - {p.name for p in programs})
        if unknown:
            ap.error(f"unknown program(s): {', '.join(unknown)}; the manifest has {', '.join(p.name for p in programs)}")
        programs = [p for p in programs if p.name in wanted]
    rows = []
    for p in programs:
        exe = a.out / "bin" / p.name
        if a.source is not None:
            try:
                exe = build(p, a.source, a.out / "bin", a.force)
            except (OSError, RuntimeError) as e:
                print(f"[olden] {e}", file=sys.stderr)
                rows.append({"program": p.name, "ok": False})
                continue
        elif not exe.exists():
            ap.error(f"{exe} is not built: give --source")
        if a.stage == "build":
            continue
        rows.append(summary_row(p.name, run_optimize(p, exe, a.out / "opt", a.budget, a.force)))
    if a.stage == "table":
        table = markdown(rows)
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "olden.md").write_text(table)
        print(table)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
