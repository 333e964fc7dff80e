"""`heaplayout bench`: configuration grammar, statistics, cachegrind parsing, output checks,
the launcher's RSS and timing, JSON keys, and a real cachegrind run (a few seconds)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heaplayout import allocators, bench, cli
from heaplayout.bench import ConfigError

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "bench"
ECHO = shutil.which("echo") or "/bin/echo"


def cli_run(*argv: str, env_extra: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in a child process, as a user would run it."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "heaplayout.cli", "bench", *argv], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def write_script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


# ------------------------------------------------------------------ configuration grammar


def test_parse_plain_allocators_and_policies():
    c = bench.parse_config("glibc")
    assert (c.label, c.allocator, c.policy, c.options) == ("glibc", "glibc", None, ())
    c = bench.parse_config("tcmalloc")
    assert (c.allocator, c.policy, c.uses_runtime) == ("tcmalloc", None, False)
    c = bench.parse_config("callsite")
    assert (c.label, c.allocator, c.policy) == ("callsite", "glibc", "callsite")
    c = bench.parse_config("off+jemalloc")
    assert (c.label, c.allocator, c.policy) == ("off+jemalloc", "jemalloc", "off")


def test_parse_labeled_spec_with_options():
    configs = bench.parse_configs(["small=callsite+mimalloc:min_objects=10,max_size=256"])
    assert len(configs) == 1
    c = configs[0]
    assert c.label == "small"
    assert c.spec == "callsite+mimalloc:min_objects=10,max_size=256"
    assert (c.policy, c.allocator) == ("callsite", "mimalloc")
    assert dict(c.options) == {"min_objects": "10", "max_size": "256"}
    # an unlabeled spec with options keeps its text as the label
    c = bench.parse_config("callsite:chunk_size=65536")
    assert c.label == "callsite:chunk_size=65536" and dict(c.options) == {"chunk_size": "65536"}


def test_comma_separated_list_keeps_option_lists_together():
    configs = bench.parse_configs(["glibc,small=callsite:min_objects=10,max_size=256,mimalloc", "off"])
    assert [c.label for c in configs] == ["glibc", "small", "mimalloc", "off"]
    assert dict(configs[1].options) == {"min_objects": "10", "max_size": "256"}


def test_default_configs_in_order():
    assert [c.label for c in bench.parse_configs(None)] == list(bench.DEFAULT_CONFIGS)
    assert bench.DEFAULT_CONFIGS[0] == "glibc"


@pytest.mark.parametrize(
    "text, message",
    [
        ("foo", "unknown configuration 'foo'"),
        ("callsite+nosuch", "unknown allocator 'nosuch'"),
        ("callsite+", "missing allocator"),
        ("glibc:min_objects=1", "plain allocator"),
        ("callsite:bogus=1", "unknown runtime option 'bogus'"),
        ("callsite:min_objects", "not NAME=VALUE"),
        ("callsite:", "no options"),
        ("callsite:max_size=1,max_size=2", "given twice"),
        ("glibc=mimalloc", "built-in configuration name"),
        ("x=", "empty spec"),
        ("dpa+nosuch", "unknown allocator 'nosuch'"),
        ("off=x", "built-in"),
        ("callsite=x", "built-in"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(ConfigError, match=message):
        bench.parse_configs([text])


def test_duplicate_labels_rejected():
    with pytest.raises(ConfigError, match="given twice"):
        bench.parse_configs(["glibc,mimalloc", "glibc"])


def test_config_env_plain_allocator():
    assert bench.config_env(bench.parse_config("glibc")) == {}
    env = bench.config_env(bench.parse_config("mimalloc"))
    assert env["LD_PRELOAD"].endswith("libmimalloc.so.2")


def test_program_env_drops_user_preload():
    env = bench.program_env({"LD_PRELOAD": "/x.so", "HOME": "/h"}, {"A": "1"})
    assert env == {"HOME": "/h", "A": "1"}


# ------------------------------------------------------------------ scheduling and statistics


def test_schedule_interleaves_after_warmup():
    order = bench.schedule(["A", "B", "C"], runs=2, warmup=1)
    assert order == [
        (True, 1, "A"), (True, 1, "B"), (True, 1, "C"),
        (False, 1, "A"), (False, 1, "B"), (False, 1, "C"),
        (False, 2, "A"), (False, 2, "B"), (False, 2, "C"),
    ]


def test_paired_ratios_by_hand():
    base = {1: 1.0, 2: 2.0, 3: 1.0, 4: 4.0, 5: 2.0}
    cfg = {1: 0.5, 2: 1.0, 3: 0.6, 4: 2.4, 5: 1.4}
    ratios = bench.paired_ratios(cfg, base)
    assert ratios == pytest.approx([0.5, 0.5, 0.6, 0.6, 0.7])
    s = bench.spread(ratios)
    assert s.median == pytest.approx(0.6)
    assert (s.min, s.max) == pytest.approx((0.5, 0.7))
    # inclusive quartiles of [.5 .5 .6 .6 .7]: positions 1 and 3 of 0..4
    assert (s.q1, s.q3, s.iqr) == pytest.approx((0.5, 0.6, 0.1))
    # the paired median is not the ratio of medians (1.0 / 2.0): pairing matters
    assert s.median != pytest.approx(bench.spread(list(cfg.values())).median / bench.spread(list(base.values())).median)


def test_paired_ratios_skip_unmatched_rounds():
    assert bench.paired_ratios({1: 2.0, 2: 3.0, 3: 1.0}, {1: 1.0, 3: 2.0}) == pytest.approx([2.0, 0.5])


def test_spread_quartiles_and_single_value():
    s = bench.spread([4.0, 1.0, 3.0, 2.0])
    assert (s.median, s.min, s.max, s.q1, s.q3) == pytest.approx((2.5, 1.0, 4.0, 1.75, 3.25))
    assert s.iqr == pytest.approx(1.5)
    one = bench.spread([0.7])
    assert (one.median, one.q1, one.q3, one.iqr, one.n) == (0.7, 0.7, 0.7, 0.0, 1)
    with pytest.raises(ValueError):
        bench.spread([])


def test_exit_status_descriptions():
    assert bench.ExitStatus.from_returncode(-11).describe() == "killed by SIGSEGV (11)"
    assert bench.ExitStatus.from_returncode(3).describe() == "exit 3"
    assert bench.ExitStatus.from_wait_status(0).ok


def test_first_difference(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a.write_text("one\ntwo\nthree\n")
    b.write_text("one\ntwo\nthree\n")
    c.write_text("one\nTWO\nthree\n")
    assert bench.first_difference(a, b) is None
    assert bench.first_difference(a, c) == "stdout line 2: baseline 'two', got 'TWO'"
    c.write_text("one\n")
    assert "line 2" in bench.first_difference(a, c) and "<end of output>" in bench.first_difference(a, c)


# ------------------------------------------------------------------ cachegrind parsing


def test_parse_cachegrind_fixture():
    events = bench.parse_cachegrind((DATA / "cachegrind-small.out").read_text())
    assert events == {"Ir": 1000, "I1mr": 100, "ILmr": 91, "Dr": 300, "D1mr": 50, "DLmr": 40,
                      "Dw": 100, "D1mw": 20, "DLmw": 10}
    counts = bench.CacheCounts.from_events(events)
    assert (counts.I_refs, counts.D_refs, counts.D1_misses, counts.LL_misses) == (1000, 400, 70, 50)


@pytest.mark.parametrize(
    "text, message",
    [
        ("events: Ir Dr\n", "no events:/summary:"),
        ("events: Ir Dr\nsummary: 1\n", "1 counts for 2 events"),
        ("events: Ir Dr\nsummary: 1 x\n", "non-integer"),
    ],
)
def test_parse_cachegrind_errors(text, message):
    with pytest.raises(bench.CachegrindParseError, match=message):
        bench.parse_cachegrind(text)


def test_cache_counts_need_cache_sim():
    with pytest.raises(bench.CachegrindParseError, match="cache-sim"):
        bench.CacheCounts.from_events({"Ir": 5})


def test_cache_geometry_validation():
    assert bench.check_cache_geometry("4194304, 16, 64", "LL") == "4194304,16,64"
    with pytest.raises(bench.BenchError, match="--LL wants SIZE,WAYS,LINE"):
        bench.check_cache_geometry("4M,16,64", "LL")


# ------------------------------------------------------------------ running programs


def test_launcher_reports_the_programs_own_peak_rss(tmp_path):
    """Peak RSS is the program's, not the (big) parent's that Popen's vfork would carry over."""
    launcher = bench.build_launcher(tmp_path)
    ballast = bytearray(200 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # make this process's RSS ~200 MB
    env = bench.program_env(dict(os.environ), {})
    wall, status, rss, _out, _err, _cpu, _ready = bench.run_once(["/bin/true"], env, tmp_path, "true", launcher)
    assert status.ok and 0 < wall < 5
    assert rss < 50 * 1024, f"peak RSS of /bin/true reported as {rss} KiB"
    del ballast
    big = [sys.executable, "-c", "x = b'a' * (80 << 20)"]
    _wall, status, rss, _out, _err, _cpu, _ready = bench.run_once(big, env, tmp_path, "big", launcher)
    assert status.ok and rss >= 80 * 1024


def test_python_launcher_fallback_works(tmp_path):
    env = bench.program_env(dict(os.environ), {"X_BENCH": "42"})
    run = bench.run_once(["/bin/sh", "-c", "echo $X_BENCH; exit 4"], env, tmp_path, "py", bench.PYTHON_LAUNCHER)
    assert run.status == bench.ExitStatus(code=4) and run.stdout.read_text() == "42\n"


BUSY = [sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"]
SLEEPY = [sys.executable, "-c", "import time; time.sleep(0.4)"]
TWO_BUSY = [sys.executable, "-c", "import os, time\npid = os.fork()\nt = time.process_time()\n"
            "while time.process_time() - t < 0.4: pass\nif pid: os.waitpid(pid, 0)"]


@pytest.mark.parametrize("launcher", ["c", "python"])
def test_launchers_measure_cpu_time(tmp_path, launcher):
    """CPU time is the program's user + system time, with the children it waited for: about
    its wall time for a busy loop, almost none for a sleep, twice the wall time for two busy
    processes at once (on a machine with two CPUs; at least more than one busy's)."""
    cmd = bench.build_launcher(tmp_path) if launcher == "c" else bench.PYTHON_LAUNCHER
    env = bench.program_env(dict(os.environ), {})
    busy = bench.run_once(BUSY, env, tmp_path, "busy", cmd)
    assert 0.28 <= busy.cpu_s <= busy.wall_s + 0.02, busy
    # the time it waited for a CPU (schedstat) fills the rest of its wall time, however loaded
    assert busy.ready_s is not None and 0.8 * busy.wall_s <= busy.cpu_s + busy.ready_s <= busy.wall_s + 0.02, busy
    sleepy = bench.run_once(SLEEPY, env, tmp_path, "sleepy", cmd)
    assert sleepy.wall_s >= 0.4 and sleepy.cpu_s < 0.2, sleepy
    assert sleepy.ready_s is not None and sleepy.cpu_s + sleepy.ready_s < 0.6 * sleepy.wall_s, sleepy
    two = bench.run_once(TWO_BUSY, env, tmp_path, "two", cmd)
    assert two.cpu_s >= 0.78, two


def test_metric_follows_the_program(tmp_path):
    """auto: CPU time for a program that keeps one CPU busy, wall time for one that sleeps;
    the ratios are paired on the chosen metric and both times are in the JSON."""
    for prog, metric in ((BUSY, "cpu"), (SLEEPY, "wall")):
        res = bench.run_bench(prog, bench.parse_configs(["glibc"]), tmp_path / metric, runs=2, warmup=0)
        if metric == "cpu" and any(r.ready_s is None for r in res.baseline.runs):
            # a kernel without schedstat: the ratio is CPU / wall alone, and on a loaded machine
            # every round of the busy loop may lose the CPU; what is checked is that it follows the ratio
            assert res.metric.metric == ("cpu" if res.metric.cpu_per_wall >= 0.9 else "wall"), res.metric
            continue
        assert res.metric.metric == metric, res.metric
        doc = bench.result_to_json(res)
        assert doc["metric"]["metric"] == metric and doc["metric"]["asked"] == "auto"
        c = doc["configs"][0]
        assert len(c["wall_s"]["values"]) == 2 and len(c["cpu_s"]["values"]) == 2
        assert c["time_s"]["median"] == c[f"{metric}_s"]["median"]
        assert "--metric" not in doc["command"]
    res = bench.run_bench(SLEEPY, bench.parse_configs(["glibc"]), tmp_path / "asked", runs=1, warmup=0, metric="cpu")
    assert res.metric.metric == "cpu" and res.time(res.baseline).median < 0.2
    assert "--metric cpu" in bench.command_line(res)
    with pytest.raises(bench.BenchError, match="unknown time metric"):
        bench.run_bench(SLEEPY, bench.parse_configs(["glibc"]), tmp_path / "bad", runs=1, warmup=0, metric="ticks")


def test_deterministic_program_passes(tmp_path):
    js = tmp_path / "out.json"
    md = tmp_path / "out.md"
    proc = cli_run("--runs", "2", "--warmup", "1", "--config", "glibc,jemalloc,mimalloc,tcmalloc",
                   "--json", str(js), "--markdown", str(md), "--", ECHO, "hello")
    assert proc.returncode == 0, proc.stderr
    assert "[bench] round 2/2 tcmalloc" in proc.stderr
    assert "glibc (baseline)" in proc.stdout and "MISMATCH" not in proc.stdout
    assert md.read_text().count("| same |") == 4
    doc = json.loads(js.read_text())
    assert doc["ok"] is True and [c["label"] for c in doc["configs"]] == ["glibc", "jemalloc", "mimalloc", "tcmalloc"]


def test_output_depending_on_allocator_fails_loudly(tmp_path):
    prog = write_script(tmp_path / "envdep.sh",
                        'echo start\ncase "$LD_PRELOAD" in *mimalloc*) echo mimalloc;; *) echo plain;; esac\n')
    proc = cli_run("--runs", "2", "--warmup", "0", "--config", "glibc,jemalloc,mimalloc", "--", prog)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "OUTPUT MISMATCH: configuration 'mimalloc'" in proc.stderr
    assert "stdout line 2: baseline 'plain', got 'mimalloc'" in proc.stderr
    assert "'jemalloc'" not in proc.stderr.replace("[bench]", "")
    row = next(line for line in proc.stdout.splitlines() if line.startswith("mimalloc"))
    assert "MISMATCH" in row


def test_exit_code_and_signal_mismatch(tmp_path):
    prog = write_script(tmp_path / "crash.sh", 'case "$LD_PRELOAD" in *jemalloc*) kill -SEGV $$;; esac\necho ok\n')
    js = tmp_path / "out.json"
    proc = cli_run("--runs", "1", "--warmup", "0", "--config", "glibc,jemalloc", "--json", str(js), "--", prog)
    assert proc.returncode == 1
    assert "configuration 'jemalloc'" in proc.stderr and "got killed by SIGSEGV (11)" in proc.stderr
    doc = json.loads(js.read_text())
    assert doc["configs"][1]["exit"] == [{"code": None, "signal": 11}]
    assert doc["configs"][1]["mismatches"][0]["what"] == "exit+stdout"


def test_one_round_shows_no_spread():
    """An IQR of one round is not a measurement: the table says "-" (it printed 0.000s)."""
    proc = cli_run("--runs", "1", "--warmup", "0", "--config", "glibc,jemalloc", "--", ECHO, "hi")
    assert proc.returncode == 0, proc.stderr
    head = next(line for line in proc.stdout.splitlines() if line.startswith("config"))
    row = next(line for line in proc.stdout.splitlines() if line.startswith("jemalloc"))
    cols = [c for c in row.split("  ") if c.strip()]
    names = [c.strip() for c in head.split("  ") if c.strip()]
    assert cols[names.index("IQR")].strip() == "-" and cols[names.index("ratio IQR")].strip() == "-"
    two = cli_run("--runs", "2", "--warmup", "0", "--config", "glibc,jemalloc", "--", ECHO, "hi")
    row2 = next(line for line in two.stdout.splitlines() if line.startswith("jemalloc"))
    assert [c for c in row2.split("  ") if c.strip()][names.index("IQR")].strip().endswith("s")


def test_policy_dependent_output_under_runtime(tmp_path, runtime_lib):
    prog = write_script(tmp_path / "policy.sh", 'echo "policy=$HEAPLAYOUT_POLICY"\n')
    proc = cli_run("--runs", "1", "--warmup", "0", "--config", "off,callsite", "--", prog)
    assert proc.returncode == 1, proc.stderr
    assert "OUTPUT MISMATCH: configuration 'callsite'" in proc.stderr
    ok = cli_run("--runs", "2", "--warmup", "1", "--config", "glibc,off,callsite,callsite+mimalloc", "--", ECHO, "hi")
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--config", "nosuch", "--", ECHO], "unknown configuration 'nosuch'"),
        (["--config", "glibc", "--", "/no/such/program"], "program not found: /no/such/program"),
        (["--config", "glibc", "--", "no-such-program-xyz"], "program not found: no-such-program-xyz"),
        (["--config", "glibc"], "no program given"),
        (["--config", "glibc", "--runs", "0", "--", ECHO], "--runs must be at least 1"),
        (["--config", "glibc", "--cachegrind", "--LL", "big", "--", ECHO], "--LL wants"),
        (["--config", "plan=x.plan", "--", ECHO], "plan file not found"),
    ],
)
def test_usage_errors_exit_2(argv, message, capsys):
    assert cli.main(["bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("heaplayout bench: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_missing_allocator_package_exit_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(allocators, "_LIBDIR", tmp_path)  # no allocator installed here
    assert cli.main(["bench", "--config", "glibc,tcmalloc", "--", ECHO]) == 2
    err = capsys.readouterr().err.strip()
    assert "apt-get install libtcmalloc-minimal4" in err and len(err.splitlines()) == 1


# ------------------------------------------------------------------ JSON and cachegrind


TOP_KEYS = {"schema", "command", "program", "started_utc", "runs", "warmup", "baseline", "baseline_exit", "rss_floor_kib",
            "launcher", "stdin", "output_files", "cachegrind", "ok", "configs", "metric"}
CONFIG_KEYS = {"label", "spec", "allocator", "policy", "options", "env", "baseline", "wall_s", "cpu_s", "time_s", "ratio",
               "peak_rss_kib", "exit", "output_ok", "mismatches", "cachegrind", "runtime_stats"}
SPREAD_KEYS = {"median", "min", "max", "q1", "q3", "iqr", "n", "values"}
CACHE_KEYS = {"I_refs", "D_refs", "D1_misses", "LL_misses", "I_refs_ratio", "D1_misses_ratio", "LL_misses_ratio",
              "events"}


def test_docs_list_every_json_key():
    doc = (REPO / "docs" / "bench.md").read_text()
    for key in TOP_KEYS | CONFIG_KEYS | SPREAD_KEYS | CACHE_KEYS:
        assert f"`{key}`" in doc, f"docs/bench.md does not document {key}"


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_cachegrind_run_and_json_keys(tmp_path):
    js = tmp_path / "cg.json"
    proc = cli_run("--runs", "2", "--warmup", "0", "--cachegrind", "--config", "glibc,mimalloc",
                   "--json", str(js), "--", ECHO, "hello")
    assert proc.returncode == 0, proc.stderr
    assert "D1 ratio" in proc.stdout and "[bench] cachegrind mimalloc" in proc.stderr
    doc = json.loads(js.read_text())
    assert set(doc) == TOP_KEYS and doc["schema"] == bench.JSON_SCHEMA
    assert doc["cachegrind"] == {"LL": bench.DEFAULT_LL, "D1": bench.DEFAULT_D1}
    assert doc["baseline"] == "glibc" and doc["program"] == [ECHO, "hello"]
    assert doc["command"] == (f"heaplayout bench --runs 2 --warmup 0 --config glibc,mimalloc --cachegrind "
                              f"--LL={bench.DEFAULT_LL} --D1={bench.DEFAULT_D1} -- {ECHO} hello")
    for c in doc["configs"]:
        assert set(c) == CONFIG_KEYS
        assert set(c["wall_s"]) == SPREAD_KEYS and set(c["ratio"]) == SPREAD_KEYS
        assert len(c["wall_s"]["values"]) == 2 and c["output_ok"]
        assert set(c["cachegrind"]) == CACHE_KEYS
        assert c["cachegrind"]["I_refs"] > 0 and c["cachegrind"]["D1_misses"] > 0
    base, mi = doc["configs"]
    assert base["ratio"]["values"] == [1.0, 1.0] and base["cachegrind"]["D1_misses_ratio"] == 1.0
    # the preload reached the client (not a wrapper): mimalloc changes what echo executes
    assert mi["cachegrind"]["I_refs"] != base["cachegrind"]["I_refs"]
    assert mi["env"]["LD_PRELOAD"].endswith("libmimalloc.so.2")


def test_suite_rows_and_json(tmp_path):
    """The suite table from two synthetic benchmark results (no workloads needed)."""
    configs = bench.parse_configs(["glibc,mimalloc"])
    def fake(times_g, times_m, bad=False):
        crs = [bench.ConfigResult(config=c, env={}) for c in configs]
        for cr, times in zip(crs, (times_g, times_m)):
            for r, t in enumerate(times, 1):
                cr.runs.append(bench.RunResult(cr.config.label, r, False, t, bench.ExitStatus(0), 1000,
                                               tmp_path / "o", tmp_path / "e", ""))
        if bad:
            crs[1].mismatches.append(bench.Mismatch("mimalloc", 1, False, "stdout", "differs"))
        return bench.BenchResult(program=["x"], runs=len(times_g), warmup=0, configs=crs, cache_spec=None,
                                 rss_floor_kib=1000)
    entries = [bench.SuiteEntry("w1", "HALO", "p", ["w1"], fake([1.0, 2.0, 1.0], [0.5, 1.0, 0.6])),
               bench.SuiteEntry("w2", "DPA", "p", ["w2"], fake([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], bad=True))]
    header, rows = bench.suite_rows(entries)
    assert header == ["workload", "glibc median", "mimalloc time", "output"]
    assert rows[0] == ["w1", "1.000s", "0.500 [0.500–0.600]", "same"]
    assert rows[1][-1] == "MISMATCH: mimalloc"
    doc = bench.suite_to_json(entries, "small", "fp")
    assert doc["ok"] is False and [w["name"] for w in doc["workloads"]] == ["w1", "w2"]
    assert set(doc["workloads"][0]["result"]) == TOP_KEYS


class FakeWorkload:
    def __init__(self, name: str, script: str):
        self.name, self.paper, self.pattern, self.why = name, "HALO", "pattern", "why"
        self.small, self.ref, self.threads = ["s"], ["r"], 1
        self._script = script

    def binary(self, variant: str = "fp") -> Path:
        return Path(self._script)

    def args(self, input: str) -> list[str]:
        return [input]


def test_suite_command_with_fake_workloads(tmp_path, monkeypatch, capsys):
    """--suite end to end with a stand-in for heaplayout.workloads (two shell 'workloads')."""
    import types
    import heaplayout
    good = write_script(tmp_path / "good.sh", 'echo "input $1"\n')
    bad = write_script(tmp_path / "bad.sh", 'echo "$LD_PRELOAD" | grep -q mimalloc && echo changed; echo "$1"\n')
    fake = types.ModuleType("heaplayout.workloads")
    fake.load_suite = lambda manifest=None: [FakeWorkload("good", good), FakeWorkload("bad", bad),
                                              FakeWorkload("skipped", good)]
    monkeypatch.setitem(sys.modules, "heaplayout.workloads", fake)
    monkeypatch.setattr(heaplayout, "workloads", fake, raising=False)
    md, js = tmp_path / "suite.md", tmp_path / "suite.json"
    rc = cli.main(["bench", "--suite", "--only", "good,bad", "--runs", "2", "--warmup", "0", "--input", "ref",
                   "--config", "glibc,mimalloc", "--markdown", str(md), "--json", str(js)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "bad: OUTPUT MISMATCH: configuration 'mimalloc'" in err and "good: OUTPUT" not in err
    table = md.read_text()
    assert "| good |" in table and "| bad |" in table and "skipped" not in table
    assert "MISMATCH: mimalloc" in table
    doc = json.loads(js.read_text())
    assert doc["schema"] == bench.SUITE_JSON_SCHEMA and doc["input"] == "ref" and doc["ok"] is False
    assert doc["command"].startswith("heaplayout bench --suite --input ref --variant fp --runs 2")
    assert [w["name"] for w in doc["workloads"]] == ["good", "bad"]
    assert doc["workloads"][0]["program"] == [good, "ref"]
    assert cli.main(["bench", "--suite", "--only", "nosuch", "--config", "glibc"]) == 2
    assert "unknown workload(s) nosuch" in capsys.readouterr().err


def test_runtime_stats_collected_from_last_warmup(tmp_path, monkeypatch):
    """Our configurations get HEAPLAYOUT_STATS_JSON in the last warm-up run only (a stand-in
    runtime library and a script that writes the 'statistics' itself)."""
    fake_build = tmp_path / "build"
    (fake_build / "runtime").mkdir(parents=True)
    src = tmp_path / "empty.c"
    src.write_text("int heaplayout_test_symbol;\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(fake_build / "runtime" / "libheaplayout.so"), str(src)],
                   check=True)
    monkeypatch.setenv("HEAPLAYOUT_BUILD_DIR", str(fake_build))
    monkeypatch.delenv("HEAPLAYOUT_STATS_JSON", raising=False)
    prog = write_script(tmp_path / "stats.sh", 'test -n "$HEAPLAYOUT_STATS_JSON" && '
                        'echo "{\\"pools\\": 3, \\"policy\\": \\"$HEAPLAYOUT_POLICY\\"}" > "$HEAPLAYOUT_STATS_JSON"\n'
                        'echo same\n')
    configs = bench.parse_configs(["glibc,callsite"])
    result = bench.run_bench([prog], configs, tmp_path / "work", runs=2, warmup=2)
    assert result.ok
    doc = bench.result_to_json(result)
    assert doc["configs"][0]["runtime_stats"] is None
    assert doc["configs"][1]["runtime_stats"] == {"pools": 3, "policy": "callsite"}


def test_plan_configuration_sets_the_plan_file(tmp_path, runtime_lib):
    plan = tmp_path / "x.plan"
    plan.write_text("heaplayout-plan 1\nend\n")
    (c,) = bench.parse_configs([f"p=plan+mimalloc={plan}"])
    assert c.policy == "plan" and c.allocator == "mimalloc"
    env = bench.config_env(c)
    assert env["HEAPLAYOUT_POLICY"] == "plan" and env["HEAPLAYOUT_PLAN"] == str(plan.resolve())
    assert env["LD_PRELOAD"].endswith("libmimalloc.so.2")


PID_PRINTER_C = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) { printf("result 42\nTime used: %d secs\n", (int)getpid()); return 0; }
"""


def test_ignore_leaves_only_its_matches_out_of_the_output_check(tmp_path, capsys):
    """A program whose stdout has a varying line fails bench's output check; --ignore with a
    pattern for that line passes it, and a pattern for another line does not."""
    src = tmp_path / "pid.c"
    src.write_text(PID_PRINTER_C)
    exe = tmp_path / "pid"
    subprocess.run(["gcc", "-O1", str(src), "-o", str(exe)], check=True)
    base = ["bench", "--runs", "2", "--warmup", "0", "--config", "glibc,glibc2=glibc"]
    assert cli.main([*base, "--", str(exe)]) == 1
    err = capsys.readouterr().err
    assert "OUTPUT MISMATCH" in err
    # the baseline's own runs differ in one token: bench names the pattern that masks it
    assert r"--ignore '(?m)^Time\s+used:\s+\S+'" in err, err
    assert cli.main([*base, "--ignore", r"result \d+", "--", str(exe)]) == 1
    capsys.readouterr()
    assert cli.main([*base, "--ignore", r"Time used: \d+ secs", "--", str(exe)]) == 0
    assert cli.main([*base, "--ignore", "(unclosed", "--", str(exe)]) == 2
    assert "is not a regular expression" in capsys.readouterr().err


# counts the signals among SIGPIPE and SIGXFSZ that the shell started with ignored
_SH_DISPOSITIONS = ["/bin/bash", "-c", "trap | grep -c -E 'PIPE|XFSZ' || true"]  # dash lists none


@pytest.mark.parametrize("launcher", ["c", "python"])
def test_launchers_start_programs_with_sigpipe_at_its_default(tmp_path, launcher):
    """Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec: a
    program started from a Python process must get them back at their defaults, or a writer
    into a closed pipe prints "Broken pipe" and exits 1 instead of dying of SIGPIPE."""
    cmd = bench.build_launcher(tmp_path) if launcher == "c" else bench.PYTHON_LAUNCHER
    env = bench.program_env(dict(os.environ), {})
    run = bench.run_once(_SH_DISPOSITIONS, env, tmp_path, "sig", cmd)
    assert run.status.ok and run.stdout.read_text() == "0\n", run.stdout.read_text()
