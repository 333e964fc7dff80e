"""Seed corpora for the fuzzers (fuzz/README.md), written into DIR/plan and DIR/options:

- plan: the conformance cases (tests/data/plan_conformance/), the plans the runtime's tests
  write for their test programs (tests/test_runtime_plan.py and friends: real build-ids,
  paths and return addresses), and plans `heaplayout plan` makes from the hand-built
  profile of tests/test_plan_format.py with each strategy;
- options: environments like those the tests and `heaplayout run --print-env` set.

Usage: python3 fuzz/make_corpus.py DIR   (needs the build: scripts/build.sh)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def test_suite_plans(out: Path) -> int:
    """The plans the runtime's tests write, for the binaries they run."""
    import test_runtime_plan as trp  # noqa: E402 (tests/ is on the path)
    import test_runtime_plan_dlopen as dl  # noqa: E402
    from heaplayout import paths

    d = paths.build_dir() / "tests" / "runtime"
    n = 0
    for variant in ("fp", "nofp"):
        binary = d / f"plan_test_{variant}"
        for name, selects, rest in [("standard", trp.standard_selects(binary), None),
                                    ("chains", trp.chain_selects(binary), None),
                                    ("two_frames", trp.chain_selects(binary, third=False), None),
                                    ("rest", trp.standard_selects(binary), "callsite 128")]:
            trp.write_plan(out / f"suite_{variant}_{name}.plan", binary, selects, rest=rest)
            n += 1
    dl.write_plan(out / "suite_dlopen.plan", d / "dlopen_test", d / "libhl_dlopen_plugin.so")
    return n + 1


def planner_plans(out: Path) -> int:
    """Plans `heaplayout plan` makes from test_plan_format's hand-built profile."""
    import test_plan_format as tpf  # noqa: E402
    from heaplayout.planning import planner
    from heaplayout.plan_format import write_plan

    n = 0
    for strategy in ("halo", "hds", "callsite"):
        result = planner.make_plan(tpf.sample_profile(), strategy)
        write_plan(result.plan, out / f"planner_{strategy}.plan")
        n += 1
    write_plan(tpf.sample_plan(), out / "sample_plan.plan")
    return n + 1


ENVIRONMENTS = [
    "HEAPLAYOUT_POLICY=callsite\nHEAPLAYOUT_MIN_OBJECTS=50\nHEAPLAYOUT_SPARE_CHUNKS=3",
    "HEAPLAYOUT_POLICY=plan\nHEAPLAYOUT_PLAN=/tmp/x.plan\nHEAPLAYOUT_STATS_JSON=/tmp/s-%p.json",
    "HEAPLAYOUT_PLAN=/tmp/x.plan\nHEAPLAYOUT_MIN_ALIGN=8",
    "HEAPLAYOUT_POLICY=callsite\nHEAPLAYOUT_RANGE=1T\nHEAPLAYOUT_CHUNK_SIZE=64M",
    "HEAPLAYOUT_POLICY=callsite\nHEAPLAYOUT_RANGE=64M\nHEAPLAYOUT_CHUNK_SIZE=256K\nHEAPLAYOUT_CC_BLOCK=2048",
    "HEAPLAYOUT_POLICY=off\nHEAPLAYOUT_STATS=1\nHEAPLAYOUT_CHUNK_COLORS=1",
    "HEAPLAYOUT_POLICY=callsite\nHEAPLAYOUT_PROGRAM=/bin/true\nHEAPLAYOUT_MAX_SIZE=32KiB",
    "HEAPLAYOUT_POLICY=callsite\nHEAPLAYOUT_PLAN=/tmp/x.plan\nHEAPLAYOUT_UNKNOWN=1",
    "HEAPLAYOUT_POLICY=plan",
    # dpa is a placing policy too (docs/dpa.md); the harness once promised only the first three
    "HEAPLAYOUT_POLICY=dpa\nHEAPLAYOUT_STATS=1",
]


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    plans, options = out / "plan", out / "options"
    plans.mkdir(parents=True, exist_ok=True)
    options.mkdir(parents=True, exist_ok=True)
    cases = sorted((ROOT / "tests" / "data" / "plan_conformance").glob("*.plan"))
    for case in cases:
        (plans / f"case_{case.name}").write_bytes(case.read_bytes())
    n = len(cases) + test_suite_plans(plans) + planner_plans(plans)
    for i, env in enumerate(ENVIRONMENTS):
        (options / f"env_{i}").write_text(env)
    print(f"{n} plans in {plans}, {len(ENVIRONMENTS)} environments in {options}")


if __name__ == "__main__":
    main()
