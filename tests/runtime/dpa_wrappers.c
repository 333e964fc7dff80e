/* Hand-written allocation wrappers (and libc's strdup) for the dpa policy's wrapper analysis
 * (tests/test_dpa.py): built at -O2 and -O0 with -rdynamic so that the statistics can name
 * the functions. Each kind allocates more than the pool threshold from two call sites. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

void *last_allocated;
unsigned long allocations;

/* one level: the pointer goes back, the failure path never returns */
NOINLINE void *wrap_one(size_t n) {
  void *p = malloc(n);
  if (p == NULL) abort();
  return p;
}

/* two levels: a wrapper around a wrapper (the store after the call keeps it a real frame) */
NOINLINE void *wrap_two(size_t n) {
  void *p = wrap_one(n);
  allocations++;
  return p;
}

/* a wrapper that also stores the pointer (in a global: bookkeeping, not linking) */
NOINLINE void *wrap_tracked(size_t n) {
  void *p = malloc(n);
  if (p == NULL) return NULL;
  last_allocated = p;
  allocations++;
  return p;
}

/* a wrapper that clears the object through memset, as calloc-like wrappers do */
NOINLINE void *wrap_zeroed(size_t n) {
  void *p = wrap_one(n);
  memset(p, 0, n);
  return p;
}

struct node {
  long value;
  struct node *next;
};
struct node *list_head;

/* not a wrapper: it initialises the object and links it into a list */
NOINLINE struct node *make_node(long v) {
  struct node *n = malloc(sizeof *n);
  if (n == NULL) abort();
  n->value = v;
  n->next = list_head;
  list_head = n;
  return n;
}

struct holder {
  void *slot;
};

/* not a wrapper: it stores the pointer into another object (links it) */
NOINLINE void *make_linked(struct holder *h, size_t n) {
  void *p = malloc(n);
  h->slot = p;
  return p;
}

/* not a wrapper: returns a count, not the pointer */
NOINLINE long count_alloc(size_t n, void **out) {
  void *p = malloc(n);
  *out = p;
  return p != NULL;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 300;
  unsigned long sum = 0;
  struct holder h;
  void *keep[8];
  for (int i = 0; i < rounds; i++) {
    char *a = wrap_one(24), *b = wrap_one(40);
    char *c = wrap_two(24), *d = wrap_two(56);
    char *e = wrap_tracked(32);
    char *f = wrap_zeroed(48);
    struct node *g = make_node(i);
    char *k = make_linked(&h, 16);
    void *m;
    sum += (unsigned long)count_alloc(64, &m);
    char *s = strdup(i & 1 ? "odd" : "even"); /* libc's strdup: a wrapper found by the same analysis */
    sum += strlen(s);
    free(s);
    a[0] = 1; b[0] = 2; c[0] = 3; d[0] = 4; e[0] = 5; k[0] = 6;
    sum += (unsigned long)(a[0] + b[0] + c[0] + d[0] + e[0] + f[0] + k[0]) + (unsigned long)g->value;
    keep[0] = a; keep[1] = b; keep[2] = c; keep[3] = d; keep[4] = e; keep[5] = f; keep[6] = k; keep[7] = m;
    for (int j = 0; j < 8; j++) free(keep[j]);
  }
  while (list_head) {
    struct node *n = list_head->next;
    free(list_head);
    list_head = n;
  }
  printf("sum %lu allocations %lu\n", sum, allocations);
  return 0;
}
