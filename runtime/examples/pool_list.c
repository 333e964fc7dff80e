/* pool.h example: the "processlist" program of the Automatic Pool Allocation paper
 * (figure 1), written by hand against the pool runtime. A list is split by a predicate
 * into two lists, each kept in its own pool, so each list's nodes are contiguous and a
 * whole list is released with one pooldestroy.
 *
 *   build/runtime/examples/pool_list 100000
 */
#include <stdio.h>
#include <stdlib.h>

#include "heaplayout/introspect.h"
#include "heaplayout/pool.h"

typedef struct node {
  struct node *next;
  long value;
} node;

static node *push(Pool *pool, node *head, long value) {
  node *n = poolalloc(pool, sizeof *n);
  n->value = value;
  n->next = head;
  return n;
}

static long sum(const node *n) {
  long s = 0;
  for (; n; n = n->next) s += n->value;
  return s;
}

int main(int argc, char **argv) {
  long count = argc > 1 ? atol(argv[1]) : 100000;
  Pool all, even, odd;
  poolcreate(&all, sizeof(node), 0);
  node *list = NULL;
  for (long i = 0; i < count; i++) list = push(&all, list, i * 7 % 1000);

  poolcreate(&even, sizeof(node), 0);
  poolcreate(&odd, sizeof(node), 0);
  node *a = NULL, *b = NULL;
  for (node *n = list; n; n = n->next) {
    if (n->value % 2 == 0) a = push(&even, a, n->value);
    else b = push(&odd, b, n->value);
  }
  pooldestroy(&all); /* the original list is gone in one call */

  /* nodes of one list are neighbours: count how many follow the previous one directly */
  long adjacent = 0, links = 0;
  for (node *n = a; n && n->next; n = n->next, links++)
    adjacent += (char *)n - (char *)n->next == (long)sizeof(node);
  printf("even sum %ld, odd sum %ld\n", sum(a), sum(b));
  printf("pools: even list in pool %d, odd list in pool %d; %ld of %ld links join neighbours\n",
         heaplayout_pool_of(a), heaplayout_pool_of(b), adjacent, links);
  pooldestroy(&even);
  pooldestroy(&odd);
  return 0;
}
