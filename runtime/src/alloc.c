/* Allocation and free inside pools. The fast path (hl_tpool_alloc) is in internal.h:
 *   1. pop the thread-pool's most recently freed slot of the size class, else
 *   2. bump the current chunk, writing the class into its size map.
 * Everything here is the slow path and the free path: free-list links, collecting frees
 * made by other threads, releasing empty chunks, alignment, realloc. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
  tp->n_emptied -= c->emptied;
  c->emptied = 0;
}

static void chunks_push(hl_tpool *tp, hl_chunk *c) {
  hl_assert(!c->emptied);
  c->prev = NULL;
  c->next = tp->others;
  if (tp->others) tp->others->prev = c;
  tp->others = c;
  tp->n_others++;
}

/* ---- free slots ---- */

/* p is marked HL_SIZEMAP_FREE */
static inline void slot_push(hl_tpool *tp, uint8_t cls, void *p) {
  hl_free_slot *s = p, *head = tp->free[cls];
  s->next = head;
  if (head) head->prev = s;
  tp->free[cls] = s;
}

/* The head's prev is stale (internal.h): the head is recognised by the list, not by prev. */
static inline void slot_unlink(hl_tpool *tp, uint8_t cls, hl_free_slot *s) {
  hl_free_slot *next = s->next;
  if (tp->free[cls] == s) tp->free[cls] = next;
  else s->prev->next = next;
  if (next) next->prev = s->prev; /* stale when s was the head; then next is the head */
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
  size_t extent = (size_t)(c->bump - (char *)c);
  if (extent != c->accounted) {
    hl_pool_resident_add(c->pool, (long)extent - (long)c->accounted);
    c->accounted = extent;
  }
}

static void release_other(hl_tpool *tp, hl_chunk *c) {
  chunks_unlink(tp, c);
  hl_chunk_release(c);
}

/* Every chunk of tp is empty: drop the lists whole and release every chunk, touching no
 * slot. */
static void drop_all(hl_tpool *tp) {
  memset(tp->free, 0, sizeof tp->free);
  while (tp->others) release_other(tp, tp->others);
  if (tp->cur) {
    account_extent(tp->cur);
    hl_chunk_release(tp->cur);
    tp->cur = NULL;
  }
}

/* Releases tp's chunks whose `emptied` is at least `from` (2: the doomed ones, 1: all). */
/* Walk the objects of a chunk whose every object is free (live == 0 and remote frees
 * collected): each is on tp's lists; take it off and clear its size-map entry. */
static void chunk_unlink_slots(hl_tpool *tp, hl_chunk *c) {
  uint8_t *map = hl_chunk_sizemap(c), e;
  FOR_EACH_OBJECT(c, map, pos, e) {
    uint8_t cls = e & ~HL_SIZEMAP_FREE;
    hl_assert(cls < HL_NCLASSES);
    slot_unlink(tp, cls, (hl_free_slot *)((char *)c + pos));
    map[pos >> HL_GRANULE_SHIFT] = 0;
    pos += hl_class_size[cls];
  }
}

/* A chunk became empty. Releasing it means unlinking each of its free slots from the
 * lists, a cache miss per slot, so an emptied chunk is kept with its slots serving
 * (tunables.h, HL_EMPTIED_KEEP_SHARE) until every chunk of the pool is empty (then the
 * lists are dropped whole) or too many are; then the one just emptied is unlinked and
 * released. The current chunk stays while others hold objects, so a pool that frees and
 * allocates one object at a time never touches the chunk cache.
 * Returns 1 when chunks other than c were released too (the list of others changed). */
static int chunk_emptied(hl_tpool *tp, hl_chunk *c) {
  if (c == tp->cur) { /* the common case of a pool with one object at a time: stay */
    if (HL_UNLIKELY(tp->n_others > 0 && tp->n_emptied == tp->n_others)) {
      drop_all(tp);
      return 1;
    }
    return 0;
  }
  if (tp->no_reuse) { /* no slot is on a list */
    release_other(tp, c);
    return 0;
  }
  hl_assert(!c->emptied);
  c->emptied = 1;
  if (tp->n_emptied++ == 0) hl_heap_direct_off(tp); /* the site-direct pop must not take its slots */
  if (tp->n_emptied == tp->n_others && (tp->cur == NULL || tp->cur->live == 0)) {
    drop_all(tp);
    return 1;
  }
  uint32_t keep = tp->n_others / HL_EMPTIED_KEEP_SHARE;
  if (keep < hl_state.opt.spare_chunks) keep = hl_state.opt.spare_chunks;
  if (tp->n_emptied > keep) {
    chunk_unlink_slots(tp, c);
    release_other(tp, c);
  }
  return 0;
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
  if (!tp->no_reuse) slot_push(tp, cls, p);
  c->live--;
}

void hl_free_local(hl_tpool *tp, hl_chunk *c, void *p) {
  free_into(tp, c, p);
  if (HL_UNLIKELY(c->live == 0)) chunk_emptied(tp, c);
}

void hl_chunk_emptied(hl_tpool *tp, hl_chunk *c) { (void)chunk_emptied(tp, c); }

void hl_free_slot_counted(hl_tpool *tp, hl_chunk *c, void *p, size_t cls) {
  tp->frees++;
  tp->freed_slot_bytes += hl_class_size[cls];
  if (!tp->no_reuse) {
    hl_free_slot *s = p, *head = tp->free[cls];
    s->next = head;
    if (head) head->prev = s;
    tp->free[cls] = s;
  }
  if (--c->live == 0 && (c != tp->cur || tp->n_others != 0)) chunk_emptied(tp, c);
}

/* The list of site cache entries without a direct list: always empty, never written
 * (the pop writes the list only after it found a slot on it). */
hl_free_slot *hl_no_slot, *hl_forward_slot;

/* Take what other threads freed into c. Returns 1 when c became empty (not released). */
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
    hl_chunk *next = c->next;
    /* a batch release may have taken next too: start again (collected chunks have no
     * remote frees left, so each empties once) */
    if (collect_remote(tp, c) && chunk_emptied(tp, c)) next = tp->others;
    c = next;
  }
}

/* Make c the current chunk; the old current one joins the others. */
void hl_tpool_make_current(hl_tpool *tp, hl_chunk *c) {
  hl_chunk_set_owner(c, tp, memory_order_release);
  hl_chunk *old = tp->cur;
  if (old) {
    account_extent(old);
    if (old->live == 0 && old->bump == old->data) hl_chunk_release(old); /* never used */
    else chunks_push(tp, old);
  }
  tp->cur = c;
}

/* A chunk whose owner thread exited becomes ours: its free slots (marked in the size
 * map when it was abandoned; they stay marked, as freed slots are) join our lists, and so
 * do frees made since. */
static void adopt(hl_tpool *tp, hl_chunk *c) {
  hl_chunk_set_owner(c, tp, memory_order_release);
  uint8_t *map = hl_chunk_sizemap(c), e;
  FOR_EACH_OBJECT(c, map, pos, e) {
    uint8_t cls = e & ~HL_SIZEMAP_FREE;
    if ((e & HL_SIZEMAP_FREE) && !tp->no_reuse) slot_push(tp, cls, (char *)c + pos);
    pos += hl_class_size[cls];
  }
  chunks_push(tp, c);
  if (collect_remote(tp, c)) (void)chunk_emptied(tp, c);
}

/* The owner thread is exiting: empty chunks go, the others wait for adoption with their
 * free slots marked in their size maps (the lists die with the thread). */
void hl_tpool_retire(hl_tpool *tp) {
  hl_tpool_collect_all(tp);
  if (tp->cur) {
    account_extent(tp->cur);
    chunks_push(tp, tp->cur);
    tp->cur = NULL;
  }
  for (unsigned cls = 1; cls < HL_NCLASSES; cls++) {
    for (hl_free_slot *s = tp->free[cls]; s; s = hl_slot_next(s)) {
      hl_chunk *c = hl_chunk_of(s);
      if (c->live > 0) hl_chunk_sizemap(c)[((uintptr_t)s - (uintptr_t)c) >> HL_GRANULE_SHIFT] |= HL_SIZEMAP_FREE;
    }
    tp->free[cls] = NULL;
  }
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
static int has_room(hl_chunk *c, uint8_t cls) {
  if (!hl_slot_aligned((uintptr_t)c->bump, cls) && c->bump < c->end) c->bump += 8;
  return (size_t)(c->end - c->bump) >= hl_class_size[cls];
}

/* The pool allocates again after chunks emptied: release them now (their slots off the
 * lists in one pass)
 * so that what is rebuilt is bumped in order into fresh space, not scattered over the
 * freed slots in the order they were freed (apa_split's lists: 0.57x glibc's time under
 * callsite when they were reused, 0.04x when released). */
void hl_tpool_release_emptied(hl_tpool *tp) {
  hl_chunk *c = tp->others;
  while (c && tp->n_emptied) {
    hl_chunk *next = c->next;
    if (c->emptied) {
      chunk_unlink_slots(tp, c);
      release_other(tp, c);
    }
    c = next;
  }
}

void *hl_tpool_alloc_slow(hl_tpool *tp, uint8_t cls, size_t size) {
  if (tp->n_emptied) hl_tpool_release_emptied(tp);
  /* frees from other threads may have refilled the lists */
  hl_tpool_collect_all(tp);
  if (tp->free[cls] != NULL || (tp->cur && has_room(tp->cur, cls))) return hl_tpool_alloc(tp, size);
  /* fresh space: a chunk of ours with room (one left by an aligned request), a chunk
   * abandoned by an exited thread, or a new one */
  hl_chunk *c;
  for (c = tp->others; c; c = c->next)
    if (has_room(c, cls)) {
      chunks_unlink(tp, c);
      break;
    }
  while (c == NULL && (c = hl_chunk_adopt(tp->pool)) != NULL) {
    adopt(tp, c);
    if (tp->free[cls] != NULL) return hl_tpool_alloc(tp, size);
    if (c->in_use && c->owner == tp && has_room(c, cls)) chunks_unlink(tp, c);
    else c = NULL;
  }
  if (c == NULL && (c = hl_chunk_acquire(tp->pool)) == NULL) return NULL; /* range exhausted: forward */
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
  hl_chunk *c = hl_chunk_of(p);
  uint8_t cls = *hl_sizemap_entry(c, p);
  if (HL_UNLIKELY(c->magic != HL_CHUNK_MAGIC || !c->in_use || hl_sizemap_not_live(cls))) hl_free_invalid(p, cls, "realloc");
  size_t old = hl_class_size[cls];
  /* shrinking, or growing within the slot, unless a 24-byte slot would have to hold a
   * 16-byte object, which needs 16-alignment */
  if (size <= old && (size > 256 || hl_slot_aligned((uintptr_t)p, hl_size_class_in(hl_classes_packed, size)))) return p;

  hl_tpool *owner = atomic_load_explicit(&c->owner, memory_order_acquire);
  /* ccmalloc chunks keep their bump pointer on block boundaries: never grow there */
  int local = owner != NULL && owner->heap == hl_tl_heap && c->pool != HL_POOL_CC;
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
  if (local && size <= owner->max_size && size <= HL_MAX_CLASS_SIZE) n = hl_tpool_alloc(owner, size);
  if (n == NULL) n = hl_next_alloc.malloc(size);
  if (n == NULL) return NULL; /* the old object stays valid, as realloc promises */
  memcpy(n, p, old < size ? old : size);
  hl_free_ours(p);
  return n;
}

void hl_tpool_destroy(hl_tpool *tp) {
  hl_chunk *c = tp->others;
  while (c) {
    hl_chunk *next = c->next;
    c->emptied = 0;
    hl_chunk_release(c);
    c = next;
  }
  tp->others = NULL;
  tp->n_others = tp->n_emptied = 0;
  if (tp->cur) hl_chunk_release(tp->cur);
  tp->cur = NULL;
  memset(tp->free, 0, sizeof tp->free);
}
