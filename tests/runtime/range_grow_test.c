/* The pool range grows as the pools need it (runtime/src/chunk.c, range_grow): N objects of
 * 64 bytes from one call site, far more than the range's first part holds, written, checked
 * and freed. argv[1] chooses what is in the way before the runtime starts (no allocation
 * happens before that mmap: write() only):
 *   none    nothing: the range starts at its hint and grows;
 *   hint    a page at the hint: the runtime maps the whole range elsewhere, as it used to;
 *   growth  a page 16 MiB above the hint: the range (1 MiB at first, doubling) cannot grow
 *           past it, and the objects beyond go to the allocator underneath.
 * Prints a checksum (the same under every setting and without the runtime) and, on stderr,
 * the process's peak virtual size (VmPeak) in KiB. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HINT 0x600000000000ull /* runtime/src/tunables.h, HL_RANGE_HINT */
#define FIRST (16ull << 20)     /* where the range stops growing in the "growth" mode */

static void block(uintptr_t at) {
  void *p = mmap((void *)at, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p != (void *)at) {
    static const char msg[] = "could not map the blocking page\n";
    write(2, msg, sizeof msg - 1);
    _exit(3);
  }
}

static long vm_peak_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmPeak:", 7) == 0) kib = strtol(line + 7, NULL, 10);
  if (f) fclose(f);
  return kib;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  long n = argc > 2 ? atol(argv[2]) : 2000000;
  if (strcmp(mode, "hint") == 0) block(HINT);
  if (strcmp(mode, "growth") == 0) block(HINT + FIRST);
  uint64_t **objs = malloc(sizeof *objs * (size_t)n);
  for (long i = 0; i < n; i++) {
    objs[i] = malloc(64);
    for (int k = 0; k < 8; k++) objs[i][k] = (uint64_t)i * 8 + (uint64_t)k;
  }
  uint64_t sum = 0;
  for (long i = 0; i < n; i++)
    for (int k = 0; k < 8; k++) sum += objs[i][k] ^ (uint64_t)k;
  for (long i = 0; i < n; i++) free(objs[i]);
  free(objs);
  printf("checksum %llu\n", (unsigned long long)sum);
  fprintf(stderr, "vmpeak_kib %ld\n", vm_peak_kib());
  return 0;
}
