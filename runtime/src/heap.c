/* Per-thread heaps: each thread allocates from its own thread-pools without locks.
 *
 * A heap is created on a thread's first pooled allocation and registered (for
 * statistics); it is never freed, because other threads may still read a chunk's owner
 * after the thread has gone. When the thread exits, its empty chunks are released and the
 * others are parked for adoption by another thread of the same pool. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

__thread hl_heap *hl_tl_heap __attribute__((tls_model("initial-exec")));
#define tl_heap hl_tl_heap
static __thread int tl_heap_busy __attribute__((tls_model("initial-exec")));
static pthread_key_t heap_key;
static int heap_key_ok;

static atomic_flag meta_lock = ATOMIC_FLAG_INIT;
static char *meta_cur, *meta_end;
static hl_heap *heap_registry;

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

/* pthread key destructor: the thread is exiting. */
static void heap_thread_exit(void *arg) {
  hl_heap *heap = arg;
  tl_heap = HL_HEAP_DEAD; /* allocations from later destructors are forwarded */
  hl_site_cache_clear();
  for (unsigned i = 0; i < HL_MAX_POOLS; i++)
    if (heap->tpools[i]) hl_tpool_retire(heap->tpools[i]);
}

void hl_heap_init(void) {
  heap_key_ok = pthread_key_create(&heap_key, heap_thread_exit) == 0;
}

static HL_NOINLINE hl_heap *heap_create(void) {
  if (tl_heap_busy || !heap_key_ok) return NULL;
  tl_heap_busy = 1;
  hl_heap *heap = hl_meta_alloc(sizeof(hl_heap));
  if (heap) {
    meta_lock_take();
    heap->next_heap = heap_registry;
    __atomic_store_n(&heap_registry, heap, __ATOMIC_RELEASE);
    meta_lock_drop();
    tl_heap = heap;
    pthread_setspecific(heap_key, heap); /* may allocate: forwarded while busy */
  }
  tl_heap_busy = 0;
  return heap;
}

hl_heap *hl_heap_get(void) {
  hl_heap *h = tl_heap;
  if (HL_LIKELY(h != NULL && h != HL_HEAP_DEAD)) return h;
  if (h == HL_HEAP_DEAD) return NULL;
  return heap_create();
}

hl_tpool *hl_tpool_create(hl_heap *heap, uint16_t pool) {
  hl_tpool *tp = hl_meta_alloc(sizeof(hl_tpool));
  if (tp == NULL) return NULL;
  tp->heap = heap;
  tp->pool = pool;
  tp->classes = hl_pool_classes(pool);
  /* a plan's group takes objects up to the plan's limit; site pools up to theirs */
  tp->max_size = pool == HL_POOL_CC       ? HL_MAX_CLASS_SIZE
                 : hl_pool_group(pool) != 0 ? hl_plan_group_max_size()
                                            : hl_state.opt.site_max_size;
  __atomic_store_n(&heap->tpools[pool], tp, __ATOMIC_RELEASE);
  return tp;
}
