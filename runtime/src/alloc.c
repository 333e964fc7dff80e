/* Allocation and free inside pools. The fast path (hl_tpool_alloc) is in internal.h:
 *   1. pop the current chunk's free list for the size class, else
 *   2. bump the current chunk, writing the class into the size map.
 * Everything here is the slow path: finding a chunk with room, collecting frees made by
 * other threads, resetting or releasing empty chunks, alignment, realloc. */
#include <string.h>

#include "internal.h"

static void list_unlink(hl_tpool *tp, hl_chunk *c) {
  if (c->prev) c->prev->next = c->next;
  else tp->others = c->next;
  if (c->next) c->next->prev = c->prev;
  c->next = c->prev = NULL;
}

static void list_push_front(hl_tpool *tp, hl_chunk *c) {
  c->prev = NULL;
  c->next = tp->others;
  if (tp->others) tp->others->prev = c;
  tp->others = c;
}

/* Bring the pool's resident total up to date with this chunk's bump extent. */
static void account_extent(hl_chunk *c) {
  size_t extent = (size_t)(c->bump - (char *)c);
  if (extent != c->accounted) {
    hl_pool_resident_add(c->pool, (long)extent - (long)c->accounted);
    c->accounted = extent;
  }
}

/* An empty chunk goes back to the chunk cache, unless it is the current one: that one
 * keeps serving (its free lists hold every slot), so a pool that frees and allocates one
 * object at a time never touches the chunk cache. */
static void chunk_emptied(hl_tpool *tp, hl_chunk *c) {
  if (c == tp->cur) return;
  list_unlink(tp, c);
  hl_chunk_release(c);
}

static void push_free(hl_tpool *tp, hl_chunk *c, void *p) {
  uint8_t cls = hl_class_at(c, p);
  hl_assert(cls > 0 && cls < HL_NCLASSES);
  hl_assert(c->live > 0);
  tp->frees++;
  tp->freed_slot_bytes += hl_class_size[cls];
  if (!tp->no_reuse) {
    *(void **)p = c->free[cls];
    c->free[cls] = p;
  }
  c->live--;
}

void hl_free_local(hl_tpool *tp, hl_chunk *c, void *p) {
  push_free(tp, c, p);
  if (HL_UNLIKELY(c->live == 0)) {
    chunk_emptied(tp, c);
  } else if (!c->has_free && c != tp->cur) {
    c->has_free = 1; /* move to the front so the slow path finds its slots */
    list_unlink(tp, c);
    list_push_front(tp, c);
  }
}

/* Take what other threads freed into c. Returns 1 when c became empty (not released). */
static int collect_remote(hl_tpool *tp, hl_chunk *c) {
  if (atomic_load_explicit(&c->remote, memory_order_relaxed) == NULL) return 0;
  void *p = atomic_exchange_explicit(&c->remote, NULL, memory_order_acquire);
  while (p) {
    void *next = *(void **)p;
    push_free(tp, c, p);
    p = next;
  }
  c->has_free = 1;
  return c->live == 0;
}

/* Frees from other threads, for every chunk of the pool; empty non-current chunks go. */
void hl_tpool_collect_all(hl_tpool *tp) {
  if (tp->cur && collect_remote(tp, tp->cur)) chunk_emptied(tp, tp->cur);
  hl_chunk *c = tp->others;
  while (c) {
    hl_chunk *next = c->next;
    if (collect_remote(tp, c)) chunk_emptied(tp, c);
    c = next;
  }
}

static int chunk_can_serve(const hl_chunk *c, uint8_t cls) {
  return c->free[cls] != NULL || (size_t)(c->end - c->bump) >= hl_class_size[cls];
}

/* Make c the current chunk; the old current one joins the others. */
void hl_tpool_make_current(hl_tpool *tp, hl_chunk *c) {
  atomic_store_explicit(&c->owner, tp, memory_order_release);
  hl_chunk *old = tp->cur;
  if (old) {
    account_extent(old);
    list_push_front(tp, old);
  }
  tp->cur = c;
  c->has_free = 0;
}

/* A chunk of this pool that can serve class cls, or NULL. */
static hl_chunk *find_chunk(hl_tpool *tp, uint8_t cls) {
  hl_chunk *c = tp->others;
  for (unsigned i = 0; c && i < HL_PARTIAL_SEARCH; i++, c = c->next) {
    collect_remote(tp, c);
    if (c->live == 0) {
      list_unlink(tp, c);
      hl_pool_resident_add(c->pool, -(long)c->accounted);
      c->accounted = 0;
      hl_chunk_reset(c);
      return c;
    }
    if (chunk_can_serve(c, cls)) {
      list_unlink(tp, c);
      return c;
    }
  }
  /* before taking a new chunk, look at everything other threads freed */
  hl_tpool_collect_all(tp);
  for (c = tp->others; c; c = c->next)
    if (chunk_can_serve(c, cls)) {
      list_unlink(tp, c);
      return c;
    }
  c = hl_chunk_adopt(tp->pool);
  if (c) {
    atomic_store_explicit(&c->owner, tp, memory_order_release);
    collect_remote(tp, c);
    if (c->live == 0) {
      hl_pool_resident_add(c->pool, -(long)c->accounted);
      c->accounted = 0;
      hl_chunk_reset(c);
    }
    if (chunk_can_serve(c, cls)) return c;
    list_push_front(tp, c);
  }
  c = hl_chunk_acquire(tp->pool);
  if (c) atomic_store_explicit(&c->owner, tp, memory_order_release);
  return c;
}

void *hl_tpool_alloc_slow(hl_tpool *tp, uint8_t cls, size_t size) {
  hl_chunk *c = tp->cur;
  if (c) {
    if (collect_remote(tp, c)) chunk_emptied(tp, c);
    if (chunk_can_serve(c, cls)) return hl_tpool_alloc(tp, size);
  }
  c = find_chunk(tp, cls);
  if (c == NULL) return NULL; /* range exhausted: the caller forwards */
  hl_tpool_make_current(tp, c);
  return hl_tpool_alloc(tp, size);
}

/* Aligned placement: bump to the alignment (the gap stays unused). */
void *hl_tpool_alloc_aligned(hl_tpool *tp, size_t size, size_t align) {
  if (align <= HL_GRANULE) return hl_tpool_alloc(tp, size);
  if (align > 4096 || size > HL_MAX_CLASS_SIZE) return NULL;
  uint8_t cls = hl_size_class(size);
  size_t need = hl_class_size[cls];
  for (int attempt = 0; attempt < 2; attempt++) {
    hl_chunk *c = tp->cur;
    if (c) {
      uintptr_t at = ((uintptr_t)c->bump + align - 1) & ~(uintptr_t)(align - 1);
      if (at + need <= (uintptr_t)c->end) {
        c->bump = (char *)(at + need);
        hl_chunk_sizemap(c)[(at - (uintptr_t)c) >> HL_GRANULE_SHIFT] = cls;
        c->live++;
        tp->allocs++;
        tp->bytes_requested += size;
        tp->slot_bytes += need;
        return (void *)at;
      }
    }
    /* a chunk with enough fresh space for the worst-case gap */
    hl_chunk *n = hl_chunk_acquire(tp->pool);
    if (n == NULL) return NULL;
    hl_tpool_make_current(tp, n);
  }
  return NULL;
}

void hl_free_ours(void *p) {
  hl_chunk *c = hl_chunk_of(p);
  hl_assert(c->magic == HL_CHUNK_MAGIC && c->in_use);
  hl_tpool *owner = atomic_load_explicit(&c->owner, memory_order_acquire);
  if (HL_LIKELY(owner != NULL && owner->heap == hl_tl_heap)) {
    hl_free_local(owner, c, p);
    return;
  }
  /* another thread's chunk (or an explicit pool's, or an abandoned one) */
  void *head = atomic_load_explicit(&c->remote, memory_order_relaxed);
  do {
    *(void **)p = head;
  } while (!atomic_compare_exchange_weak_explicit(&c->remote, &head, p, memory_order_release,
                                                  memory_order_relaxed));
}

size_t hl_usable_size_ours(const void *p) {
  hl_chunk *c = hl_chunk_of(p);
  return hl_class_size[hl_class_at(c, p)];
}

void *hl_realloc_ours(void *p, size_t size) {
  hl_chunk *c = hl_chunk_of(p);
  uint8_t cls = hl_class_at(c, p);
  size_t old = hl_class_size[cls];
  if (size <= old) return p; /* shrinking, or growing within the slot */

  hl_tpool *owner = atomic_load_explicit(&c->owner, memory_order_acquire);
  /* ccmalloc chunks keep their bump pointer on block boundaries: never grow there */
  int local = owner != NULL && owner->heap == hl_tl_heap && c->pool != HL_POOL_CC;
  if (local && size <= owner->max_size && size <= HL_MAX_CLASS_SIZE && c == owner->cur &&
      (char *)p + old == c->bump) {
    /* the last object of the current chunk grows into fresh space */
    uint8_t ncls = hl_size_class(size);
    if ((char *)p + hl_class_size[ncls] <= c->end) {
      c->bump = (char *)p + hl_class_size[ncls];
      hl_chunk_sizemap(c)[((uintptr_t)p - (uintptr_t)c) >> HL_GRANULE_SHIFT] = ncls;
      owner->slot_bytes += hl_class_size[ncls] - old;
      return p;
    }
  }
  void *n = NULL;
  if (local && size <= owner->max_size && size <= HL_MAX_CLASS_SIZE && owner->heap != HL_HEAP_EXPLICIT)
    n = hl_tpool_alloc(owner, size);
  if (n == NULL) n = hl_next_alloc.malloc(size);
  if (n == NULL) return NULL; /* the old object stays valid, as realloc promises */
  memcpy(n, p, old);
  hl_free_ours(p);
  return n;
}

void hl_tpool_destroy(hl_tpool *tp) {
  hl_chunk *c = tp->others;
  while (c) {
    hl_chunk *next = c->next;
    hl_chunk_release(c);
    c = next;
  }
  tp->others = NULL;
  if (tp->cur) hl_chunk_release(tp->cur);
  tp->cur = NULL;
}
