/* A library that tests/runtime/dlopen_test.c loads with dlopen after the runtime started:
 * the plan names it, so its rules are pending until it appears (docs/plan-format.md).
 *   plugin_cell           malloc(32), a list cell: the plan's group 1 (first frame here)
 *   plugin_cell_via_host  host_alloc (the program's) -> malloc: the plan's group 2, a rule
 *                         whose first frame is in the program and whose second is here */
#include <stdlib.h>

struct cell {
  struct cell *next;
  long value;
  long pad[2];
};

void *host_alloc(size_t size); /* the program's, exported to us */

__attribute__((noinline)) struct cell *plugin_cell(long v) {
  struct cell *c = malloc(sizeof *c);
  c->value = v;
  return c;
}

__attribute__((noinline)) struct cell *plugin_cell_via_host(long v) {
  struct cell *c = host_alloc(sizeof *c);
  c->value = v;
  return c;
}

static long sum_and_free(struct cell *head) {
  long sum = 0;
  while (head) {
    struct cell *next = head->next;
    sum = sum * 31 + head->value;
    free(head);
    head = next;
  }
  return sum;
}

long plugin_list_sum(int n) {
  struct cell *head = NULL;
  for (int i = 0; i < n; i++) {
    struct cell *c = plugin_cell(i);
    c->next = head;
    head = c;
  }
  return sum_and_free(head);
}

long plugin_list_sum_via_host(int n) {
  struct cell *head = NULL;
  for (int i = 0; i < n; i++) {
    struct cell *c = plugin_cell_via_host(i * 7);
    c->next = head;
    head = c;
  }
  return sum_and_free(head);
}
