"""The derived tables of benchmarks/run_plan_suite.py, from hand-made bench JSON."""

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def load_suite_script():
    spec = importlib.util.spec_from_file_location("run_plan_suite", REPO / "benchmarks" / "run_plan_suite.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def bench_doc(values: dict[str, list[float]]) -> dict:
    """A bench JSON with per-round ratios to glibc (glibc itself is 1 in every round)."""
    configs = [{"label": "glibc", "ratio": {"median": 1.0, "values": [1.0] * len(next(iter(values.values())))}}]
    for label, v in values.items():
        s = sorted(v)
        configs.append({"label": label, "ratio": {"median": s[len(s) // 2], "values": v}})
    return {"configs": configs, "runs": len(configs[0]["ratio"]["values"])}


def test_paired_ratios_divide_round_by_round():
    suite = load_suite_script()
    # paired round by round, halo_je is 1.1x jemalloc in two rounds of three; the ratio of
    # the two medians (0.6 / 0.8) would say 0.75
    doc = bench_doc({"jemalloc": [0.5, 0.8, 1.0], "halo_je": [0.55, 0.6, 1.1], "halo": [0.9, 0.95, 1.0]})
    assert [round(r, 6) for r in suite.paired_to(doc, "halo_je", "jemalloc")] == [1.1, 0.75, 1.1]
    assert suite.paired_to(doc, "halo", "glibc") == [0.9, 0.95, 1.0]
    assert suite.paired_to(doc, "halo_rest_mi", "mimalloc") is None
    assert suite.paired_to(None, "halo", "glibc") is None


def test_underneath_table_marks_medians_and_every_round_above_two_percent(capsys):
    suite = load_suite_script()
    slower = bench_doc({"jemalloc": [0.5, 0.8, 1.0], "halo_je": [0.55, 0.88, 1.1], "halo": [0.97, 1.03, 1.05]})
    suite.print_derived([("w", slower, None, True)])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| w |") and "[" in line)
    halo, _rest, je, _mi = [c.strip() for c in row.split("|")[2:6]]
    assert halo == "**1.030 [0.97-1.05]**"  # median above 1.02, but not every round
    assert je == "**1.100 [1.10-1.10]***"  # every round above 1.02
