"""The commands' handling of file arguments and simulate's odd inputs, as a new user gives them
(probe 4): file names after options, outputs in a missing directory, malformed cache
geometries, a program killed by a signal under simulate."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import run_program
from test_profile_validation import small_profile

from heaplayout.profile_writer import write_profile

CLI = [sys.executable, "-m", "heaplayout.cli"]


def cli(*args: str, **kw):
    r = run_program(CLI + list(args), **kw)
    r.err = r.stderr.decode()
    return r


@pytest.fixture
def prof(tmp_path: Path) -> Path:
    p = tmp_path / "a.prof"
    write_profile(small_profile(), p)
    return p


def test_file_arguments_after_options(tmp_path: Path, prof: Path) -> None:
    """argparse gave the nargs='*' positional only the words before the first option:
    these natural orders failed with 'unrecognized arguments: a.prof'."""
    r = cli("profile", "show", "--top", "1", str(prof))
    assert r.returncode == 0 and b"profile of: /bin/prog" in r.stdout, r.err
    merged = tmp_path / "m.prof"
    r = cli("profile", "merge", "-o", str(merged), str(prof), str(prof))
    assert r.returncode == 0 and merged.exists(), r.err
    r = cli("profile", "merge", "--force", str(prof), str(prof), "-o", str(merged))
    assert r.returncode == 0, r.err
    plan = tmp_path / "a.plan"
    assert cli("plan", str(prof), "-o", str(plan)).returncode == 0
    r = cli("plan", "show", "--profile", str(prof), str(plan))
    assert r.returncode == 0 and b"plan format 1" in r.stdout, r.err
    r = cli("profile", "show", "--no-such-option", str(prof))  # still argparse's error
    assert r.returncode == 2 and "unrecognized arguments: --no-such-option" in r.err


@pytest.mark.parametrize("argv", [
    ("plan", "{prof}", "-o", "{missing}/p.plan"),
    ("plan", "{prof}", "-o", "{tmp}/p.plan", "--json", "{missing}/p.json"),
    ("profile", "merge", "{prof}", "{prof}", "-o", "{missing}/m.prof"),
    ("simulate", "--json", "{missing}/s.json", "--", "true"),
])
def test_output_in_a_missing_directory_is_one_line_before_the_work(tmp_path: Path, prof: Path, argv) -> None:
    """Was a traceback (plan --json, merge -o, simulate --json: the last after the whole
    simulation), or an error about 'p.plan.tmp'; plan --json also left the plan written."""
    args = [a.format(prof=prof, missing=tmp_path / "nodir", tmp=tmp_path) for a in argv]
    r = cli(*args)
    assert r.returncode == 2, r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert "no such directory" in r.err and ".tmp" not in r.err
    assert not (tmp_path / "p.plan").exists()


@pytest.mark.parametrize("opt,value", [("--L1", "32K,8"), ("--LL", "abc"), ("--dtlb", "64,4"),
                                       ("--L2", "2M,16,64,1")])
def test_simulate_malformed_geometry_is_one_clear_line(opt: str, value: str) -> None:
    """Was valgrind's 'Bad option ... Use --help' (valgrind's help) and 'hlsim wrote no result'."""
    r = cli("simulate", opt, value, "--", "true")
    assert r.returncode == 2
    assert r.err.strip().splitlines() == [r.err.strip()] and r.err.startswith(f"heaplayout simulate: {opt} {value}")
    assert "valgrind" not in r.err


def test_simulate_odd_geometry_runs(build_dir: Path) -> None:
    """A non-power-of-two LL (3M, 12 ways) is a real geometry and is simulated."""
    r = cli("simulate", "--LL", "3M,12,64", "--", "true")
    assert r.returncode == 0, r.err
    assert b"LL 3072K/12w/64B" in r.stdout


def test_simulate_of_a_program_killed_by_a_signal_says_so(build_dir: Path) -> None:
    """simulate exited 1 without a word, the counts looking like a whole run's; now it says
    which signal and exits as a shell reports it (128 + N)."""
    r = cli("simulate", "--", "sh", "-c", "kill -SEGV $$")
    assert r.returncode == 128 + 11, r.err
    assert "killed by SIGSEGV" in r.err and "Traceback" not in r.err


def test_profile_into_an_unwritable_directory_is_one_line(build_dir: Path) -> None:
    """os.access passes root on /proc; the scratch directory's mkdtemp then raised a
    traceback. The program is not run."""
    r = cli("profile", "-o", "/proc/x.prof", "--", "sh", "-c", "echo ran")
    assert r.returncode == 2 and r.stdout == b"", r.err
    assert r.err.startswith("heaplayout profile: cannot write the profile into /proc") and "Traceback" not in r.err


def test_plan_write_failure_names_the_plan_not_its_temporary(prof: Path) -> None:
    r = cli("plan", str(prof), "-o", "/proc/x.plan")
    assert r.returncode == 1 and "'/proc/x.plan'" in r.err and ".tmp" not in r.err, r.err


@pytest.mark.parametrize("levels", [("--levels", "2"), ("--cachegrind-geometry",)])
def test_simulate_refuses_an_l2_the_two_level_model_would_drop(levels) -> None:
    """With two levels the tool models L1 + LL and ignored --L2 silently."""
    r = cli("simulate", *levels, "--L2", "1M,8,64", "--", "true")
    assert r.returncode == 2 and r.err.startswith("heaplayout simulate: --L2 1M,8,64: the two-level"), r.err


def test_simulate_warns_that_piped_input_does_not_reach_the_program(build_dir: Path) -> None:
    """profile and run pass standard input through; simulate gives the program /dev/null, so
    `cat in | heaplayout simulate -- prog` simulated another run than the user's, silently."""
    r = cli("simulate", "--", "sh", "-c", "wc -c", stdin=b"12345\n")
    assert r.returncode == 0, r.err
    assert "standard input is not passed to the program" in r.err and "--stdin FILE" in r.err
    assert b"0\n" in r.stdout  # what the program read: /dev/null, as the warning says


@pytest.mark.parametrize("key,other", [("affinity_distance", "64"), ("affinity", "0"), ("depth", "4")])
def test_merge_refuses_profiles_recorded_with_different_settings(tmp_path: Path, key: str, other: str) -> None:
    """Affinity at 64 and 128 bytes summed under the first's distance, and the like, merged
    silently; --force still merges."""
    a, b = small_profile(), small_profile()
    a.header[key] = "128" if key == "affinity_distance" else ("1" if key == "affinity" else "12")
    b.header[key] = other
    write_profile(a, tmp_path / "a.prof")
    write_profile(b, tmp_path / "b.prof")
    r = cli("profile", "merge", str(tmp_path / "a.prof"), str(tmp_path / "b.prof"), "-o", str(tmp_path / "m.prof"))
    assert r.returncode == 1 and f"different {key.replace('_', '-')}" in r.err and "--force" in r.err, r.err
    assert not (tmp_path / "m.prof").exists()
    r = cli("profile", "merge", "--force", str(tmp_path / "a.prof"), str(tmp_path / "b.prof"),
            "-o", str(tmp_path / "m.prof"))
    assert r.returncode == 0, r.err


OTHER_PLAN = """heaplayout-plan 1
strategy halo
chunk_size 1048576
max_object_size 4096
recursion function
module 0 cd34 /bin/other
group 1 1 10 spans
select 1 0:0x10
end
"""


def test_report_refuses_a_plan_of_another_program(tmp_path: Path, prof: Path) -> None:
    """The page showed the plan's heatmap identical to glibc's and groups capturing nothing."""
    plan = tmp_path / "other.plan"
    plan.write_text(OTHER_PLAN)
    r = cli("report", "--profile", str(prof), "--plan", str(plan), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 2 and "tied to /bin/other" in r.err and "Traceback" not in r.err, r.err
    assert not (tmp_path / "r.html").exists()
    plan.write_text(OTHER_PLAN.replace("cd34 /bin/other", "ab12 /bin/prog"))  # the profile's own binary
    r = cli("report", "--profile", str(prof), "--plan", str(plan), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.err


@pytest.mark.parametrize("opt,value,says", [("--lines", "48,64", "'48' is not a line size"),
                                            ("--lines", "abc", "'abc' is not a line size"),
                                            ("--prefetchers", "bogus", "unknown bogus")])
def test_simulate_study_checks_its_lists(opt: str, value: str, says: str) -> None:
    """The study's runs capture valgrind's messages: a bad line size or prefetcher was only
    'hlsim wrote no result (valgrind exit 1)', and 'abc' int()'s 'invalid literal'."""
    argv = {"--lines": "64", "--prefetchers": "none"}
    argv[opt] = value
    r = cli("simulate", "--study", "--lines", argv["--lines"], "--prefetchers", argv["--prefetchers"],
            "--layouts", "glibc", "--", "true")
    assert r.returncode == 2 and r.err.startswith(f"heaplayout simulate: {opt} {value}: ") and says in r.err, r.err


def test_show_of_a_merge_of_sampled_and_full_runs_says_sampled(tmp_path: Path) -> None:
    full, sampled = small_profile(), small_profile()
    full.header["sample_period"] = "1"
    sampled.header["sample_period"] = "10"
    write_profile(full, tmp_path / "a.prof")
    write_profile(sampled, tmp_path / "b.prof")
    merged = tmp_path / "m.prof"
    assert cli("profile", "merge", str(tmp_path / "a.prof"), str(tmp_path / "b.prof"), "-o", str(merged)).returncode == 0
    r = cli("profile", "show", str(merged))
    assert r.returncode == 0 and b"SAMPLED: merged from runs of different sample periods" in r.stdout, r.stdout
