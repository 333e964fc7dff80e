/* dlopen, use, dlclose, in turns, of two libraries that map at the same address and whose
 * wrappers call malloc from the same return address with different frame sizes
 * (unload_wrapper.c). The runtime's caches keyed by return address must not outlive the
 * first library: a rule for its 64 KiB frame would step the second's frames off the stack.
 * Usage: unload_test LIB_A LIB_B ROUNDS N. Prints a checksum on stdout, and on stderr
 * where each library's wrapper was (the test checks that they shared the address). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*wrap_fn)(size_t);

__attribute__((noinline)) static long use(const char *lib, int n) {
  void *h = dlopen(lib, RTLD_NOW);
  if (h == NULL) {
    fprintf(stderr, "%s\n", dlerror());
    exit(3);
  }
  wrap_fn wrap = (wrap_fn)dlsym(h, "unload_wrap");
  void **keep = malloc((size_t)n * sizeof *keep);
  long sum = 0;
  for (int i = 0; i < n; i++) {
    keep[i] = wrap(48);
    memset(keep[i], i & 0xff, 48);
    sum += ((unsigned char *)keep[i])[7];
  }
  for (int i = 0; i < n; i++) free(keep[i]);
  free(keep);
  fprintf(stderr, "wrap %p\n", (void *)wrap);
  dlclose(h);
  return sum;
}

int main(int argc, char **argv) {
  if (argc != 5) return 2;
  int rounds = atoi(argv[3]), n = atoi(argv[4]);
  long sum = 0;
  for (int r = 0; r < rounds; r++) sum += use(argv[1], n) + use(argv[2], n);
  printf("%ld\n", sum);
  return 0;
}
