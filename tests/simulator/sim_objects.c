/* A heap pattern whose attribution and oracle are known (tests/test_simulator.py).
 * N "hot" and N "cold" 64-byte objects are allocated interleaved from two call sites; only
 * the hot ones are touched until the end, then walked PASSES times; the cold ones are
 * touched once at the end. Prints the distance between consecutive hot objects, which shows
 * whose malloc served them (glibc: 2 x 80 bytes). usage: sim_objects [N] [PASSES] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { long v[8]; } obj; /* 64 bytes */

__attribute__((noinline)) static obj *alloc_hot(void) { return malloc(sizeof(obj)); }
__attribute__((noinline)) static obj *alloc_cold(void) { return malloc(sizeof(obj)); }

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000, passes = argc > 2 ? atol(argv[2]) : 10;
  obj **hot = calloc(n, sizeof *hot), **cold = calloc(n, sizeof *cold);
  for (long i = 0; i < n; i++) {
    hot[i] = alloc_hot();
    cold[i] = alloc_cold();
    hot[i]->v[0] = i;
  }
  long s = 0;
  for (long p = 0; p < passes; p++)
    for (long i = 0; i < n; i++) s += hot[i]->v[0] + hot[i]->v[7];
  for (long i = 0; i < n; i++) memset(cold[i], 1, sizeof(obj));
  printf("spacing %ld sum %ld\n", (long)((char *)hot[1] - (char *)hot[0]), s);
  for (long i = 0; i < n; i++) free(hot[i]), free(cold[i]);
  free(hot);
  free(cold);
  return 0;
}
