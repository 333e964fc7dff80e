"""Edge cases of the allocation API found by probing the runtime as a new user would: each
program prints what the calls returned, and the run under the runtime must print what
the allocator alone prints."""

from __future__ import annotations

import subprocess
from pathlib import Path

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


# glibc exports its allocator under a second set of names, __libc_malloc, __libc_free and
# the rest, and programs pair them with the plain ones: a malloc wrapper in the executable
# over __libc_malloc/__libc_free (the old malloc-hook idiom), which then frees what
# memalign, or a library's posix_memalign, returned; or a malloc'd object released with
# __libc_free. The runtime did not define those names, so libc's __libc_free got a pooled
# object and the program aborted with "free(): invalid pointer", where glibc alone (and
# mimalloc or tcmalloc preloaded, which define them) runs it fine. Found by a probe.
LIBC_NAMES_C = r"""
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern void *__libc_malloc(size_t); extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t); extern void *__libc_realloc(void *, size_t);
#ifdef WRAP /* the executable's own malloc family, over glibc's */
void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *calloc(size_t a, size_t b) { return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
#endif
int main(void) {
  long sum = 0;
  for (int i = 0; i < 500; i++) {
    void *p = NULL;
    if (posix_memalign(&p, 16, 64) != 0) return 2;
    void *q = aligned_alloc(16, 48), *r = memalign(16, 32);
    memset(p, 1, 64); memset(q, 2, 48); memset(r, 3, 32);
    free(p); free(q); free(r);
    char *a = malloc(40); memset(a, 4, 40); sum += a[39]; __libc_free(a);
    char *b = __libc_malloc(40); memset(b, 5, 40); sum += b[39]; free(b);
    char *c = malloc(24); strcpy(c, "grown"); c = __libc_realloc(c, 100); sum += strlen(c); free(c);
    char *d = calloc(3, 16); sum += d[47]; __libc_free(d);
  }
  printf("sum %ld\n", sum);
  return 0;
}
"""


@pytest.mark.parametrize("wrap", [False, True], ids=["libc-names", "exe-wraps-malloc"])
@pytest.mark.parametrize("allocator", ["glibc", "mimalloc"])
@pytest.mark.parametrize("policy", ["callsite", "dpa"])
def test_glibc_libc_names_take_back_pooled_objects(runtime_lib, tmp_path, wrap, allocator, policy):
    src = tmp_path / "libc_names.c"
    src.write_text(LIBC_NAMES_C)
    exe = tmp_path / "libc_names"
    subprocess.run(["gcc", "-O1", "-fno-builtin", *(["-DWRAP"] if wrap else []), str(src), "-o", str(exe)],
                   check=True)
    alone = run_program([str(exe)])
    assert alone.returncode == 0 and alone.stdout == b"sum 7000\n", alone
    env = runtime_env(RuntimeConfig(policy=policy, allocator=allocator))
    env["HEAPLAYOUT_MIN_OBJECTS"] = "0"
    ours = run_program([str(exe)], env_extra=env)
    assert ours.returncode == 0, ours.stderr.decode()
    assert ours.stdout == alone.stdout
    assert ours.stderr == b""


# glibc's libc_malloc_debug.so (MALLOC_CHECK_) defines malloc over __libc_malloc: preloaded
# after the runtime, as `heaplayout run` keeps a user's LD_PRELOAD, our malloc forwards to
# its malloc, which calls __libc_malloc. That name must lead down to libc, never back into
# our malloc (an endless recursion).
def test_libc_malloc_debug_below_the_runtime(runtime_lib, tmp_path):
    debug = Path("/lib/x86_64-linux-gnu/libc_malloc_debug.so.0")
    if not debug.exists():
        pytest.skip("no libc_malloc_debug.so.0")
    src = tmp_path / "plain.c"
    src.write_text(r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
  long sum = 0;
  for (int i = 0; i < 2000; i++) { char *p = malloc(16 + i % 100); memset(p, 1, 16); sum += p[3]; p = realloc(p, 300); free(p); }
  printf("sum %ld\n", sum);
  return 0;
}
""")
    exe = tmp_path / "plain"
    subprocess.run(["gcc", "-O1", str(src), "-o", str(exe)], check=True)
    for policy in ("off", "callsite", "dpa"):
        env = runtime_env(RuntimeConfig(policy=policy))
        env["LD_PRELOAD"] += f":{debug}"
        env["MALLOC_CHECK_"] = "3"
        env["HEAPLAYOUT_MIN_OBJECTS"] = "0"
        ours = run_program([str(exe)], env_extra=env, timeout=60)
        assert ours.returncode == 0, (policy, ours.returncode, ours.stderr.decode()[-500:])
        assert ours.stdout == b"sum 2000\n"
