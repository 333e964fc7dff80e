/* A pool the dpa policy should give back (tests/test_dpa.py): one context (one APCC:
 * item's malloc called from fill) first fills its pool with small objects, of which nearly
 * all are freed, then asks for larger ones. The freed slots are of the wrong size for the
 * new requests, so the pool grows while most of its memory is free: live/capacity far
 * below 1/4, where the allocator underneath would have reused the freed memory. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void *item(size_t n) {
  void *p = malloc(n);
  if (p == NULL) abort();
  return p;
}

/* the one call site of both phases */
NOINLINE void fill(void **out, int n, size_t size) {
  for (int i = 0; i < n; i++) {
    out[i] = item(size);
    *(int *)out[i] = i;
  }
}

int main(int argc, char **argv) {
  int small = argc > 1 ? atoi(argv[1]) : 200000, large = small / 4;
  void **keep = malloc(sizeof(void *) * (size_t)small), **more = malloc(sizeof(void *) * (size_t)large);
  unsigned long sum = 0;
  fill(keep, small, 16);
  for (int i = 0; i < small; i++)
    if (i % 64) free(keep[i]);
  fill(more, large, 120);
  for (int i = 0; i < large; i++) sum += (unsigned long)*(int *)more[i];
  for (int i = 0; i < small; i += 64) sum += (unsigned long)*(int *)keep[i];
  for (int i = 0; i < large; i++) free(more[i]);
  for (int i = 0; i < small; i += 64) free(keep[i]);
  free(more);
  free(keep);
  printf("sum %lu\n", sum);
  return 0;
}
