/* heaplayout pool.h: explicit pools, the runtime interface of Automatic Pool Allocation
 * (Lattner and Adve, PLDI 2005, figure 3), for programs that want to choose from source
 * which objects live together.
 *
 *   Pool p;
 *   poolcreate(&p, sizeof(struct node), 0);
 *   struct node *n = poolalloc(&p, sizeof *n);   // objects of one pool are contiguous
 *   poolfree(&p, n);                             // optional: pooldestroy frees everything
 *   pooldestroy(&p);
 *
 * Link with -lheaplayout (build/runtime/libheaplayout.so). A pool is used by one thread
 * at a time. Objects come from the runtime's chunks, so free() and realloc() work on them
 * too; objects larger than 32 KiB are kept by the pool in the allocator underneath and
 * must be released with poolfree or pooldestroy. The _bp variants never reuse freed
 * memory: allocation is a pointer bump, and memory returns only at pooldestroy_bp. */
#ifndef HEAPLAYOUT_POOL_H
#define HEAPLAYOUT_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A pool descriptor: put it where the data structure's owner lives (stack, global, a
 * struct). Its contents are private to the runtime. */
typedef struct Pool {
  _Alignas(16) unsigned char opaque[4096];
} Pool;

/* Initialise an empty pool. size_hint: the common object size, or 0; align: the
 * alignment every object needs, up to 4096:
 *   0, 9..16  malloc's 16: every object 16-aligned (what clang and GCC assume of malloc);
 *   1..8      8 (APA section 5.4, for a pool whose types need no more; `heaplayout cc`
 *             passes 8 when it proved that): sizes that are odd multiples of 8 get slots
 *             of their own size, 8-aligned (24 bytes in 24, not 32; 40 in 40, not 48),
 *             except 56, 120, 184 and 248, which keep 64, 128, 192 and 256 (those never
 *             straddle a cache line); multiples of 16 stay 16-aligned. This is the pool's
 *             own setting: HEAPLAYOUT_MIN_ALIGN and a plan's min_align do not change it;
 *   above 16  that alignment, for every object.
 * poolmemalign can still ask more of a single object. */
void poolcreate(Pool *pd, size_t size_hint, size_t align);
/* Release every object of the pool at once. */
void pooldestroy(Pool *pd);
void *poolalloc(Pool *pd, size_t size);
void poolfree(Pool *pd, void *ptr);
void *poolrealloc(Pool *pd, void *ptr, size_t size);
void *poolmemalign(Pool *pd, size_t align, size_t size);

/* Bump-pointer pools (APA section 5): no per-object reuse, fastest allocation; align as
 * for poolcreate. */
void poolinit_bp(Pool *pd, size_t align);
void *poolalloc_bp(Pool *pd, size_t size);
void pooldestroy_bp(Pool *pd);

#ifdef __cplusplus
}
#endif
#endif
