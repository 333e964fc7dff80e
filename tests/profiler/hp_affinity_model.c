/* Pseudo-random heap access pattern for the affinity reference-model test in
 * tests/test_profiler.py. Allocates M objects from K call sites (site chosen by an LCG), then
 * makes T volatile loads/stores of 1, 2, 4 or 8 bytes to objects drawn from a small hot set, so
 * that one object recurs many times within the affinity window (the no-double-counting rule)
 * and consecutive repeats occur (the merge rule). The test replays the same LCG in Python.
 * No libc call touches the heap between the first malloc and the last access. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define M 64
#define K 4
#define T 20000
#define OBJ 32

static uint64_t lcg = 12345;
static unsigned next(unsigned n)
{
   lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
   return (unsigned)((lcg >> 33) % n);
}

static volatile int site_tag;   /* makes the four functions differ, so none is folded away */
#define SITE(k) \
   __attribute__((noinline)) static char* alloc##k(void) \
   { char* p = malloc(OBJ); site_tag = k; return p; }
SITE(0) SITE(1) SITE(2) SITE(3)

static char* objs[M];

int main(void)
{
   for (int i = 0; i < M; i++) {
      switch (next(K)) {
      case 0: objs[i] = alloc0(); break;
      case 1: objs[i] = alloc1(); break;
      case 2: objs[i] = alloc2(); break;
      default: objs[i] = alloc3(); break;
      }
   }
   static volatile uint64_t sum;
   for (int t = 0; t < T; t++) {
      /* half of the accesses go to 6 hot objects, so repeats within the window are common */
      unsigned o = next(2) ? next(6) : next(M);
      unsigned sz = 1u << next(4);
      unsigned off = next(OBJ / sz) * sz;
      char* p = objs[o] + off;
      int store = next(2);
      switch (sz) {
      case 1: if (store) *(volatile uint8_t*)p = (uint8_t)t; else sum += *(volatile uint8_t*)p; break;
      case 2: if (store) *(volatile uint16_t*)p = (uint16_t)t; else sum += *(volatile uint16_t*)p; break;
      case 4: if (store) *(volatile uint32_t*)p = (uint32_t)t; else sum += *(volatile uint32_t*)p; break;
      default: if (store) *(volatile uint64_t*)p = (uint64_t)t; else sum += *(volatile uint64_t*)p; break;
      }
   }
   for (int i = 0; i < M; i++) free(objs[i]);
   return 0;
}
