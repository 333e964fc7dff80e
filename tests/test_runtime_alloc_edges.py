"""Edge cases of the allocation API found by probing the runtime as a new user would: each
program prints what the calls returned, and the run under the runtime must print what
the allocator alone prints."""

from __future__ import annotations

import subprocess

import pytest

from conftest import run_program
from heaplayout.runtime_env import RuntimeConfig, allocator_env, runtime_env

# memalign and friends with an alignment of at most 16 are placed in the pools, after the
# size is rounded up to 16; a size within 15 of SIZE_MAX wrapped to 0 there, and the
# program got a 16-byte object for a request of 2^64 - 1 bytes (the site pooled once it
# had made its first objects: a loop of 200 calls, as with the default --min-objects).
HUGE_ALIGNED_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  static const size_t sizes[] = {SIZE_MAX, SIZE_MAX - 8, SIZE_MAX - 15};
  int got = 0;
  for (int r = 0; r < 200; r++)
    for (int k = 0; k < 3; k++) {
      size_t s = sizes[k];
      void *p = (void *)1;
      errno = 0;
      int rc = posix_memalign(&p, 16, s);
      if (rc == 0) { got++; free(p); }
      else if (r == 0) printf("posix_memalign(16, %zx) = %d\n", s, rc);
      errno = 0;
      if ((p = memalign(16, s)) != NULL) { got++; free(p); }
      else if (r == 0) printf("memalign(16, %zx) = NULL, errno %d\n", s, errno);
      if ((p = memalign(12, s)) != NULL) { got++; free(p); }
      if ((p = aligned_alloc(16, s)) != NULL) { got++; free(p); }
      else if (r == 0) printf("aligned_alloc(16, %zx) = NULL, errno %d\n", s, errno);
    }
  printf("%d huge aligned requests served\n", got);
  return 0;
}
"""


@pytest.mark.parametrize("allocator", ["glibc", "jemalloc"])
@pytest.mark.parametrize("policy,min_objects", [("callsite", "0"), ("callsite", "100"), ("dpa", "0")])
def test_a_huge_aligned_request_fails_as_it_does_without_the_runtime(runtime_lib, tmp_path, allocator,
                                                                    policy, min_objects):
    src = tmp_path / "huge_aligned.c"
    src.write_text(HUGE_ALIGNED_C)
    exe = tmp_path / "huge_aligned"
    subprocess.run(["gcc", "-O1", "-fno-builtin", "-Wno-alloc-size-larger-than", str(src), "-o", str(exe)],
                   check=True)
    alone = run_program([str(exe)], env_extra=allocator_env(allocator))
    assert alone.returncode == 0 and b"0 huge aligned requests served" in alone.stdout, alone.stdout
    env = runtime_env(RuntimeConfig(policy=policy, allocator=allocator))
    env["HEAPLAYOUT_MIN_OBJECTS"] = min_objects
    ours = run_program([str(exe)], env_extra=env)
    assert ours.returncode == 0, ours.stderr.decode()
    assert ours.stdout == alone.stdout, ours.stdout.decode()
    assert ours.stderr == b""
