/* Allocation and free inside pools. The fast path (hl_tpool_alloc) is in internal.h:
 *   1. pop the most recently freed slot of the size class from the allocation list, which
 *      holds the free slots of one chunk (tp->head[cls].from), else
 *   2. when no other chunk of the pool is queued with free slots of the class, bump the
 *      class's span of fresh space (a plan's group: the current chunk), writing the class
 *      into the chunk's size map; else
 *   3. (here) the first queued chunk's list becomes the allocation list.
 * Free lists are sharded by chunk (internal.h, hl_slot_push): a free goes to its chunk's
 * list, or to the allocation list when its chunk is the allocating one, so an emptied
 * chunk is released at once in O(classes), touching none of its slots. With one list per
 * class across the pool's chunks (before), releasing it meant finding each slot on the
 * lists: a pass over them (singly linked: lua5.4 paid 4.8M D1 misses for it) or an unlink
 * per slot writing its neighbours (doubly linked: 0.9M D1 write misses, and a back link on
 * every free), and emptied chunks were kept, with the site-direct pop switched off, until
 * the pool allocated again (docs/results.md, section 15).
 * Everything here is the slow path and the free path: the queues, collecting frees made
 * by other threads, releasing empty chunks, alignment, realloc. */
#include <stdlib.h>
#include <string.h>

#include "fastpath.h"

/* glibc's wording, so that a program's double free reads the same under us; abort, as
 * glibc does, because the heap can no longer be trusted. */
void hl_free_invalid(const void *p, uint8_t entry, const char *func) {
  if (entry == 0) hl_message("%s(): invalid pointer %p (no pooled object starts there)", func, p);
  else if (func[0] == 'f') hl_message("%s(): double free detected (pooled object %p)", func, p);
  else hl_message("%s(): invalid pointer %p (a freed pooled object)", func, p);
  abort();
}

/* ---- the thread-pool's list of other chunks ---- */

static void chunks_unlink(hl_tpool *tp, hl_chunk *c) {
  if (c->prev) c->prev->next = c->next;
  else tp->others = c->next;
  if (c->next) c->next->prev = c->prev;
  c->next = c->prev = NULL;
  tp->n_others--;
}

/* c (or NULL) becomes the chunk fresh space is bumped in, for every class no chunk is
 * queued for (internal.h, bump_in). */
static void set_cur(hl_tpool *tp, hl_chunk *c) {
  tp->cur = c;
  /* the chunk it replaces, if any, was cleared where it left (hl_tpool_make_current,
   * chunks_push); a released one is cleared when taken again (chunk.c) */
  if (c) c->stays = !tp->multi;
  for (size_t cls = 0; cls < HL_NCLASSES; cls++) tp->head[cls].bump_in = tp->head[cls].queue ? NULL : c;
}

static void chunks_push(hl_tpool *tp, hl_chunk *c) {
  tp->multi = 1;
  c->stays = 0;
  if (tp->cur) tp->cur->stays = 0;
  c->prev = NULL;
  c->next = tp->others;
  if (tp->others) tp->others->prev = c;
  tp->others = c;
  tp->n_others++;
}

/* ---- spans: each class's fresh space ----
 * In every pool but a plan's group, fresh slots of one class come from a span of the chunk
 * (HEAPLAYOUT_SPAN_BYTES, tunables.h) carved from the chunk's bump region when the class's
 * span runs out, so that objects of one size sit together as in a size-class allocator's
 * pages, and the pool's other sizes do not interleave with them. A span's end is on a slot
 * boundary; the size map leaves its unused rest, if any, as padding (FOR_EACH_OBJECT). */

/* Spans in chunk c (every span when c is NULL) end: c leaves the pool. */
static void spans_drop_in(hl_tpool *tp, const hl_chunk *c) {
  for (unsigned k = 0; k < HL_NCLASSES; k++) {
    if (tp->span_end[k] != NULL && (c == NULL || tp->span_chunk[k] == c)) {
      hl_assert(tp->span_chunk[k] == hl_chunk_of(tp->span_end[k] - 1));
      tp->span_bump[k] = tp->span_end[k] = NULL;
      tp->span_chunk[k] = NULL;
    }
  }
}

/* Where cls's next span in c starts: on a cache line, after the gap that moves its head to
 * other cache sets than the previous span's (tunables.h). No gap for a chunk's first span
 * (chunk colouring already starts each chunk on other sets), and where the previous span
 * was cls's own it goes on at the next 16 bytes: one class's spans stay one run of slots
 * (pool.h's lists). On a line, because a span after one whose slots did not fill whole
 * lines (200-byte slots end 8 bytes into one) started 16, 32 or 48 bytes into a line, and
 * so did every slot of it whose class is a multiple of 64 bytes: each such object's first
 * line, where programs keep their hot fields, was split over two. graphviz's 456-byte node
 * records (512-byte class) sat so 3 times in 4; on its measuring input under callsite on
 * mimalloc (HEAPLAYOUT_MAX_SIZE=512) L1 misses fell 8.3% and L2 misses 8.3% with spans on
 * lines (docs/results.md, section 19). It costs at most 48 bytes per span. */
static char *span_start(const hl_tpool *tp, const hl_chunk *c, uint8_t cls) {
  uintptr_t bump = (uintptr_t)c->bump;
  if (tp->span_end[cls] == c->bump) return (char *)((bump + 15) & ~(uintptr_t)15);
  /* a line's start, or line_off bytes into one for a group whose plan says so (the
   * chunk's data starts there too: chunk.c) */
  uintptr_t off = tp->line_off;
  char *b = (char *)(((bump - off + HL_LINE_BYTES - 1) & ~(uintptr_t)(HL_LINE_BYTES - 1)) + off);
  return c->bump == c->data ? b : b + HL_SPAN_GAP_LINES * HL_LINE_BYTES;
}

/* A new span for cls from c's bump region: 1 if c had room for one slot at least. */
static int span_carve(hl_tpool *tp, hl_chunk *c, uint8_t cls) {
  if (c == NULL) return 0;
  hl_assert(!tp->interleave);
  char *b = span_start(tp, c, cls);
  size_t csize = hl_class_size[cls];
  if (b > c->end || (size_t)(c->end - b) < csize) return 0;
  size_t want = hl_state.opt.span_bytes < csize ? csize : hl_state.opt.span_bytes;
  size_t avail = (size_t)(c->end - b);
  if (want > avail) want = avail;
  tp->span_bump[cls] = b;
  tp->span_end[cls] = b + want / csize * csize;
  tp->span_chunk[cls] = c;
  c->bump = tp->span_end[cls];
  return 1;
}

/* ---- free slots ---- */

/* c is leaving tp (released): its lists go whole, the allocation lists it feeds too, and it
 * leaves the queues. No slot is touched. */
static void chunk_drop_lists(hl_tpool *tp, hl_chunk *c) {
  spans_drop_in(tp, c);
  for (size_t cls = 1; cls < HL_NCLASSES; cls++) {
    if (tp->head[cls].from == c) {
      tp->head[cls].free = NULL;
      tp->head[cls].from = NULL;
    }
    if (c->free[cls] != HL_OWN_NONE) {
      hl_chunk_dequeue(tp, c, cls);
      c->free[cls] = HL_OWN_NONE;
    }
#ifdef HL_DEBUG
    for (hl_chunk *q = tp->head[cls].queue; q; q = q->q[cls].next)
      hl_assert(q != c && q != tp->head[cls].from && q->free[cls] != HL_OWN_NONE && q->in_use &&
                atomic_load_explicit(&q->owner, memory_order_relaxed) == tp);
#endif
  }
}

/* The objects of a chunk, in address order: from byte offset lo to the bump pointer, a
 * granule whose size-map entry is set holds an object starting at the walk's position if
 * that is inside it (objects are contiguous), else at its start; an unset entry means the
 * rest of the granule is padding (before a 16-aligned slot, or an aligned request's gap). */
#define FOR_EACH_OBJECT(c, map, pos, entry)                                                   \
  for (size_t pos = (size_t)((c)->data - (char *)(c)), end_ = (size_t)((c)->bump - (char *)(c)); \
       pos < end_;)                                                                           \
    if (((entry) = (map)[pos >> HL_GRANULE_SHIFT]) == 0) pos = (pos | (HL_GRANULE - 1)) + 1;  \
    else

/* Account for the chunk's bump extent in the pool's resident total (sampled for peak). */
static void account_extent(hl_chunk *c) {
  size_t extent = (size_t)((uintptr_t)c->bump - hl_chunk_base(c));
  if (extent != c->accounted) {
    hl_pool_resident_add(c->pool, (long)extent - (long)c->accounted);
    c->accounted = extent;
  }
}

static void release_other(hl_tpool *tp, hl_chunk *c) {
  chunk_drop_lists(tp, c);
  chunks_unlink(tp, c);
  hl_chunk_release(c);
}

/* Every chunk of tp is empty: release every chunk (the pool starts again from fresh
 * space). */
static void drop_all(hl_tpool *tp) {
  while (tp->others) release_other(tp, tp->others);
  if (tp->cur) {
    chunk_drop_lists(tp, tp->cur);
    account_extent(tp->cur);
    hl_chunk_release(tp->cur);
    set_cur(tp, NULL);
  }
  tp->multi = 0;
#ifdef HL_DEBUG
  for (size_t cls = 0; cls < HL_NCLASSES; cls++) hl_assert(!tp->head[cls].free && !tp->head[cls].from && !tp->head[cls].queue);
#endif
}

/* A chunk became empty (no live object, no remote free pending: those count as live until
 * collected). Any chunk but the current one is released at once: its lists go whole
 * (chunk_drop_lists), so that what the pool builds next is bumped in order into fresh
 * space, not scattered over the freed slots in the order they were freed (apa_split's
 * lists: 0.57x glibc's time under callsite when they were reused, 0.04x when released;
 * keeping emptied chunks made it 4.8x slower: docs/results.md, section 15). The current
 * chunk stays while others hold objects, and in a pool that never had another chunk, so
 * that a pool freeing and allocating one object at a time never touches the chunk cache;
 * once the whole pool is empty it goes too.
 * Returns 1 when c was released. */
static int chunk_emptied(hl_tpool *tp, hl_chunk *c) {
  hl_assert(c->live == 0);
  if (c == tp->cur) {
    if (tp->n_others == 0 && tp->multi) {
      drop_all(tp);
      return 1;
    }
    return 0;
  }
  release_other(tp, c);
  if (tp->n_others == 0 && tp->cur && tp->cur->live == 0) drop_all(tp);
  return 1;
}

/* A free by pool.h or one collected from the remote list: checked as free() checks. */
static inline void free_into(hl_tpool *tp, hl_chunk *c, void *p) {
  uint8_t *entry = hl_sizemap_entry(c, p), cls = *entry;
  if (HL_UNLIKELY(hl_sizemap_not_live(cls))) hl_free_invalid(p, cls, "free");
  *entry = cls | HL_SIZEMAP_FREE;
  hl_assert(cls > 0 && cls < HL_NCLASSES);
  hl_assert(c->live > 0);
  if (tp->counting) { /* nothing reads the counters otherwise (hl_tpool) */
    tp->frees++;
    tp->freed_slot_bytes += hl_class_size[cls];
  }
  if (!tp->no_reuse) (void)hl_slot_push(tp, c, cls, p, 0);
  c->live--;
}

void hl_free_local(hl_tpool *tp, hl_chunk *c, void *p) {
  free_into(tp, c, p);
  if (HL_UNLIKELY(c->live == 0)) chunk_emptied(tp, c);
}

void hl_chunk_emptied(hl_tpool *tp, hl_chunk *c) { (void)chunk_emptied(tp, c); }

void hl_free_slot_counted(hl_tpool *tp, hl_chunk *c, void *p, size_t cls, int sized) {
  if (!tp->no_reuse && !hl_slot_push(tp, c, cls, p, sized)) hl_free_invalid(p, HL_SIZEMAP_FREE, "free");
  tp->frees++;
  tp->freed_slot_bytes += hl_class_size[cls];
  if (--c->live == 0 && (c != tp->cur || tp->multi)) chunk_emptied(tp, c);
}

/* The lists of site cache entries without a direct list (internal.h). */
hl_class_head hl_empty_lists[2];

/* Take what other threads freed into c (onto its own lists, or the allocation list).
 * Returns 1 when c became empty (not released). */
static int collect_remote(hl_tpool *tp, hl_chunk *c) {
  if (atomic_load_explicit(&c->remote, memory_order_relaxed) == NULL) return 0;
  void *p = atomic_exchange_explicit(&c->remote, NULL, memory_order_acquire);
  while (p) {
    void *next = *(void **)p;
    free_into(tp, c, p);
    p = next;
  }
  return c->live == 0;
}

/* Frees from other threads, for every chunk of the pool; empty non-current chunks go. */
void hl_tpool_collect_all(hl_tpool *tp) {
  if (tp->cur) collect_remote(tp, tp->cur);
  hl_chunk *c = tp->others;
  while (c) {
    hl_chunk *next = c->next; /* a release takes c, and at most the current chunk with it */
    if (collect_remote(tp, c)) (void)chunk_emptied(tp, c);
    c = next;
  }
}

/* Make c the current chunk; the old current one joins the others. */
void hl_tpool_make_current(hl_tpool *tp, hl_chunk *c) {
  hl_chunk_set_owner(c, tp, memory_order_release);
  hl_chunk *old = tp->cur;
  if (old) {
    old->stays = 0;
    account_extent(old);
    if (old->live == 0 && old->bump == old->data) { /* never used */
      chunk_drop_lists(tp, old);
      hl_chunk_release(old);
    } else {
      chunks_push(tp, old);
    }
  }
  set_cur(tp, c);
}

/* A chunk whose owner thread exited becomes ours: its free slots (marked in the size
 * map when it was abandoned; they stay marked, as freed slots are) go onto its own lists,
 * queued, and so do frees made since. */
static void adopt(hl_tpool *tp, hl_chunk *c) {
  hl_chunk_set_owner(c, tp, memory_order_release);
  uint8_t *map = hl_chunk_sizemap(c), e;
#ifdef HL_DEBUG
  for (size_t k = 0; k < HL_NCLASSES; k++) hl_assert(c->free[k] == HL_OWN_NONE && tp->head[k].from != c);
#endif
  FOR_EACH_OBJECT(c, map, pos, e) {
    uint8_t cls = e & ~HL_SIZEMAP_FREE;
    if ((e & HL_SIZEMAP_FREE) && !tp->no_reuse) (void)hl_slot_push(tp, c, cls, (char *)c + pos, 0);
    pos += hl_class_size[cls];
  }
  chunks_push(tp, c);
  if (collect_remote(tp, c)) (void)chunk_emptied(tp, c);
}

/* Marks the free slots of list s (in chunk c, which holds live objects) in c's size map. */
static void mark_list(hl_chunk *c, hl_free_slot *s) {
  for (; s; s = hl_slot_next(s)) {
    hl_assert(hl_chunk_of(s) == c);
    hl_chunk_sizemap(c)[((uintptr_t)s - (uintptr_t)c) >> HL_GRANULE_SHIFT] |= HL_SIZEMAP_FREE;
  }
}

/* The owner thread is exiting: empty chunks go, the others wait for adoption with their
 * free slots marked in their size maps (the lists die with the thread). */
void hl_tpool_retire(hl_tpool *tp) {
  hl_tpool_collect_all(tp);
  spans_drop_in(tp, NULL);
  if (tp->cur) {
    account_extent(tp->cur);
    chunks_push(tp, tp->cur);
    tp->cur = NULL;
  }
  for (size_t cls = 0; cls < HL_NCLASSES; cls++) tp->head[cls].bump_in = NULL;
  for (unsigned cls = 1; cls < HL_NCLASSES; cls++) {
    if (tp->head[cls].free && tp->head[cls].from->live > 0) mark_list(tp->head[cls].from, tp->head[cls].free);
    tp->head[cls].free = NULL;
    tp->head[cls].from = NULL;
    tp->head[cls].queue = NULL;
  }
  for (hl_chunk *c = tp->others; c; c = c->next) {
    for (unsigned cls = 1; cls < HL_NCLASSES; cls++) {
      if (c->free[cls] != HL_OWN_NONE && c->live > 0) mark_list(c, c->free[cls]);
      c->free[cls] = HL_OWN_NONE;
    }
    hl_chunk_push_own(c);
  }
  tp->multi = 0;
  hl_chunk *c = tp->others;
  while (c) {
    hl_chunk *next = c->next;
    chunks_unlink(tp, c);
    if (c->live == 0) hl_chunk_release(c); /* its map is cleared there */
    else hl_chunk_abandon(c);
    c = next;
  }
}

/* Room for a slot of class cls in c's fresh space, after padding the bump pointer to the
 * class's alignment (an 8-byte gap when a 16-multiple class follows an odd-multiple one). */
static int has_room(const hl_tpool *tp, hl_chunk *c, uint8_t cls) {
  if (!tp->interleave) return span_start(tp, c, cls) + hl_class_size[cls] <= c->end; /* as span_carve sees it */
  if (!hl_slot_aligned((uintptr_t)c->bump, cls) && c->bump < c->end) c->bump += 8;
  return (size_t)(c->end - c->bump) >= hl_class_size[cls];
}

/* The allocation list for cls ran dry (or no slot of the pool and no bump room was seen):
 * a queued chunk's list, frees from other threads, fresh space. */
void *hl_tpool_alloc_slow(hl_tpool *tp, uint8_t cls, size_t size) {
  if (tp->head[cls].queue != NULL && tp->head[cls].free == NULL) {
    hl_tpool_refill(tp, cls);
    return hl_tpool_alloc(tp, size);
  }
  /* a new span from the current chunk; the passes below (every chunk's remote list) run
   * when the current chunk is full, as before spans: once per span, with spans of one
   * slot, they cost lua5.4 (corpus) 1.1G more instructions and 3.3x the D1 misses */
  if (!tp->interleave && tp->head[cls].free == NULL && span_carve(tp, tp->cur, cls)) return hl_tpool_alloc(tp, size);
  /* frees from other threads may have refilled the lists */
  hl_tpool_collect_all(tp);
  if (tp->head[cls].free == NULL && tp->head[cls].queue != NULL) hl_tpool_refill(tp, cls);
  if (tp->head[cls].free != NULL || (tp->interleave ? tp->cur && has_room(tp, tp->cur, cls) : span_carve(tp, tp->cur, cls)))
    return hl_tpool_alloc(tp, size);
  /* fresh space: a chunk of ours with room (one left by an aligned request), a chunk
   * abandoned by an exited thread, or a new one */
  hl_chunk *c;
  for (c = tp->others; c; c = c->next)
    if (has_room(tp, c, cls)) {
      chunks_unlink(tp, c);
      break;
    }
  while (c == NULL && (c = hl_chunk_adopt(tp->pool)) != NULL) {
    adopt(tp, c);
    /* its first free slot of cls may have become the allocation list itself (hl_slot_push),
     * the others queue the chunk; a full adopted chunk must not be passed over for that */
    if (tp->head[cls].free != NULL || tp->head[cls].queue != NULL) {
      if (tp->head[cls].free == NULL) hl_tpool_refill(tp, cls);
      return hl_tpool_alloc(tp, size);
    }
    if (c->in_use && c->owner == tp && has_room(tp, c, cls)) chunks_unlink(tp, c);
    else c = NULL;
  }
  if (c == NULL && (c = hl_chunk_acquire(tp->pool)) == NULL) return NULL; /* range exhausted: forward */
  hl_tpool_make_current(tp, c);
  if (!tp->interleave && tp->head[cls].queue == NULL && !span_carve(tp, c, cls)) return NULL; /* a fresh chunk has room */
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
    hl_chunk *n = hl_chunk_acquire(tp->pool); /* fresh space for the worst-case gap */
    if (n == NULL) return NULL;
    hl_tpool_make_current(tp, n);
  }
  return NULL;
}

/* Checked before the push: a chunk not in use, a granule where no object starts, or a slot
 * the owner has freed or collected already (an object live in the chunk has its entry
 * written only by the owner's allocation, before the program had the pointer). A slot
 * freed twice before the owner collects is caught here when it is the last one pushed,
 * else by the owner when it collects (free_into). */
void hl_free_remote(hl_chunk *c, void *p) {
  if (HL_UNLIKELY(c->magic != HL_CHUNK_MAGIC || !c->in_use)) hl_free_invalid(p, 0, "free");
  uint8_t entry = __atomic_load_n(hl_sizemap_entry(c, p), __ATOMIC_RELAXED);
  if (HL_UNLIKELY(hl_sizemap_not_live(entry))) hl_free_invalid(p, entry, "free");
  void *head = atomic_load_explicit(&c->remote, memory_order_relaxed);
  do {
    if (HL_UNLIKELY(head == p)) hl_free_invalid(p, HL_SIZEMAP_FREE, "free");
    *(void **)p = head;
  } while (!atomic_compare_exchange_weak_explicit(&c->remote, &head, p, memory_order_release,
                                                  memory_order_relaxed));
}

void hl_free_ours(void *p) { hl_free_ours_inline(p); }

void hl_free_other(hl_chunk *c, void *p, size_t size) {
  hl_tpool *tp = atomic_load_explicit(&c->owner, memory_order_acquire);
  if (tp == NULL || tp->heap != hl_tl_heap) hl_free_remote(c, p);
  else hl_free_owned(tp, c, p, size, 1);
}

size_t hl_usable_size_ours(const void *p) {
  hl_chunk *c = hl_chunk_of(p);
  return hl_class_size[hl_class_at(c, p)];
}

void *hl_realloc_ours(void *p, size_t size) {
  hl_chunk *c = hl_chunk_of_ours(p); /* callers found p in the range */
  uint8_t cls = *hl_sizemap_entry(c, p);
  if (HL_UNLIKELY(c->magic != HL_CHUNK_MAGIC || !c->in_use || hl_sizemap_not_live(cls))) hl_free_invalid(p, cls, "realloc");
  size_t old = hl_class_size[cls];
  /* shrinking, or growing within the slot, unless a 24-byte slot would have to hold a
   * 16-byte object, which needs 16-alignment */
  if (size <= old && (size > 256 || hl_slot_aligned((uintptr_t)p, hl_size_class_in(hl_classes_packed, size)))) return p;

  hl_tpool *owner = atomic_load_explicit(&c->owner, memory_order_acquire);
  /* ccmalloc chunks keep their bump pointer on block boundaries: never grow there */
  int local = owner != NULL && owner->heap == hl_tl_heap && c->pool != HL_POOL_CC;
  /* the last slot handed out from its class's span grows into the span's fresh rest (the
   * rest's next slot then starts 16-aligned, as any class may) */
  if (local && size <= owner->max_size && size <= HL_MAX_CLASS_SIZE && (char *)p + old == owner->span_bump[cls]) {
    uint8_t ncls = hl_size_class_in(owner->classes, size);
    char *grown = (char *)p + hl_class_size[ncls];
    if (grown <= owner->span_end[cls] && hl_slot_aligned((uintptr_t)p, ncls)) {
      owner->span_bump[cls] = (char *)(((uintptr_t)grown + 15) & ~(uintptr_t)15);
      if (owner->span_bump[cls] > owner->span_end[cls]) owner->span_bump[cls] = owner->span_end[cls];
      hl_chunk_sizemap(c)[((uintptr_t)p - (uintptr_t)c) >> HL_GRANULE_SHIFT] = ncls;
      owner->slot_bytes += hl_class_size[ncls] - old;
      return p;
    }
  }
  if (local && size <= owner->max_size && size <= HL_MAX_CLASS_SIZE && c == owner->cur &&
      (char *)p + old == c->bump) {
    /* the last object of the current chunk grows into fresh space */
    uint8_t ncls = hl_size_class_in(owner->classes, size);
    if ((char *)p + hl_class_size[ncls] <= c->end && hl_slot_aligned((uintptr_t)p, ncls)) {
      c->bump = (char *)p + hl_class_size[ncls];
      hl_chunk_sizemap(c)[((uintptr_t)p - (uintptr_t)c) >> HL_GRANULE_SHIFT] = ncls;
      owner->slot_bytes += hl_class_size[ncls] - old;
      return p;
    }
  }
  void *n = NULL;
  if (local && size <= owner->max_size && size <= HL_MAX_CLASS_SIZE) {
    /* the class's list as malloc's pop takes it (fastpath.h), else the pool's own way
     * (lua grows its tables and strings so, 26k times on its training input). With the
     * pool's class lookup, the chunks by the header's colour, an out-of-line free and
     * realloc's frames (interpose.c), a move cost 40 instructions more (malloc_shapes
     * regrow: 701 per object grown twice, 621 now) */
    if (size <= owner->direct_max) {
      hl_free_slot **list = owner->direct[(size + 7) >> 3];
      hl_free_slot *obj = *list;
      n = obj != NULL ? hl_direct_take(owner, list, obj) : hl_direct_bump(owner, list);
    }
    if (n == NULL) n = hl_tpool_alloc(owner, size);
  }
  if (n == NULL) n = hl_next_alloc.malloc(size);
  if (n == NULL) return NULL; /* the old object stays valid, as realloc promises */
  memcpy(n, p, old < size ? old : size);
  hl_free_ours_inline(p);
  return n;
}

void hl_tpool_destroy(hl_tpool *tp) {
  spans_drop_in(tp, NULL);
  hl_chunk *c = tp->others;
  while (c) {
    hl_chunk *next = c->next;
    hl_chunk_release(c);
    c = next;
  }
  tp->others = NULL;
  tp->n_others = 0;
  tp->multi = 0;
  if (tp->cur) hl_chunk_release(tp->cur);
  tp->cur = NULL;
  memset(tp->head, 0, sizeof tp->head);
}
