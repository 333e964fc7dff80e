"""Commands whose work is done by another executable: a launcher script, a driver that runs a
child (heaplayout/target.py). The census names that executable; profile follows it; run,
bench and optimize limit the runtime to it; simulate reports it rather than the shell."""

from __future__ import annotations

import json
import sys

import pytest
from pathlib import Path

from conftest import run_program
from heaplayout.profile_reader import read_profile
from heaplayout.target import Census, Process, same_file, take_census, unprofiled_processes

CLI = [sys.executable, "-m", "heaplayout.cli"]
CELLS = 100000


def _setup(build_dir: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """The list worker, its input, and a launcher script that runs `cat` (another program
    the runtime must leave alone under --program), then the worker (twice with 'twice'),
    then prints a line of its own, so the shell stays a process of its own."""
    worker = build_dir / "tests" / "commands" / "stdin_worker"
    numbers = tmp_path / "numbers.txt"
    numbers.write_text("\n".join(str(i) for i in range(CELLS)) + "\n")
    script = tmp_path / "launch.sh"
    script.write_text(f'#!/bin/sh\ncat "$1" > /dev/null\n"{worker}" list < "$1"\n[ "$2" = twice ] && "{worker}" list < "$1"\n'
                      'echo launcher done\n')
    script.chmod(0o755)
    return worker, numbers, script


def test_census_decides_by_cpu_time():
    c = Census([Process(1, "/bin/dash", 0.01), Process(2, "/usr/bin/lua5.4", 1.5), Process(3, "/usr/bin/lua5.4", 1.0),
                Process(4, "/usr/bin/as", 2.0)], "/tmp/launch.sh")
    assert c.target() == "/usr/bin/lua5.4"  # summed over its two processes: 2.5 s against 2.0
    assert c.delegated()
    assert c.describe().startswith("lua5.4 55%, as 44%")
    assert Census([], "/bin/true").target() is None and not Census([], "/bin/true").delegated()


def test_census_names_the_binary_a_script_runs(build_dir, runtime_lib, tmp_path):
    worker, numbers, script = _setup(build_dir, tmp_path)
    c = take_census([str(script), str(numbers)])
    assert {Path(p.exe).name for p in c.processes} >= {"stdin_worker"}, c.processes
    assert same_file(c.target(), str(worker)) and c.delegated()
    own = take_census([str(worker), "list"], stdin=numbers)  # an ELF program that does its own work
    assert same_file(own.target(), str(worker)) and not own.delegated()


def test_profile_follows_a_script_to_its_binary(build_dir, runtime_lib, tmp_path):
    worker, numbers, script = _setup(build_dir, tmp_path)
    prof = tmp_path / "p.prof"
    r = run_program(CLI + ["profile", "-o", str(prof), "--", str(script), str(numbers)], timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    assert b"launcher done" in r.stdout and b"count 100000" in r.stdout  # the command's output is its own
    p = read_profile(prof)
    assert p.complete
    assert same_file(p.header["exe"], str(worker)), p.header
    assert sum(c.objects for c in p.contexts.values()) >= CELLS


def test_profile_merges_the_processes_of_the_target(build_dir, runtime_lib, tmp_path):
    worker, numbers, script = _setup(build_dir, tmp_path)
    prof = tmp_path / "p.prof"
    r = run_program(CLI + ["profile", "--program", str(worker), "-o", str(prof), "--", str(script), str(numbers),
                           "twice"], timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    assert b"2 processes ran stdin_worker" in r.stderr
    p = read_profile(prof)
    assert p.header.get("merged_runs") == "2", p.header
    r = run_program(CLI + ["profile", "--program", "/bin/true", "-o", str(tmp_path / "none.prof"), "--", str(script),
                           str(numbers)], timeout=300)
    assert r.returncode != 0 and b"no process of the command ran /bin/true" in r.stderr
    assert not (tmp_path / "none.prof").exists()


def test_run_program_limits_the_runtime_to_the_target(build_dir, runtime_lib, tmp_path):
    worker, numbers, script = _setup(build_dir, tmp_path)
    every, only = tmp_path / "every", tmp_path / "only"
    every.mkdir()
    only.mkdir()
    r = run_program(CLI + ["run", "--policy", "callsite", "--stats-json", str(every / "%p.json"), "--", str(script),
                           str(numbers)])
    assert r.returncode == 0 and b"launcher done" in r.stdout, r.stderr.decode()
    exes = {Path(json.loads(f.read_text())["exe"]).name for f in every.glob("*.json")}
    assert exes >= {"cat", "stdin_worker"}, exes  # a script: every process runs the policy
    r = run_program(CLI + ["run", "--policy", "callsite", "--program", str(worker),
                           "--stats-json", str(only / "%p.json"), "--", str(script), str(numbers)])
    assert r.returncode == 0 and b"launcher done" in r.stdout, r.stderr.decode()
    stats = [json.loads(f.read_text()) for f in only.glob("*.json")]
    assert len(stats) == 1 and same_file(stats[0]["exe"], str(worker)), stats
    assert stats[0]["cpu_s"] >= 0 and sum(p["objects"] for p in stats[0]["pools"]) >= CELLS - 100  # the first 100 are counted, not pooled
    r = run_program(CLI + ["run", "--program", str(tmp_path / "missing"), "--", str(script), str(numbers)])
    assert r.returncode == 2 and b"--program" in r.stderr and b"no such file" in r.stderr
    r = run_program(CLI + ["run", "--program", "cc1plus-not-in-path", "--", str(script), str(numbers)])
    assert r.returncode == 2 and b"not found in PATH; give the executable's path" in r.stderr


def test_simulate_reports_the_binary_not_the_shell(build_dir, runtime_lib, tmp_path):
    worker, numbers, script = _setup(build_dir, tmp_path)
    via, direct = tmp_path / "via.json", tmp_path / "direct.json"
    r = run_program(CLI + ["simulate", "--json", str(via), "--", str(script), str(numbers)], timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    r = run_program(CLI + ["simulate", "--json", str(direct), "--stdin", str(numbers), "--", str(worker), "list"],
                    timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    a, b = json.loads(via.read_text())["instructions"], json.loads(direct.read_text())["instructions"]
    assert abs(a - b) / b < 0.05, (a, b)


def test_simulate_program_follows_the_command_to_it_and_places_there(build_dir, runtime_lib, tmp_path):
    """simulate --program EXE: valgrind follows the script's processes, the runtime places in
    EXE alone, and the result is that of the busiest process that ran EXE (here it runs
    twice); an EXE no process ran is an error that names the ones that did."""
    worker, numbers, script = _setup(build_dir, tmp_path)
    js = tmp_path / "w.json"
    r = run_program(CLI + ["simulate", "--policy", "callsite", "--program", str(worker), "--json", str(js), "--",
                           str(script), str(numbers), "twice"], timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads(js.read_text())
    assert same_file(doc["exe"], str(worker)) and same_file(doc["target"], str(worker))
    assert any(p["pool"] >= 0 and p["misses"][0] > 0 for p in doc["pools"]), doc["pools"]  # placed in the worker
    assert b"process: " in r.stdout and b"launcher done" in r.stdout
    r = run_program(CLI + ["simulate", "--program", "/bin/true", "--", str(script), str(numbers)], timeout=300)
    assert r.returncode == 2 and b"no process of the command ran /bin/true" in r.stderr, r.stderr.decode()
    assert b"stdin_worker" in r.stderr


def test_optimize_on_a_script_profiles_and_places_its_binary(build_dir, runtime_lib, tmp_path):
    worker, numbers, script = _setup(build_dir, tmp_path)
    out = tmp_path / "o"
    r = run_program(CLI + ["optimize", "--allocator", "glibc,jemalloc", "--strategies", "callsite,halo",
                           "--race-rounds", "1", "--runs", "5", "--budget", "90", "--no-report", "-o", str(out), "--",
                           str(script), str(numbers)], timeout=400)
    assert r.returncode == 0, r.stderr.decode()
    assert b"the work is not done by launch.sh itself" in r.stderr
    doc = json.loads((out / "optimize.json").read_text())
    assert same_file(doc["target"], str(worker)) and "--program" in doc["command"]
    assert same_file(read_profile(Path(doc["profile"])).header["exe"], str(worker))
    assert "halo" in doc["plans"]
    rec = doc["recommendation"]
    if rec["kind"] == "strategy":
        assert same_file(rec["env"]["HEAPLAYOUT_PROGRAM"], str(worker)) and "--program" in rec["command"]
    if rec["bench_command"]:
        assert "--program" in rec["bench_command"]


def test_unprofiled_processes_note():
    c = Census([Process(1, "/srv/app", 0.1), Process(2, "/srv/app", 2.0), Process(3, "/srv/app", 2.0)], "/srv/app")
    note = unprofiled_processes(c, "/srv/app", 1)
    assert note is not None and note.startswith("3 processes ran app") and "holds 1" in note and "49%" in note
    assert unprofiled_processes(c, "/srv/app", 3) is None
    assert unprofiled_processes(Census([Process(1, "/srv/app", 1.0)], "/srv/app"), "/srv/app", 1) is None


def test_optimize_profiles_forked_workers(build_dir, runtime_lib, tmp_path):
    """The work is in two children forked without exec: the census sees three processes of
    the program, so the profile follows them (hlprof writes one per process) and merges the
    three; nothing is left unprofiled, and the plan places the children's cells."""
    worker = build_dir / "tests" / "commands" / "fork_worker"
    out = tmp_path / "o"
    r = run_program(CLI + ["optimize", "--allocator", "glibc", "--strategies", "halo", "--race-rounds", "1",
                           "--runs", "5", "--budget", "60", "--no-report", "-o", str(out), "--", str(worker), "2",
                           "100000"], timeout=400)
    assert r.returncode == 0, r.stderr.decode()
    doc = json.loads((out / "optimize.json").read_text())
    assert doc["target"] is None  # the program's own executable does the work
    assert not any("processes ran fork_worker" in n for n in doc["notes"]), doc["notes"]
    prof = read_profile(Path(doc["profile"]))
    assert int(prof.header["merged_runs"]) == 3
    cells = max(prof.contexts.values(), key=lambda c: c.loads)
    assert cells.objects == 200000 and cells.loads >= 2 * 20 * 100000  # both children's lists and walks


def test_a_census_past_its_time_kills_the_whole_tree(tmp_path):
    """The command is killed with its children: a launcher's child must not run on beside
    the measurements that follow."""
    marker = tmp_path / "still-running"
    script = tmp_path / "slow.sh"
    script.write_text(f'#!/bin/sh\nsh -c "sleep 3; touch {marker}"\necho done\n')
    script.chmod(0o755)
    c = take_census([str(script)], timeout=0.5)
    assert c.processes == []
    import time
    time.sleep(4)
    assert not marker.exists()


def test_profile_through_an_elf_launcher_by_default(build_dir, runtime_lib, tmp_path):
    """`nice` (an ELF program that execs its argument) is not what allocates: the default
    census profiles the worker; --program self profiles the command as it was asked."""
    worker, numbers, _ = _setup(build_dir, tmp_path)
    prof = tmp_path / "nice.prof"
    r = run_program(CLI + ["profile", "-o", str(prof), "--stdin", str(numbers), "--", "nice", "-n", "0", str(worker),
                           "list"], timeout=300)
    assert r.returncode == 0 and b"count 100000" in r.stdout, r.stderr.decode()
    assert b"profiling " + str(worker).encode() in r.stderr
    assert same_file(read_profile(prof).header["exe"], str(worker))
    r = run_program(CLI + ["profile", "--program", "self", "-o", str(prof), "--stdin", str(numbers), "--", "nice", "-n",
                           "0", str(worker), "list"], timeout=300)
    assert r.returncode == 0 and b"CPU time by executable" not in r.stderr, r.stderr.decode()
    assert Path(read_profile(prof).header["exe"]).name == "nice" or not read_profile(prof).complete


def test_an_interrupted_census_leaves_no_process_behind(runtime_lib, tmp_path):
    """The census runs the command in a session of its own (so that a timeout kills the whole
    tree); Ctrl-C reaches only heaplayout's group, and the command ran on, orphaned."""
    import signal
    import subprocess
    import time
    marker = "37.7331"  # a sleep no other test runs
    proc = subprocess.Popen([sys.executable, "-m", "heaplayout.cli", "profile", "-o", str(tmp_path / "p.prof"),
                             "--", "sleep", marker], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # until the census has started the command
        if subprocess.run(["pgrep", "-f", f"^sleep {marker}"], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the census never started the command")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) in (130, -signal.SIGINT)
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", f"^sleep {marker}"], capture_output=True)
    assert left.returncode != 0, left.stdout
