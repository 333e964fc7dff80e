/* heaplayout introspect.h: ask the runtime where an object lives (for tests, debugging
 * and tools). Link with -lheaplayout, or look the symbols up with dlsym. */
#ifndef HEAPLAYOUT_INTROSPECT_H
#define HEAPLAYOUT_INTROSPECT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The pool id of a live object placed by heaplayout, or 0 if the allocator underneath
 * holds it. Pool 1 is ccmalloc, pool 2 the pool.h pools, 3 and up the policy's pools. */
int heaplayout_pool_of(const void *ptr);

/* The chunk size in use (objects of one chunk share its size-aligned address range). */
size_t heaplayout_chunk_size(void);

/* The active policy's name: "off" or "callsite". */
const char *heaplayout_policy(void);

#ifdef __cplusplus
}
#endif
#endif
