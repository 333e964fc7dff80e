/* Cost of identifying an allocation under the plan policy.
 *
 *   ident_cost direct N   N malloc/free pairs from a site decided by its return address
 *   ident_cost deep N     N pairs from a site whose rule needs 4 frames (a chain of calls)
 *
 * Prints ns per pair. benchmarks/run_ident_bench.py writes the plans (from this binary's
 * disassembly) and compares against the callsite and off policies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory") /* no tail calls, no elision */

NOINLINE void *site_direct(size_t n) {
  void *p = malloc(n);
  KEEP(p);
  return p;
}
NOINLINE void *deep1(size_t n) {
  void *p = malloc(n);
  KEEP(p);
  return p;
}
NOINLINE void *deep2(size_t n) {
  void *p = deep1(n);
  KEEP(p);
  return p;
}
NOINLINE void *deep3(size_t n) {
  void *p = deep2(n);
  KEEP(p);
  return p;
}
NOINLINE void *deep4(size_t n) {
  void *p = deep3(n);
  KEEP(p);
  return p;
}

int main(int argc, char **argv) {
  if (argc < 2 || (strcmp(argv[1], "direct") && strcmp(argv[1], "deep"))) {
    fprintf(stderr, "usage: %s direct|deep [pairs]\n", argv[0]);
    return 2;
  }
  int deep = strcmp(argv[1], "deep") == 0;
  long n = argc > 2 ? atol(argv[2]) : 10000000;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < n; i++) {
    char *p = deep ? deep4(64) : site_direct(64);
    p[0] = (char)i;
    free(p);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
  printf("%s %.2f ns/pair\n", argv[1], ns);
  return 0;
}
