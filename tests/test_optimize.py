"""`heaplayout optimize` end to end: profile, plan, race, decision, evidence. The rules
themselves are tested on synthetic rounds in test_optimize_search.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import run_program
from heaplayout import allocators
from heaplayout.optimize_search import DEFAULT_STRATEGIES
from heaplayout.plan_format import read_plan
from heaplayout.workloads import load_suite

CLI = [sys.executable, "-m", "heaplayout.cli"]
REPO = Path(__file__).resolve().parent.parent


def optimize(*argv: str, timeout: float = 300, env_extra: dict[str, str] | None = None):
    return run_program(CLI + ["optimize", *argv], timeout=timeout, env_extra=env_extra)


def bench_accepts(config: str, program: list[str], *extra: str) -> None:
    """`heaplayout bench --config CONFIG` runs the configuration as it is."""
    r = run_program(CLI + ["bench", "--runs", "1", "--warmup", "0", "--config", config, *extra, "--", *program])
    assert r.returncode == 0, r.stderr.decode()


def test_no_plan_wins_on_a_compute_bound_program(build_dir, runtime_lib, tmp_path):
    """A program that allocates a few objects and computes in registers: no layout can win,
    so the recommendation is an allocator alone, and optimize says so. The program reads its
    work on stdin (--stdin for the measured runs, --train-stdin for the profile)."""
    worker = str(build_dir / "tests" / "commands" / "stdin_worker")
    work, train = tmp_path / "work.txt", tmp_path / "train.txt"
    work.write_text("10 3 5\n")
    train.write_text("1 3 5\n")
    out, js = tmp_path / "out", tmp_path / "o.json"
    r = optimize("--stdin", str(work), "--train-stdin", str(train), "--budget", "90", "-o", str(out),
                 "--json", str(js), "--", worker, "compute")
    text, err = r.stdout.decode(), r.stderr.decode()
    assert r.returncode == 0, text + err
    assert "alone — no strategy beat the best allocator alone" in text
    for progress in ("[optimize] stage 1/4: profile", "[optimize] stage 2/4: plan", "[optimize] stage 3/4: measure",
                     "[optimize] race round 1/", "[optimize] standings", "[optimize] stage 4/4: decision"):
        assert progress in err, progress
    assert "checksum" in (out / "profile.stdout").read_text()  # the profiled run read the training input
    doc = json.loads(js.read_text())
    assert doc == json.loads((out / "optimize.json").read_text())
    rec = doc["recommendation"]
    assert rec["kind"] == "allocator alone" and not rec["resolved"]
    assert rec["config"] == rec["allocator"] and rec["config"] in allocators.ALLOCATORS
    assert doc["stdin"] == str(work) and doc["train_stdin"] == str(train)
    installed = allocators.available_allocators()
    shipped = [c for c in doc["candidates"] if not c["huge_pages"]]
    assert len(shipped) == len(installed) * (1 + len(DEFAULT_STRATEGIES))
    # huge-page twins (THP mode madvise): the allocators' own settings race from the first round,
    # the strategies' twins join after the third, each of a candidate still in the running then
    labels = {c["label"] for c in shipped}
    for twin in (c for c in doc["candidates"] if c["huge_pages"]):
        assert twin["label"].removesuffix("+thp") in labels and twin["config"].endswith("huge_pages=1"), twin
        first = min(run["round"] for run in twin["runs"] if run["phase"] == "race")
        assert first == 1 if twin["strategy"] == "alone" else first >= 4, twin
    assert {p for p in doc["plans"]} == {"halo", "halo-site", "halo-rest"}
    assert (out / "optimize.md").read_text().count("| RECOMMENDED") == 1
    assert (out / "recommended.env").exists()
    # what the races compared, decided from the reference runs, and every run's two clocks
    metric = doc["metric"]["metric"]
    assert doc["metric"]["asked"] == "auto" and f"the races compare {doc['metric']['reason']}" in err
    assert metric == ("cpu" if 0.9 <= doc["metric"]["cpu_per_wall"] <= 1.05 else "wall"), doc["metric"]
    for c in doc["candidates"]:
        times = {(run["phase"], run["round"]): run[f"{metric}_s"] for run in c["runs"]}
        assert all(run["cpu_s"] >= 0 and run["wall_s"] > 0 for run in c["runs"])
        race = (c["race"] or {}).get("time_s")
        if race:  # the race's times are the metric's, round by round
            assert sorted(race["values"]) == sorted(t for (ph, _), t in times.items() if ph in ("race", "halving"))
    bench_accepts(rec["config"], [worker, "compute"], "--stdin", str(work))
    documented = (REPO / "docs" / "optimize.md").read_text()
    for part in (doc, doc["candidates"][0], doc["decision"], rec, doc["settings"]):
        for key in part:
            assert f"`{key}`" in documented, f"docs/optimize.md does not document {key}"


def test_a_winning_plan_is_recommended_and_bench_takes_its_config(build_dir, runtime_lib, tmp_path):
    """halo_tokens is the suite's clearest plan win (docs/results.md): the plan is recommended,
    resolved on the confirmation rounds, and its config runs under bench as it is. Runs of
    ~0.15 s rather than the small input's 30 ms: on a loaded machine a neighbour's burst
    doubles a 30 ms run, and a third of the rounds so disturbed leave nothing resolved."""
    w = {w.name: w for w in load_suite()}["halo_tokens"]
    program = [str(w.binary()), "300000", "60"]
    out = tmp_path / "out"
    r = optimize("--train", "50000 10", "--allocator", "glibc,mimalloc", "--strategies", "halo", "--race-rounds", "4",
                 "--budget", "120", "-o", str(out), "--", *program)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    doc = json.loads((out / "optimize.json").read_text())
    rec = doc["recommendation"]
    assert rec["kind"] == "strategy" and rec["resolved"], rec["reason"]
    assert rec["config"].startswith("plan") and rec["ratio_to_best_allocator"]["q3"] < 1.0
    assert "RECOMMENDED: " + rec["label"] in r.stdout.decode()
    # the runtime's statistics from one more run of the recommendation: objects in pools
    assert rec["runtime_stats"]["policy"] == "plan" and "allocations" in r.stdout.decode().split("runtime, one more run:")[1]
    best = rec["best_allocator"]
    bench_accepts(f"{best},{rec['config']}", program)
    env = dict(line.split("=", 1) for line in (out / "recommended.env").read_text().splitlines()
               if not line.startswith("#"))
    assert env["HEAPLAYOUT_POLICY"] == "plan" and env["HEAPLAYOUT_PLAN"].endswith(".plan")
    # each group's layout was chosen by simulating the training input (--group-layout choose,
    # the default), and the raced plan file carries the choice
    lay = doc["group_layouts"]["halo"]
    assert doc["group_layout"] == "choose" and lay["chosen"], lay
    assert set(lay["simulated_cost"]) == {"spans", "interleave"} and lay["groups"] == len(lay["costs"]) > 0
    plan = read_plan(doc["plans"]["halo"])
    assert sorted(g.id for g in plan.groups if not g.spans) == sorted(lay["interleaved"])
    for c in lay["costs"]:
        assert (c["group"] in lay["interleaved"]) == (c["interleave"] < c["spans"])
    assert "group layouts: simulating the training input" in r.stderr.decode()
    # and where in a cache line the groups' objects start, by the native-time model, or why not
    line = lay["line"]
    if line["chosen"]:
        assert {g.line for g in plan.groups} == {line["offset"]}
        assert set(line["estimates"]) == {"0", "16", "32", "48"}
    else:
        assert line["why"] and {g.line for g in plan.groups} == {0}


def test_optimize_on_a_library_allocator(build_dir, runtime_lib, tmp_path):
    """An allocator given by path is a candidate like the built-in ones, alone and under the
    callsite policy (no profile needed for callsite alone)."""
    cmds = build_dir / "tests" / "commands"
    worker, lib = str(cmds / "stdin_worker"), str(cmds / "libhl_wrap_malloc.so")
    numbers, log = tmp_path / "n.txt", tmp_path / "wrap.log"
    numbers.write_text("\n".join(map(str, range(20000))) + "\n")
    r = optimize("--allocator", f"glibc,{lib}", "--strategies", "callsite", "--stdin", str(numbers), "--budget", "30",
                 "-o", str(tmp_path / "out"), "--", worker, "list", env_extra={"HL_WRAP_LOG": str(log)})
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    doc = json.loads((tmp_path / "out" / "optimize.json").read_text())
    got = {c["label"]: c["config"] for c in doc["candidates"] if not c["huge_pages"]}
    assert got == {"glibc": "glibc", "libhl_wrap_malloc.so": lib, "callsite+glibc": "callsite",
                   "callsite+libhl_wrap_malloc.so": f"callsite+{lib}"}
    assert doc["profile"] is None and doc["plans"] == {}
    assert len(log.read_text().splitlines()) >= 2 * 3  # both library candidates ran, several rounds
    bench_accepts(f"callsite+{lib}", [worker, "list"], "--stdin", str(numbers))


def test_usage_errors():
    r = optimize()
    assert r.returncode == 2 and b"no program given" in r.stderr
    r = optimize("--strategies", "halo,nosuch", "--", "true")
    assert r.returncode == 2 and b"unknown strategy 'nosuch'" in r.stderr
    r = optimize("--runs", "3", "--", "true")
    assert r.returncode == 2 and b"--runs must be at least 5" in r.stderr


def test_bad_output_directory_profile_and_training_stdin_are_usage_errors(tmp_path):
    """One line and exit 2, before anything runs (a file as -o was a FileExistsError
    traceback, a plan given as --profile was planned three times and failed each)."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [(["-o", str(afile)], b"is a file"), (["-o", "/proc/nope"], b"cannot make the output directory"),
             (["--profile", str(afile)], b"is not a heaplayout profile"),
             (["--train-stdin", str(tmp_path / "none")], b"--train-stdin file not found")]
    for extra, message in cases:
        r = optimize(*extra, "--", "true")
        assert r.returncode == 2 and message in r.stderr and b"Traceback" not in r.stderr, (extra, r.stderr)
    d = tmp_path / "d"
    d.mkdir()
    for argv, message in ((["run", "--stats-json", str(d), "--", "true"], b"is a directory"),
                          (["profile", "-o", str(d), "--", "true"], b"is a directory"),
                          (["plan", "-o", str(d), str(afile)], b"is a directory")):
        r = run_program(CLI + argv)
        assert r.returncode == 2 and message in r.stderr, (argv, r.stderr)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["afile", "d"] and not any(d.iterdir())


def _compile(tmp_path: Path, name: str, body: str) -> Path:
    import subprocess

    src = tmp_path / f"{name}.c"
    src.write_text("#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n" + body)
    exe = tmp_path / name
    subprocess.run(["gcc", "-O1", str(src), "-o", str(exe)], check=True)
    return exe


def test_ignore_lets_a_program_with_a_timing_line_be_optimized(runtime_lib, tmp_path):
    """A program that prints its pid in a "Time used" line: refused before profiling with
    --no-auto-ignore, measured with the differing token masked by default (the pattern is in
    the evidence and in the re-measuring bench command), and with the user's own --ignore."""
    exe = _compile(tmp_path, "pid", 'int main(void) { printf("result 42\\nTime used: %d secs\\n", (int)getpid()); '
                                    'return 0; }\n')
    common = ["--allocator", "glibc,jemalloc", "--strategies", "callsite", "--race-rounds", "1", "--runs", "5",
              "--budget", "60", "--no-report"]
    r = optimize(*common, "--no-auto-ignore", "-o", str(tmp_path / "a"), "--", str(exe))
    assert r.returncode == 1 and b"printed different outputs" in r.stderr, r.stderr.decode()
    assert not (tmp_path / "a" / "optimize.json").exists()  # stopped at stage 0
    r = optimize(*common, "-o", str(tmp_path / "auto"), "--", str(exe))
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads((tmp_path / "auto" / "optimize.json").read_text())
    assert doc["ignore"] == [r"(?m)^Time\s+used:\s+\S+"], doc["ignore"]
    assert "--ignore" in doc["command"] and any("two runs of the program alone" in n for n in doc["notes"])
    assert all(c["eliminated"] is None or "output differs" not in c["eliminated"]["reason"] for c in doc["candidates"])
    r = optimize(*common, "--ignore", r"Time used: \d+ secs", "-o", str(tmp_path / "b"), "--", str(exe))
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads((tmp_path / "b" / "optimize.json").read_text())
    assert doc["ignore"] == [r"Time used: \d+ secs"] and "--ignore" in doc["command"]
    assert all(c["eliminated"] is None or "output differs" not in c["eliminated"]["reason"] for c in doc["candidates"])
    rec = doc["recommendation"]
    if rec["bench_command"]:
        assert "--ignore" in rec["bench_command"]


def test_output_that_differs_in_its_lines_stops_before_profiling(tmp_path):
    """Each run prints one line more than the last (a counter in a file): no token mask
    fits, so optimize stops at once and asks for --ignore, before any profile."""
    counter = tmp_path / "count"
    exe = _compile(tmp_path, "grow", 'int main(void) { FILE *f = fopen("' + str(counter) + '", "a+"); long n = 0; '
                   'char b[8]; rewind(f); while (fgets(b, sizeof b, f)) n++; fputs("x\\n", f); fclose(f); '
                   'for (long i = 0; i <= n; i++) printf("line %ld\\n", i); return 0; }\n')
    r = optimize("--budget", "60", "--no-report", "-o", str(tmp_path / "o"), "--", str(exe))
    assert r.returncode == 1, r.stderr.decode()
    assert b"printed different outputs" in r.stderr and b"--ignore REGEX" in r.stderr
    assert b"stage 1/4" not in r.stderr  # no profile was made


def test_candidates_dropped_for_a_memory_line_get_an_ignore_hint(runtime_lib, tmp_path):
    """A program that prints its own peak virtual size prints another figure under each
    allocator: those candidates are dropped (their output differs from the reference), and
    the evidence names the --ignore pattern that would keep them, for the user to judge."""
    exe = _compile(tmp_path, "mem", 'int main(void) { char *p = malloc(1 << 20); memset(p, 1, 1 << 20); '
                   'FILE *f = fopen("/proc/self/status", "r"); char l[256]; long kb = 0; '
                   'while (fgets(l, sizeof l, f)) if (!strncmp(l, "VmPeak:", 7)) kb = atol(l + 7); '
                   'printf("result %d\\nMemory used: %ld kB\\n", p[100], kb); return 0; }\n')
    r = optimize("--allocator", "glibc,jemalloc", "--strategies", "callsite", "--race-rounds", "1", "--runs", "5",
                 "--budget", "60", "--no-report", "--huge-pages", "off", "-o", str(tmp_path / "o"), "--", str(exe))
    doc = json.loads((tmp_path / "o" / "optimize.json").read_text())
    dropped = [c["label"] for c in doc["candidates"] if c["eliminated"] and "output differs" in c["eliminated"]["reason"]]
    assert dropped, r.stderr.decode()
    hint = [n for n in doc["notes"] if "run again with" in n]
    assert hint and r"(?m)^Memory\s+used:\s+\S+" in hint[0], doc["notes"]


def test_prefix_variants_are_planned_and_raced(build_dir, runtime_lib, tmp_path):
    """PreFix's variants (`prefix`, `prefix-halo`, `prefix-site`) are optimize candidates when asked for:
    each gets its plan of strategy prefix:hds+hot, and its configuration is raced and runs with
    the program's output unchanged (a changed output would end optimize with status 1)."""
    w = {w.name: w for w in load_suite()}["prefix_hot"]
    program = [str(w.binary()), "60000", "20"]  # a third of the small input: planning PreFix is slow
    out = tmp_path / "out"
    r = optimize("--allocator", "glibc", "--strategies", "prefix,prefix-halo,prefix-site", "--race-rounds", "2", "--runs", "5",
                 "--budget", "60", "--no-report", "-o", str(out), "--", *program)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    doc = json.loads((out / "optimize.json").read_text())
    assert set(doc["plans"]) == {"prefix", "prefix-halo", "prefix-site"}
    for name in ("prefix", "prefix-halo", "prefix-site"):
        head = (out / f"{w.binary().name}.{name}.plan").read_text().splitlines()
        assert any(line.split()[:2] == ["strategy", "prefix:hds+hot"] for line in head[:20]), head[:20]
        assert any("objects numbered per call site alone" in line for line in head[:20]) == (name == "prefix-site")
    labels = {c["label"] for c in doc["candidates"]}
    assert {"prefix+glibc", "prefix-halo+glibc", "prefix-site+glibc"} <= labels


def test_a_report_past_its_time_is_given_up_with_its_command(tmp_path):
    """optimize's page gets the budget left (at least REPORT_MIN_S): a page not made in time is
    given up, and the warning gives the command that makes it."""
    from heaplayout.commands.optimize import write_report_within
    prof = tmp_path / "p.prof"
    prof.write_text("not a profile\n")
    doc = {"schema": "heaplayout-optimize/1", "profile": str(prof), "plans": {"halo": str(tmp_path / "h.plan")},
           "candidates": []}
    page, why = write_report_within(tmp_path, doc, 0.0)
    assert page is None and "was given up; make it with: heaplayout report --profile" in why
    assert f"--plan {tmp_path / 'h.plan'}" in why and not (tmp_path / "report.html").exists()
    # with time, the child's own answer comes back (here: the profile is not one)
    page, why = write_report_within(tmp_path, doc, 60.0)
    assert page is None and "not a heaplayout profile" in why


def test_a_static_executable_is_refused_at_once(tmp_path):
    """LD_PRELOAD does not reach a statically linked program: optimize says so instead of
    racing configurations that all run the program's own malloc; bench warns."""
    import subprocess

    src = tmp_path / "st.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\nint main(void) { char *p = malloc(64); p[0] = 7; '
                   'printf("%d\\n", p[0]); free(p); return 0; }\n')
    exe = tmp_path / "st"
    subprocess.run(["gcc", "-O1", "-static", str(src), "-o", str(exe)], check=True)
    r = optimize("--budget", "30", "-o", str(tmp_path / "o"), "--", str(exe))
    assert r.returncode == 2 and b"statically linked" in r.stderr, r.stderr.decode()
    assert not (tmp_path / "o" / "optimize.json").exists()
    r = run_program(CLI + ["bench", "--runs", "1", "--warmup", "0", "--config", "glibc,mimalloc", "--", str(exe)])
    assert b"statically linked" in r.stderr
    # profile and simulate warn too, and still run the program
    r = run_program(CLI + ["profile", "-o", str(tmp_path / "st.prof"), "--", str(exe)])
    assert r.returncode == 0 and b"statically linked" in r.stderr and r.stdout == b"7\n"
    r = run_program(CLI + ["simulate", "--", str(exe)])
    assert r.returncode == 0 and b"statically linked" in r.stderr


# Writes its result to the file argv[1] and only "done" to stdout; under an LD_PRELOAD that
# names mimalloc it writes a wrong result: a stand-in for a configuration that would change
# what a program computes, which a check of stdout alone would not see.
RESULT_IN_A_FILE = ('int main(int argc, char **argv) { long s = 0; for (int i = 0; i < 20000; i++) { long *p = '
                    'malloc(40); p[0] = i; s += p[0]; free(p); } const char *pre = getenv("LD_PRELOAD"); '
                    'if (pre && strstr(pre, "mimalloc")) s++; FILE *f = fopen(argv[1], "w"); '
                    'fprintf(f, "%ld\\n", s); fclose(f); puts("done"); return 0; }\n')


def test_output_files_are_checked_like_stdout(runtime_lib, tmp_path):
    """--output-file: a candidate that leaves another result in the file is dropped by
    optimize, and bench reports the mismatch; the file is named in the evidence and in the
    re-measuring command. Without --output-file neither would notice."""
    exe = _compile(tmp_path, "resfile", RESULT_IN_A_FILE)
    result = tmp_path / "result.txt"
    common = ["--allocator", "glibc,mimalloc", "--strategies", "callsite", "--race-rounds", "1", "--runs", "5",
              "--budget", "60", "--no-report"]
    r = optimize(*common, "--output-file", str(result), "-o", str(tmp_path / "o"), "--", str(exe), str(result))
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads((tmp_path / "o" / "optimize.json").read_text())
    assert doc["output_files"] == [str(result)] and "--output-file" in doc["command"]
    dropped = {c["label"]: c["eliminated"]["reason"] for c in doc["candidates"] if c["eliminated"]}
    assert "output file" in dropped["mimalloc"] and "output file" in dropped["callsite+mimalloc"], dropped
    # whatever won runs on glibc (its huge-page twin, glibc:huge_pages=1, may win on a noisy machine)
    assert doc["recommendation"]["allocator"] == "glibc", doc["recommendation"]
    assert "output file" in dropped.get("mimalloc+thp", "output file")
    if doc["recommendation"]["bench_command"]:
        assert "--output-file" in doc["recommendation"]["bench_command"]
    bench = run_program(CLI + ["bench", "--runs", "1", "--warmup", "0", "--config", "glibc,mimalloc",
                               "--output-file", str(result), "--", str(exe), str(result)])
    assert bench.returncode == 1 and b"output file" in bench.stderr, bench.stderr.decode()
    plain = run_program(CLI + ["bench", "--runs", "1", "--warmup", "0", "--config", "glibc,mimalloc",
                               "--", str(exe), str(result)])
    assert plain.returncode == 0  # stdout alone: the same "done"


def test_an_output_file_not_the_same_twice_stops_before_profiling(tmp_path):
    exe = _compile(tmp_path, "pidfile", 'int main(int argc, char **argv) { FILE *f = fopen(argv[1], "w"); '
                                        'fprintf(f, "%d\\n", (int)getpid()); fclose(f); return 0; }\n')
    out = tmp_path / "pid.txt"
    r = optimize("--budget", "60", "--no-report", "--output-file", str(out), "-o", str(tmp_path / "o"), "--",
                 str(exe), str(out))
    assert r.returncode == 1 and b"wrote different files" in r.stderr, r.stderr.decode()
    assert b"stage 1/4" not in r.stderr
    r = optimize("--budget", "60", "--no-report", "--output-file", str(tmp_path / "never"), "-o",
                 str(tmp_path / "o2"), "--", str(exe), str(out))
    assert r.returncode == 1 and b"did not write" in r.stderr, r.stderr.decode()


def test_a_run_that_does_not_write_its_output_file_is_caught(runtime_lib, tmp_path):
    """Under mimalloc the program exits without writing its result file: the file an earlier
    run left must not pass for its result (bench and optimize compared it, and optimize
    recommended mimalloc alone)."""
    exe = _compile(tmp_path, "skipwrite",
                   'int main(int argc, char **argv) { const char *pre = getenv("LD_PRELOAD"); '
                   'if (pre && strstr(pre, "mimalloc")) return 0; long s = 0; for (int i = 0; i < 20000; i++) '
                   '{ long *p = malloc(40); p[0] = i; s += p[0]; free(p); } FILE *f = fopen(argv[1], "w"); '
                   'fprintf(f, "%ld\\n", s); fclose(f); return 0; }\n')
    result = tmp_path / "result.txt"
    bench = run_program(CLI + ["bench", "--runs", "2", "--warmup", "0", "--config", "glibc,mimalloc",
                               "--output-file", str(result), "--", str(exe), str(result)])
    assert bench.returncode == 1 and b"not written by this run" in bench.stderr, bench.stderr.decode()
    r = optimize("--allocator", "glibc,mimalloc", "--strategies", "callsite", "--race-rounds", "1", "--runs", "5",
                 "--budget", "60", "--no-report", "--output-file", str(result), "-o", str(tmp_path / "o"), "--",
                 str(exe), str(result))
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads((tmp_path / "o" / "optimize.json").read_text())
    assert "mimalloc" not in doc["recommendation"]["config"]
    # a file the program alone never writes: bench warns, optimize stops in stage 0
    stale = tmp_path / "stale.txt"
    stale.write_text("old\n")
    bench = run_program(CLI + ["bench", "--runs", "1", "--warmup", "0", "--config", "glibc",
                               "--output-file", str(stale), "--", "/bin/true"])
    assert bench.returncode == 0 and b"did not write" in bench.stderr, bench.stderr.decode()
    r = optimize("--budget", "60", "--no-report", "--output-file", str(stale), "-o", str(tmp_path / "o2"), "--",
                 "/bin/true")
    assert r.returncode == 1 and b"did not write" in r.stderr, r.stderr.decode()


def test_the_environment_file_sets_paths_with_spaces_as_they_are(tmp_path):
    """recommended.env's values are shell-quoted where needed: a plan in a directory with a
    space was written bare, and sourcing the file ran `dir/list` as a command."""
    import subprocess
    from heaplayout.optimize_report import env_file_text
    env = {"LD_PRELOAD": "/x/libheaplayout.so", "HEAPLAYOUT_PLAN": "/tmp/sp dir/list prog.halo.plan",
           "HEAPLAYOUT_PROGRAM": "/tmp/sp dir/it's"}
    f = tmp_path / "recommended.env"
    f.write_text(env_file_text(env))
    out = subprocess.run(["bash", "-c", f'(set -a; . "{f}"; exec env)'], capture_output=True, text=True, check=True)
    got = dict(line.split("=", 1) for line in out.stdout.splitlines() if line.startswith(("LD_PRELOAD=", "HEAPLAYOUT_")))
    assert got == env


def test_two_optimize_runs_do_not_share_an_output_directory(tmp_path):
    import fcntl
    out = tmp_path / "o"
    out.mkdir()
    with open(out / ".optimize.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # as a running optimize holds it
        r = optimize("--budget", "30", "--no-report", "-o", str(out), "--", "true")
    assert r.returncode == 2 and b"another heaplayout optimize is writing into" in r.stderr, r.stderr
    assert not (out / "optimize.json").exists()


def test_most_candidates_dropped_for_their_output_is_said(runtime_lib, tmp_path):
    """A program that aborts under any preloaded library passes stage 0 (glibc alone twice)
    and loses every other candidate: the recommendation of glibc then says nothing about
    speed, and optimize says why instead of "no strategy reached the confirmation"."""
    exe = _compile(tmp_path, "preloadabort", 'int main(void) { const char *p = getenv("LD_PRELOAD"); '
                                             'puts("hello"); fflush(stdout); if (p && *p) abort(); return 0; }\n')
    r = optimize("--allocator", "glibc,jemalloc", "--strategies", "callsite", "--race-rounds", "1", "--runs", "5",
                 "--budget", "60", "--no-report", "--huge-pages", "off", "-o", str(tmp_path / "o"), "--", str(exe))
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads((tmp_path / "o" / "optimize.json").read_text())
    assert any("3 of 4 candidates were dropped" in n and "SIGABRT" in n for n in doc["notes"]), doc["notes"]
    assert b"warning: 3 of 4 candidates were dropped" in r.stderr
