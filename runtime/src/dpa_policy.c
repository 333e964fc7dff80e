/* The dpa policy: object groups by APCC, pooled by DPA's thresholds, merged by the shape
 * graph, sent back to the allocator underneath when their pool does harm (docs/dpa.md).
 *
 * An allocation the fast path cannot answer (a context not cached in this thread) comes
 * here through hl_malloc_from (interpose.c). Its APCC names its group (dpa_chain.c). A
 * group's objects go to the allocator underneath until its root (merged groups share one)
 * has seen more than HEAPLAYOUT_MIN_OBJECTS of at most HEAPLAYOUT_MAX_SIZE bytes (DPA
 * 3.3: 100 and 128); then the root gets a pool id, and each thread a thread-pool of it
 * (the runtime's header-free chunks with per-class free lists). While a group is counted,
 * and for HL_DPA_LEARN_OBJECTS allocations after it is pooled, its contexts stay out of
 * the fast path so that every allocation is seen here: the previous object of the group is
 * sampled for the shape graph (dpa_shape.c). Then the context is entered in the thread's
 * caches (the site cache, and the chain cache for chains through wrappers), and later
 * allocations never come here.
 *
 * Only placement depends on any of this: a lost race, a full table or a wrong verdict puts
 * an object elsewhere, never breaks the program. Caches are per thread and only their own
 * thread writes them; a merge or a return to the allocator re-routes the calling thread's
 * cached contexts at once and other threads' when they next take a chunk for the pool. */
#include <string.h>

#include "dpa.h"
#include "fastpath.h"

enum { G_COUNTING = 0, G_LEARNING, G_SETTLED, G_RETURNED };

typedef struct dpa_group {
  _Atomic(uint32_t) parent; /* itself for a root */
  _Atomic(uint32_t) size;   /* request size of its objects (the type), or DPA_SIZE_MIXED */
  _Atomic(uint32_t) count;  /* objects seen (a root's includes those of groups merged into it) */
  _Atomic(uint32_t) learn_left;
  _Atomic(uint16_t) pool;   /* a root's pool, 0 while counted */
  _Atomic(uint8_t) state;
  uint8_t chain_len;
  _Atomic(uintptr_t) last;  /* the group's previous object, for the shape graph */
  uintptr_t site;           /* the outermost frame of its first chain: the program's call site */
} dpa_group;

static dpa_group groups[HL_DPA_MAX_GROUPS];
static _Atomic(uint32_t) ngroups = 1; /* group 0 is "none" */
static _Atomic(uint32_t) pool_groups[HL_MAX_POOLS];
static atomic_flag group_lock = ATOMIC_FLAG_INIT;
static _Atomic(uint64_t) n_merged, n_returned, n_pooled, n_slow;
static _Atomic(uint64_t) slow_by_len[HL_DPA_MAX_CHAIN + 1];

void hl_dpa_lock(void) {
  while (atomic_flag_test_and_set_explicit(&group_lock, memory_order_acquire)) {
  }
}
void hl_dpa_unlock(void) { atomic_flag_clear_explicit(&group_lock, memory_order_release); }

uint32_t hl_dpa_group_new(uint32_t size, uint8_t chain_len, uintptr_t site) {
  uint32_t g = atomic_fetch_add_explicit(&ngroups, 1, memory_order_relaxed);
  if (g >= HL_DPA_MAX_GROUPS) return 0;
  dpa_group *d = &groups[g];
  atomic_store_explicit(&d->size, size, memory_order_relaxed);
  d->chain_len = chain_len;
  d->site = site;
  atomic_store_explicit(&d->parent, g, memory_order_release);
  return g;
}

uint32_t hl_dpa_group_root(uint32_t g) {
  for (unsigned depth = 0; depth < HL_DPA_MAX_GROUPS; depth++) {
    uint32_t p = atomic_load_explicit(&groups[g].parent, memory_order_acquire);
    if (p == g || p == 0) return g;
    g = p;
  }
  return g;
}

uint32_t hl_dpa_group_size(uint32_t g) { return atomic_load_explicit(&groups[g].size, memory_order_relaxed); }

uint32_t hl_dpa_group_of_pool(uint16_t pool) {
  return pool < HL_MAX_POOLS ? atomic_load_explicit(&pool_groups[pool], memory_order_relaxed) : 0;
}

/* ---- recently allocated objects of the allocator underneath: address -> group ---- */

#define RECENT_SLOTS (1u << HL_DPA_RECENT_BITS)
typedef struct recent_object {
  _Atomic(uintptr_t) addr;
  _Atomic(uint32_t) group;
} recent_object;
static recent_object recent[RECENT_SLOTS];

static inline uint32_t recent_slot(uintptr_t p) {
  return (uint32_t)(((p >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - HL_DPA_RECENT_BITS));
}

uint32_t hl_dpa_group_of_object(uintptr_t p) {
  if (hl_is_ours((const void *)p)) {
    const hl_chunk *c = hl_chunk_of((const void *)p);
    if (c->magic != HL_CHUNK_MAGIC || (uintptr_t)p < (uintptr_t)c->data) return 0;
    return hl_dpa_group_of_pool(c->pool);
  }
  const recent_object *r = &recent[recent_slot(p)];
  if (atomic_load_explicit(&r->addr, memory_order_relaxed) != p) return 0;
  return atomic_load_explicit(&r->group, memory_order_relaxed);
}

static void remember_object(uint32_t g, void *p) {
  atomic_store_explicit(&groups[g].last, (uintptr_t)p, memory_order_relaxed);
  if (hl_is_ours(p)) return;
  recent_object *r = &recent[recent_slot((uintptr_t)p)];
  atomic_store_explicit(&r->group, g, memory_order_relaxed);
  atomic_store_explicit(&r->addr, (uintptr_t)p, memory_order_relaxed);
}

/* ---- the calling thread's caches ---- */

static hl_tpool *tpool_of(hl_heap *heap, uint16_t pool) {
  hl_tpool *tp = heap->tpools[pool];
  return tp != NULL ? tp : hl_tpool_create(heap, pool);
}

/* Forget this thread's cached contexts that lead to tp: their next allocation comes here. */
static void forget_tpool(hl_heap *heap, const hl_tpool *tp) {
  for (unsigned i = 0; i < HL_SITE_CACHE_SLOTS; i++)
    if (heap->sites[i].ra && heap->sites[i].tp == tp) heap->sites[i].ra = 0;
  for (unsigned i = 0; i < HL_CHAIN_NODES; i++)
    if (heap->chain_nodes[i].key && heap->chain_nodes[i].tp == tp) heap->chain_nodes[i].key = 0;
}

/* Enters a chain with its answer (tp; NULL: the allocator underneath) into the thread's
 * caches: the site cache for a chain of one frame, else the site entry says "walk" and the
 * chain cache holds a node per further frame (DPA's short PCC table). */
static void cache_chain(hl_heap *heap, const dpa_chain *c, hl_tpool *tp, size_t size) {
  hl_site_cache_entry *e = hl_site_entry(heap, c->pc[0]);
  if (c->len == 1) {
    e->ra = c->pc[0];
    e->tp = tp;
    hl_site_direct_set(e, tp, size);
    return;
  }
  if (e->ra != c->pc[0] || e->tp != HL_TP_WALK) {
    e->ra = c->pc[0];
    e->tp = HL_TP_WALK;
    hl_site_direct_set(e, HL_TP_WALK, size);
    *hl_site_rule(heap, e) = c->rule[0];
  }
  uint64_t key = c->pc[0];
  for (unsigned k = 1; k < c->len; k++) {
    key = hl_chain_next(key, c->pc[k]);
    hl_chain_node *n = hl_chain_node_at(heap, key);
    n->key = key;
    if (k + 1 == c->len) {
      hl_chain_node_answer(n, tp, size);
    } else {
      n->tp = HL_TP_WALK;
      n->rule = c->rule[k];
    }
  }
}

/* ---- merging (the caller holds the lock) ---- */

void hl_dpa_group_merge(uint32_t a, uint32_t b, int type_two) {
  (void)type_two;
  a = hl_dpa_group_root(a);
  b = hl_dpa_group_root(b);
  if (a == b) return;
  uint16_t pa = atomic_load_explicit(&groups[a].pool, memory_order_relaxed);
  uint16_t pb = atomic_load_explicit(&groups[b].pool, memory_order_relaxed);
  uint32_t ca = atomic_load_explicit(&groups[a].count, memory_order_relaxed);
  uint32_t cb = atomic_load_explicit(&groups[b].count, memory_order_relaxed);
  /* the root keeps its pool: the one with a pool, else the larger */
  if ((pb && !pa) || (!!pa == !!pb && cb > ca)) {
    uint32_t t = a; a = b; b = t;
    uint16_t tp = pa; pa = pb; pb = tp;
    t = ca; ca = cb; cb = t;
  }
  if (atomic_load_explicit(&groups[b].state, memory_order_relaxed) == G_RETURNED)
    atomic_store_explicit(&groups[a].state, G_RETURNED, memory_order_relaxed);
  atomic_fetch_add_explicit(&groups[a].count, cb, memory_order_relaxed);
  atomic_store_explicit(&groups[b].parent, a, memory_order_release);
  if (pb) { /* objects in b's pool are a's now; this thread's contexts re-routed at once */
    atomic_store_explicit(&pool_groups[pb], a, memory_order_relaxed);
    hl_heap *heap = hl_tl_heap;
    if (heap->tpools[pb] != NULL && heap->tpools[pb]->heap == heap) forget_tpool(heap, heap->tpools[pb]);
  }
  atomic_fetch_add_explicit(&n_merged, 1, memory_order_relaxed);
}

/* ---- the decision ---- */

/* Gives the root a pool (it passed the threshold); returns its pool id, 0 if none. */
static uint16_t promote(uint32_t r) {
  hl_dpa_lock();
  uint16_t pool = atomic_load_explicit(&groups[r].pool, memory_order_relaxed);
  if (pool == 0 && atomic_load_explicit(&groups[r].state, memory_order_relaxed) == G_COUNTING) {
    pool = hl_pool_id_new();
    if (pool == 0) {
      atomic_store_explicit(&groups[r].state, G_RETURNED, memory_order_relaxed); /* ids exhausted */
    } else {
      atomic_store_explicit(&pool_groups[pool], r, memory_order_relaxed);
      hl_pool_set_site(pool, groups[r].site);
      atomic_store_explicit(&groups[r].learn_left, HL_DPA_LEARN_OBJECTS, memory_order_relaxed);
      atomic_store_explicit(&groups[r].state, G_LEARNING, memory_order_relaxed);
      atomic_store_explicit(&groups[r].pool, pool, memory_order_release);
      atomic_fetch_add_explicit(&n_pooled, 1, memory_order_relaxed);
    }
  }
  hl_dpa_unlock();
  return pool;
}

/* The thread-pool for this allocation (NULL: the allocator underneath), and its group. */
static hl_tpool *decide(void *const *fp, size_t size, uint32_t *gout, int sample) {
  *gout = 0;
  hl_heap *heap = hl_heap_get();
  if (heap == NULL) return NULL; /* an exiting thread */
  dpa_chain c;
  hl_dpa_chain_of(fp, &c);
  uint32_t g = hl_dpa_chain_group(&c, size);
  if (hl_counting()) { /* shared counters: only for the statistics */
    atomic_fetch_add_explicit(&n_slow, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&slow_by_len[c.len], 1, memory_order_relaxed);
  }
  if (g == 0) {
    cache_chain(heap, &c, NULL, size);
    return NULL;
  }
  *gout = g;
  if (atomic_load_explicit(&groups[g].size, memory_order_relaxed) != size)
    atomic_store_explicit(&groups[g].size, DPA_SIZE_MIXED, memory_order_relaxed);
  uint32_t r = hl_dpa_group_root(g);
  int state = atomic_load_explicit(&groups[r].state, memory_order_relaxed);
  if (state == G_RETURNED) {
    cache_chain(heap, &c, NULL, size);
    return NULL;
  }
  /* while counted, every HL_DPA_COUNT_SAMPLE_EVERY-th allocation samples (its previous
   * object is the allocator underneath's: a system call to read); while learning, all */
  if (sample && state == G_COUNTING &&
      atomic_load_explicit(&groups[r].count, memory_order_relaxed) % HL_DPA_COUNT_SAMPLE_EVERY != 0)
    sample = 0;
  if (state != G_SETTLED && sample) {
    uintptr_t prev = atomic_load_explicit(&groups[g].last, memory_order_relaxed);
    if (prev) {
      hl_dpa_lock();
      hl_dpa_shape_learn(g, prev, (uint32_t)size);
      hl_dpa_unlock();
      r = hl_dpa_group_root(g);
      state = atomic_load_explicit(&groups[r].state, memory_order_relaxed);
    }
  }
  uint16_t pool = atomic_load_explicit(&groups[r].pool, memory_order_acquire);
  if (pool == 0) { /* counted towards the threshold (a pooled root's count is not read again) */
    uint32_t n = atomic_fetch_add_explicit(&groups[r].count, 1, memory_order_relaxed) + 1;
    if (n <= hl_state.opt.min_objects) return NULL; /* not cached: the next one is counted too */
    if ((pool = promote(r)) == 0) {
      cache_chain(heap, &c, NULL, size);
      return NULL;
    }
  }
  hl_tpool *tp = tpool_of(heap, pool);
  if (tp == NULL) return NULL;
  if (tp->max_size == 0) { /* returned to the allocator underneath */
    cache_chain(heap, &c, NULL, size);
    return NULL;
  }
  state = atomic_load_explicit(&groups[r].state, memory_order_relaxed);
  if (state == G_LEARNING) {
    uint32_t left = atomic_load_explicit(&groups[r].learn_left, memory_order_relaxed);
    if (left > 0) atomic_store_explicit(&groups[r].learn_left, left - 1, memory_order_relaxed);
    else atomic_store_explicit(&groups[r].state, G_SETTLED, memory_order_relaxed);
    return tp;
  }
  if (state == G_SETTLED) cache_chain(heap, &c, tp, size);
  return tp;
}

static void *forward(size_t size) {
  if (hl_counting()) return hl_counted(hl_next_alloc.malloc(size), size);
  return hl_next_alloc.malloc(size);
}

/* Reached through tail calls (malloc_placing_full -> hl_malloc_from -> here), so fp is the
 * frame of a function that has returned: its two words (saved rbp, return address) survive
 * because every function on the way, this one included (CMakeLists.txt), is built with a
 * frame pointer and pushes the same rbp into the same slot first. Without that, a push of
 * another register there broke every chain (-O0 test programs: no chain longer than one). */
void *hl_dpa_malloc(size_t size, void *const *fp) {
  /* the thread's caches first: realloc(NULL, n) comes here without having asked them (lua
   * allocates everything so: 1.26x tcmalloc's instructions when this went straight on) */
  void *p = hl_alloc_try(size, fp);
  if (HL_LIKELY(p > HL_FORWARD)) return p;
  if (p == HL_FORWARD || size > hl_state.opt.max_size) return forward(size);
  hl_tpool *tp = hl_cached_tpool(fp);
  if (tp != HL_TP_WALK) { /* a settled context whose pool needs a chunk or a span: no decision */
    if (tp != NULL && size <= tp->max_size && (p = hl_tpool_alloc(tp, size)) != NULL) return p;
    return forward(size);
  }
  uint32_t g;
  tp = decide(fp, size, &g, 1);
  if (tp != NULL && size <= tp->max_size) {
    p = hl_tpool_alloc(tp, size);
  }
  if (p == NULL) p = forward(size);
  if (p != NULL && g != 0) remember_object(g, p);
  return p;
}

hl_tpool *hl_dpa_tpool(void *const *fp, size_t size) {
  uint32_t g;
  return decide(fp, size, &g, 0);
}

/* ---- do no harm ---- */

/* The share of the pool's bump extent (this thread's chunks) that lies in free slots, in
 * 1/HL_DPA_HARM_SAMPLES, estimated from random bytes of the extent: the size map marks the
 * start of every slot free() has freed (a sized delete leaves no mark: then the estimate is
 * low, and the pool is kept). Walking the free lists instead costs a miss per free slot. */
static unsigned free_share(const hl_tpool *tp, uint64_t extent) {
  static _Atomic(uint64_t) seed = 0x9E3779B97F4A7C15ull;
  uint64_t x = atomic_fetch_add_explicit(&seed, 0x632BE59BD9B4E019ull, memory_order_relaxed) | 1;
  unsigned free_hits = 0;
  for (unsigned k = 0; k < HL_DPA_HARM_SAMPLES; k++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    uint64_t at = x % extent;
    hl_chunk *c = tp->cur;
    for (hl_chunk *o = tp->others; at >= (uint64_t)(c->bump - c->data) && o; o = o->next) {
      at -= (uint64_t)(c->bump - c->data);
      c = o;
    }
    if (at >= (uint64_t)(c->bump - c->data)) continue;
    uintptr_t p = (uintptr_t)c->data + at;
    const uint8_t *map = hl_chunk_sizemap(c);
    uintptr_t g = (p - (uintptr_t)c) >> HL_GRANULE_SHIFT, first = ((uintptr_t)c->data - (uintptr_t)c) >> HL_GRANULE_SHIFT;
    for (unsigned back = 0; back <= 256 / HL_GRANULE && g >= first; back++, g--) {
      uint8_t e = map[g];
      if (e == 0) continue;
      uint8_t cls = e & (uint8_t)~HL_SIZEMAP_FREE;
      if (cls < HL_NCLASSES && (g << HL_GRANULE_SHIFT) + hl_class_size[cls] > p - (uintptr_t)c && (e & HL_SIZEMAP_FREE))
        free_hits++;
      break;
    }
  }
  return free_hits;
}

void hl_dpa_pool_grew(uint16_t pool) {
  hl_heap *heap = hl_tl_heap;
  hl_tpool *tp = heap->tpools[pool];
  if (tp == NULL || tp->heap != heap || tp->max_size == 0) return; /* not this thread's, or returned */
  uint32_t g = hl_dpa_group_of_pool(pool);
  if (g == 0) return;
  uint32_t r = hl_dpa_group_root(g);
  int returned = atomic_load_explicit(&groups[r].state, memory_order_relaxed) == G_RETURNED;
  if (!returned) {
    if (tp->cur == NULL || tp->n_others + 1 < HL_DPA_HARM_MIN_CHUNKS) return;
    uint64_t extent = (uint64_t)(tp->cur->bump - tp->cur->data);
    for (const hl_chunk *c = tp->others; c; c = c->next) extent += (uint64_t)(c->bump - c->data);
    if (extent == 0) return;
    unsigned hits = free_share(tp, extent);
    returned = hits * HL_DPA_HARM_FREE_SHARE > HL_DPA_HARM_SAMPLES * (HL_DPA_HARM_FREE_SHARE - 1);
    if (returned) {
      hl_dpa_lock();
      if (atomic_load_explicit(&groups[r].state, memory_order_relaxed) != G_RETURNED) {
        atomic_store_explicit(&groups[r].state, G_RETURNED, memory_order_relaxed);
        atomic_fetch_add_explicit(&n_returned, 1, memory_order_relaxed);
      }
      hl_dpa_unlock();
    }
  }
  if (returned) { /* this thread's pool takes nothing more; its objects stay until freed */
    tp->max_size = 0;
    tp->direct_max = 0;
    forget_tpool(heap, tp);
  }
}

/* fork: the child must not inherit a lock another thread held (init.c) */
void hl_dpa_fork_prepare(void) { /* in the order a thread may take them */
  hl_dpa_verdicts_fork(1);
  hl_dpa_chains_fork(1);
  hl_dpa_lock();
}
void hl_dpa_fork_done(void) {
  hl_dpa_unlock();
  hl_dpa_chains_fork(0);
  hl_dpa_verdicts_fork(0);
}

/* ---- statistics ---- */

void hl_dpa_stats(dpa_stats *out) {
  memset(out, 0, sizeof *out);
  uint32_t n = atomic_load_explicit(&ngroups, memory_order_relaxed);
  out->groups = (n < HL_DPA_MAX_GROUPS ? n : HL_DPA_MAX_GROUPS) - 1;
  out->pooled = atomic_load(&n_pooled);
  out->merged = atomic_load(&n_merged);
  out->returned = atomic_load(&n_returned);
  out->slow_allocs = atomic_load(&n_slow);
  for (unsigned i = 0; i <= HL_DPA_MAX_CHAIN; i++) out->by_len_objects[i] = atomic_load(&slow_by_len[i]);
}

uint8_t hl_dpa_pool_chain_len(uint16_t pool) {
  uint32_t g = hl_dpa_group_of_pool(pool);
  return g ? groups[g].chain_len : 0;
}
