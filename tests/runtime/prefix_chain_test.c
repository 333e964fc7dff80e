/* Program for PreFix's identification by call chain (tests/test_prefix_chains.py): every
 * object comes from one wrapper, as lua's allocator function serves the whole interpreter,
 * so the sites differ only in the frames further out, and the plans' rules need up to five.
 *   wrap      malloc(n)               every object of the program
 *   via_x     wrap(n)                 called by top_1, top_2, rec and main
 *   via_y     wrap(n)                 called by top_3 and top_4
 *   top_1, top_2 -> via_x; top_3, top_4 -> via_y; rec(d) recurses d times, then via_x
 *   dupper    strdup                  libc allocates for it: the walk starts in libc
 * `chains N DEPTH` makes N rounds of one object from each of: top_1, top_2, top_3, top_4,
 * wrap called from main, via_x called from main, rec(DEPTH) called from main (the
 * recursion repeats rec's return address DEPTH times, so the walk to the frame beyond it
 * takes DEPTH more steps), and dupper. It prints per round a sum of what it wrote and read back, and,
 * with PREFIX_TEST_ADDR=1, each object's kind and address (addresses differ between runs).
 * Objects stay live to the end, so that no slot is reused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
/* keeps a call from becoming a tail call (the caller's frame must stay on the stack) */
#define KEEP(p) __asm__ volatile("" ::"r"(p) : "memory")

NOINLINE char *wrap(size_t n) {
  char *p = malloc(n);
  KEEP(p);
  return p;
}
NOINLINE char *via_x(size_t n) {
  char *p = wrap(n);
  KEEP(p);
  return p;
}
NOINLINE char *via_y(size_t n) {
  char *p = wrap(n);
  KEEP(p);
  return p;
}
NOINLINE char *top_1(size_t n) {
  char *p = via_x(n);
  KEEP(p);
  return p;
}
NOINLINE char *top_2(size_t n) {
  char *p = via_x(n);
  KEEP(p);
  return p;
}
NOINLINE char *top_3(size_t n) {
  char *p = via_y(n);
  KEEP(p);
  return p;
}
NOINLINE char *top_4(size_t n) {
  char *p = via_y(n);
  KEEP(p);
  return p;
}
NOINLINE char *rec(int depth, size_t n) {
  char *p = depth > 0 ? rec(depth - 1, n) : via_x(n);
  KEEP(p);
  return p;
}

NOINLINE char *dupper(void) {
  char *p = strdup("forty-seven bytes of text, copied by libc.....");
  KEEP(p);
  return p;
}

enum { KINDS = 8 };

int main(int argc, char **argv) {
  if (argc != 4 || strcmp(argv[1], "chains") != 0) {
    fprintf(stderr, "usage: prefix_chain_test chains N DEPTH\n");
    return 2;
  }
  long n = atol(argv[2]);
  int depth = atoi(argv[3]);
  int show = getenv("PREFIX_TEST_ADDR") != NULL;
  char **objs = calloc((size_t)n * KINDS, sizeof(char *)); /* from libc's frame: not the wrapper */
  if (objs == NULL) return 1;
  for (long i = 0; i < n; i++) {
    char *o[KINDS];
    o[0] = top_1(48);
    o[1] = top_2(48);
    o[2] = top_3(48);
    o[3] = top_4(48);
    o[4] = wrap(48);
    o[5] = via_x(48);
    o[6] = rec(depth, 48);
    o[7] = dupper();
    unsigned long sum = 0;
    for (int k = 0; k < KINDS; k++) {
      if (o[k] == NULL) return 1;
      memset(o[k], (int)(i * KINDS + k), 48);
      for (int b = 0; b < 48; b++) sum += (unsigned char)o[k][b];
      objs[i * KINDS + k] = o[k];
      if (show) printf("%d %p\n", k, (void *)o[k]);
    }
    printf("round %ld %lu\n", i, sum);
  }
  for (long i = 0; i < n * KINDS; i++) free(objs[i]);
  free(objs);
  return 0;
}
