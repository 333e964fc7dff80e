/* Runs of accesses to one object, for tests/test_profiler.py: the cases where a profiler that
 * shortcuts "same object as the previous access" (the affinity queue and the stream drop such
 * repeats) could go wrong; an inline shortcut of that kind was tried and measured slower, and
 * this test stays so that any later one must count exactly. Every heap access is a volatile
 * load or store of a known size, so the expected counts follow from the code (see the test):
 *   1. mixed sizes in one object, an 8-byte store of a heap pointer among them (an edge
 *      every time), runs of X broken by one load of Y;
 *   2. X freed and Z allocated (often at X's address) and read at once;
 *   3. a big object (> --max-object-size) scanned;
 *   4. two threads taking turns (pipes make the order fixed) on one object O: each thread
 *      has its own affinity queue, so thread 2's load of O must be seen by its queue even
 *      though thread 1 touched O last. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define K 300      /* rounds of phase 1 */
#define BIG 8192   /* bytes; above the default --max-object-size of 4096 */
#define R 50       /* turns of phase 4 */

struct X { volatile uint8_t b; volatile uint16_t h; volatile uint32_t w; volatile uint64_t q; void* volatile p; };

__attribute__((noinline)) void* alloc_x(void) { void* p = malloc(sizeof(struct X)); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void* alloc_y(void) { void* p = malloc(64); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void* alloc_z(void) { void* p = malloc(sizeof(struct X)); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void* alloc_big(void) { void* p = malloc(BIG); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void* alloc_o(void) { void* p = malloc(32); __asm__ volatile("" ::: "memory"); return p; }
__attribute__((noinline)) void* alloc_p(void) { void* p = malloc(32); __asm__ volatile("" ::: "memory"); return p; }

static int to2[2], to1[2];
static volatile uint64_t* o_obj;

static void wait_for(int fd) { char c; if (read(fd, &c, 1) != 1) abort(); }
static void wake(int fd) { char c = 0; if (write(fd, &c, 1) != 1) abort(); }

static void* thread2(void* arg)
{
   volatile uint64_t* p = arg;
   uint64_t s = 0;
   for (int r = 0; r < R; r++) {
      wait_for(to2[0]);
      s += o_obj[0];       /* O: thread 1 touched it last */
      s += p[0];           /* P: affine to O in this thread's queue */
      wake(to1[1]);
   }
   return (void*)(uintptr_t)s;
}

int main(void)
{
   /* phase 1 */
   struct X* x = alloc_x();
   volatile uint64_t* y = alloc_y();
   uint64_t s = 0;
   y[0] = 1;
   for (int k = 0; k < K; k++) {
      s += x->b; s += x->h; s += x->w; s += x->q;           /* 4 loads, 15 bytes */
      x->b = 1; x->h = 2; x->w = 3; x->q = 4;               /* 4 stores, 15 bytes */
      x->p = (void*)y;                                      /* a heap pointer: an edge */
      x->q = (uint64_t)k;                                   /* an 8-byte non-pointer */
      s += y[0];                                            /* 1 load of Y */
   }
   /* phase 2 */
   free(x);
   struct X* z = alloc_z();
   z->q = 5; s += z->q; s += z->q;                          /* 1 store, 2 loads */
   free(z);
   free((void*)y);
   /* phase 3 */
   volatile uint64_t* big = alloc_big();
   for (int i = 0; i < BIG / 8; i++) big[i] = (uint64_t)i;   /* 1024 stores */
   for (int i = 0; i < BIG / 8; i++) s += big[i];            /* 1024 loads */
   free((void*)big);
   /* phase 4 */
   o_obj = alloc_o();
   volatile uint64_t* p = alloc_p();
   o_obj[0] = 0;
   p[0] = 1;
   if (pipe(to2) || pipe(to1)) return 1;
   pthread_t t;
   if (pthread_create(&t, NULL, thread2, (void*)p)) return 1;
   for (int r = 0; r < R; r++) {
      o_obj[0] += 1;        /* a load and a store of O by thread 1 */
      wake(to2[1]);
      wait_for(to1[0]);
   }
   void* ret;
   pthread_join(t, &ret);
   s += (uint64_t)(uintptr_t)ret;
   printf("%llu\n", (unsigned long long)s);
   return 0;
}
