/* A pooled site's request larger than its pool takes (callsite pools objects of up to 128
 * bytes, HEAPLAYOUT_MAX_SIZE): the allocator underneath serves it straight from malloc's
 * missed pop (runtime/src/fastpath.h, hl_site_forwards), not through the full path.
 * Run by tests/test_fast_path.py, which counts the instructions per pair.
 *
 *   forward_over_test N   one site allocates 64 bytes (so that its pool exists and its
 *                         cache entry holds it), then makes N malloc(512)/free pairs
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static uint8_t *site(size_t size) {
  uint8_t *p = malloc(size);
  if (p == NULL) abort();
  p[0] = (uint8_t)size;
  return p;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s N\n", argv[0]);
    return 2;
  }
  unsigned long n = strtoul(argv[1], NULL, 10);
  uint8_t *keep = site(64);
  unsigned sum = 0;
  for (unsigned long i = 0; i < n; i++) {
    uint8_t *p = site(512);
    sum += p[0];
    free(p);
  }
  printf("pairs %lu sum %u kept %u\n", n, sum, keep[0]);
  free(keep);
  return 0;
}
