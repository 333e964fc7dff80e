/* An LD_PRELOAD shim that writes every malloc-family call of a native run to the file named
 * by HL_ALLOC_LOG, one line each: "m SIZE PTR" (malloc, calloc, memalign family), "r SIZE PTR
 * OLD" (realloc), "f PTR". benchmarks/report_model/fidelity.py compares these addresses of
 * the allocator alone with the addresses the report's model gives the profile's objects. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static int log_fd = -1;
static __thread int busy; /* snprintf may allocate: do not log our own calls */

static void note(char op, size_t size, void *p, void *old) {
  if (busy) return;
  busy = 1;
  if (log_fd == -1) {
    const char *path = getenv("HL_ALLOC_LOG");
    log_fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644) : -2;
  }
  if (log_fd >= 0) {
    char line[96];
    int n = snprintf(line, sizeof line, "%c %zu %lx %lx\n", op, size, (unsigned long)p, (unsigned long)old);
    if (write(log_fd, line, (size_t)n) != n) log_fd = -2;
  }
  busy = 0;
}

void *malloc(size_t n) { void *p = __libc_malloc(n); note('m', n, p, 0); return p; }
void *calloc(size_t k, size_t n) { void *p = __libc_calloc(k, n); note('m', k * n, p, 0); return p; }
void *realloc(void *old, size_t n) { void *p = __libc_realloc(old, n); note('r', n, p, old); return p; }
void *memalign(size_t a, size_t n) { void *p = __libc_memalign(a, n); note('m', n, p, 0); return p; }
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
  void *p = memalign(a, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void free(void *p) { if (p) note('f', 0, p, 0); __libc_free(p); }
