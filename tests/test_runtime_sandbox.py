"""A program under a seccomp filter runs under the runtime as it runs alone.

dpa's shape sampling reads objects of the allocator underneath with process_vm_readv, a
system call the program never makes itself; a hardened program that forbids it (as
systemd's SystemCallFilter=~@debug does) was killed with SIGSYS under dpa. The reads stop
once a filter may be in force: installed through prctl or syscall, or inherited across
exec (runtime/src/sandbox.c)."""

from __future__ import annotations

import signal
import subprocess

import pytest

from conftest import run_program
from heaplayout.runtime_env import RuntimeConfig, allocator_env, runtime_env

SECCOMP_C = r"""
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
struct node { struct node *next; long v; char pad[16]; };
/* argv[1]: how to install the filter (prctl, syscall, none); then, optionally, a program
 * to exec under it */
int main(int argc, char **argv) {
  struct sock_filter f[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ptrace, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {sizeof f / sizeof *f, f};
  if (strcmp(argv[1], "none") != 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return 2;
  if (strcmp(argv[1], "prctl") == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) return 3;
  if (strcmp(argv[1], "syscall") == 0 && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) return 4;
  if (argc > 2) {
    execv(argv[2], argv + 2);
    return 127;
  }
  long sum = 0;
  for (int round = 0; round < 50; round++) {
    struct node *head = NULL;
    for (int i = 0; i < 1000; i++) {
      struct node *n = malloc(sizeof *n);
      n->next = head;
      n->v = i;
      head = n;
    }
    while (head) { struct node *n = head->next; sum += head->v; free(head); head = n; }
  }
  printf("sum %ld\n", sum);
  return 0;
}
"""


@pytest.fixture(scope="module")
def seccomp_prog(tmp_path_factory):
    d = tmp_path_factory.mktemp("seccomp")
    src = d / "seccomp.c"
    src.write_text(SECCOMP_C)
    exe = d / "seccomp"
    subprocess.run(["gcc", "-O1", str(src), "-o", str(exe)], check=True)
    return str(exe)


@pytest.mark.parametrize("allocator", ["glibc", "jemalloc"])
@pytest.mark.parametrize("how", ["prctl", "syscall", "inherited"])
def test_a_program_that_forbids_process_vm_readv_runs_under_dpa(runtime_lib, seccomp_prog, allocator, how):
    # inherited: the filter is installed by a launcher that is not under the runtime
    argv = [seccomp_prog, "syscall", seccomp_prog, "none"] if how == "inherited" else [seccomp_prog, how]
    alone = run_program(argv, env_extra=allocator_env(allocator))
    assert alone.returncode == 0 and alone.stdout == b"sum 24975000\n", alone
    env = runtime_env(RuntimeConfig(policy="dpa", allocator=allocator))
    if how == "inherited":
        env["HEAPLAYOUT_PROGRAM"] = seccomp_prog  # the same executable: the launcher is optimized too
    ours = run_program(argv, env_extra=env)
    assert ours.returncode != -signal.SIGSYS, "killed by the seccomp filter"
    assert ours.returncode == 0 and ours.stdout == alone.stdout and ours.stderr == b"", ours


def test_without_a_filter_dpa_still_samples_the_allocator_s_objects(runtime_lib, seccomp_prog, tmp_path):
    """The reads stop only under a filter: a plain run samples objects while they are counted."""
    import json

    def samples(argv):
        stats = tmp_path / "s.json"
        env = {**runtime_env(RuntimeConfig(policy="dpa")), "HEAPLAYOUT_STATS_JSON": str(stats)}
        r = run_program(argv, env_extra=env)
        assert r.returncode == 0, r.stderr.decode()
        return json.loads(stats.read_text())["dpa"]["samples"]

    assert samples([seccomp_prog, "none"]) > samples([seccomp_prog, "prctl"])
