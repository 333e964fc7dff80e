/* ccmalloc: co-allocation in cache-conscious blocks (cc-blocks).
 *
 * ccmalloc objects live in the thread's ccmalloc pool, whose chunks are divided into
 * cc-blocks of HEAPLAYOUT_CC_BLOCK bytes. Each block is filled by its own bump pointer
 * (one byte per block: granules used); the chunk's bump pointer only ever hands out whole
 * blocks. A request with a hint goes, in order, to: the hint's block; another started
 * block of the hint's page, nearest first; the block opened last; a freed slot of the
 * same size class; a fresh block. */
#pragma GCC visibility push(default)
#include "heaplayout/ccmalloc.h"
#pragma GCC visibility pop
#include "internal.h"

static void *block_place(hl_tpool *tp, hl_chunk *c, uint32_t block, uint8_t cls, size_t size) {
  uint32_t bsize = hl_rng.cc_block;
  char *start = (char *)hl_chunk_base(c) + (size_t)block * bsize; /* blocks from the chunk's start */
  if (start < c->data || start >= c->bump) return NULL; /* not a block handed out yet */
  uint8_t *fill = &hl_chunk_ccfill(c)[block];
  size_t used = (size_t)*fill << HL_GRANULE_SHIFT, need = hl_class_size[cls];
  if (used + need > bsize) return NULL;
  char *p = start + used;
  *fill = (uint8_t)((used + need) >> HL_GRANULE_SHIFT);
  hl_chunk_sizemap(c)[((uintptr_t)p - (uintptr_t)c) >> HL_GRANULE_SHIFT] = cls;
  c->live++;
  tp->allocs++;
  tp->bytes_requested += size;
  tp->slot_bytes += need;
  return p;
}

static void *near_place(hl_tpool *tp, const void *near, uint8_t cls, size_t size) {
  if (!hl_is_ours(near)) return NULL;
  hl_chunk *c = hl_chunk_of(near);
  if (c->pool != HL_POOL_CC || atomic_load_explicit(&c->owner, memory_order_relaxed) != tp) return NULL;
  uint32_t bsize = hl_rng.cc_block;
  uint32_t block = (uint32_t)(((uintptr_t)near - hl_chunk_base(c)) / bsize);
  void *p = block_place(tp, c, block, cls, size);
  if (p) return p;
  uint32_t per_page = 4096 / bsize, first = block - block % per_page;
  for (uint32_t d = 1; d < per_page; d++) {
    if (block + d < first + per_page && (p = block_place(tp, c, block + d, cls, size))) return p;
    if (block >= first + d && (p = block_place(tp, c, block - d, cls, size))) return p;
  }
  return NULL;
}

static void *fresh_block(hl_tpool *tp, uint8_t cls, size_t size) {
  uint32_t bsize = hl_rng.cc_block;
  for (int attempt = 0; attempt < 2; attempt++) {
    hl_chunk *c = tp->cur;
    if (c && (size_t)(c->end - c->bump) >= bsize) {
      uint32_t block = (uint32_t)(((uintptr_t)c->bump - hl_chunk_base(c)) / bsize);
      c->bump += bsize;
      c->cc_open = block;
      return block_place(tp, c, block, cls, size);
    }
    hl_chunk *n = hl_chunk_acquire(HL_POOL_CC);
    if (n == NULL) return NULL;
    hl_tpool_make_current(tp, n);
  }
  return NULL;
}

HL_EXPORT void *ccmalloc(size_t size, const void *near) {
  void *const *ra = HL_FRAME;
  hl_ensure_init();
  if (size == 0) size = 1;
  if (size > hl_rng.cc_block || hl_rng.size == 0) return hl_malloc_from(size, ra);
  hl_heap *heap = hl_heap_get();
  if (heap == NULL) return hl_next_alloc.malloc(size);
  hl_tpool *tp = heap->tpools[HL_POOL_CC];
  if (tp == NULL && (tp = hl_tpool_create(heap, HL_POOL_CC)) == NULL) return hl_next_alloc.malloc(size);

  uint8_t cls = hl_size_class(hl_size_a16(size)); /* blocks are filled in 16-byte granules */
  void *p = near ? near_place(tp, near, cls, size) : NULL;
  hl_chunk *c = tp->cur;
  if (p == NULL && c && c->cc_open != UINT32_MAX) p = block_place(tp, c, c->cc_open, cls, size);
  if (p == NULL && tp->head[cls].free == NULL && tp->head[cls].queue != NULL) hl_tpool_refill(tp, cls);
  if (p == NULL && tp->head[cls].free) { /* a freed slot, wherever it is */
    hl_free_slot *s = tp->head[cls].free;
    hl_slot_take(tp, cls, s, hl_chunk_of(s));
    p = s;
    hl_chunk_of(p)->live++;
    tp->allocs++;
    tp->bytes_requested += size;
    tp->slot_bytes += hl_class_size[cls];
  }
  if (p == NULL) p = fresh_block(tp, cls, size);
  return p ? p : hl_next_alloc.malloc(size);
}

HL_EXPORT void ccfree(void *p) { hl_free(p); }

HL_EXPORT size_t ccmalloc_block_size(void) {
  hl_ensure_init();
  return hl_rng.cc_block;
}
