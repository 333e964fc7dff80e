"""`heaplayout run`: environment, exit codes, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import run_program

CLI = [sys.executable, "-m", "heaplayout.cli"]


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return run_program(CLI + list(args), **kw)


def test_print_env_lists_assignments(runtime_lib):
    r = cli("run", "--print-env", "--policy", "callsite", "--min-objects", "50", "--spare-chunks", "3",
            "--allocator", "mimalloc")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    env = dict(line.split("=", 1) for line in lines)
    assert all(" " not in line for line in lines)
    assert env["HEAPLAYOUT_POLICY"] == "callsite" and env["HEAPLAYOUT_MIN_OBJECTS"] == "50"
    assert env["HEAPLAYOUT_SPARE_CHUNKS"] == "3"
    preload = env["LD_PRELOAD"].split(":")
    assert preload[0] == str(runtime_lib) and preload[1].endswith("libmimalloc.so.2")


def test_print_env_drives_a_run(build_dir, tmp_path):
    """The printed assignments alone make a program run under the runtime."""
    r = cli("run", "--print-env", "--policy", "callsite", "--min-objects", "0")
    env = dict(line.split("=", 1) for line in r.stdout.decode().splitlines())
    env["HEAPLAYOUT_STATS_JSON"] = str(tmp_path / "s.json")
    t = run_program([str(build_dir / "tests" / "runtime" / "engine_test"), "reuse"], env_extra=env)
    assert t.returncode == 0, t.stderr
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["policy"] == "callsite" and any(p["objects"] > 0 for p in stats["pools"])


def test_exit_code_and_output_pass_through(runtime_lib):
    r = cli("run", "--policy", "callsite", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
    assert r.returncode == 7
    assert r.stdout == b"out\n" and r.stderr == b"err\n"


def test_signal_passes_through(runtime_lib):
    r = cli("run", "--", "sh", "-c", "kill -SEGV $$")
    assert r.returncode == -11


def test_stats_flag_prints_table(runtime_lib, build_dir, tmp_path):
    out = tmp_path / "stats.json"
    exe = str(build_dir / "tests" / "runtime" / "engine_test")
    r = cli("run", "--policy", "callsite", "--min-objects", "10", "--stats", "--stats-json", str(out), "--",
            exe, "pooling_threshold")
    assert r.returncode == 0
    assert b"policy callsite, 2 pools" in r.stderr
    assert json.loads(out.read_text())["policy"] == "callsite"


def test_missing_program_is_a_clear_error(runtime_lib):
    r = cli("run", "--", "/no/such/program")
    assert r.returncode == 127
    assert b"program not found: /no/such/program" in r.stderr


# Found by a probe: these ended in a Python traceback. An executable text file without a
# #! line is run with /bin/sh by execvp(3), env(1) and the shells; os.execvpe refuses it
# (ENOEXEC). Any other refusal of the exec (here a symbolic link loop) gets one line and the
# shell's status 126.
def test_a_script_without_a_shebang_runs_as_the_shell_runs_it(runtime_lib, tmp_path):
    script = tmp_path / "noshebang"
    script.write_text('echo "args: $*"; exit 5\n')
    script.chmod(0o755)
    r = cli("run", "--policy", "dpa", "--", str(script), "a b", "c")
    assert r.returncode == 5, r.stderr.decode()
    assert r.stdout == b"args: a b c\n" and r.stderr == b""


def test_an_exec_the_kernel_refuses_is_one_line(runtime_lib, tmp_path):
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    r = cli("run", "--", str(tmp_path / "loop1"))
    assert r.returncode == 126
    assert r.stderr.decode().count("\n") == 1 and "cannot run" in r.stderr.decode(), r.stderr.decode()


def test_a_relative_stats_path_in_a_removed_directory_is_refused(runtime_lib, tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    r = subprocess.run(["sh", "-c", f'cd {gone} && rmdir {gone} && exec "$@"', "sh", *CLI, "run",
                        "--stats-json", "s.json", "--", "true"], capture_output=True)
    assert r.returncode == 2
    assert r.stderr.decode().count("\n") == 1 and "current directory no longer exists" in r.stderr.decode()


# A set-user-ID program of another user runs in secure-execution mode: the loader ignores
# LD_PRELOAD, so the runtime is not there, and --stats printed nothing without a word (found
# by a probe). It is named, and runs as it does alone.
def test_a_set_user_id_program_is_named_and_runs_as_alone(runtime_lib, tmp_path):
    import os
    import pwd
    if os.getuid() != 0:
        pytest.skip("making a set-user-ID file of another user needs root")
    if os.statvfs(tmp_path).f_flag & os.ST_NOSUID:
        pytest.skip("the temporary directory is mounted nosuid")
    src = tmp_path / "hello.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                   'int main(void) { char *p = malloc(10); puts(p ? "hello" : "none"); free(p); return 3; }\n')
    exe = tmp_path / "hello"
    subprocess.run(["gcc", str(src), "-o", str(exe)], check=True)
    os.chown(exe, pwd.getpwnam("nobody").pw_uid, -1)
    exe.chmod(0o4755)
    tmp_path.chmod(0o755)
    r = cli("run", "--stats", "--", str(exe))
    assert r.returncode == 3 and r.stdout == b"hello\n"
    assert r.stderr.decode().count("\n") == 1, r.stderr.decode()
    assert "is set-user-ID" in r.stderr.decode() and "prints no statistics" in r.stderr.decode()


def test_no_program_is_a_usage_error(runtime_lib):
    r = cli("run", "--policy", "off")
    assert r.returncode == 2 and b"no program given" in r.stderr


def test_bad_option_value_is_rejected_before_running(runtime_lib):
    r = cli("run", "--min-objects", "a b", "--", "true")
    assert r.returncode == 2 and b"without spaces" in r.stderr


def test_bad_value_reaching_the_library_runs_unoptimized(runtime_lib):
    r = cli("run", "--max-size", "huge", "--", "sh", "-c", "echo still here")
    assert r.returncode == 2 and b"--max-size 'huge' is not a number or size" in r.stderr and r.stdout == b""
    # set in the environment by hand, the library says so and runs the program unoptimized
    r = run_program(["sh", "-c", "echo still here"], env_extra={"LD_PRELOAD": str(runtime_lib),
                                                               "HEAPLAYOUT_POLICY": "callsite",
                                                               "HEAPLAYOUT_MAX_SIZE": "huge"})
    assert r.returncode == 0 and r.stdout == b"still here\n"
    assert r.stderr.count(b"HEAPLAYOUT_MAX_SIZE") >= 1 and b"unoptimized" in r.stderr


def test_static_binary_is_named_and_still_runs(runtime_lib, tmp_path):
    """LD_PRELOAD cannot reach a static executable: say so instead of printing nothing
    (issue 19, finding 10), and run it all the same with its exit code."""
    src = tmp_path / "st.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                   'int main(void){char *p = malloc(32); puts(p ? "ok" : "no"); free(p); return 3;}\n')
    exe = tmp_path / "st"
    subprocess.run(["gcc", "-static", "-O1", "-o", str(exe), str(src)], check=True)
    r = cli("run", "--stats", "--", str(exe))
    assert r.returncode == 3 and r.stdout == b"ok\n"
    assert b"statically linked" in r.stderr and b"no statistics" in r.stderr
    dyn = cli("run", "--stats", "--", "sh", "-c", "exit 0")
    assert b"statically linked" not in dyn.stderr


def _m32_works(tmp_path) -> bool:
    src = tmp_path / "probe32.c"
    src.write_text("int main(void){return 0;}\n")
    return subprocess.run(["gcc", "-m32", "-o", str(tmp_path / "probe32"), str(src)], capture_output=True).returncode == 0


def test_a_32_bit_program_is_named_and_runs_as_alone(runtime_lib, tmp_path):
    """The loader of a 32-bit program ignores the 64-bit runtime with "ERROR: ld.so: ...
    wrong ELF class" on the program's stderr, and the profiler failed with Valgrind's "failed
    to start tool": run names it and runs it without the runtime, profile refuses it (found
    by a probe)."""
    if not _m32_works(tmp_path):
        pytest.skip("gcc -m32 does not link here (gcc-multilib)")
    src = tmp_path / "p32.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n'
                   'int main(void){char *p = malloc(32); puts(p ? "ok" : "no"); free(p); return 3;}\n')
    exe = tmp_path / "p32"
    subprocess.run(["gcc", "-m32", "-O1", "-o", str(exe), str(src)], check=True)
    r = cli("run", "--", str(exe))
    assert r.returncode == 3 and r.stdout == b"ok\n"
    assert b"ld.so" not in r.stderr and b"is a 32-bit program" in r.stderr, r.stderr.decode()
    p = cli("profile", "-o", str(tmp_path / "p.prof"), "--", str(exe))
    assert p.returncode == 2 and b"is a 32-bit program" in p.stderr, p.stderr.decode()


def test_foreign_executables_are_told_apart(tmp_path):
    from heaplayout import elf

    native = tmp_path / "native"
    native.write_bytes(open(sys.executable, "rb").read(64))
    assert elf.foreign_executable(native) is None
    head = bytearray(native.read_bytes())
    head[4] = 1  # ELFCLASS32
    (tmp_path / "c32").write_bytes(bytes(head))
    assert elf.foreign_executable(tmp_path / "c32") == "a 32-bit program"
    head[4], head[18:20] = 2, (183).to_bytes(2, "little")  # aarch64
    (tmp_path / "arm").write_bytes(bytes(head))
    assert "another machine" in elf.foreign_executable(tmp_path / "arm")
    (tmp_path / "script").write_text("#!/bin/sh\n")
    assert elf.foreign_executable(tmp_path / "script") is None


def _sanitized(tmp_path, flag: str):
    src = tmp_path / "san.c"
    src.write_text('#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
                   'int main(void){char *p = malloc(32); strcpy(p, "ok"); puts(p); free(p); return 3;}\n')
    exe = tmp_path / f"san_{flag}"
    built = subprocess.run(["gcc", f"-fsanitize={flag}", "-O1", "-o", str(exe), str(src)], capture_output=True)
    if built.returncode != 0:
        import pytest
        pytest.skip(f"gcc cannot build with -fsanitize={flag} here: {built.stderr.decode()[-200:]}")
    return exe


def test_sanitizer_builds_are_named(tmp_path):
    from heaplayout import elf
    assert elf.sanitizer(_sanitized(tmp_path, "address")) == "AddressSanitizer"
    assert elf.sanitizer(_sanitized(tmp_path, "thread")) == "ThreadSanitizer"
    assert elf.sanitizer(_sanitized(tmp_path, "leak")) == "LeakSanitizer"
    assert elf.sanitizer(_sanitized(tmp_path, "undefined")) is None  # no allocator of its own
    assert elf.sanitizer(sys.executable) is None


def test_an_address_sanitizer_build_runs_unoptimized_and_is_refused_where_nothing_can_be_measured(runtime_lib, tmp_path):
    """gcc's ASan runtime is a library that must come first: with the runtime preloaded
    before it the program exited 1 ("ASan runtime does not come first"). run now runs it
    without the runtime and says so; bench, optimize and profile refuse with the reason."""
    exe = _sanitized(tmp_path, "address")
    r = cli("run", "--stats", "--allocator", "mimalloc", "--", str(exe))
    assert r.returncode == 3 and r.stdout == b"ok\n", r.stderr
    assert b"built with AddressSanitizer" in r.stderr and b"unoptimized" in r.stderr
    assert b"does not come first" not in r.stderr
    for command in (["bench", "--runs", "1", "--config", "glibc,mimalloc"], ["optimize", "--budget", "10"],
                    ["profile", "-o", str(tmp_path / "p.prof")]):
        r = cli(*command, "--", str(exe))
        assert r.returncode == 2, (command, r.stderr)
        assert b"built with AddressSanitizer" in r.stderr, (command, r.stderr)


def test_run_starts_the_program_with_sigpipe_at_its_default(runtime_lib):
    """`heaplayout run -- seq ... | head -1`: seq must die of SIGPIPE silently, as it does by
    itself, not print "write error: Broken pipe" and exit 1 (Python ignores SIGPIPE, and an
    ignored signal stays ignored across exec)."""
    r = subprocess.run(f"{sys.executable} -m heaplayout.cli run --policy callsite -- seq 1 10000000 | head -1; "
                       'echo "${PIPESTATUS[0]}"', shell=True, executable="/bin/bash", capture_output=True)
    assert r.stdout.decode().split() == ["1", "141"], (r.stdout, r.stderr)
    assert b"Broken pipe" not in r.stderr
    traps = cli("run", "--policy", "off", "--", "/bin/bash", "-c", "trap")  # dash lists no inherited ones
    assert b"PIPE" not in traps.stdout and b"XFSZ" not in traps.stdout, traps.stdout


def test_simulate_refuses_a_plan_the_runtime_would_refuse(tmp_path):
    """It ran the program unoptimized and labelled the result with the plan (exit 0)."""
    bad = tmp_path / "bad.plan"
    bad.write_text("heaplayout-plan 1\nstrategy halo\n")
    r = cli("simulate", "--plan", str(bad), "--", "true")
    assert r.returncode == 2 and b"truncated" in r.stderr, r.stderr


def test_cpu_time_in_the_statistics_is_the_program_s_alone(runtime_lib, tmp_path):
    """exec keeps a process's CPU time: `heaplayout run`'s own start-up in Python (about
    0.5 s) was counted in `cpu_s` of a program that takes 2 ms."""
    import json
    stats = tmp_path / "s.json"
    py = cli("run", "--stats-json", str(stats), "--", sys.executable, "-c", "import json, re, sqlite3")
    assert py.returncode == 0
    own = json.loads(stats.read_text())["cpu_s"]
    r = cli("run", "--stats-json", str(stats), "--", "ls", "/")
    assert r.returncode == 0
    ls = json.loads(stats.read_text())["cpu_s"]
    assert 0 <= ls < 0.05 and ls < own, (ls, own)
