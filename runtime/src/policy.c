/* Placement policies: which pool, if any, an allocation goes to.
 *
 * callsite: the return address of the allocation call names a context. A context gets
 * its own pool once it has made HEAPLAYOUT_MIN_OBJECTS allocations of at most
 * HEAPLAYOUT_MAX_SIZE bytes (DPA's thresholds): those first ones, and larger objects, are
 * served by the allocator underneath; 0 pools from the first object. This is the classic per-call-site pool baseline. */
#include "internal.h"

typedef struct hl_context {
  _Atomic(uintptr_t) site;  /* return address; 0 = empty slot */
  _Atomic(uint32_t) count;  /* small allocations seen (approximate under races) */
  _Atomic(uint16_t) pool;   /* 0 until pooled */
} hl_context;

#define CONTEXT_SLOTS (1u << HL_CONTEXT_TABLE_BITS)
#define MAX_PROBES 32u

static hl_context contexts[CONTEXT_SLOTS];
static _Atomic(uint32_t) next_pool_id = HL_POOL_FIRST_DYNAMIC;
static _Atomic(uintptr_t) pool_sites[HL_MAX_POOLS];

uint16_t hl_pool_id_new(void) {
  if (atomic_load_explicit(&next_pool_id, memory_order_relaxed) >= HL_MAX_POOLS) return 0;
  uint32_t id = atomic_fetch_add_explicit(&next_pool_id, 1, memory_order_relaxed);
  return id < HL_MAX_POOLS ? (uint16_t)id : 0;
}

uint32_t hl_pool_count(void) {
  uint32_t n = atomic_load_explicit(&next_pool_id, memory_order_relaxed);
  return n < HL_MAX_POOLS ? n : HL_MAX_POOLS;
}

static _Atomic(uint16_t) pool_groups[HL_MAX_POOLS];
uint16_t hl_pool_group(uint16_t pool) { return atomic_load_explicit(&pool_groups[pool], memory_order_relaxed); }
void hl_pool_set_group(uint16_t pool, uint16_t group) {
  atomic_store_explicit(&pool_groups[pool], group, memory_order_relaxed);
}

uintptr_t hl_pool_site(uint16_t pool) { return atomic_load_explicit(&pool_sites[pool], memory_order_relaxed); }
void hl_pool_set_site(uint16_t pool, uintptr_t site) {
  atomic_store_explicit(&pool_sites[pool], site, memory_order_relaxed);
}

static hl_context *context_of(uintptr_t ra) {
  uint32_t i = (uint32_t)((ra * 0x9E3779B97F4A7C15ull) >> (64 - HL_CONTEXT_TABLE_BITS));
  for (uint32_t probe = 0; probe < MAX_PROBES; probe++, i = (i + 1) & (CONTEXT_SLOTS - 1)) {
    uintptr_t s = atomic_load_explicit(&contexts[i].site, memory_order_acquire);
    if (HL_LIKELY(s == ra)) return &contexts[i];
    if (s == 0) {
      uintptr_t empty = 0;
      if (atomic_compare_exchange_strong(&contexts[i].site, &empty, ra) || empty == ra) return &contexts[i];
    }
  }
  return NULL; /* crowded neighbourhood: this site is simply not pooled */
}

static HL_NOINLINE uint16_t context_promote(hl_context *e, uintptr_t ra) {
  uint16_t id = hl_pool_id_new();
  if (id == 0) return 0;
  uint16_t expected = 0;
  if (!atomic_compare_exchange_strong(&e->pool, &expected, id)) return expected; /* another thread won */
  hl_pool_set_site(id, ra);
  return id;
}

uint16_t hl_callsite_pool(uintptr_t ra, size_t size) {
  if (size > hl_state.opt.site_max_size) return 0;
  hl_context *e = context_of(ra);
  if (HL_UNLIKELY(e == NULL)) return 0;
  uint16_t pool = atomic_load_explicit(&e->pool, memory_order_relaxed);
  if (HL_LIKELY(pool != 0)) return pool;
  uint32_t n = atomic_load_explicit(&e->count, memory_order_relaxed) + 1;
  atomic_store_explicit(&e->count, n, memory_order_relaxed);
  if (n <= hl_state.opt.min_objects) return 0;
  return context_promote(e, ra);
}
