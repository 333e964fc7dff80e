/* Frees the pointer tests/runtime/reentrant_alloc.c kept from the runtime's start-up, then
 * allocates and frees as usual. Prints whether that pointer lay inside the runtime's image
 * (the bootstrap buffer) so the test knows the path it meant to take was taken. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  free(malloc(1)); /* the runtime starts here */
  void **kept = dlsym(RTLD_DEFAULT, "reentered_ptr");
  if (kept == NULL) {
    puts("no reentrant allocator");
    return 2;
  }
  void *p = *kept;
  Dl_info info;
  const char *where = p != NULL && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "heap";
  printf("kept pointer in %s\n", strstr(where, "libheaplayout") ? "runtime" : "heap");
  free(p);
  unsigned long sum = 0;
  for (int i = 0; i < 10000; i++) {
    char *q = calloc(1, 16 + i % 64);
    q[0] = (char)i;
    sum += (unsigned char)q[0];
    free(q);
  }
  printf("sum %lu\n", sum);
  return 0;
}
