/* Program for the plan policy's tests (tests/test_runtime_plan.py). Its allocation sites:
 *   alloc_token         malloc(24)                      decided by its return address
 *   alloc_node          malloc(24), called from via_x and from via_y: only the chain
 *                       through via_x is grouped, so two frames are needed
 *   dup_name            strdup: malloc is called inside libc, whose frames are skipped
 *   alloc_leaf          malloc(40) <- mid <- via_p / via_q / rec (recursive): the same
 *                       return address and caller, told apart only by the third frame
 *                       (mode --expect-chains [DEPTH]: the plan groups via_p and rec, not
 *                       via_q; DEPTH fixes rec's recursion, else it varies 0..6)
 *   deep_a / deep_b     alloc_leaf <- mid <- lvl3 <- lvl2 <- lvl1 <- deep_a / deep_b: six
 *                       frames, the sixth decides (mode --expect-deep: deep_a grouped)
 *   alloc_big           malloc(400) from one site, never grouped
 * Mode --expect-rest (a plan with `rest callsite 128`): token, node-via-x and name are
 * grouped as above; node-via-y, ungrouped by its second frame, gets the pool of
 * alloc_node's call site after that site's first 100 ungrouped objects; alloc_big's
 * 400-byte objects stay with the allocator underneath (larger than the rest's limit).
 * Built with and without frame pointers. Run with a plan grouping token, node-via-x and
 * name, it checks that exactly those objects share one pool and lie one after another
 * in allocation order; without a plan it just runs. Exit 0 on success. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heaplayout/introspect.h"

#define NOINLINE __attribute__((noinline))

NOINLINE void *alloc_token(int i) {
  int *t = malloc(24);
  t[0] = i;
  return t;
}
NOINLINE void *alloc_node(int i) {
  long *n = malloc(24);
  n[0] = i;
  return n;
}
/* each writes after the call, so the call is a real call, not a tail jump */
NOINLINE void *via_x(int i) {
  long *n = alloc_node(i);
  n[1] = 'x';
  return n;
}
NOINLINE void *via_y(int i) {
  long *n = alloc_node(i);
  n[1] = 'y';
  return n;
}
NOINLINE char *dup_name(int i) {
  char buf[16];
  snprintf(buf, sizeof buf, "name-%04d", i % 10000);
  return strdup(buf);
}

NOINLINE void *alloc_leaf(int i) {
  long *n = malloc(40);
  n[0] = i;
  return n;
}
NOINLINE void *mid(int i) {
  long *n = alloc_leaf(i);
  n[1] = 'm';
  return n;
}
NOINLINE void *via_p(int i) {
  long *n = mid(i);
  n[2] = 'p';
  return n;
}
NOINLINE void *via_q(int i) {
  long *n = mid(i);
  n[2] = 'q';
  return n;
}
NOINLINE void *rec(int i, int depth) {
  long *n = depth == 0 ? mid(i) : rec(i, depth - 1);
  n[3] = depth;
  return n;
}

/* Allocations whose first two frames are the same and whose third decides, interleaved
 * (p, q, rec at varying depths), so cached decisions are reused and must be told apart.
 * depth >= 0: rec always recurses that deep (a long chain of fixed length). */
static int check_chains(int n, int depth) {
  int bad = 0;
  long checksum = 0;
  for (int i = 0; i < n; i++) {
    long *p = via_p(i), *q = via_q(i), *r = rec(i, depth >= 0 ? depth : i % 7);
    checksum += p[2] + q[2] + r[3];
    int pp = heaplayout_pool_of(p), pq = heaplayout_pool_of(q), pr = heaplayout_pool_of(r);
    if (!(pp >= 3 && pq == 0 && pr == pp) && bad++ < 5)
      fprintf(stderr, "round %d: pools via_p %d via_q %d rec(%d) %d\n", i, pp, pq, depth >= 0 ? depth : i % 7, pr);
    free(p);
    free(q);
    free(r);
  }
  printf("checksum %ld\nchains wrong %d of %d\n", checksum, bad, n);
  return bad == 0 ? 0 : 1;
}

/* A chain of six frames with no recursion, told apart only by the sixth: alloc_leaf <- mid
 * <- lvl3 <- lvl2 <- lvl1 <- deep_a / deep_b (mode --expect-deep: deep_a grouped, deep_b
 * not). Each level writes after its call, so none is a tail call. */
NOINLINE void *lvl3(int i) {
  long *n = mid(i);
  n[4] = 3;
  return n;
}
NOINLINE void *lvl2(int i) {
  long *n = lvl3(i);
  n[4] += 2;
  return n;
}
NOINLINE void *lvl1(int i) {
  long *n = lvl2(i);
  n[4] += 1;
  return n;
}
NOINLINE void *deep_a(int i) {
  long *n = lvl1(i);
  n[2] = 'a';
  return n;
}
NOINLINE void *deep_b(int i) {
  long *n = lvl1(i);
  n[2] = 'b';
  return n;
}

static int check_deep(int n) {
  int bad = 0;
  long checksum = 0;
  for (int i = 0; i < n; i++) {
    long *a = deep_a(i), *b = deep_b(i);
    checksum += a[2] + b[2] + a[4] + b[4];
    int pa = heaplayout_pool_of(a), pb = heaplayout_pool_of(b);
    if (!(pa >= 3 && pb == 0) && bad++ < 5) fprintf(stderr, "round %d: pools deep_a %d deep_b %d\n", i, pa, pb);
    free(a);
    free(b);
  }
  printf("checksum %ld\ndeep wrong %d of %d\n", checksum, bad, n);
  return bad == 0 ? 0 : 1;
}

NOINLINE void *alloc_big(int i) {
  long *b = malloc(400);
  b[0] = i;
  return b;
}

static int check_rest(int n) {
  int bad = 0, site_pool = 0, early = 0;
  long checksum = 0;
  for (int i = 0; i < n; i++) {
    char *t = alloc_token(i), *x = via_x(i), *y = via_y(i), *s = dup_name(i);
    long *b = alloc_big(i);
    checksum += *(int *)t + *(long *)x + *(long *)y + (long)strlen(s) + b[0];
    int pt = heaplayout_pool_of(t), px = heaplayout_pool_of(x), py = heaplayout_pool_of(y),
        ps = heaplayout_pool_of(s), pb = heaplayout_pool_of(b);
    int ok = pt >= 3 && pt == px && px == ps && pb == 0;
    if (py == 0) early++;
    else if (site_pool == 0) site_pool = py;
    ok &= py == 0 ? i < 100 : (py != pt && py == site_pool);
    if (!ok && bad++ < 5)
      fprintf(stderr, "round %d: pools token %d node-x %d node-y %d name %d big %d\n", i, pt, px, py, ps, pb);
    free(b);
  }
  printf("checksum %ld\nrest wrong %d of %d, node-y forwarded %d\n", checksum, bad, n, early);
  return bad == 0 && early == 100 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc > 2 && strcmp(argv[2], "--expect-chains") == 0) return check_chains(atoi(argv[1]), argc > 3 ? atoi(argv[3]) : -1);
  if (argc > 2 && strcmp(argv[2], "--expect-rest") == 0) return check_rest(atoi(argv[1]));
  if (argc > 2 && strcmp(argv[2], "--expect-deep") == 0) return check_deep(atoi(argv[1]));
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  int expect_plan = argc > 2 && strcmp(argv[2], "--expect-groups") == 0;
  int bad = 0, grouped = 0, adjacent = 0;
  char *prev_name = NULL;
  long checksum = 0;
  for (int i = 0; i < n; i++) {
    char *t = alloc_token(i), *x = via_x(i), *y = via_y(i), *s = dup_name(i);
    checksum += *(int *)t + *(long *)x + *(long *)y + (long)strlen(s);
    int pt = heaplayout_pool_of(t), px = heaplayout_pool_of(x), py = heaplayout_pool_of(y),
        ps = heaplayout_pool_of(s);
    if (expect_plan) {
      if (pt >= 3 && pt == px && px == ps && py == 0) grouped++;
      else if (bad++ < 5) fprintf(stderr, "object %d: pools token %d node-x %d node-y %d name %d\n", i, pt, px, py, ps);
      /* group members in allocation order: token, node-via-x, name, next token ... */
      adjacent += x == t + 32 && s == x + 32 && (prev_name == NULL || t == prev_name + 16);
    }
    prev_name = s;
  }
  printf("checksum %ld\n", checksum);
  if (expect_plan) {
    printf("grouped %d of %d, adjacent %d\n", grouped, n, adjacent);
    return grouped == n ? 0 : 1;
  }
  return 0;
}
