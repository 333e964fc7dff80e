/* The allocation fast paths, inlined into malloc and calloc (interpose.c) and operator new
 * (new_delete.c); free's is hl_free_ours_sized (internal.h), next to the free lists.
 *
 * malloc and new first try the site-direct pop (hl_site_direct_pop), with no frame (calloc
 * and realloc(NULL, n) try it too, inside their frames):
 *   1. the thread's site cache entry for the return address (in the thread's heap, through
 *      the one thread-local pointer; a thread without a heap, and every thread under `off`,
 *      points at an empty heap, so this misses without a test): one compare;
 *   2. the size the site asked for last: one compare, and the entry's pointer to its pool's
 *      free list for that size's class (another size: the class table, hl_site_direct_pop);
 *   3. the list's head, unlinked, its double-free mark cleared (without a test: a sized
 *      delete's slot has none), its chunk's live count (the chunk read next to the list, in
 *      the class's record: hl_class_head). The list holds the free slots of
 *      one chunk, the pool's allocating chunk for the class (free list sharding, alloc.c);
 *      when it is empty, the next chunk queued with free slots of the class hands its list
 *      over, and only when none is queued is fresh space bumped in the pool's current chunk
 *      (8 bytes of padding where an odd-multiple class left the bump so).
 * That is all a context-keyed pool needs beyond a size-class allocator: the return address
 * read and compared. Malloc costs 20 instructions, free 27 (the ring of
 * benchmarks/run_pair_shapes.py; 22 and 32 before, docs/results.md sections 9 and 22): free finds the
 * chunk by the range's table (hl_chunk_of_ours), pushes through the chunk's per-class list
 * pointer (hl_chunk.push) and leaves the slot's size-map entry in the slot, where the pop
 * clears the double-free mark through it (hl_slot_unmark_linked).
 * A miss answers HL_FORWARD for a site cached as not pooled or a request its pool does not
 * take (the allocator underneath serves it at once), else goes on by a jump (the return
 * address stays the program's) to the full path (hl_alloc_try, hl_policy_alloc, the slow
 * paths in interpose.c and alloc.c) with the policy, the chain cache for plan rules that
 * need more frames, PreFix, statistics.
 *
 * The debug library (libheaplayout_debug.so, HL_DEBUG) asserts what the fast paths take
 * for granted: a popped slot's chunk is in use, owned by the pool and its allocating chunk
 * for the class, its entry holds a class; a bump happens only with no chunk queued. */
#ifndef HL_FASTPATH_H
#define HL_FASTPATH_H

#include "internal.h"

/* An answer of the fast paths: the allocator underneath serves this request. */
#define HL_FORWARD ((void *)1)

/* The per-thread cache of allocation sites (hl_heap.sites, internal.h) is direct-mapped
 * by return address (hl_site_entry). */

/* the slow paths (interpose.c): fill the thread's cache entry (making the thread's heap
 * first if it has none) and answer */
hl_tpool *hl_site_tpool_slow(uintptr_t ra, size_t size);
hl_tpool *hl_plan_tpool_slow(void *const *fp, size_t size);
hl_tpool *hl_plan_walk_tpool(void *const *fp, const hl_step_rule *r0, size_t size);

/* The per-thread cache of the plan's decided call chains (hl_heap.chain_nodes), for
 * return addresses whose rules need more frames (HL_TP_WALK). A node stands for a chain
 * of return addresses, innermost first, through its key (hl_chain_next); it holds the
 * chain's answer, or the unwind rule at its outermost return address when the answer
 * needs one frame more. Which frames decide is a function of the return addresses alone (plan.c, decide), so a
 * chain's answer is fixed; a hash collision could only misplace an object, never break
 * the program. Walks of more than HL_CHAIN_FAST_STEPS steps, through recursion, or into a
 * skipped module after a program frame, are left to the recorded walks in plan.c (steps
 * out of skipped modules before the first program frame are cached here: plan.c, decide). */
/* Up to 9 frames (plans' rules reach 12 on gcc-cc1). With 4 frames and 256 nodes, most walk
 * sites of the corpus's halo plans replayed or walked: cppcheck's plan cost 31% more
 * instructions than jemalloc alone on its training input, 20% with 9 frames and 2048 nodes
 * (13 frames no better; docs/results.md section 20). A chain decided sooner stops sooner. */
#define HL_CHAIN_FAST_STEPS 8u

/* PreFix's chain cache (prefix.c) and dpa's compound table (dpa_chain.c) hash chains so. */
static inline uint64_t hl_chain_key(uint64_t key, uintptr_t pc) {
  uint64_t h = (key ^ pc) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}
/* Which node a chain takes comes from its return addresses' offsets within their pages
 * only: ASLR moves modules by whole pages, so the chains that share a node (and evict each
 * other) are the same on every run of a binary, and so is identification's cost; the key
 * (whole addresses) still tells the chains apart. Before, a run in about thirty had two of
 * plan_test's three alternating chains on one node, and replayed every walk. */
static inline uint64_t hl_chain_slot(uint64_t slot, uintptr_t pc) {
  return (slot ^ (pc & 0xfff)) * 0x9E3779B97F4A7C15ull;
}

/* The chain cache's key of a chain one return address longer: a chain of return addresses
 * pc0, pc1, ... has key pc0, then (key ^ pc) times an odd constant per frame. Its node
 * comes from the key's bits 1 to 11, which, a product's low bits depending on its factors'
 * low bits only, are a function of the return addresses' offsets within their pages (bits
 * 0-11): ASLR moves modules by whole pages, so the chains that share a node (and evict each
 * other) are the same on every run of a binary, and so is identification's cost, while the
 * key (whole addresses) tells the chains apart. (Before, a run in about thirty had two of
 * plan_test's three alternating chains on one node, and replayed every walk.) The multiply
 * is a bijection of those 12 bits, so the callers of one wrapper spread over the nodes. One
 * multiply and a mask per frame: the key and the node had a multiply each, and the key a
 * shift and xor more (8 instructions more per frame on every allocation through a wrapper
 * under dpa). */
static inline uint64_t hl_chain_next(uint64_t key, uintptr_t pc) {
  return (key ^ pc) * 0x9E3779B97F4A7C15ull;
}
_Static_assert(HL_CHAIN_NODE_BITS <= 11, "a node comes from the key's page-offset bits 1-11");
static inline hl_chain_node *hl_chain_node_at(hl_heap *h, uint64_t key) {
  return (hl_chain_node *)((char *)h->chain_nodes +
                           ((key & ((uint64_t)(HL_CHAIN_NODES - 1) << 1)) * (sizeof(hl_chain_node) / 2)));
}
_Static_assert(sizeof(hl_chain_node) == 32, "hl_chain_node_at computes offsets of 32-byte nodes");

/* A walk site's answer from the chain cache, or HL_TP_WALK: not cached (or a stack check
 * failed), the full walk decides. e: the site's entry; a node's rule, like e->r0 once a
 * walk stepped by it, has stepped from its return address before. */
static inline __attribute__((always_inline)) hl_tpool *hl_chain_try(hl_heap *h, const hl_site_cache_entry *e,
                                                                    void *const *fp) {
  const hl_step_rule *r = hl_site_rule(h, e);
  if (r->cfa_reg < 0) return HL_TP_WALK;
  hl_frame f = hl_caller_frame(fp);
  uint64_t key = f.pc;
  for (unsigned k = 0; k < HL_CHAIN_FAST_STEPS; k++) {
    if (!hl_unwind_step_recorded(&f, r)) break;
    key = hl_chain_next(key, f.pc);
    const hl_chain_node *n = hl_chain_node_at(h, key);
    if (n->key != key) break;
    if (n->tp != HL_TP_WALK) return n->tp;
    r = &n->rule;
  }
  return HL_TP_WALK;
}

/* The site-direct pop found the list empty: the next chunk queued with free slots of the
 * class hands its list over (free list sharding, alloc.c), else fresh space in the pool's
 * current chunk, as hl_tpool_try_alloc bumps it, without statistics (a list other than
 * hl_no_slot says none are counted). A program building its data allocates here most of
 * the time; the full path cost about 60 instructions more (malloc_shapes threads, whose
 * remote frees refill the lists only when the owner collects them). NULL: the full path
 * decides. */
static inline __attribute__((always_inline)) void *hl_direct_bump(hl_tpool *tp, hl_free_slot **list) {
  /* the class's bump_in: cur, unless a chunk is queued for cls; NULL in the always-empty
   * lists (hl_no_slot, hl_forward_slot), whose entries' tp may be NULL. Addressed from the
   * list (through tp and cls, GCC spent 2 instructions more on every bump). */
  const hl_class_head *h = (const hl_class_head *)list;
  hl_chunk *c = h->bump_in;
  if (HL_UNLIKELY(c == NULL)) {
    /* a queued chunk's slots before fresh space (else they would never be reused): its
     * list becomes the allocation list, as on the slow path, without the full path's
     * ~100 instructions each time a chunk's slots run out. No chunk queued: no chunk
     * yet, or an always-empty list. */
    if (h->queue == NULL) return NULL;
    size_t cls = (size_t)(h - tp->head);
    hl_tpool_refill(tp, cls);
    hl_free_slot *obj = *list;
    hl_chunk *oc = hl_chunk_of(obj);
    hl_slot_take(tp, (uint8_t)cls, obj, oc);
    oc->live++;
    if ((uintptr_t)obj <= (uintptr_t)HL_FORWARD) __builtin_unreachable();
    return obj;
  }
  hl_assert(tp != NULL && tp != HL_TP_WALK && !tp->counting);
  size_t cls = (size_t)(h - tp->head);
  hl_assert(c == (tp->head[cls].queue ? NULL : tp->cur));
  /* (tested after the span instead, GCC saved a register in malloc: 2 instructions on
   * every malloc for 2 on each bump) */
  if (HL_UNLIKELY(tp->interleave)) return hl_tpool_bump_interleaved(tp, c, (uint8_t)cls, 0);
  /* the class's span (alloc.c, span_carve); empty or used up: the slow path carves one */
  char *b = tp->span_bump[cls];
  size_t csize = hl_class_size[cls];
  if (HL_UNLIKELY((size_t)(tp->span_end[cls] - b) < csize)) return NULL;
  hl_chunk *sc = tp->span_chunk[cls];
  hl_assert(sc == hl_chunk_of(b));
  hl_assert(sc->magic == HL_CHUNK_MAGIC && sc->in_use && atomic_load_explicit(&sc->owner, memory_order_relaxed) == tp);
  tp->span_bump[cls] = b + csize;
  *hl_sizemap_entry_used(sc, b) = (uint8_t)cls;
  sc->live++;
  /* here, not before the chunk's lookup: there GCC lost it and tested the answer again */
  if ((uintptr_t)b <= (uintptr_t)HL_FORWARD) __builtin_unreachable();
  return b;
}
/* Takes obj, the head of a direct list (a site entry's or a chain node's, of tp's class
 * record), off it: the one pop both direct paths share. */
static inline __attribute__((always_inline)) void *hl_direct_take(const hl_tpool *tp, hl_free_slot **list,
                                                                 hl_free_slot *obj) {
  (void)tp;
  /* the allocation list holds slots of its allocating chunk only, one in use by this pool
   * (a released chunk's slots left every list: alloc.c, chunk_drop_lists), and that chunk
   * is the class record's, next to the list */
  hl_chunk *c = ((const hl_class_head *)list)->from;
  hl_assert(c == hl_chunk_of(obj));
  hl_assert(c->magic == HL_CHUNK_MAGIC && c->in_use && c->free[(const hl_class_head *)list - tp->head] == HL_OWN_NONE);
  hl_assert(atomic_load_explicit(&c->owner, memory_order_relaxed) == tp);
  *list = obj->next;
  /* the double-free mark, through the entry pointer the push left in the slot (a sized
   * delete's slot has none: its own first byte, no change that matters) */
  hl_assert(obj->entry == hl_sizemap_entry(c, obj) || obj->entry == (const uint8_t *)obj);
  hl_slot_unmark_linked(obj);
  c->live++;
  /* a slot is no HL_FORWARD: the callers' test of the answer then folds away */
  if ((uintptr_t)obj <= (uintptr_t)HL_FORWARD) __builtin_unreachable();
  return obj;
}
/* the site entry's: its tp (read only when the list is empty) */
static inline __attribute__((always_inline)) void *hl_site_direct_bump(const hl_site_cache_entry *e,
                                                                      hl_free_slot **list) {
  return hl_direct_bump(e->tp, list);
}

/* The site-direct fast path of malloc and operator new, taken before anything else and
 * without a frame: the thread's cache entry for the return address, a request of the size
 * the site asked for last, and the head of the pool's free list for that size's class,
 * found through the entry (no policy test: a thread has cache entries only under a placing
 * policy; no size class lookup; no statistics: entries get a direct list only while
 * statistics are off). NULL: take the full path (hl_alloc_try and on); HL_FORWARD: the
 * site's pool takes no object of this size (callsite over 128 bytes), forward it. */
static inline __attribute__((always_inline)) void *hl_site_direct_pop_ex(size_t size, uintptr_t ra,
                                                                        const hl_site_cache_entry **ep,
                                                                        int *walks) {
  const hl_site_cache_entry *e = hl_site_entry(hl_tl_heap, ra);
  *ep = e;
  *walks = 0;
  if (HL_UNLIKELY(e->ra != ra)) return NULL;
  hl_free_slot **list = e->list;
  if (HL_UNLIKELY(e->size != size)) {
    /* A site of varying sizes: the list of this size's class, when the entry may pop its
     * pool's lists directly (a list other than hl_no_slot says so: a pool that takes the
     * size it asked for last, no statistics). Without this, malloc_shapes'
     * mixed paid about 65 instructions more for each request of its varying site. */
    /* The entry's pool first: a site cached as not pooled or walking has none (NULL,
     * HL_TP_WALK), and tells by its list (below). Asking the lists first cost each request
     * of a pooled site of varying sizes 5 instructions more (half of gawk's mallocs), and
     * each walk site's (every allocation through a wrapper under dpa) 1. */
    const hl_tpool *tp = e->tp;
    if (HL_UNLIKELY((uintptr_t)tp <= (uintptr_t)HL_TP_WALK)) {
      /* A walk site: NULL, and *walks says so: the caller goes to the chain cache (a flag
       * constant on each way, so GCC jumps there at once; a test of the entry after the
       * pop cost 3 instructions more). A site cached as not pooled (hl_alloc_try's
       * HL_FORWARD, whatever the size): most of a plan's program's allocations; through
       * the full path's test they cost about 16 instructions more. */
      if (tp == HL_TP_WALK) {
        *walks = 1;
        return NULL;
      }
      return list == &hl_forward_slot ? HL_FORWARD : NULL;
    }
    /* A pooled site whose last size went to the list hl_no_slot (a size its pool does
     * not take) pops this size's list all the same: direct_max says what the pool takes
     * directly. With statistics on it is 0, and nothing forwards from here: the full path
     * counts what it forwards. */
    if (HL_UNLIKELY(size > tp->direct_max)) /* as hl_alloc_try decides (the full path cost ~20 more) */
      return !hl_state.counting && (size > tp->max_size || size > hl_state.opt.max_size) ? HL_FORWARD : NULL;
    list = tp->direct[(size + 7) >> 3];
    hl_assert(list == &tp->head[hl_size_class_in(tp->classes, size)].free);
    /* the site's next request of this size pops at once (runs of one size at gawk's
     * varying sites: 0.2M of its 527k misses fewer; a write to the line just read) */
    ((hl_site_cache_entry *)e)->size = size;
    ((hl_site_cache_entry *)e)->list = list;
  }
  hl_free_slot *obj;
#if defined(__x86_64__)
  /* the head in the return register: GCC kept it elsewhere and copied it (one more) */
  __asm__("movq %1, %0" : "=a"(obj) : "m"(*list));
#else
  obj = *list;
#endif
  if (HL_UNLIKELY(obj == NULL)) return hl_site_direct_bump(e, list);
  return hl_direct_take(e->tp, list, obj); /* e->tp: read by the debug library's asserts only */
}
static inline __attribute__((always_inline)) void *hl_site_direct_pop(size_t size, uintptr_t ra) {
  const hl_site_cache_entry *e;
  int walks;
  return hl_site_direct_pop_ex(size, ra, &e, &walks);
}

/* Statistics are on: forwarded requests are counted (hl_counted). */
static inline int hl_counting(void) { return HL_UNLIKELY(hl_state.counting); }

/* Points e's direct list at tp's list for the class of size when the direct pop may serve
 * this site (tp a pool that takes size, statistics off), at hl_forward_slot for a site not
 * pooled while nothing is counted, else at the empty hl_no_slot. */
static inline void hl_site_direct_set(hl_site_cache_entry *e, hl_tpool *tp, size_t size) {
  if (tp != NULL && tp != HL_TP_WALK && size <= tp->max_size && size <= hl_state.opt.max_size &&
      size <= HL_MAX_CLASS_SIZE && !tp->counting) {
    e->size = size;
    e->list = &tp->head[hl_size_class_in(tp->classes, size)].free;
  } else if (tp == NULL && !hl_counting()) {
    e->size = SIZE_MAX; /* every request misses the size first and finds hl_forward_slot */
    e->list = &hl_forward_slot;
  } else {
    /* a walk site: a size no request has, so that the pop leaves at its size compare and
     * the full path looks again */
    e->size = tp == HL_TP_WALK ? SIZE_MAX : size;
    e->list = &hl_no_slot;
  }
}

/* Enters tp as the answer of chain node n, with its chain-direct list for size as
 * hl_site_direct_set does for a site: a pool that takes size, statistics off; else no
 * request pops directly (size UINT32_MAX, hl_no_slot) and hl_chain_pop asks the pool. */
static inline void hl_chain_node_answer(hl_chain_node *n, hl_tpool *tp, size_t size) {
  n->tp = tp;
  if (tp != NULL && tp != HL_TP_WALK && size <= tp->max_size && size <= hl_state.opt.max_size &&
      size <= HL_MAX_CLASS_SIZE && !tp->counting) {
    n->direct.size = (uint32_t)size;
    n->direct.list = &tp->head[hl_size_class_in(tp->classes, size)].free;
  } else {
    n->direct.size = UINT32_MAX;
    n->direct.list = &hl_no_slot;
  }
}

/* p, the answer of the allocator underneath to a request of size bytes, counted when it
 * served it (a huge request it refused moved no bytes). Callers test hl_counting() first,
 * so that without statistics the call below stays a tail call. */
static inline void *hl_counted(void *p, size_t size) {
  if (p != NULL) {
    atomic_fetch_add_explicit(&hl_state.forwarded_objects, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&hl_state.forwarded_bytes, size, memory_order_relaxed);
  }
  return p;
}

/* The chain cache's answer for a walk site (e, its entry, HL_TP_WALK), as hl_chain_try
 * finds it, and the object from the answer's pool: a request of the size the chain's node
 * holds pops that class's list directly (its chunk next to it, as the site-direct pop), a
 * request of another size up to the pool's direct_max pops the list of its class through
 * tp->direct, anything else asks the pool (hl_tpool_try_alloc). Allocations through a
 * wrapper all come here under dpa (jq's, tidy's and lua's every object): hl_chain_try and
 * hl_tpool_try_alloc's class lookup took about 30 instructions more per allocation.
 * HL_FORWARD: the allocator underneath serves it; NULL: the full path decides (not cached,
 * a failed stack check, or the pool has no slot at hand). */
static inline __attribute__((always_inline)) void *hl_chain_pop(hl_heap *h, const hl_site_cache_entry *e,
                                                               void *const *fp, size_t size) {
  const hl_step_rule *r = hl_site_rule(h, e);
  if (r->cfa_reg < 0) return NULL;
  hl_frame f = hl_caller_frame(fp);
  uint64_t key = f.pc;
  for (unsigned k = 0; k < HL_CHAIN_FAST_STEPS; k++) {
    if (!hl_unwind_step_recorded(&f, r)) break;
    key = hl_chain_next(key, f.pc);
    const hl_chain_node *n = hl_chain_node_at(h, key);
    if (n->key != key) break;
    hl_tpool *tp = n->tp;
    if (tp == HL_TP_WALK) {
      r = &n->rule;
      continue;
    }
    hl_free_slot **list = n->direct.list;
    if (HL_UNLIKELY(n->direct.size != size)) {
      /* a NULL answer has no direct size: it leaves here */
      if (tp == NULL) return HL_FORWARD;
      /* direct_max is at most the pool's and the global limit: a size within it needs no
       * other test (3 instructions on each request of another size, most of lua's) */
      if (HL_UNLIKELY(size > tp->direct_max)) {
        if (size > tp->max_size || size > hl_state.opt.max_size) return HL_FORWARD;
        return hl_tpool_try_alloc(tp, size);
      }
      list = tp->direct[(size + 7) >> 3];
    }
    hl_free_slot *obj = *list;
    if (HL_UNLIKELY(obj == NULL)) {
      void *b = hl_direct_bump(tp, list);
      return b != NULL ? b : hl_tpool_try_alloc(tp, size);
    }
    return hl_direct_take(tp, list, obj);
  }
  return NULL;
}

/* The common cases and nothing else: a placing policy and a cached site (or chain), whose
 * pool has a free slot or bump room (the object), or which is cached as not pooled
 * (HL_FORWARD: the allocator underneath serves it). NULL means "take the full path"
 * (hl_malloc_from and its kin). It calls nothing, so the entry points inlining it stay
 * leaves. */
static inline __attribute__((always_inline)) void *hl_alloc_try(size_t size, void *const *fp) {
  int policy = atomic_load_explicit(&hl_state.policy, memory_order_relaxed);
  if (policy < HL_POLICY_CALLSITE) return policy == HL_POLICY_OFF ? HL_FORWARD : NULL; /* NULL: not started */
  if (size > hl_state.opt.max_size) return HL_FORWARD;
  uintptr_t ra = (uintptr_t)fp[1];
  hl_heap *h = hl_tl_heap;
  hl_site_cache_entry *e = hl_site_entry(h, ra);
  if (e->ra != ra) return NULL;
  hl_tpool *tp = e->tp;
  if (tp == HL_TP_WALK) return hl_chain_pop(h, e, fp, size);
  if (e->size != size && tp != NULL) { /* the site asks for another size: follow it */
    hl_site_direct_set(e, tp, size);
  }
  if (tp == NULL || size > tp->max_size) return HL_FORWARD;
  return hl_tpool_try_alloc(tp, size);
}

/* The pool a context cached in this thread answers (NULL: not pooled), or HL_TP_WALK: not
 * cached. For a caller whose hl_alloc_try missed only because the pool had no slot at hand
 * (lists and span empty): the pool's own slow path refills, and the context is not decided
 * again. dpa decided it again, a slow-path visit per span: 25k of lua5.4's 26k visits. */
static inline hl_tpool *hl_cached_tpool(void *const *fp) {
  uintptr_t ra = (uintptr_t)fp[1];
  hl_heap *h = hl_tl_heap;
  const hl_site_cache_entry *e = hl_site_entry(h, ra);
  if (e->ra != ra) return HL_TP_WALK;
  hl_tpool *tp = e->tp;
  return tp == HL_TP_WALK ? hl_chain_try(h, e, fp) : tp;
}

/* A pooled object for this request under the active policy, or NULL to forward.
 * fp: the exported entry point's frame pointer (fp[1] is the caller's return address). */
static inline __attribute__((always_inline)) void *hl_policy_alloc(int policy, size_t size, void *const *fp) {
  if (size > hl_state.opt.max_size) return NULL;
  uintptr_t ra = (uintptr_t)fp[1];
  hl_heap *h = hl_tl_heap;
  const hl_site_cache_entry *e = hl_site_entry(h, ra);
  hl_tpool *tp;
  if (HL_LIKELY(e->ra == ra)) {
    tp = e->tp;
    if (HL_UNLIKELY(tp == HL_TP_WALK) && (tp = hl_chain_try(h, e, fp)) == HL_TP_WALK)
      tp = hl_plan_walk_tpool(fp, hl_site_rule(h, e), size);
  } else if (policy == HL_POLICY_CALLSITE) {
    tp = hl_site_tpool_slow(ra, size);
  } else {
    tp = hl_plan_tpool_slow(fp, size);
  }
  /* a pool takes objects up to its own limit (a plan's groups and site pools differ) */
  if (tp == NULL || size > tp->max_size) return NULL;
  return hl_tpool_alloc(tp, size);
}

/* malloc on behalf of the caller of the entry point whose frame pointer is fp. */
static inline __attribute__((always_inline)) void *hl_malloc_fast(size_t size, void *const *fp) {
  int policy = hl_policy();
  if (policy >= HL_POLICY_CALLSITE) {
    void *p = hl_policy_alloc(policy, size, fp);
    if (HL_LIKELY(p != NULL)) return p;
  } else if (HL_UNLIKELY(policy == HL_POLICY_UNINIT)) {
    return hl_bootstrap_alloc(size, HL_GRANULE);
  }
  if (hl_counting()) return hl_counted(hl_next_alloc.malloc(size), size);
  return hl_next_alloc.malloc(size);
}

/* free: our objects by address range (internal.h), the rest by the allocator underneath
 * (whose free is a filter in a run that used the bootstrap buffer: next.c). */
static inline __attribute__((always_inline)) void hl_free_fast(void *p) {
  if (hl_is_ours(p)) {
    hl_free_ours_inline(p);
    return;
  }
  /* free(NULL) does nothing: tested only off our objects' way, it costs the allocator
   * underneath's frees 2 instructions and saves each free(NULL) its jump and the
   * allocator's own test (gawk: 760k of its 2M frees, about 4 instructions each in
   * mimalloc's free) */
  if (p == NULL) return;
  hl_next_alloc.free(p);
}

#endif
