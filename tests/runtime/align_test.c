/* Minimum alignment 8 (HEAPLAYOUT_MIN_ALIGN, a plan's min_align and packed groups): every
 * slot keeps the alignment its size needs, objects never overlap, and the runtime's walks
 * over a chunk's objects (release of emptied chunks) cope with 8-aligned slots and the
 * 8-byte pads before 16-aligned ones. Linked with libheaplayout_debug.so: its internal
 * asserts (size-map classes, sized deletes) are on.
 *
 *   align_test mixed N     N rounds of mixed sizes from one call site; prints the spacing
 *                          of consecutive 40- and 24-byte objects in the first round (fresh
 *                          space) and "ok" or the faults
 *   align_test pairs N     N 24-byte objects from alloc24 (a plan's group); prints spacing
 *   align_test two N       N rounds of a 32- and a 64-byte object from alloc_sized (one call
 *                          site); prints the spacing of consecutive objects of each size
 *   align_test offsets N S N objects of S bytes from alloc_sized; prints how many start at
 *                          each offset of their cache line (a plan's `group ... line N`)
 *   align_test lines N     N rounds of a 200- and a 456-byte object from alloc_sized; prints
 *                          how many of the 456-byte ones (a 512-byte class) do not start on
 *                          a cache line: spans after the 200-byte class's, whose slots end
 *                          8 bytes into a line, must still start on one
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
void *_Znwm(size_t size);             /* operator new */
void _ZdlPvm(void *p, size_t size);   /* sized operator delete */

static int faults;
static void fault(const char *what, size_t size, const void *p) {
  if (faults++ < 10) fprintf(stderr, "align_test: %s: size %zu at %p\n", what, size, p);
}

/* the alignment a request of `size` bytes must have: 16 unless the size rounded to 8 is
 * an odd multiple of 8 (no type of that size needs 16) */
static uintptr_t need(size_t size) {
  size_t r = (size + 7) & ~(size_t)7;
  return r > 16 && (r & 8) ? 8 : 16;
}

NOINLINE void *alloc_mixed(size_t size) { return malloc(size); }
NOINLINE void *alloc24(void) { return malloc(24); }

static int mixed(int rounds) {
  enum { N = 4000 };
  static unsigned char *obj[N];
  static size_t sz[N];
  long gap40 = 0, gap24 = 0;
  for (int round = 0; round < rounds; round++) {
    unsigned char *last40 = NULL, *last24 = NULL;
    for (int i = 0; i < N; i++) {
      size_t s = 1 + (size_t)((i * 7919u + round * 104729u) % 300u);
      if (i % 50 < 10) s = 40; /* runs of one size to see the spacing */
      else if (i % 50 < 20) s = 24;
      obj[i] = alloc_mixed(s);
      sz[i] = s;
      if ((uintptr_t)obj[i] % need(s)) fault("misaligned", s, obj[i]);
      if (malloc_usable_size(obj[i]) < s) fault("usable size too small", s, obj[i]);
      memset(obj[i], (int)(i & 0xff), s);
      if (round == 0 && last40 && i % 50 > 0 && i % 50 < 10) gap40 = (long)(obj[i] - last40);
      if (round == 0 && last24 && i % 50 > 10 && i % 50 < 20) gap24 = (long)(obj[i] - last24);
      if (s == 40) last40 = obj[i];
      if (s == 24) last24 = obj[i];
    }
    for (int i = 0; i < N; i++)
      for (size_t k = 0; k < sz[i]; k++)
        if (obj[i][k] != (unsigned char)(i & 0xff)) {
          fault("overwritten", sz[i], obj[i]);
          break;
        }
    /* shrink a 24-byte slot to 16 bytes: a 16-byte object needs 16-alignment */
    for (int i = 0; i < N; i += 7) {
      size_t s = sz[i] > 16 ? 16 : sz[i];
      unsigned char *p = realloc(obj[i], s);
      if ((uintptr_t)p % need(s)) fault("realloc misaligned", s, p);
      for (size_t k = 0; k < s; k++)
        if (p[k] != (unsigned char)(i & 0xff)) fault("realloc lost data", s, p);
      obj[i] = p;
      sz[i] = s;
    }
    /* aligned requests of odd-multiple sizes are 16-aligned */
    for (int i = 0; i < 64; i++) {
      void *p = memalign(16, 40);
      void *q = NULL;
      if ((uintptr_t)p % 16) fault("memalign(16, 40) misaligned", 40, p);
      if (posix_memalign(&q, 16, 24) != 0 || (uintptr_t)q % 16) fault("posix_memalign(16, 24) misaligned", 24, q);
      free(p);
      free(q);
    }
    /* sized deletes take the class from the size (the debug build checks it) */
    for (size_t s = 1; s <= 300; s++) {
      void *p = _Znwm(s);
      if ((uintptr_t)p % need(s)) fault("new misaligned", s, p);
      _ZdlPvm(p, s);
    }
    for (int i = 0; i < N; i++) free(obj[i]); /* empties the chunks: their slots are walked */
  }
  printf("gap40 %ld gap24 %ld\n", gap40, gap24);
  printf("%s\n", faults ? "FAULTS" : "ok");
  return faults != 0;
}

static int pairs(int n) {
  unsigned char *prev = alloc24(), *p = NULL;
  long gap = 0;
  for (int i = 1; i < n; i++) {
    p = alloc24();
    if ((uintptr_t)p % 8) fault("misaligned", 24, p);
    gap = (long)(p - prev);
    prev = p;
  }
  printf("gap24 %ld\n", gap);
  return faults != 0;
}

NOINLINE unsigned char *alloc_sized(size_t size) { return malloc(size); }

/* a group's fresh space: interleaved, a 32-byte object is 96 bytes after the previous one;
 * carved in spans per size class, 32. Also counts the heads (an object not right after the
 * previous one of its size: a new span's first) and the line positions in a page they
 * start on: spans that began on one set would share one position. */
static int two_sizes(int n) {
  unsigned char *prev32 = alloc_sized(32), *prev64 = alloc_sized(64);
  long gap32 = 0, gap64 = 0;
  int heads = 0, npos = 0;
  unsigned char seen[64] = {0};
  for (int i = 1; i < n; i++) {
    unsigned char *p = alloc_sized(32), *q = alloc_sized(64);
    gap32 = (long)(p - prev32);
    gap64 = (long)(q - prev64);
    for (int k = 0; k < 2; k++) {
      unsigned char *h = k ? q : p;
      if (h == (k ? prev64 + 64 : prev32 + 32)) continue;
      heads++;
      if (!seen[((uintptr_t)h >> 6) & 63]++) npos++;
    }
    prev32 = p;
    prev64 = q;
  }
  printf("gap32 %ld gap64 %ld\nheads %d on %d line positions\n", gap32, gap64, heads, npos);
  return 0;
}

static int line_starts(int n) {
  int off = 0;
  for (int i = 0; i < n; i++) {
    (void)alloc_sized(200);
    if ((uintptr_t)alloc_sized(456) % 64) off++;
  }
  printf("off-line %d of %d\n", off, n);
  return 0;
}

static int line_offsets(int n, size_t size) {
  int at[4] = {0};
  for (int i = 0; i < n; i++) {
    unsigned char *p = alloc_sized(size);
    if ((uintptr_t)p % 16) fault("misaligned", size, p);
    else at[(uintptr_t)p % 64 / 16]++;
  }
  printf("at 0: %d, 16: %d, 32: %d, 48: %d\n", at[0], at[1], at[2], at[3]);
  return faults != 0;
}

int main(int argc, char **argv) {
  int n = argc > 2 ? atoi(argv[2]) : 3;
  if (argc > 1 && strcmp(argv[1], "pairs") == 0) return pairs(n);
  if (argc > 1 && strcmp(argv[1], "two") == 0) return two_sizes(n);
  if (argc > 1 && strcmp(argv[1], "lines") == 0) return line_starts(n);
  if (argc > 1 && strcmp(argv[1], "offsets") == 0) return line_offsets(n, argc > 3 ? (size_t)atoi(argv[3]) : 56);
  return mixed(n);
}
