/* Microbenchmark: the cost of one malloc/free pair of a fixed small size, from one call site.
 *
 *   malloc_pair [--pairs N] [--size BYTES] [--window K]
 *
 * --window 0 (default): N back-to-back malloc/free pairs (the allocator's best case: the same
 *   block comes back every time).
 * --window K: a ring of K live objects; each step allocates into the next slot and frees the
 *   object it replaces (realistic reuse: K objects live, FIFO order).
 * Every object gets one byte written so the pair cannot be optimized away (the file is built
 * with -fno-builtin-malloc/-free too). Prints one line: "ns_per_pair <float>" plus the settings.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* noinline: a single, stable call site for malloc (what the callsite policy keys on) */
__attribute__((noinline)) static void *site_alloc(size_t size) { return malloc(size); }

static void usage(const char *prog) {
  fprintf(stderr, "usage: %s [--pairs N] [--size BYTES] [--window K]\n", prog);
  exit(2);
}

int main(int argc, char **argv) {
  unsigned long long pairs = 10000000ULL;
  size_t size = 64, window = 0;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) usage(argv[0]);
    if (!strcmp(argv[i], "--pairs")) pairs = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--size")) size = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--window")) window = strtoull(argv[++i], NULL, 10);
    else usage(argv[0]);
  }
  if (pairs == 0 || size == 0) usage(argv[0]);
  volatile uint8_t sink = 0;
  double t0, t1;
  if (window == 0) {
    /* warm-up (also makes the call site hot enough to be pooled before timing starts) */
    for (int i = 0; i < 10000; i++) {
      uint8_t *p = site_alloc(size);
      p[0] = (uint8_t)i;
      sink += p[0];
      free(p);
    }
    t0 = now_ns();
    for (unsigned long long i = 0; i < pairs; i++) {
      uint8_t *p = site_alloc(size);
      p[0] = (uint8_t)i;
      sink += p[0];
      free(p);
    }
    t1 = now_ns();
  } else {
    uint8_t **ring = calloc(window, sizeof *ring);
    if (!ring) return 1;
    for (size_t k = 0; k < window; k++) {
      ring[k] = site_alloc(size);
      ring[k][0] = (uint8_t)k;
    }
    t0 = now_ns();
    size_t k = 0;
    for (unsigned long long i = 0; i < pairs; i++) {
      uint8_t *old = ring[k];
      sink += old[0];
      free(old);
      uint8_t *p = site_alloc(size);
      p[0] = (uint8_t)i;
      ring[k] = p;
      if (++k == window) k = 0;
    }
    t1 = now_ns();
    for (size_t j = 0; j < window; j++) free(ring[j]);
    free(ring);
  }
  printf("ns_per_pair %.2f pairs %llu size %zu window %zu\n", (t1 - t0) / (double)pairs, pairs, size, window);
  (void)sink;
  return 0;
}
