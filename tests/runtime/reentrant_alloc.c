/* An allocator to preload after the runtime whose calloc calls malloc (through the PLT, so
 * into the runtime again): while the runtime initialises, the request it forwards here
 * comes back to it, and that one is served from the bootstrap buffer (runtime/src/next.c).
 * The first such pointer is kept in reentered_ptr for the test program to free after
 * start-up: a free of a bootstrap pointer must be swallowed by the filter the runtime then
 * puts over the allocator's free, never reach it (glibc would abort). */
#include <stddef.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *reentered_ptr;
static int in_calloc;

void *malloc(size_t n) { return __libc_malloc(n); }
void free(void *p) { __libc_free(p); }
void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { return __libc_memalign(a, n); }
void *calloc(size_t n, size_t s) {
  size_t total = n * s;
  in_calloc++;
  void *p = malloc(total); /* the runtime's malloc: it comes first in search order */
  in_calloc--;
  if (p != NULL) {
    if (reentered_ptr == NULL && in_calloc == 0) reentered_ptr = p;
    memset(p, 0, total);
  }
  return p;
}
