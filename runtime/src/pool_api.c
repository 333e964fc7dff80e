/* pool.h: explicit pools on the same chunk engine. An explicit pool is a thread-pool that
 * lives in the caller's Pool descriptor instead of a thread's heap; it has its own chunks,
 * so its objects are contiguous and pooldestroy releases them all at once. */
#include <string.h>

#pragma GCC visibility push(default)
#include "heaplayout/pool.h"
#pragma GCC visibility pop
#include "internal.h"

#define API_POOL_MAGIC 0x4150504cu /* "APPL" */
#define LARGE_MAGIC 0x4c415247u    /* "LARG" */

typedef struct large_header {   /* before each object kept in the allocator underneath */
  struct large_header *next, *prev;
  uint32_t magic;
  uint32_t pad;
  size_t size;
} large_header;

typedef struct api_pool {
  hl_tpool tp;
  large_header *large;
  size_t align; /* 8 (odd multiples of 8 in 8-aligned slots), 16, or what poolcreate asked above 16 */
  uint32_t magic;
} api_pool;

_Static_assert(sizeof(api_pool) <= sizeof(Pool), "Pool descriptor too small");
_Static_assert(sizeof(large_header) % 16 == 0, "large header must keep 16-byte alignment");

static api_pool *pool_of(Pool *pd) { return (api_pool *)(void *)pd->opaque; }

static void pool_init(Pool *pd, size_t align, int bump_only) {
  hl_ensure_init();
  api_pool *ap = pool_of(pd);
  memset(pd, 0, sizeof *pd);
  ap->tp.heap = HL_HEAP_EXPLICIT;
  ap->tp.pool = HL_POOL_API;
  /* align 1..8 says that no object of the pool needs more than 8 (APA 5.4: the compiler
   * proved it from the types). Such a pool gets the packed class table: a 24-byte object
   * in a 24-byte slot, 40 in 40, ..., each 8-aligned; a size that is a multiple of 16
   * still gets a 16-aligned class, and so do 56, 120, 184 and 248, whose 16-multiples
   * never straddle a cache line (size_class.c). This is the pool's own choice: the
   * environment's HEAPLAYOUT_MIN_ALIGN and a plan's min_align do not reach pool.h pools.
   * 0 (the default) and 9..16 keep malloc's 16, what clang assumes of any allocation. */
  int eight = align >= 1 && align <= 8;
  ap->tp.classes = eight ? hl_classes_packed : hl_classes_16;
  hl_tpool_direct_init(&ap->tp);
  ap->tp.no_reuse = (uint8_t)bump_only;
  ap->tp.counting = 1; /* its statistics are added up when it is destroyed (and no_reuse is out of line) */
  ap->tp.max_size = HL_MAX_CLASS_SIZE;
  ap->align = eight ? 8 : align <= HL_GRANULE ? HL_GRANULE : align;
  ap->magic = API_POOL_MAGIC;
}

void poolcreate(Pool *pd, size_t size_hint, size_t align) {
  (void)size_hint; /* size classes already make every size fast */
  pool_init(pd, align, 0);
}

void poolinit_bp(Pool *pd, size_t align) { pool_init(pd, align, 1); }

static void *large_alloc(api_pool *ap, size_t size, size_t align) {
  size_t total;
  if (__builtin_add_overflow(size, sizeof(large_header), &total)) return NULL;
  large_header *h = align <= HL_GRANULE ? hl_next_alloc.malloc(total)
                                        : hl_next_alloc.memalign(align, total + align);
  if (h == NULL) return NULL;
  if (align > HL_GRANULE) { /* keep the object aligned: the header sits just before it */
    uintptr_t obj = ((uintptr_t)h + sizeof(large_header) + align - 1) & ~(uintptr_t)(align - 1);
    large_header *moved = (large_header *)(obj - sizeof(large_header));
    moved->pad = (uint32_t)((uintptr_t)moved - (uintptr_t)h);
    h = moved;
  } else {
    h->pad = 0;
  }
  h->magic = LARGE_MAGIC;
  h->size = size;
  h->prev = NULL;
  h->next = ap->large;
  if (ap->large) ap->large->prev = h;
  ap->large = h;
  return h + 1;
}

static void large_free(api_pool *ap, large_header *h) {
  if (h->prev) h->prev->next = h->next;
  else ap->large = h->next;
  if (h->next) h->next->prev = h->prev;
  h->magic = 0;
  hl_next_alloc.free((char *)h - h->pad);
}

static large_header *large_of(void *p) {
  large_header *h = (large_header *)p - 1;
  return h->magic == LARGE_MAGIC ? h : NULL;
}

void *poolmemalign(Pool *pd, size_t align, size_t size) {
  api_pool *ap = pool_of(pd);
  hl_assert(ap->magic == API_POOL_MAGIC);
  if (align < ap->align) align = ap->align;
  if (align & (align - 1)) return NULL;
  if (size == 0) size = 1;
  void *p = NULL;
  if (size <= HL_MAX_CLASS_SIZE && align <= 4096) {
    if (align <= 8) p = hl_tpool_alloc(&ap->tp, size); /* the pool's own classes (an 8 pool's) */
    else p = align <= HL_GRANULE ? hl_tpool_alloc(&ap->tp, hl_size_a16(size)) : hl_tpool_alloc_aligned(&ap->tp, size, align);
  }
  return p ? p : large_alloc(ap, size, align);
}

void *poolalloc(Pool *pd, size_t size) {
  api_pool *ap = pool_of(pd);
  /* The pool's class table gives the alignment: a 16 pool's (hl_classes_16) has only
   * 16-multiples, an 8 pool's puts odd multiples of 8 in 8-aligned slots. So the size
   * goes in as asked (its statistics count what the program requested). */
  if (HL_LIKELY(ap->align <= HL_GRANULE && size - 1 < HL_MAX_CLASS_SIZE)) {
    void *p = hl_tpool_alloc(&ap->tp, size);
    if (HL_LIKELY(p != NULL)) return p;
  }
  return poolmemalign(pd, ap->align, size);
}

void *poolalloc_bp(Pool *pd, size_t size) { return poolalloc(pd, size); }

void poolfree(Pool *pd, void *p) {
  if (p == NULL) return;
  api_pool *ap = pool_of(pd);
  if (hl_is_ours(p)) {
    hl_chunk *c = hl_chunk_of(p);
    if (atomic_load_explicit(&c->owner, memory_order_relaxed) == &ap->tp) hl_free_local(&ap->tp, c, p);
    else hl_free_ours(p);
    return;
  }
  large_header *h = large_of(p);
  if (h) large_free(ap, h);
  else hl_free(p); /* not from this pool: whoever allocated it */
}

void *poolrealloc(Pool *pd, void *p, size_t size) {
  if (p == NULL) return poolalloc(pd, size);
  if (size == 0) {
    poolfree(pd, p);
    return NULL;
  }
  size_t old;
  if (hl_is_ours(p)) {
    old = hl_usable_size_ours(p);
    if (size <= old) return p;
  } else {
    large_header *h = large_of(p);
    old = h ? h->size : 0;
    if (h && size <= old) return p;
  }
  void *n = poolalloc(pd, size);
  if (n == NULL) return NULL;
  memcpy(n, p, old < size ? old : size);
  poolfree(pd, p);
  return n;
}

void pooldestroy(Pool *pd) {
  api_pool *ap = pool_of(pd);
  if (ap->magic != API_POOL_MAGIC) return; /* never created, or destroyed already */
  hl_stats_add_explicit(&ap->tp);
  hl_tpool_destroy(&ap->tp);
  while (ap->large) large_free(ap, ap->large);
  ap->magic = 0;
}

void pooldestroy_bp(Pool *pd) { pooldestroy(pd); }
