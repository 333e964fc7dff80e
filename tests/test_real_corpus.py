"""The real-program corpus (benchmarks/real/): a well-formed manifest, deterministic input
generators, normalization that forgives only its patterns, bench's stdout digest hook, and
for three cheap programs that scripts/setup.sh installs (sqlite3, lua5.4, jq) the training
input's output under the runtime's callsite policy equal to the native output.
The corpus itself is a benchmark (python3 -m benchmarks.real.run), not a test."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.real import check, corpus, measure, outputs, report  # noqa: E402
from heaplayout import bench  # noqa: E402

CHEAP = ["sqlite3", "lua5.4", "jq"]  # installed by scripts/setup.sh


@pytest.fixture(scope="module")
def programs() -> list[corpus.Program]:
    return corpus.load_corpus()


def by_name(programs: list[corpus.Program], name: str) -> corpus.Program:
    return next(p for p in programs if p.name == name)


# ------------------------------------------------------------------ manifest


def test_manifest_has_the_mix_the_corpus_promises(programs):
    assert len(programs) >= 12
    assert sum(p.language == "C++" for p in programs) >= 2
    assert any(p.threads >= 2 for p in programs)
    assert len({p.kind for p in programs}) >= 6
    for p in programs:
        assert p.train != p.measure, f"{p.name}: the measuring input must not be the training input"
        assert p.train.params.keys() == p.measure.params.keys(), p.name


def test_install_script_covers_every_package(programs):
    text = (REPO / "benchmarks/real/install.sh").read_text()
    assert "corpus.toml" in text  # the script installs what the manifest names, nothing hard-coded
    proc = subprocess.run(["bash", "-n", str(REPO / "benchmarks/real/install.sh")], capture_output=True)
    assert proc.returncode == 0, proc.stderr


GOOD_ENTRY = """
[[program]]
name = "demo"
kind = "json"
language = "C"
packages = ["jq"]
exe = "/usr/bin/jq"
why = "test"
generator = "json_doc"
args = ["-f", "{dir}/report.jq", "{dir}/events.json"]
[program.train]
seed = 1
params = { users = 3, paths = 3, events = 10, meta = 2 }
[program.measure]
seed = 2
params = { users = 4, paths = 4, events = 20, meta = 2 }
"""


def test_a_good_entry_parses():
    (p,) = corpus.parse_corpus(GOOD_ENTRY)
    assert p.argv(Path("/in")) == ["/usr/bin/jq", "-f", "/in/report.jq", "/in/events.json"]
    assert p.stdin is None and p.threads == 1


@pytest.mark.parametrize("change, message", [
    (("kind = \"json\"", "kind = \"toaster\""), "kind"),
    (("exe = \"/usr/bin/jq\"", "exe = \"jq\""), "absolute"),
    (("generator = \"json_doc\"", "generator = \"nope\""), "no input generator"),
    (("why = \"test\"", "why = \"test\"\ncolour = \"red\""), "unknown key"),
    (("why = \"test\"", "why = \"test\"\nnormalize = ['(unclosed']"), "does not compile"),
    (("why = \"test\"\n", ""), "missing key"),
    (("seed = 1", "seed = \"one\""), "seed"),
    (("args = [\"-f\", \"{dir}/report.jq\", \"{dir}/events.json\"]", "args = [\"-n\"]"), "input"),
])
def test_malformed_entries_are_rejected(change, message):
    text = GOOD_ENTRY.replace(*change)
    assert text != GOOD_ENTRY
    with pytest.raises(corpus.ManifestError, match=message):
        corpus.parse_corpus(text)


def test_duplicate_names_are_rejected():
    with pytest.raises(corpus.ManifestError, match="duplicate"):
        corpus.parse_corpus(GOOD_ENTRY + GOOD_ENTRY)


# ------------------------------------------------------------------ generators

_DIGEST_SCRIPT = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from benchmarks.real import corpus
for p in corpus.load_corpus():
    h = hashlib.sha256()
    for name, data in sorted(corpus.generate_input(p, "train").items()):
        h.update(name.encode() + b"\\0" + data)
    print(p.name, h.hexdigest())
"""


def test_generators_give_the_same_bytes_in_any_process(programs):
    """Same seed -> same bytes, also across interpreters with different hash seeds (a
    generator that iterated over a set or dict of strings would differ here)."""
    digests = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run([sys.executable, "-c", _DIGEST_SCRIPT, str(REPO)], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        digests.append(proc.stdout)
    assert digests[0] == digests[1]
    assert len(digests[0].splitlines()) == len(programs)
    here = {}
    for p in programs:
        h = hashlib.sha256()
        for name, data in sorted(corpus.generate_input(p, "train").items()):
            h.update(name.encode() + b"\0" + data)
        here[p.name] = h.hexdigest()
    assert digests[0] == "".join(f"{n} {d}\n" for n, d in here.items())


def test_seed_and_params_change_the_input(programs):
    p = by_name(programs, "lua5.4")
    train = corpus.generate_input(p, "train")
    other_seed = corpus.Program(**{**p.__dict__, "train": corpus.Input(p.train.seed + 1, p.train.params)})
    assert corpus.generate_input(other_seed, "train") != train
    assert corpus.generate_input(p, "measure") != train


def test_write_input_writes_the_generated_files(programs, tmp_path):
    p = by_name(programs, "sqlite3")
    d = corpus.write_input(p, "train", tmp_path)
    assert d == tmp_path / "sqlite3" / "train"
    assert p.stdin_path(d).read_bytes() == corpus.generate_input(p, "train")["script.sql"]


# ------------------------------------------------------------------ output normalization


def test_normalizer_forgives_only_its_patterns(programs):
    norm = outputs.normalizer(by_name(programs, "glpsol").normalize)
    a = b"INTEGER OPTIMAL SOLUTION FOUND\nTime used:   0.3 secs\nMemory used: 1.2 Mb (1265432 bytes)\nobjective 12\n"
    b = b"INTEGER OPTIMAL SOLUTION FOUND\nTime used:   1.7 secs\nMemory used: 1.3 Mb (1365432 bytes)\nobjective 12\n"
    c = b.replace(b"objective 12", b"objective 13")
    assert norm(a) == norm(b)
    assert norm(a) != norm(c)
    assert outputs.first_difference(norm(a), norm(c)) == "line 4: expected b'objective 12', got b'objective 13'"


def test_bench_digest_hook_decides_what_must_match(tmp_path):
    """bench compares the digest of stdout: exact bytes by default, normalized with the hook."""
    prog = bench.resolve_program(["/bin/sh", "-c", "echo pid $$"])  # differs in every run
    configs = bench.parse_configs(["glibc", "again=glibc"])
    exact = bench.run_bench(prog, configs, tmp_path / "a", runs=2, warmup=0)
    assert not exact.ok and exact.baseline_unstable
    forgiving = bench.run_bench(prog, configs, tmp_path / "b", runs=2, warmup=0,
                                digest=outputs.file_digest([r"[0-9]+"]))
    assert forgiving.ok


# ------------------------------------------------------------------ cheap programs under the runtime


@pytest.mark.parametrize("name", CHEAP)
def test_training_output_under_callsite_equals_native(runtime_lib, programs, tmp_path, name):
    p = by_name(programs, name)
    if not Path(p.exe).exists():
        pytest.skip(f"{p.exe} is not installed (scripts/setup.sh installs it)")
    d = corpus.write_input(p, "train", tmp_path)
    result = check.check_input(p, "train", d, lambda _m: None)
    assert result.ok, result.problems
    assert [r.what for r in result.runs] == ["native 1", "native 2", "callsite"]
    assert all(r.exit_code == 0 and r.stdout_bytes > 0 for r in result.runs)
    # the runtime was loaded into the program itself and placed its objects
    assert result.allocations and result.allocations > 10_000
    assert result.pooled and result.pooled > 1_000


def test_bench_feeds_stdin_to_the_program_under_the_runtime(runtime_lib, programs, tmp_path):
    """sqlite3 reads its script on stdin; bench must feed it to every run, and the runtime
    must optimize sqlite3 itself (not the shell that feeds it)."""
    p = by_name(programs, "sqlite3")
    if not Path(p.exe).exists():
        pytest.skip("sqlite3 is not installed")
    d = corpus.write_input(p, "train", tmp_path / "in")
    doc = measure.run_configs(p, d, ["glibc", "callsite"], tmp_path / "work", runs=1, warmup=1, say=lambda _m: None)
    assert doc["ok"], doc["mismatch_messages"]
    stats = next(c for c in doc["configs"] if c["label"] == "callsite")["runtime_stats"]
    assert stats and sum(pool["objects"] for pool in stats["pools"]) > 1_000, json.dumps(stats)[:500]


# ------------------------------------------------------------------ report


def _bench_doc(ratios: dict[str, list[float]]) -> dict:
    return {"configs": [{"label": k, "ratio": {"values": v}, "output_ok": True} for k, v in ratios.items()]}


def test_ratios_are_paired_round_by_round():
    """t(a)/t(b) per round from the per-round ratios to glibc: a slow round for both cancels."""
    doc = _bench_doc({"glibc": [1, 1, 1], "jemalloc": [0.5, 1.0, 0.8], "callsite+jemalloc": [0.45, 1.1, 0.4]})
    assert report.paired(doc, "callsite+jemalloc", "jemalloc") == pytest.approx([0.9, 1.1, 0.5])
    s = report.summary(report.paired(doc, "callsite+jemalloc", "jemalloc"))
    assert s["median"] == pytest.approx(0.9) and s["min"] == pytest.approx(0.5) and s["n"] == 3
    assert report.paired(doc, "callsite+jemalloc", "mimalloc") is None
    assert measure.best_allocator({"configs": [{"label": "glibc", "ratio": {"median": 1.0}},
                                               {"label": "jemalloc", "ratio": {"median": 0.7}},
                                               {"label": "callsite", "ratio": {"median": 0.5}}]}) == "jemalloc"


def test_plan_configurations_pair_each_plan_with_its_allocator(tmp_path):
    plans = {"halo": tmp_path / "h.plan", "halo_rest": tmp_path / "r.plan"}
    texts = measure.plan_configs("mimalloc", plans)
    assert texts[:2] == ["glibc", "mimalloc"]
    configs = bench.parse_configs(texts)
    by_label = {c.label: c for c in configs}
    assert by_label["halo.glibc"].allocator == "glibc" and by_label["halo_rest.mimalloc"].allocator == "mimalloc"
    assert dict(by_label["halo_rest.mimalloc"].options)["plan"] == str(plans["halo_rest"])
    assert measure.plan_configs("glibc", plans) == ["glibc", f"halo.glibc=plan={plans['halo']}",
                                                   f"halo_rest.glibc=plan={plans['halo_rest']}"]


def test_optimize_stage_passes_the_programs_input_and_normalization(programs, tmp_path):
    """The optimize stage runs optimize as a user would: training arguments and stdin,
    measuring arguments and stdin, and the program's normalization as --ignore."""
    from benchmarks.real import optimize_stage

    p = by_name(programs, "glpsol")
    dirs = {"train": tmp_path / "t", "measure": tmp_path / "m"}
    cmd = optimize_stage.optimize_command(p, dirs, tmp_path / "o", 300)
    assert cmd[cmd.index("--budget") + 1] == "300"
    assert [cmd[i + 1] for i, w in enumerate(cmd) if w == "--ignore"] == list(p.normalize)
    assert str(tmp_path / "t") in cmd[cmd.index("--train") + 1]
    assert cmd[cmd.index("--") + 1:] == p.argv(dirs["measure"])
    sq = by_name(programs, "sqlite3")
    cmd = optimize_stage.optimize_command(sq, dirs, tmp_path / "o", 300)
    assert cmd[cmd.index("--stdin") + 1] == str(sq.stdin_path(dirs["measure"]))
    assert cmd[cmd.index("--train-stdin") + 1] == str(sq.stdin_path(dirs["train"]))


def _optimize_doc(rec_kind: str, ratio: float | None) -> dict:
    cands = [{"label": a, "allocator": a, "strategy": "alone", "eliminated": None,
              "race": {"ratio_to_best_allocator": {"median": 1.0, "q1": 1.0, "q3": 1.0, "n": 3}},
              "confirmation": {"ratio_to_best_allocator": None}} for a in ("glibc", "jemalloc")]
    cands.append({"label": "halo+jemalloc", "allocator": "jemalloc", "strategy": "halo", "eliminated": None,
                  "race": {"ratio_to_best_allocator": {"median": 0.9, "q1": 0.88, "q3": 0.92, "n": 3}},
                  "confirmation": {"ratio_to_best_allocator": {"median": 0.85, "q1": 0.84, "q3": 0.86, "n": 9}}})
    spread = None if ratio is None else {"median": ratio, "q1": ratio - 0.01, "q3": ratio + 0.01, "n": 9}
    return {"candidates": cands, "elapsed_s": 100, "runs": 40,
            "decision": {"best_allocator": "jemalloc", "finalist": "halo+jemalloc", "confirmation_ratios": [0.85] * 9},
            "recommendation": {"label": {"strategy": "halo+jemalloc", "allocator on huge pages": "jemalloc+thp"}.get(
                                   rec_kind, "jemalloc"), "kind": rec_kind, "peak_rss_ratio": 1.25,
                               "resolved": rec_kind != "allocator alone", "ratio_to_best_allocator": spread}}


def test_optimize_table_counts_only_recommended_strategies_as_gains():
    """The geometric mean takes a recommended strategy's confirmed median and 1 for an
    allocator alone, whatever the finalist's ratio was."""
    from benchmarks.real import optimize_stage

    rows = [optimize_stage.summary_row("a", _optimize_doc("strategy", 0.85)),
            optimize_stage.summary_row("b", _optimize_doc("allocator alone", None)),
            optimize_stage.summary_row("c", None),
            optimize_stage.summary_row("d", _optimize_doc("allocator on huge pages", 0.95))]
    text = optimize_stage.markdown(rows)
    assert rows[0]["strategies_on_best"]["halo"].startswith("0.850 [0.84–0.86]")
    assert "geometric mean 0.931 over 3 programs" in text  # (0.85 * 0.95 * 1) ** (1/3)
    assert ("something other than an allocator as it ships recommended on 2 (of which the allocator's own "
            "huge-page setting on 1), at least 10% faster on 1") in text
    assert "| c | optimize failed |" in text
    assert "| jemalloc+thp | 0.950 [0.94–0.96] | 1.25 |" in text and "| jemalloc | 1 (the allocator alone) | — |" in text


def test_coverage_row_compares_the_placed_shares():
    from benchmarks.real import coverage
    from heaplayout.planning.placement import Placement

    train = Placement(allocations=1000, bytes=10, grouped=800, grouped_bytes=8, site_pooled=0, walks=10, replays=0)
    measure = Placement(allocations=4000, bytes=40, grouped=2000, grouped_bytes=20, site_pooled=0, walks=400,
                        replays=40)
    r = coverage.row("p", "halo", train, measure)
    assert abs(r["kept"] - 0.625) < 1e-9  # 50% placed against 80%
    assert r["measure"]["walk_share"] == 0.1 and r["measure"]["replay_share"] == 0.01
    assert coverage.row("p", "halo", None, measure)["kept"] is None
    text = coverage.markdown([r], "cmd")
    assert "| p | halo | 80.0% | 50.0% | 62% | 10.0% | 1.0% |" in text


def test_prefix_check_table_shows_every_input_and_a_changed_output():
    from benchmarks.real import prefix_check

    same = {"ok": True, "problem": "", "region_bytes": 2 * 1048576, "slots": 10, "taken": 7, "refused_site": 1,
            "refused_size": 2, "refused_busy": 0, "refused_thread": 3, "counters_cut": 0, "walks": 1234}
    differs = {**same, "ok": False, "problem": "stdout differs: line 1"}
    rows = [{"program": "p", "plan": "prefix:hot", "planning_s": 1.25, "plan_problem": "", "train": same,
             "measure": differs},
            {"program": "q", "plan": "prefix:hds", "planning_s": 3.0, "plan_problem": "no hot objects"}]
    text = prefix_check.markdown(rows, "cmd")
    assert "| p | prefix:hot | 1.2 | 2.0 MiB | 10 | train | same | 7 | 1 / 2 / 0 / 3 | 0 | 1,234 |" in text
    assert "| measure | **stdout differs: line 1** |" in text
    assert "| q | prefix:hds | 3.0 | — | — | — | plan failed: no hot objects |" in text
