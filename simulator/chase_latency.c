/* chase_latency: native nanoseconds per dependent load over N bytes, for placements whose
 * effect the simulator's native-time model should reproduce (issue 26; docs/simulator.md).
 * Each line holds a pointer to the next line of the walk:
 *   0  random lines over the whole buffer (TLB and cache misses)
 *   1  sequential lines (the prefetchers' best case; they must still run ahead of a chase)
 *   2  pages in order, lines shuffled within each 4 KiB page (no direction to follow)
 *   3  four sequential streams, visited round-robin
 *   4  four sequential streams, visited in random order (libhlperturb's random mode, densely)
 * usage: chase_latency BYTES MODE [STEPS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: chase_latency BYTES MODE [STEPS]\n");
    return 2;
  }
  size_t bytes = strtoull(argv[1], 0, 0), lines = bytes / 64, q = lines / 4;
  int mode = atoi(argv[2]);
  size_t steps = argc > 3 ? strtoull(argv[3], 0, 0) : 50000000;
  char *buf = mmap(0, lines * 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  size_t *order = malloc(lines * sizeof *order);
  if (buf == MAP_FAILED || !order || lines < 256 || mode < 0 || mode > 4) return 2;
  size_t fill[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < lines; i++) {
    if (mode == 3) order[i] = (i % 4) * q + i / 4;
    else if (mode == 4) {
      size_t k;
      do k = next() % 4; while (fill[k] >= q);
      order[i] = k * q + fill[k]++;
    } else order[i] = i;
  }
  if (mode == 4) lines = 4 * q;
  if (mode == 0)
    for (size_t i = lines - 1; i > 0; i--) {
      size_t j = next() % (i + 1), t = order[i];
      order[i] = order[j], order[j] = t;
    }
  if (mode == 2)
    for (size_t p = 0; p + 64 <= lines; p += 64)
      for (size_t i = 63; i > 0; i--) {
        size_t j = next() % (i + 1), t = order[p + i];
        order[p + i] = order[p + j], order[p + j] = t;
      }
  for (size_t i = 0; i < lines; i++) *(char **)(buf + order[i] * 64) = buf + order[(i + 1) % lines] * 64;
  char *p = buf + order[0] * 64;
  for (size_t i = 0; i < lines; i++) p = *(char **)p; /* touch every page once */
  double t = now();
  for (size_t i = 0; i < steps; i++) p = *(char **)p;
  t = now() - t;
  printf("%zu KiB mode %d: %.2f ns per load (%p)\n", bytes >> 10, mode, t * 1e9 / steps, (void *)p);
  return 0;
}
