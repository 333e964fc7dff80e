/* The C allocation interface, interposed. Each entry point asks the policy for a pool;
 * no pool (or a pool that cannot serve) means the allocator underneath does the work.
 * A pointer is ours exactly when it lies in the reserved range, so free, realloc and
 * malloc_usable_size of another allocator's pointers go straight back to it. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "dpa.h"
#include "fastpath.h"

static hl_tpool *tpool_of(hl_heap *heap, uint16_t pool) {
  hl_tpool *tp = heap->tpools[pool];
  return tp != NULL ? tp : hl_tpool_create(heap, pool);
}

/* The caches are the thread's heap's: a thread without one gets one here, on its first
 * pooled site (never before: a thread that pools nothing needs none). */
HL_NOINLINE hl_tpool *hl_site_tpool_slow(uintptr_t ra, size_t size) {
  uint16_t pool = hl_callsite_pool(ra, size);
  if (pool == 0) return NULL;
  hl_heap *heap = hl_heap_get();
  if (heap == NULL) return NULL;
  hl_tpool *tp = tpool_of(heap, pool);
  if (tp == NULL) return NULL;
  hl_site_cache_entry *e = hl_site_entry(heap, ra);
  e->ra = ra;
  e->tp = tp;
  hl_site_direct_set(e, tp, size);
  return tp;
}

/* The plan policy's identification. Answers decided by the return address alone are
 * cached, including "not grouped" (tp NULL); a return address whose answer needs a stack
 * walk is cached as HL_TP_WALK, so the next call goes straight to the walk. */

/* Ungrouped objects: with a plan's `rest callsite` they get per-site pools (0 otherwise). */
static inline uint16_t rest_pool(uintptr_t ra, size_t size) {
  return hl_state.opt.site_max_size ? hl_callsite_pool(ra, size) : 0;
}

/* Enters a decided walk into the chain cache (fastpath.h): a node per step, the last with
 * the answer, the others with the rule for the next step. */
static void remember_chain(hl_heap *heap, uintptr_t ra, const hl_trace *tr, unsigned steps, hl_tpool *tp,
                           size_t size) {
  uint64_t key = ra;
  for (unsigned k = 0; k < steps; k++) {
    key = hl_chain_next(key, tr->step[k].pc);
    hl_chain_node *n = hl_chain_node_at(heap, key);
    n->key = key;
    if (k + 1 == steps) {
      hl_chain_node_answer(n, tp, size);
    } else {
      n->tp = HL_TP_WALK;
      n->rule = tr->step[k + 1].rule;
    }
  }
}

/* Reached from a cached site only, so the thread has its heap. */
HL_NOINLINE hl_tpool *hl_plan_walk_tpool(void *const *fp, const hl_step_rule *r0, size_t size) {
  if (atomic_load_explicit(&hl_state.policy, memory_order_relaxed) == HL_POLICY_DPA) return hl_dpa_tpool(fp, size);
  hl_heap *heap = hl_tl_heap;
  const hl_trace *decided = NULL;
  unsigned steps;
  uint16_t pool = hl_plan_pool_walk(hl_caller_frame(fp), r0, &decided, &steps);
  if (steps > HL_CHAIN_FAST_STEPS) steps = 0;
  if (pool == 0 && (pool = rest_pool((uintptr_t)fp[1], size)) == 0) {
    /* not pooled; with `rest callsite` only for now (the site has too few objects yet, or
     * this one is too big: the cached pool's max_size decides that) */
    if (steps && !hl_state.opt.site_max_size) remember_chain(heap, (uintptr_t)fp[1], decided, steps, NULL, size);
    return NULL;
  }
  hl_tpool *tp = tpool_of(heap, pool);
  if (tp != NULL && steps) remember_chain(heap, (uintptr_t)fp[1], decided, steps, tp, size);
  return tp;
}

/* The plan caches "not grouped" too, and its walks record into the heap, so under plan a
 * thread gets its heap on its first allocation that misses the cache. */
HL_NOINLINE hl_tpool *hl_plan_tpool_slow(void *const *fp, size_t size) {
  /* the dpa policy shares the fast path's caches with plan; its slow path is its own */
  if (atomic_load_explicit(&hl_state.policy, memory_order_relaxed) == HL_POLICY_DPA) return hl_dpa_tpool(fp, size);
  hl_heap *heap = hl_heap_get();
  if (heap == NULL) return NULL; /* exiting: forwarded, nothing cached */
  int needs_walk;
  hl_frame f = hl_caller_frame(fp);
  uint16_t pool = hl_plan_pool(f, &needs_walk);
  /* a PreFix site (or a call from a skipped module, which may lead to one) is not cached
   * while its counter may still place: the counter must see every allocation, on the full
   * path (hl_malloc_from); past its last value the site is cached as any other */
  if (HL_UNLIKELY(hl_prefix_on) &&
      (hl_prefix_first_frame(f.pc) || (hl_plan_pc_skipped(f.pc) && hl_prefix_live()))) {
    if (pool == 0) pool = rest_pool(f.pc, size);
    return pool ? tpool_of(heap, pool) : NULL;
  }
  hl_site_cache_entry *e = hl_site_entry(heap, f.pc);
  if (needs_walk) {
    e->ra = f.pc;
    e->tp = HL_TP_WALK;
    hl_site_direct_set(e, HL_TP_WALK, size);
    hl_unwind_rule(f.pc, hl_site_rule(heap, e));
    if (pool == 0 && (pool = rest_pool(f.pc, size)) == 0) return NULL;
    return tpool_of(heap, pool);
  }
  if (pool == 0 && hl_state.opt.site_max_size) /* the rest: per-site pools, as callsite */
    return hl_site_tpool_slow(f.pc, size);
  hl_tpool *tp = pool ? tpool_of(heap, pool) : NULL;
  if (tp != NULL || pool == 0) {
    e->ra = f.pc;
    e->tp = tp;
    hl_site_direct_set(e, tp, size);
  }
  return tp;
}

HL_NOINLINE void *hl_malloc_from(size_t size, void *const *fp) {
  /* the full path: a PreFix site's allocations all come here, the program's first one too
   * (it starts the runtime, which may load a region: its counter must count it) */
  if (HL_UNLIKELY(atomic_load_explicit(&hl_state.policy, memory_order_relaxed) == HL_POLICY_UNINIT)) (void)hl_policy();
  /* dpa: a context not cached in this thread (dpa_policy.c sees the object's address) */
  if (atomic_load_explicit(&hl_state.policy, memory_order_relaxed) == HL_POLICY_DPA) return hl_dpa_malloc(size, fp);
  if (HL_UNLIKELY(hl_prefix_on)) {
    void *p = hl_prefix_alloc(size, fp);
    if (p != NULL) return p;
  }
  return hl_malloc_fast(size, fp);
}

void hl_free(void *p) { hl_free_fast(p); }

/* malloc is the site-direct pop (fastpath.h), with no frame of its own (it reads the return
 * address at the stack pointer); a miss jumps (never calls) on, so that the return address
 * of malloc_placing_full is still the program's call site and its frame starts the stack
 * walk. Policy `off` and a site cached as not pooled go to the allocator underneath from
 * the miss: with nothing to place no thread has a site cache entry, so the pop misses on
 * its first compare. (A three-instruction stub that tested the passthrough flag first cost
 * every placing malloc two instructions and saved `off` seven.) */
static HL_NOINLINE void *malloc_forward(size_t size) {
  if (hl_counting()) return hl_counted(hl_next_alloc.malloc(size), size);
  return hl_next_alloc.malloc(size);
}

/* Reached by a jump from malloc: its return address is still the program's call site, and
 * its own frame starts the stack walk. */
static HL_NOINLINE __attribute__((noclone)) void *malloc_placing_full(size_t size) {
  void *p = hl_alloc_try(size, HL_FRAME);
  if (HL_LIKELY(p > HL_FORWARD)) return p;
  return p == HL_FORWARD ? malloc_forward(size) : hl_malloc_from(size, HL_FRAME);
}

/* After a missed pop (the pop itself answers HL_FORWARD for a site cached as not pooled),
 * reached by a jump: a request larger than any pool takes (never cached: hl_alloc_try
 * forwards it before it looks at the site) forwards at once, the rest takes the full path.
 * Out of malloc, so that the pop keeps to the registers it needs (inline, GCC saved one
 * for it: 3 instructions on every pooled malloc). */
static HL_NOINLINE __attribute__((noclone, optimize("omit-frame-pointer"))) void *malloc_missed(size_t size) {
  if (size > hl_state.opt.max_size &&
      atomic_load_explicit(&hl_state.policy, memory_order_relaxed) >= HL_POLICY_CALLSITE)
    return malloc_forward(size);
  /* a PreFix site is never in the pop's cache while its counter may place: its own cache
   * (prefix.c) saves it the full path's ~70 instructions when it takes its slot */
  if (HL_UNLIKELY(hl_prefix_on)) {
    void *p = hl_prefix_try(size, (uintptr_t)__builtin_return_address(0));
    if (p != NULL) return p;
  }
  return malloc_placing_full(size);
}

/* A walk site's malloc (its entry e: HL_TP_WALK), reached by a jump from malloc (and
 * realloc(NULL, n)) when the pop missed at a walk site's entry: the chain cache
 * and the answer's list (hl_chain_pop). Every allocation through a wrapper comes here under
 * dpa; through malloc_missed and malloc_placing_full (the passthrough flag, the size
 * limit, PreFix, the policy and the entry looked at again) it cost about 30 instructions
 * more. Its frame starts the walk. */
static HL_NOINLINE __attribute__((noclone)) void *malloc_walk(size_t size, const hl_site_cache_entry *e) {
  if (HL_UNLIKELY(size >= hl_state.walk_limit)) {
    if (HL_UNLIKELY(hl_prefix_on)) return malloc_missed(size); /* PreFix's own cache first, as before */
    /* larger than any pool takes: never cached in a chain (hl_dpa_malloc forwards it first) */
    return malloc_forward(size);
  }
  void *p = hl_chain_pop(hl_tl_heap, e, HL_FRAME, size);
  if (HL_LIKELY(p > HL_FORWARD)) return p;
  return p == HL_FORWARD ? malloc_forward(size) : hl_malloc_from(size, HL_FRAME);
}

HL_EXPORT __attribute__((noinline, optimize("omit-frame-pointer"))) void *malloc(size_t size) {
  const hl_site_cache_entry *e;
  uintptr_t ra = (uintptr_t)__builtin_return_address(0);
  int walks;
  void *p = hl_site_direct_pop_ex(size, ra, &e, &walks);
  if (HL_LIKELY(p > HL_FORWARD)) return p;
  if (walks) return malloc_walk(size, e);
  if (p == HL_FORWARD || atomic_load_explicit(&hl_state.passthrough, memory_order_relaxed))
    return hl_next_alloc.malloc(size);
  return malloc_missed(size);
}

HL_EXPORT void free(void *p) { hl_free_fast(p); }

/* calloc's full path, reached by a jump from calloc (as malloc_placing_full from malloc):
 * its frame starts the stack walk with the program's call site as return address. */
static HL_NOINLINE __attribute__((noclone)) void *calloc_full(size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  int policy = hl_policy(); /* before hl_prefix_on: this may be the call that loads the region */
  if (policy >= HL_POLICY_CALLSITE) {
    void *p = HL_UNLIKELY(hl_prefix_on) ? hl_prefix_alloc(total, HL_FRAME) : NULL; /* a reused slot is not zero */
    if (p == NULL) p = hl_policy_alloc(policy, total, HL_FRAME);
    if (p != NULL) return memset(p, 0, total);
  } else if (HL_UNLIKELY(policy == HL_POLICY_UNINIT)) {
    return hl_bootstrap_alloc(total, HL_GRANULE);
  }
  if (hl_counting()) return hl_counted(hl_next_alloc.calloc(n, size), total);
  return hl_next_alloc.calloc(n, size);
}

static HL_NOINLINE void *calloc_forward(size_t n, size_t size, size_t total) {
  if (hl_counting()) return hl_counted(hl_next_alloc.calloc(n, size), total);
  return hl_next_alloc.calloc(n, size);
}

/* The site-direct pop first, as malloc (a miss costs two compares): a cached site's calloc
 * skips the policy, PreFix (never cached while its counter may place) and the class
 * lookup. No frame of its own, every way out a jump: with the full path inline GCC saved
 * registers on every call (calloc under `off` cost 44 instructions more than glibc's). */
HL_EXPORT __attribute__((noinline, optimize("omit-frame-pointer"))) void *calloc(size_t n, size_t size) {
  size_t total;
  if (HL_UNLIKELY(__builtin_mul_overflow(n, size, &total))) return calloc_full(n, size);
  /* larger than any pool takes: never cached (as malloc_missed forwards it), so asked
   * first (an array: calloc's common case). Through the pop's miss and calloc_full each
   * cost about 60 instructions more (gawk's 45k arrays: 0.2% of its run under dpa). A
   * PreFix slot may be larger: with a region, the full path decides. */
  if (HL_UNLIKELY(total > hl_state.opt.max_size) && !hl_prefix_on &&
      atomic_load_explicit(&hl_state.policy, memory_order_relaxed) >= HL_POLICY_CALLSITE)
    return calloc_forward(n, size, total);
  void *q = hl_site_direct_pop(total, (uintptr_t)__builtin_return_address(0));
  if (HL_LIKELY(q > HL_FORWARD)) return memset(q, 0, total);
  if (q == HL_FORWARD || atomic_load_explicit(&hl_state.passthrough, memory_order_relaxed))
    return hl_next_alloc.calloc(n, size);
  return calloc_full(n, size);
}

/* realloc(p, 0) either frees p and returns NULL (glibc, jemalloc, tcmalloc) or returns a
 * minimal object (mimalloc); the program must see the same from our pooled objects, so
 * the allocator underneath is asked once. */
static int realloc_zero_frees(void) {
  static _Atomic(int) answer = -1;
  int a = atomic_load_explicit(&answer, memory_order_relaxed);
  if (HL_UNLIKELY(a < 0)) {
    void *q = hl_next_alloc.realloc(hl_next_alloc.malloc(1), 0);
    a = q == NULL;
    hl_next_alloc.free(q);
    atomic_store_explicit(&answer, a, memory_order_relaxed);
  }
  return a;
}

static void *realloc_from(void *p, size_t size, void *const *fp) {
  if (p == NULL) return hl_malloc_from(size, fp);
  if (HL_UNLIKELY(hl_prefix_on) && size != 0) hl_prefix_count_realloc(fp);
  if (hl_is_ours(p)) {
    if (size == 0) { /* whatever the allocator underneath does with realloc(p, 0) */
      hl_free_ours(p);
      return realloc_zero_frees() ? NULL : hl_malloc_from(0, fp);
    }
    return hl_realloc_ours(p, size);
  }
  if (HL_UNLIKELY(hl_is_bootstrap(p))) {
    void *n = hl_malloc_from(size, fp);
    if (n) {
      size_t old = hl_bootstrap_size(p);
      memcpy(n, p, old < size ? old : size);
    }
    return n;
  }
  return hl_next_alloc.realloc(p, size);
}

/* Reached by a jump from realloc: its frame starts the stack walk. */
static HL_NOINLINE __attribute__((noclone)) void *realloc_full(void *p, size_t size) {
  return realloc_from(p, size, HL_FRAME);
}

/* realloc(NULL, n) is malloc(n), and programs that allocate through one realloc call (lua's
 * allocator function) do most of their allocating so: the site-direct pop first, as malloc
 * (the full path cost lua5.4 about 55 instructions per object more), with no frame, and a
 * missed pop goes on as malloc's does (a jump: the return address stays the program's), to
 * the chain cache of walk sites and the policy's full path. Through realloc_full,
 * realloc_from and hl_malloc_from that cost about 50 instructions more per object at a walk
 * site (lua5.4's allocator function under dpa: docs/results.md §25). */
HL_EXPORT __attribute__((noinline, optimize("omit-frame-pointer"))) void *realloc(void *p, size_t size) {
  if (p == NULL) {
    const hl_site_cache_entry *e;
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    int walks;
    void *q = hl_site_direct_pop_ex(size, ra, &e, &walks);
    if (HL_LIKELY(q > HL_FORWARD)) return q;
    if (walks) return malloc_walk(size, e);
    if (q == HL_FORWARD || atomic_load_explicit(&hl_state.passthrough, memory_order_relaxed))
      return hl_next_alloc.malloc(size);
    return malloc_missed(size);
  }
  /* our object, moved or grown in its pool, with no frame on the way (through realloc_full
   * and realloc_from before: part of the 40 instructions per move hl_realloc_ours says).
   * PreFix counts moving reallocs at their site there, and realloc(p, 0) is decided there. */
  if (hl_is_ours(p) && size != 0 && !hl_prefix_on) return hl_realloc_ours(p, size);
  return realloc_full(p, size);
}

HL_EXPORT void *reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_from(p, total, HL_FRAME);
}

/* Alignments up to the granule are what malloc gives anyway; larger ones go below us. */
static void *aligned_from(size_t align, size_t size, void *const *fp, void *(*below)(size_t, size_t)) {
  int policy = hl_policy();
  if (HL_UNLIKELY(policy == HL_POLICY_UNINIT)) return hl_bootstrap_alloc(size, align);
  /* the size test first: rounding a size within 15 of SIZE_MAX up to 16 wraps to 0, and
   * memalign(16, SIZE_MAX) got a 16-byte slot instead of NULL and ENOMEM */
  if (align <= HL_GRANULE && size <= hl_state.opt.max_size && policy >= HL_POLICY_CALLSITE) {
    /* our slots are 16-aligned; the allocator below may not be for small sizes (jemalloc's
     * 8-byte class), so what we do not place still goes to its aligned entry point */
    void *p = hl_policy_alloc(policy, align > 8 ? hl_size_a16(size) : size, fp);
    if (p != NULL) return p;
  }
  if (hl_counting()) return hl_counted(below(align, size), size);
  return below(align, size);
}

void *hl_memalign_from(size_t align, size_t size, void *const *fp) {
  (void)hl_policy();
  return aligned_from(align, size, fp, hl_next_alloc.memalign);
}

HL_EXPORT void *memalign(size_t align, size_t size) {
  (void)hl_policy();
  return aligned_from(align, size, HL_FRAME, hl_next_alloc.memalign);
}

HL_EXPORT void *aligned_alloc(size_t align, size_t size) {
  (void)hl_policy();
  if (align == 0 || (align & (align - 1))) return hl_next_alloc.aligned_alloc(align, size); /* its error */
  return aligned_from(align, size, HL_FRAME, hl_next_alloc.aligned_alloc);
}

HL_EXPORT int posix_memalign(void **out, size_t align, size_t size) {
  if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
  (void)hl_policy();
  void *p = aligned_from(align, size, HL_FRAME, hl_next_alloc.memalign);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

HL_EXPORT void *valloc(size_t size) {
  if (HL_UNLIKELY(hl_policy() == HL_POLICY_UNINIT)) return hl_bootstrap_alloc(size, 4096);
  if (hl_counting()) return hl_counted(hl_next_alloc.valloc(size), size);
  return hl_next_alloc.valloc(size);
}

HL_EXPORT void *pvalloc(size_t size) {
  if (HL_UNLIKELY(hl_policy() == HL_POLICY_UNINIT)) return hl_bootstrap_alloc((size + 4095) & ~(size_t)4095, 4096);
  if (hl_counting()) return hl_counted(hl_next_alloc.pvalloc(size), size);
  return hl_next_alloc.pvalloc(size);
}

HL_EXPORT size_t malloc_usable_size(void *p) {
  if (hl_is_ours(p)) return hl_usable_size_ours(p);
  if (p == NULL) return 0;
  if (hl_is_bootstrap(p)) return hl_bootstrap_size(p);
  if (HL_UNLIKELY(hl_next_alloc.malloc_usable_size == NULL)) hl_init();
  return hl_next_alloc.malloc_usable_size(p);
}

/* glibc's other names for its allocator. A program may pair them with the plain names: a
 * malloc wrapper in the executable over __libc_malloc and __libc_free (the old malloc-hook
 * idiom), or a malloc'd object released with __libc_free. Without these, libc's __libc_free
 * got our pooled objects (memalign'd, or malloc'd) and aborted with "free(): invalid
 * pointer", where the program runs fine on glibc alone, and on mimalloc and tcmalloc, which
 * export these names too (found by a probe: tests/test_runtime_alloc_edges.py).
 *
 * The allocating names are not placed: they forward to the next definition, libc's (or
 * the allocator underneath's own __libc_malloc), as the name asks. That keeps a wrapper
 * library below us that defines malloc over __libc_malloc (libc_malloc_debug.so) from
 * calling back into our malloc forever. free and realloc take back what is ours (pooled,
 * a PreFix slot, the bootstrap buffer) and pass the rest on. */
static inline int libc_name_ours(const void *p) {
  return hl_is_ours(p) || HL_UNLIKELY(hl_is_bootstrap(p)) || (HL_UNLIKELY(hl_prefix_on) && hl_prefix_owns(p));
}

/* Resolved at start; NULL only before that: start up (a no-op when re-entered from start-up,
 * where the allocator underneath may call one of these before its name is known: such a
 * call is served as our own bootstrap allocations are). */
#define LIBC_NEXT(name) \
  (HL_LIKELY(hl_next_libc_alloc.name != NULL) ? hl_next_libc_alloc.name : (hl_init(), hl_next_libc_alloc.name))

HL_EXPORT void *__libc_malloc(size_t size) {
  void *(*f)(size_t) = LIBC_NEXT(malloc);
  return f != NULL ? f(size) : hl_bootstrap_alloc(size, HL_GRANULE);
}

HL_EXPORT void *__libc_calloc(size_t n, size_t size) {
  void *(*f)(size_t, size_t) = LIBC_NEXT(calloc);
  if (f != NULL) return f(n, size);
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return hl_bootstrap_alloc(total, HL_GRANULE);
}

HL_EXPORT void *__libc_memalign(size_t align, size_t size) {
  void *(*f)(size_t, size_t) = LIBC_NEXT(memalign);
  return f != NULL ? f(align, size) : hl_bootstrap_alloc(size, align);
}

HL_EXPORT void *__libc_valloc(size_t size) {
  void *(*f)(size_t) = LIBC_NEXT(valloc);
  return f != NULL ? f(size) : hl_bootstrap_alloc(size, 4096);
}

HL_EXPORT void *__libc_pvalloc(size_t size) {
  void *(*f)(size_t) = LIBC_NEXT(pvalloc);
  return f != NULL ? f(size) : hl_bootstrap_alloc((size + 4095) & ~(size_t)4095, 4096);
}

HL_EXPORT void __libc_free(void *p) {
  if (p == NULL) return;
  if (libc_name_ours(p)) {
    hl_free_fast(p);
    return;
  }
  void (*f)(void *) = LIBC_NEXT(free);
  if (f != NULL) f(p);
}

static HL_NOINLINE __attribute__((noclone)) void *libc_realloc_ours(void *p, size_t size) {
  return realloc_from(p, size, HL_FRAME);
}

HL_EXPORT void *__libc_realloc(void *p, size_t size) {
  if (p != NULL && libc_name_ours(p)) return libc_realloc_ours(p, size);
  void *(*f)(void *, size_t) = LIBC_NEXT(realloc);
  if (f != NULL) return f(p, size);
  return p == NULL ? hl_bootstrap_alloc(size, HL_GRANULE) : NULL;
}
