/* Exact-count program for tests/test_profiler.py. Allocates N objects of type A and N of type
 * B, alternating (A0 B0 A1 B1 ...), from two sites, and touches them in a known order; every
 * heap access is one volatile 8-byte load or store, so the expected profile can be computed
 * by hand (see the test). Modes (argv[1]): none = normal exit 0, "exit" = exit(7) after the
 * traversal without freeing, "abort" = abort() at the same point, "kill" = SIGKILL to itself. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 500

struct B { volatile long y; volatile long z; };
struct A { struct B* volatile b; volatile long x; };

static struct A* as[N];
static struct B* bs[N];

__attribute__((noinline)) struct A* alloc_a(void)
{
   struct A* p = malloc(sizeof(struct A));
   __asm__ volatile("" ::: "memory");   /* keep the call a call, not a tail jump */
   return p;
}

__attribute__((noinline)) struct B* alloc_b(void)
{
   struct B* p = malloc(sizeof(struct B));
   __asm__ volatile("" ::: "memory");
   return p;
}

int main(int argc, char** argv)
{
   const char* mode = argc > 1 ? argv[1] : "";
   /* phase 0: allocate alternately, one store into each object right away */
   for (long i = 0; i < N; i++) {
      as[i] = alloc_a();
      as[i]->x = i;
      bs[i] = alloc_b();
      bs[i]->y = i;
   }
   /* phase 1: link every A to its B (a pointer store at offset 0 of A) */
   for (long i = 0; i < N; i++) as[i]->b = bs[i];
   /* phase 2: traverse A -> B, freeing both (or not, for the exit/abort modes) */
   long sum = 0;
   int keep = strcmp(mode, "exit") == 0 || strcmp(mode, "abort") == 0 || strcmp(mode, "kill") == 0;
   for (long i = 0; i < N; i++) {
      struct B* b = as[i]->b;
      sum += b->y;
      if (!keep) {
         free(b);
         free(as[i]);
      }
   }
   char msg[64];
   int n = 0;
   long v = sum;
   char tmp[32];
   int k = 0;
   do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
   while (k) msg[n++] = tmp[--k];
   msg[n++] = '\n';
   if (write(1, msg, n) != n) return 1;
   if (strcmp(mode, "exit") == 0) exit(7);
   if (strcmp(mode, "abort") == 0) abort();
   if (strcmp(mode, "kill") == 0) raise(SIGKILL);
   return 0;
}
