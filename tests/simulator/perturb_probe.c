/* Probe for libhlperturb (tests/test_simulator_perturb.py): allocates N objects of sizes
 * cycling through the given list and prints one address per line ("A <hex> <size>"), then
 * exercises the rest of the malloc family and prints "ok" when every check held (an "error"
 * line and exit 1 otherwise). usage: perturb_probe N SIZE [SIZE...] */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(const char *what) {
  printf("error %s\n", what);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  int n = atoi(argv[1]), nsizes = argc - 2;
  printf("start\n"); /* stdio's buffer now, not between the objects */
  char **objs = calloc((size_t)n, sizeof *objs);
  if (!objs) return bad("calloc of the table");
  for (int i = 0; i < n; i++) {
    size_t size = (size_t)atol(argv[2 + i % nsizes]);
    objs[i] = malloc(size);
    if (!objs[i]) return bad("malloc");
    if ((uintptr_t)objs[i] % 16) return bad("malloc alignment");
    if (malloc_usable_size(objs[i]) < size) return bad("malloc_usable_size");
    memset(objs[i], i & 0xff, size);
    printf("A %lx %zu\n", (unsigned long)(uintptr_t)objs[i], size);
  }
  for (int i = 0; i < n; i++) { /* no object overwrote another */
    size_t size = (size_t)atol(argv[2 + i % nsizes]);
    for (size_t k = 0; k < size; k++)
      if ((unsigned char)objs[i][k] != (i & 0xff)) return bad("objects overlap");
  }
  /* calloc of reused memory is zero */
  for (int i = 0; i < n; i += 2) free(objs[i]);
  for (int i = 0; i < n; i += 2) {
    size_t size = (size_t)atol(argv[2 + i % nsizes]);
    unsigned char *z = calloc(1, size);
    if (!z) return bad("calloc");
    for (size_t k = 0; k < size; k++)
      if (z[k]) return bad("calloc not zero");
    objs[i] = (char *)z;
  }
  /* realloc keeps the contents, growing and shrinking */
  char *r = malloc(40);
  for (int k = 0; k < 40; k++) r[k] = (char)k;
  r = realloc(r, 5000);
  if (!r) return bad("realloc up");
  for (int k = 0; k < 40; k++)
    if (r[k] != (char)k) return bad("realloc lost data");
  r = realloc(r, 8);
  if (!r || r[7] != 7) return bad("realloc down");
  free(r);
  /* aligned allocation of every kind */
  for (size_t a = 16; a <= 8192; a *= 2) {
    void *p = memalign(a, 100);
    if (!p || (uintptr_t)p % a) return bad("memalign");
    void *q = NULL;
    if (posix_memalign(&q, a, 3000) || (uintptr_t)q % a) return bad("posix_memalign");
    void *s = aligned_alloc(a, a * 2);
    if (!s || (uintptr_t)s % a) return bad("aligned_alloc");
    memset(p, 1, 100);
    memset(q, 2, 3000);
    memset(s, 3, a * 2);
    free(p);
    free(q);
    free(s);
  }
  if (posix_memalign((void **)&r, 24, 8) == 0) return bad("posix_memalign accepted a bad alignment");
  void *big = malloc(50 << 20);
  if (!big) return bad("a large block");
  memset(big, 5, 50 << 20);
  free(big);
  free(NULL);
  printf("ok\n");
  return 0;
}
