/* Per-thread heaps: each thread allocates from its own thread-pools without locks.
 *
 * A heap (internal.h) holds a thread's caches and thread-pools. It is made on the thread's
 * first allocation under a placing policy, from the internal metadata, or taken from the
 * free list of heaps whose thread exited; static TLS holds only the pointer to it. When
 * the thread exits, its empty chunks are released, the others are parked for adoption by
 * another thread of the same pool, its caches are cleared and the heap goes on the free
 * list. A heap is never unmapped and its thread-pools stay in it (with their statistics),
 * because other threads may still read a chunk's owner after the thread has gone. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

/* The heaps of threads without one: nothing is ever cached or created in them, so they
 * are only read. Each fills whole pages, which are made read-only at start-up: a write
 * would be another thread's cache entry in the making, so it faults instead. */
#define HEAP_PAGES ((sizeof(hl_heap) + 4095) / 4096)
typedef union static_heap {
  hl_heap heap;
  char pages[HEAP_PAGES * 4096];
} static_heap;
static static_heap empty_heap __attribute__((aligned(4096))); /* before the first allocation */
static static_heap dead_heap __attribute__((aligned(4096)));  /* exiting: forward everything */
#define HEAP_EMPTY (&empty_heap.heap)
#define HEAP_DEAD (&dead_heap.heap)

__thread hl_heap *hl_tl_heap __attribute__((tls_model("initial-exec"))) = HEAP_EMPTY;
#define tl_heap hl_tl_heap
static __thread int tl_heap_busy __attribute__((tls_model("initial-exec")));
static pthread_key_t heap_key;
static int heap_key_ok;

/* meta_lock guards the metadata bump pointer, the heap registry and the free list */
static atomic_flag meta_lock = ATOMIC_FLAG_INIT;
static char *meta_cur, *meta_end;
static hl_heap *heap_registry;
static hl_heap *free_heaps;

static void meta_lock_take(void) {
  while (atomic_flag_test_and_set_explicit(&meta_lock, memory_order_acquire)) sched_yield();
}
static void meta_lock_drop(void) { atomic_flag_clear_explicit(&meta_lock, memory_order_release); }

void *hl_meta_alloc(size_t size) {
  size = (size + 63) & ~(size_t)63;
  meta_lock_take();
  if ((size_t)(meta_end - meta_cur) < size) {
    size_t block = size > (4u << 20) ? size : (4u << 20);
    char *m = mmap(NULL, block, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      meta_lock_drop();
      return NULL;
    }
    meta_cur = m;
    meta_end = m + block;
  }
  void *p = meta_cur;
  meta_cur += size;
  meta_lock_drop();
  return p; /* fresh anonymous memory is zero */
}

void hl_heap_fork_prepare(void) { meta_lock_take(); }
void hl_heap_fork_done(void) { meta_lock_drop(); }

hl_heap *hl_heap_list(void) { return __atomic_load_n(&heap_registry, __ATOMIC_ACQUIRE); }

/* Forget every cached site and chain: the heap's next thread starts empty. Entries that
 * are already empty are only read, so the pages of caches a policy never used (the plan's
 * under callsite) stay untouched. */
static void caches_clear(hl_heap *h) {
  for (unsigned i = 0; i < HL_SITE_CACHE_SLOTS; i++)
    if (h->sites[i].ra) h->sites[i].ra = 0;
  for (unsigned i = 0; i < HL_CHAIN_NODES; i++)
    if (h->chain_nodes[i].key) h->chain_nodes[i].key = 0;
  for (unsigned s = 0; s < HL_PLAN_CHAIN_SETS; s++)
    for (unsigned w = 0; w < HL_PLAN_CHAIN_WAYS; w++)
      if (h->plan_chains[s].way[w].ra) h->plan_chains[s].way[w].ra = 0;
  for (unsigned i = 0; i < HL_PLAN_SPEC_SLOTS; i++)
    if (h->plan_spec[i].ra) h->plan_spec[i] = (hl_plan_speculation){0};
  /* 192 KiB: read only under a PreFix plan, so that a thread's exit does not fault in its
   * pages where no PreFix chain was ever cached */
  if (hl_prefix_on)
    for (unsigned i = 0; i < HL_PREFIX_NODES; i++)
      if (h->prefix_nodes[i].key) h->prefix_nodes[i].key = 0;
}

/* Code was unloaded: every thread's cached sites, chains and recorded walks are forgotten,
 * since their unwind rules would step frames of whatever is loaded there next off the
 * stack. Only the keys are cleared, so a thread filling or reading an entry meanwhile
 * sees a whole entry or an empty one. */
void hl_heaps_forget_code(void) {
  for (hl_heap *h = hl_heap_list(); h != NULL; h = h->next_heap) {
    for (unsigned i = 0; i < HL_SITE_CACHE_SLOTS; i++)
      if (h->sites[i].ra) __atomic_store_n(&h->sites[i].ra, 0, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < HL_CHAIN_NODES; i++)
      if (h->chain_nodes[i].key) __atomic_store_n(&h->chain_nodes[i].key, 0, __ATOMIC_RELAXED);
    for (unsigned s = 0; s < HL_PLAN_CHAIN_SETS; s++)
      for (unsigned w = 0; w < HL_PLAN_CHAIN_WAYS; w++)
        if (h->plan_chains[s].way[w].ra) __atomic_store_n(&h->plan_chains[s].way[w].ra, 0, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < HL_PLAN_SPEC_SLOTS; i++)
      if (h->plan_spec[i].ra) __atomic_store_n(&h->plan_spec[i].ra, 0, __ATOMIC_RELAXED);
    if (hl_prefix_on)
      for (unsigned i = 0; i < HL_PREFIX_NODES; i++)
        if (h->prefix_nodes[i].key) __atomic_store_n(&h->prefix_nodes[i].key, 0, __ATOMIC_RELAXED);
  }
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* pthread key destructor: the thread is exiting. */
static void heap_thread_exit(void *arg) {
  hl_heap *heap = arg;
  tl_heap = HEAP_DEAD; /* allocations from later destructors are forwarded */
  for (hl_tpool *tp = heap->tpool_list; tp; tp = tp->next_in_heap) hl_tpool_retire(tp);
  caches_clear(heap);
  /* Every chunk of the heap now has owner NULL (released or abandoned). The lock orders
   * those stores before the next thread takes the heap, so that thread never sees a chunk
   * of ours as its own. */
  meta_lock_take();
  heap->next_free = free_heaps;
  free_heaps = heap;
  meta_lock_drop();
}

void hl_heap_init(void) {
  heap_key_ok = pthread_key_create(&heap_key, heap_thread_exit) == 0;
  mprotect(&empty_heap, sizeof empty_heap, PROT_READ);
  mprotect(&dead_heap, sizeof dead_heap, PROT_READ);
}

static HL_NOINLINE hl_heap *heap_create(void) {
  if (tl_heap_busy || !heap_key_ok) return NULL;
  tl_heap_busy = 1;
  meta_lock_take();
  hl_heap *heap = free_heaps;
  if (heap) free_heaps = heap->next_free;
  meta_lock_drop();
  if (heap == NULL && (heap = hl_meta_alloc(sizeof(hl_heap))) != NULL) {
    meta_lock_take();
    heap->next_heap = heap_registry;
    __atomic_store_n(&heap_registry, heap, __ATOMIC_RELEASE);
    meta_lock_drop();
  }
  if (heap) {
    heap->next_free = NULL;
    if (pthread_setspecific(heap_key, heap) == 0) { /* may allocate: forwarded while busy */
      tl_heap = heap;
    } else { /* no destructor would hand it back: keep it for another thread */
      meta_lock_take();
      heap->next_free = free_heaps;
      free_heaps = heap;
      meta_lock_drop();
      heap = NULL;
    }
  }
  tl_heap_busy = 0;
  return heap;
}

hl_heap *hl_heap_get(void) {
  hl_heap *h = tl_heap;
  if (HL_LIKELY(h != HEAP_EMPTY && h != HEAP_DEAD)) return h;
  if (h == HEAP_DEAD) return NULL;
  return heap_create();
}

hl_tpool *hl_tpool_create(hl_heap *heap, uint16_t pool) {
  hl_tpool *tp = hl_meta_alloc(sizeof(hl_tpool));
  if (tp == NULL) return NULL;
  tp->heap = heap;
  tp->pool = pool;
  tp->classes = hl_pool_classes(pool);
  hl_tpool_direct_init(tp);
  tp->counting = hl_state.opt.stats | (hl_state.opt.stats_json[0] != 0);
  /* a plan's group keeps HALO's allocation order across sizes unless the plan marks it
   * `spans` (docs/planning.md, "a group's sizes interleaved or apart") */
  uint16_t group = pool == HL_POOL_CC ? 0 : hl_pool_group(pool);
  tp->interleave = group != 0 && !hl_plan_group_spans(group);
  tp->line_off = (uint8_t)hl_pool_line_off(pool);
  /* a plan's group takes objects up to the plan's limit; site pools up to theirs */
  tp->max_size = pool == HL_POOL_CC       ? HL_MAX_CLASS_SIZE
                 : hl_pool_group(pool) != 0 ? hl_plan_group_max_size()
                                            : hl_state.opt.site_max_size;
  uint32_t dmax = tp->max_size < hl_state.opt.max_size ? tp->max_size : hl_state.opt.max_size;
  tp->direct_max = tp->counting ? 0 : dmax < 256 ? dmax : 256;
  tp->next_in_heap = heap->tpool_list; /* only the owner thread reads the list */
  heap->tpool_list = tp;
  __atomic_store_n(&heap->tpools[pool], tp, __ATOMIC_RELEASE);
  return tp;
}
