/* Adaptive partial call chains (DPA 3.1) and the compound table (DPA 4, figure 5b).
 *
 * An allocation's APCC starts with its return address; while the function holding the
 * last return address is a wrapper (dpa_wrapper.c, a verdict cached per address), the
 * runtime's cached unwinder steps one frame further, up to HL_DPA_MAX_CHAIN frames. The
 * rules used for each step are kept with the chain so that the policy can enter it into
 * the fast path's per-thread chain cache (fastpath.h, hl_chain_try), which is DPA's short
 * PCC table: there a repeated chain costs one unwind step and one compare per frame.
 *
 * The compound table maps a chain to its object group: open addressing by the chain's
 * hash, the chain itself stored for an exact compare, entries published with one release
 * store (lookups take no lock; inserts take a spin lock, once per chain). */
#include <string.h>

#include "dpa.h"
#include "fastpath.h"

void hl_dpa_chain_of(void *const *fp, dpa_chain *c) {
  hl_frame f = hl_caller_frame(fp);
  c->len = 0;
  for (;;) {
    c->pc[c->len] = f.pc;
    hl_unwind_rule(f.pc, &c->rule[c->len]);
    c->len++;
    if (c->len == HL_DPA_MAX_CHAIN || hl_dpa_verdict(f.pc) != DPA_V_WRAPPER) return;
    hl_frame next = f;
    if (!hl_unwind_step_by(&next, &c->rule[c->len - 1])) return;
    f = next;
  }
}

#define CHAIN_SLOTS (1u << HL_DPA_CHAIN_BITS)
typedef struct chain_entry {
  _Atomic(uint64_t) key; /* the chain's hash | 1; 0 empty; published last */
  uint32_t group;
  uint8_t len;
  uintptr_t pc[HL_DPA_MAX_CHAIN];
} chain_entry;
static chain_entry chains[CHAIN_SLOTS];
static atomic_flag chains_lock = ATOMIC_FLAG_INIT;
static _Atomic(uint64_t) chains_by_len[HL_DPA_MAX_CHAIN + 1];

static uint64_t chain_hash(const dpa_chain *c) {
  uint64_t k = c->pc[0];
  for (unsigned i = 1; i < c->len; i++) k = hl_chain_key(k, c->pc[i]);
  k ^= (uint64_t)c->len << 56;
  return (k * 0x9E3779B97F4A7C15ull) | 1;
}

static int same_chain(const chain_entry *e, const dpa_chain *c) {
  if (e->len != c->len) return 0;
  for (unsigned i = 0; i < c->len; i++)
    if (e->pc[i] != c->pc[i]) return 0;
  return 1;
}

uint32_t hl_dpa_chain_group(const dpa_chain *c, size_t size) {
  uint64_t key = chain_hash(c);
  uint32_t i = (uint32_t)(key >> (64 - HL_DPA_CHAIN_BITS));
  for (unsigned probe = 0; probe < 64; probe++) {
    chain_entry *e = &chains[(i + probe) & (CHAIN_SLOTS - 1)];
    uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
    if (k == key && same_chain(e, c)) return e->group;
    if (k == 0) break;
  }
  /* a new chain: a new group (DPA: a new heap node in the shape graph) */
  while (atomic_flag_test_and_set_explicit(&chains_lock, memory_order_acquire)) {
  }
  uint32_t group = 0;
  for (unsigned probe = 0; probe < 64; probe++) {
    chain_entry *e = &chains[(i + probe) & (CHAIN_SLOTS - 1)];
    uint64_t k = atomic_load_explicit(&e->key, memory_order_relaxed);
    if (k == key && same_chain(e, c)) {
      group = e->group; /* another thread made it meanwhile */
      break;
    }
    if (k != 0) continue;
    group = hl_dpa_group_new(size > DPA_SIZE_MIXED - 1 ? DPA_SIZE_MIXED : (uint32_t)size, c->len, c->pc[c->len - 1]);
    if (group == 0) break;
    e->group = group;
    e->len = c->len;
    memcpy(e->pc, c->pc, sizeof e->pc[0] * c->len);
    atomic_store_explicit(&e->key, key, memory_order_release);
    atomic_fetch_add_explicit(&chains_by_len[c->len], 1, memory_order_relaxed);
    break;
  }
  atomic_flag_clear_explicit(&chains_lock, memory_order_release);
  return group;
}

void hl_dpa_chains_fork(int take) {
  if (take)
    while (atomic_flag_test_and_set_explicit(&chains_lock, memory_order_acquire)) {
    }
  else
    atomic_flag_clear_explicit(&chains_lock, memory_order_release);
}

void hl_dpa_chain_lengths(uint64_t out[HL_DPA_MAX_CHAIN + 1]) {
  for (unsigned i = 0; i <= HL_DPA_MAX_CHAIN; i++) out[i] = atomic_load_explicit(&chains_by_len[i], memory_order_relaxed);
}
