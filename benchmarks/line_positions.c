/* Where an allocator puts every k-th of n same-size objects within a 4 KiB page: the number
 * of distinct 64-byte line positions (address mod 4096, in lines) they occupy, out of 64.
 * Few positions mean few cache sets for a program whose hot objects are every k-th
 * allocated (prefix_hot: 64-byte records, every 16th hot).
 *   line_positions [n] [size] [k]     (defaults 1000000 64 16)
 * Run under LD_PRELOAD=<allocator> to compare allocators. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  size_t size = argc > 2 ? (size_t)atol(argv[2]) : 64;
  long k = argc > 3 ? atol(argv[3]) : 16;
  if (n < 1 || size < 1 || k < 1) {
    fprintf(stderr, "usage: line_positions [n] [size] [k]\n");
    return 2;
  }
  long count[64] = {0};
  char *prev = NULL;
  long breaks = 0;
  for (long i = 0; i < n; i++) {
    char *p = malloc(size);
    if (!p) return 1;
    if (prev && (size_t)(p - prev) != size) breaks++; /* not packed right after the previous */
    prev = p;
    if (i % k == k / 3) count[((uintptr_t)p % 4096) / 64]++;
  }
  int used = 0;
  for (int i = 0; i < 64; i++) used += count[i] != 0;
  printf("%ld objects of %zu bytes: every %ld-th on %d of 64 line positions; %ld not right after the previous\n",
         n, size, k, used, breaks);
  return 0; /* objects are not freed: the process ends */
}
