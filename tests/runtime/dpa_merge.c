/* The paper's figure 3, built so that every group allocates often (tests/test_dpa.py): one
 * list whose nodes come from two call sites (even nodes from one, odd from the other) and
 * whose data objects come from two more. The shape graph should merge the two node groups
 * (type I: same size, linked) and then the two data groups (type II: same size, pointed to
 * by the same field of the merged group). Prints whether the runtime put each pair in one
 * pool (heaplayout_pool_of, looked up at run time: the program runs without us too). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

typedef struct node {
  long *data;
  struct node *next;
  long pad[2];
} node; /* 32 bytes */

static node *tail;

static void append(node *n) {
  n->next = NULL;
  if (tail) tail->next = n;
  tail = n;
}

NOINLINE node *even_node(long v) { /* heap node h1 and its data h2 */
  node *n = malloc(sizeof *n);
  n->data = malloc(3 * sizeof(long));
  n->data[0] = v;
  append(n);
  return n;
}

NOINLINE node *odd_node(long v) { /* heap node h3 and its data h4 */
  node *n = malloc(sizeof *n);
  n->data = malloc(3 * sizeof(long));
  n->data[0] = v;
  append(n);
  return n;
}

int main(int argc, char **argv) {
  int count = argc > 1 ? atoi(argv[1]) : 4000;
  node *head = NULL, *late_even = NULL, *late_odd = NULL;
  for (int i = 0; i < count; i++) {
    node *n = (i & 1) ? odd_node(i) : even_node(i);
    if (head == NULL) head = n;
    if (i == count - 2) late_even = n;
    if (i == count - 1) late_odd = n;
  }
  long sum = 0;
  for (node *n = head; n; n = n->next) sum += n->data[0];
  int (*pool_of)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "heaplayout_pool_of");
  if (pool_of) {
    printf("nodes_same_pool %d data_same_pool %d nodes_pooled %d\n", pool_of(late_even) == pool_of(late_odd),
           pool_of(late_even->data) == pool_of(late_odd->data), pool_of(late_even) != 0);
  }
  printf("sum %ld\n", sum);
  for (node *n = head; n;) {
    node *next = n->next;
    free(n->data);
    free(n);
    n = next;
  }
  return 0;
}
