/* Recursion reduction for tests/test_profiler.py: build() recurses to depth D and allocates one
 * node at every level, through a helper called from two places. HALO's reduced context keeps
 * only the innermost occurrence of each call site, so all levels >= 1 share one context. */
#include <stdlib.h>

struct node { struct node* volatile child; volatile long depth; };

__attribute__((noinline)) struct node* new_node(long d)
{
   struct node* n = malloc(sizeof *n);
   __asm__ volatile("" ::: "memory");
   n->depth = d;
   return n;
}

__attribute__((noinline)) struct node* build(long d, long max)
{
   struct node* n = new_node(d);
   n->child = d < max ? build(d + 1, max) : 0;
   __asm__ volatile("" ::: "memory");   /* no tail call */
   return n;
}

int main(int argc, char** argv)
{
   long max = argc > 1 ? atol(argv[1]) : 50;
   struct node* t = build(0, max);
   long s = 0;
   for (struct node* n = t; n; n = n->child) s += n->depth;
   return s == max * (max + 1) / 2 ? 0 : 1;
}
