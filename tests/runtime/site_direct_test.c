/* The site-direct fast path (runtime/src/fastpath.h) under sites that change their size:
 * site_a asks for 24, 64 and 200 bytes in a fixed mixed order (200 is above the pools'
 * limit: forwarded), site_b for 48 bytes back to back. A ring of 32 objects stays live;
 * every object is filled with its own byte and checked before it is freed, so a slot handed
 * out twice shows. Prints what the statistics must say about the pools: objects placed,
 * bytes requested, objects still live at exit (run by tests/test_fast_path.py).
 *
 *   site_direct_test N
 *
 * site_direct_test emptied: fills three chunks (1 MiB, the default) from one site, frees
 * every object of the first, and allocates once more from the site. The runtime releases
 * an emptied chunk with its free lists (free list sharding) so that what is built next goes
 * to fresh space in order: prints "fresh" when the new object is outside the emptied chunk,
 * "reused" when it took one of its slots. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POOL_LIMIT 128 /* HEAPLAYOUT_MAX_SIZE's default: larger requests are forwarded */

__attribute__((noinline)) static uint8_t *site_a(size_t size) {
  uint8_t *p = malloc(size);
  if (p == NULL) abort();
  return p;
}
__attribute__((noinline)) static uint8_t *site_b(size_t size) {
  uint8_t *p = malloc(size);
  if (p == NULL) abort();
  return p;
}

static void check(const uint8_t *p, size_t size, uint8_t v) {
  for (size_t k = 0; k < size; k++)
    if (p[k] != v) {
      static const char msg[] = "site_direct_test: an object was overwritten\n";
      write(2, msg, sizeof msg - 1);
      exit(1);
    }
}

__attribute__((noinline)) static uint8_t *site_c(size_t size) {
  uint8_t *p = malloc(size);
  if (p == NULL) abort();
  return p;
}

static int emptied_chunk(void) {
  enum { N = 40000 }; /* 64-byte objects: 2.5 chunks of 1 MiB */
  const uintptr_t mask = ~(uintptr_t)((1u << 20) - 1);
  static uint8_t *obj[N];
  for (unsigned i = 0; i < N; i++) obj[i] = site_c(64);
  uintptr_t first = (uintptr_t)obj[0] & mask;
  for (unsigned i = 0; i < N; i++)
    if (((uintptr_t)obj[i] & mask) == first) {
      free(obj[i]);
      obj[i] = NULL;
    }
  uint8_t *q = site_c(64);
  const char *what = ((uintptr_t)q & mask) == first ? "reused\n" : "fresh\n";
  write(1, what, strlen(what));
  free(q);
  for (unsigned i = 0; i < N; i++) free(obj[i]);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "emptied")) return emptied_chunk();
  unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
  enum { K = 32 };
  uint8_t *ring[K] = {0};
  size_t ring_size[K] = {0};
  unsigned long long pooled = 0, pooled_bytes = 0;
  for (unsigned long i = 0; i < n; i++) {
    size_t size = i % 7 == 3 ? 200 : i % 5 == 0 ? 64 : 24;
    unsigned k = (unsigned)(i % K);
    if (ring[k]) {
      check(ring[k], ring_size[k], (uint8_t)(i - K));
      free(ring[k]);
    }
    ring[k] = site_a(size);
    ring_size[k] = size;
    memset(ring[k], (uint8_t)i, size);
    if (size <= POOL_LIMIT) {
      pooled++;
      pooled_bytes += size;
    }
    uint8_t *b = site_b(48);
    memset(b, 0x5a, 48);
    check(b, 48, 0x5a);
    free(b);
    pooled++;
    pooled_bytes += 48;
  }
  unsigned long long live = 0;
  for (unsigned k = 0; k < K; k++) live += ring[k] != NULL && ring_size[k] <= POOL_LIMIT; /* left live */
  char line[200];
  int len = snprintf(line, sizeof line, "pooled %llu bytes %llu live %llu\n", pooled, pooled_bytes, live);
  write(1, line, (size_t)len);
  return 0;
}
