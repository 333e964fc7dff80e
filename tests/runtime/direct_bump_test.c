/* The site-direct pop's bump (runtime/src/fastpath.h, hl_site_direct_bump): a site whose
 * pool's list is empty takes fresh space in the current chunk without the full path.
 * Run by tests/test_fast_path.py.
 *
 *   direct_bump_test build N   one site allocates N objects of 64 bytes and keeps them (the
 *                              instructions per allocation are what the test bounds)
 *   direct_bump_test align N   one site allocates N objects whose sizes cycle through odd
 *                              and even multiples of 8 and keeps them: with minimum alignment
 *                              8 a 16-multiple class follows an odd-multiple one in the same
 *                              chunk, and the bump must leave that to the slow path, which
 *                              pads. Every object is filled with its own byte and checked at
 *                              the end (overlaps show), every 16-multiple size must be
 *                              16-aligned; prints "ok", the number of objects and a hash
 *                              of their offsets from the first one (the same layout gives
 *                              the same hash: the test compares the bump with the full path,
 *                              which serves every request while statistics are on).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static uint8_t *site(size_t size) {
  uint8_t *p = malloc(size);
  if (p == NULL) abort();
  return p;
}

static int build(unsigned long n) {
  uint8_t **all = calloc(n, sizeof *all);
  if (all == NULL) return 2;
  for (unsigned long i = 0; i < n; i++) {
    all[i] = site(64);
    all[i][0] = (uint8_t)i;
  }
  unsigned sum = 0;
  for (unsigned long i = 0; i < n; i++) sum += all[i][0];
  printf("built %lu sum %u\n", n, sum);
  return 0;
}

static int align(unsigned long n) {
  static const size_t cycle[] = {40, 64, 48, 40, 40, 16, 24, 56, 32};
  enum { NC = sizeof cycle / sizeof cycle[0] };
  uint8_t **all = calloc(n, sizeof *all);
  if (all == NULL) return 2;
  for (unsigned long i = 0; i < n; i++) {
    size_t size = cycle[i % NC];
    all[i] = site(size);
    if ((uintptr_t)all[i] % 8 || (size % 16 == 0 && (uintptr_t)all[i] % 16)) {
      printf("misaligned: %zu bytes at %p\n", size, (void *)all[i]);
      return 1;
    }
    memset(all[i], (int)(i & 0xff), size);
  }
  for (unsigned long i = 0; i < n; i++)
    for (size_t k = 0; k < cycle[i % NC]; k++)
      if (all[i][k] != (uint8_t)i) {
        printf("overwritten: object %lu\n", i);
        return 1;
      }
  uint64_t h = 1469598103934665603ull; /* FNV-1a over the offsets */
  for (unsigned long i = 0; i < n; i++) {
    h ^= (uint64_t)((uintptr_t)all[i] - (uintptr_t)all[0]);
    h *= 1099511628211ull;
  }
  printf("ok %lu layout %016llx\n", n, (unsigned long long)h);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s build|align N\n", argv[0]);
    return 2;
  }
  unsigned long n = strtoul(argv[2], NULL, 10);
  if (!strcmp(argv[1], "build")) return build(n);
  if (!strcmp(argv[1], "align")) return align(n);
  fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
  return 2;
}
