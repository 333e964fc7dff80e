/* Many live objects through a wrapper (chains of two frames under dpa): two callers of
 * xalloc each build a long list and keep it to the end, so their pools take span after
 * span. tests/test_dpa.py counts dpa's slow-path visits: a settled context whose pool
 * needs fresh space is refilled by the pool, not decided again. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

struct cell {
  struct cell *next;
  long value;
  long pad[2];
};

NOINLINE void *xalloc(size_t n) {
  void *p = malloc(n);
  if (p == NULL) exit(1);
  return p;
}

NOINLINE struct cell *build_a(long n) {
  struct cell *head = NULL;
  for (long i = 0; i < n; i++) {
    struct cell *c = xalloc(sizeof *c);
    c->value = i;
    c->next = head;
    head = c;
  }
  return head;
}

NOINLINE struct cell *build_b(long n) {
  struct cell *head = NULL;
  for (long i = 0; i < n; i++) {
    struct cell *c = xalloc(sizeof *c);
    c->value = 2 * i;
    c->next = head;
    head = c;
  }
  return head;
}

static long sum_and_free(struct cell *c) {
  long s = 0;
  while (c) {
    struct cell *n = c->next;
    s += c->value;
    free(c);
    c = n;
  }
  return s;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 300000;
  struct cell *a = build_a(n), *b = build_b(n);
  printf("sums %ld %ld\n", sum_and_free(a), sum_and_free(b));
  return 0;
}
