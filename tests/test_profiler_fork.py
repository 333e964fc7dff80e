"""Workers forked without exec (a pre-forking server): hlprof writes a profile per process
when its output name has %p, a worker's profile counts the objects it inherited as its own
and only its own accesses, and `heaplayout profile` follows them and merges the profiles."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heaplayout import paths
from heaplayout.profile_reader import read_profile

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

N = 20000  # records in the parent's table; each worker walks them 10 times, frees N/4
CLI = [sys.executable, "-m", "heaplayout.cli"]


def _server(build_dir: Path) -> Path:
    prog = build_dir / "tests" / "commands" / "prefork_server"
    if not prog.exists():
        pytest.fail(f"{prog} not built: run scripts/build.sh")
    return prog


def _hlprof(build_dir: Path, out: str, *opts: str, argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "VALGRIND_LIB": str(build_dir / "profiler" / "lib")}
    env.pop("LD_PRELOAD", None)
    return subprocess.run(["valgrind", "-q", "--tool=hlprof", f"--out-file={out}", *opts, *argv], env=env,
                          capture_output=True, timeout=300)


def _table(prof, objects: int = N) -> object:
    """The context of the parent's table records: the one with `objects` objects (a worker's
    own records are N/2, the stdio buffer one)."""
    found = [c for c in prof.contexts.values() if c.objects == objects]
    assert len(found) == 1, [(c.id, c.objects) for c in prof.contexts.values()]
    return found[0]


def test_each_worker_writes_its_own_profile(build_dir, tmp_path):
    r = _hlprof(build_dir, str(tmp_path / "prof.%p"), argv=[str(_server(build_dir)), "2", str(N)])
    assert r.returncode == 0, r.stderr.decode()
    files = sorted(tmp_path.glob("prof.*"))
    assert len(files) == 3, files
    profs = [read_profile(f) for f in files]  # each complete, its checksum and records consistent
    assert all(p.complete for p in profs)
    parent = [p for p in profs if "forked_at" not in p.header]
    workers = [p for p in profs if "forked_at" in p.header]
    assert len(parent) == 1 and len(workers) == 2
    assert len({p.header["pid"] for p in profs}) == 3
    t = _table(parent[0])
    assert (t.loads, t.stores) == (3 * N, 3 * N)  # it stored the records, walked them once at the end
    for w in workers:
        t = _table(w)
        # inherited: N objects with no stores of the worker's; its loads: 10 walks of N, N/4
        # frees following next, one walk of the 3N/4 left
        assert (t.objects, t.max_live, t.stores) == (N, N, 0)
        assert t.loads == 3 * N * 10 + N // 4 + 3 * (N - N // 4)
        assert int(w.header["forked_at"]) == 3 * N  # the parent's accesses before the fork
        own = [c for c in w.contexts.values() if c.objects == N // 2]
        assert len(own) == 1 and own[0].stores == 3 * (N // 2)
        assert w.summary["heap_accesses"] < parent[0].summary["heap_accesses"] + t.loads + own[0].loads + 100


def test_no_profile_from_workers_without_pid_in_the_name_or_when_asked(build_dir, tmp_path):
    prog = [str(_server(build_dir)), "2", "2000"]
    r = _hlprof(build_dir, str(tmp_path / "one.prof"), argv=prog)
    assert r.returncode == 0 and read_profile(tmp_path / "one.prof").complete
    assert "forked_at" not in read_profile(tmp_path / "one.prof").header  # the parent's, not a worker's
    r = _hlprof(build_dir, str(tmp_path / "p.%p"), "--follow-forks=no", argv=prog)
    assert r.returncode == 0 and len(list(tmp_path.glob("p.*"))) == 1


def test_profile_follows_forked_workers_and_merges(build_dir, tmp_path):
    out = tmp_path / "m.prof"
    env = {**os.environ, "PYTHONPATH": str(paths.REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("LD_PRELOAD", None)
    r = subprocess.run(CLI + ["profile", "-o", str(out), "--", str(_server(build_dir)), "2", str(N)], env=env,
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    assert b"3 processes ran prefork_server (the command and workers it forked)" in r.stderr
    assert r.stdout.count(b"worker") == 2 and b"parent sum" in r.stdout  # the program's output, once
    p = read_profile(out)
    assert p.complete and int(p.header.get("merged_runs", 1)) == 3
    t = _table(p, 3 * N)  # the parent's records, and each worker's inherited copies of them
    assert t.loads == 3 * N + 2 * (3 * N * 10 + N // 4 + 3 * (N - N // 4))


def test_profile_into_a_missing_directory_is_a_clear_error(build_dir, tmp_path):
    """The profile's directory also holds the per-process files while the program runs: a
    missing one is refused before the run, with one line."""
    env = {**os.environ, "PYTHONPATH": str(paths.REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run(CLI + ["profile", "-o", str(tmp_path / "no" / "such" / "p.prof"), "--", "/bin/true"],
                       env=env, capture_output=True, timeout=60)
    assert r.returncode == 2 and b"cannot write the profile into" in r.stderr and b"Traceback" not in r.stderr
