/* heaplayout ccmalloc.h: cache-conscious co-allocation (Chilimbi, Hill and Larus, PLDI
 * 1999). ccmalloc(size, near) places the new object in the same cc-block as `near` when
 * it fits, else in a block of the same page, else in a fresh block; objects that a
 * program traverses together then share cache lines.
 *
 *   struct node *child = ccmalloc(sizeof *child, parent);
 *   ...
 *   free(child);            // ordinary free (or ccfree) releases it
 *
 * The cc-block size is HEAPLAYOUT_CC_BLOCK (default 256 bytes, a power of two from 64 to
 * 2048). Objects larger than a block, a NULL `near`, or a `near` that another thread
 * allocated get the nearest sensible place instead. Link with -lheaplayout. */
#ifndef HEAPLAYOUT_CCMALLOC_H
#define HEAPLAYOUT_CCMALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void *ccmalloc(size_t size, const void *near);
void ccfree(void *ptr);
size_t ccmalloc_block_size(void);

#ifdef __cplusplus
}
#endif
#endif
