/* PreFix (docs/prefix.md): hot objects at fixed places in one region mapped at start.
 *
 * A plan's prefix records name sites (allocation contexts, identified by prefix_select
 * rules as select's are), a counter per site (or shared by several), and slots: counter
 * value -> (site, offset, size). Every allocation at a PreFix site reaches its counter
 * (so these sites never get a site-cache entry: interpose.c sends them to the full path
 * each time); the value's slot is taken when it is this site's, large enough and free.
 * Anything else goes to the pools or the allocator underneath, so a run that differs from
 * the profile loses placement, never correctness; a counter refused too often is cut off
 * for the rest of the run.
 *
 * Threads. A counter belongs to the first thread that counts on it (claimed once by a CAS);
 * only that thread ever counts on it and takes its slots, so it does both with plain loads
 * and stores, no read-modify-write (which were PreFix's whole loss on prefix_recycle:
 * docs/results.md §12). Another thread's allocations at the counter's sites are neither
 * counted nor placed: they go on as a refused allocation does. The planner places only
 * contexts that allocated from one thread in the profile, whose numbering is that thread's
 * anyway (docs/prefix.md, "Threads").
 *
 * A slot's state is written by two parties: the owner turns it FREE -> TAKEN, and whoever
 * frees the object (any thread) turns it TAKEN -> FREE. These never race in a correct
 * program: the owner writes TAKEN only after reading FREE, i.e. after the object's free,
 * and then nobody holds the slot until the owner returns it; a free comes only after the
 * object was handed to the freeing thread, an ordering the program made itself (lock,
 * join, release/acquire), which also makes that thread's load see TAKEN. The free's store
 * is a release and the owner's load of FREE an acquire, so every access of the freeing
 * thread to the old object happens before the owner's next use of the slot. What is lost
 * against the exchange used before: two frees of one object that race each other (both
 * threads load TAKEN) are not caught; a double free in one thread, or in two threads that
 * are ordered, still is. (A signal handler allocating at a site while its thread is inside
 * place() could now take a slot twice: malloc is not async-signal-safe, and glibc's tcache
 * has the same window.)
 *
 * Region pointers are freed through the allocator underneath's entry points, which this
 * file wraps when a region exists (hl_next_alloc.free, realloc, malloc_usable_size, the sized
 * deletes): the range test costs nothing on our pools' frees and nothing at all without a
 * region. */
#define _GNU_SOURCE
#include <string.h>
#include <sys/mman.h>

#include "fastpath.h"
#include "internal.h"
#include "plan_parse.h"

/* Divergence cut-off: HL_PREFIX_CUT_MIN and HL_PREFIX_CUT_SHARE (tunables.h). */

enum { SLOT_FREE = 0, SLOT_TAKEN = 1 };

typedef struct px_counter {
  /* all written by the owner only (atomic for the other threads' reads) */
  _Atomic(uint64_t) next;     /* the next allocation's value */
  _Atomic(uint64_t) owner;    /* 0: not claimed yet; else the px_self of the one thread that counts */
  _Atomic(uint32_t) tried;    /* values that had a slot */
  _Atomic(uint32_t) refused;  /* of those, refused for site or size */
  _Atomic(uint8_t) cut;
  uint8_t kind, nextra;
  uint32_t start, stride, count, first_slot, first_range, nranges;
  uint32_t next_range; /* fixed: the owner's first range not below its values yet (rank_of) */
  uint32_t extra[HL_PLAN_MAX_EXTRAS];
  uint64_t last; /* its largest value with a slot; UINT64_MAX for recycle */
  uint64_t mask; /* recycle: count - 1 when count is a power of two (no division), else 0 */
} px_counter;

/* frames: absolute; 0: a module not loaded (matches nothing) */
typedef hl_frame_rule px_rule;
_Static_assert(HL_PLAN_MAX_RULE_FRAMES <= HL_WALK_MAX_FRAMES, "a walk holds a rule's frames");

typedef struct px_first {
  uintptr_t pc;          /* 0: empty */
  const px_rule *rules;  /* with this first frame, in frame order (hl_frame_rule_before) */
  uint32_t count;
  uint8_t depth;
  /* hl_prefix_first_frame's last answer: (px.live_gen + 1) << 1 | answer, 0 none. The scan
   * of a wrapper's rules (lua5.4's allocator: 148) cost 8% of a prefix:hot run; the answer
   * changes only when a counter stops placing, which bumps the generation. */
  _Atomic(uint64_t) live_memo;
} px_first;

static struct {
  uintptr_t base;
  size_t bytes;
  uint32_t nslots, ncounters, nsites;
  uint32_t *offset, *size, *requested;
  uint16_t *site;
  _Atomic(uint8_t) *state;
  uint32_t *owner;      /* per align-sized granule of the region: 1 + the slot covering it, 0 none */
  uint32_t align_shift;
  px_counter *counters;
  uint16_t *site_counter;
  uint32_t *range_lo, *range_hi, *range_rank;
  px_first *firsts;
  uint32_t first_mask;
  _Atomic(uint32_t) live; /* counters neither past their last value nor cut off */
  _Atomic(uint64_t) live_gen; /* bumped when a counter stops placing (px_first.live_memo) */
  /* statistics */
  _Atomic(uint64_t) taken, refused_site, refused_size, refused_busy, refused_thread, cut, freed, moved, reallocs;
  _Atomic(uint64_t) walks; /* identifications the thread's chain cache did not answer */
} px;

/* This thread's id for counter ownership: 64 bits, so never reused (two owners of one
 * counter would take one slot twice). PX_NOBODY until the thread first claims: no
 * counter's owner is ever that, so the owner test alone sends a new thread to claim(). */
#define PX_NOBODY UINT64_MAX
static _Atomic(uint64_t) px_threads;
static __thread uint64_t px_self __attribute__((tls_model("initial-exec"))) = PX_NOBODY;

int hl_prefix_on;

static struct {
  void (*free)(void *);
  void *(*realloc)(void *, size_t);
  void *(*malloc)(size_t);
  size_t (*usable)(void *);
  void (*sized_delete)(void *, size_t);
  void (*sized_delete_array)(void *, size_t);
} below;

static inline int in_region(const void *p) { return (uintptr_t)p - px.base < px.bytes; }
int hl_prefix_owns(const void *p) { return in_region(p); }

/* Statistics are counted only when they will be reported: a shared atomic add per
 * allocation and free would bounce its line between the threads of a placed site. */
static inline void stat_add(_Atomic(uint64_t) *what) {
  if (HL_UNLIKELY(hl_state.counting)) atomic_fetch_add_explicit(what, 1, memory_order_relaxed);
}

/* ---- identification ---- */

static uint32_t pc_hash(uintptr_t pc) { return (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 32); }

static const px_first *first_of(uintptr_t pc) {
  if (px.firsts == NULL) return NULL;
  for (uint32_t h = pc_hash(pc) & px.first_mask;; h = (h + 1) & px.first_mask) {
    const px_first *e = &px.firsts[h];
    if (e->pc == pc) return e;
    if (e->pc == 0) return NULL;
  }
}

/* pc begins a rule of a PreFix site whose counter may still place objects: its allocations
 * must keep taking the full path. A counter past its last value, or cut off, places nothing
 * more, so its sites may then be cached like any other (the fast path comes back). */
int hl_prefix_live(void) { return atomic_load_explicit(&px.live, memory_order_relaxed) != 0; }

int hl_prefix_first_frame(uintptr_t pc) {
  px_first *e = (px_first *)first_of(pc);
  if (e == NULL) return 0;
  /* the generation before the scan: a counter that stops meanwhile makes the memo stale */
  uint64_t gen = atomic_load_explicit(&px.live_gen, memory_order_acquire) + 1;
  uint64_t memo = atomic_load_explicit(&e->live_memo, memory_order_relaxed);
  if (memo >> 1 == gen) return (int)(memo & 1);
  int live = 0;
  for (uint32_t i = 0; i < e->count && !live; i++) {
    if (e->rules[i].site == 0) continue;
    const px_counter *c = &px.counters[px.site_counter[e->rules[i].site]];
    live = !atomic_load_explicit(&c->cut, memory_order_relaxed) &&
           atomic_load_explicit(&c->next, memory_order_relaxed) <= c->last;
  }
  atomic_store_explicit(&e->live_memo, gen << 1 | (uint64_t)live, memory_order_relaxed);
  return live;
}

/* Return addresses this thread identified by themselves alone (depth-1 entries), direct
 * mapped: recycled sites allocate from a few return addresses over and over, often in turn
 * (prefix_recycle's two), and the table's hash probe cost about 50 instructions. */
#define SITE_CACHE 8u
static __thread struct {
  uintptr_t pc;
  uint16_t site;
} site_cache[SITE_CACHE] __attribute__((tls_model("initial-exec")));
static inline uint32_t site_slot(uintptr_t pc) { return (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 61); }

/* Chains this thread identified (internal.h, hl_prefix_node), as the plan's chain cache
 * keeps its walks (fastpath.h, hl_chain_try): from the allocation's return address, a node
 * per step up to the one that decided, each with the unwind rule for the next step, the
 * last with the site. Which frames a walk collects, and so the site, is a function of the
 * return addresses it steps through (hl_trace), so a chain met again is answered by
 * stepping recorded rules and comparing keys: no rule lookup, no search for repeats, no
 * rule matching. A hash collision could only give an object another site's slot, which the
 * site, size and ownership checks keep safe. Walks longer than HL_WALK_MAX_FRAMES steps
 * (through recursion or skipped modules) are not kept: they walk each time. */
static inline const hl_prefix_node *node_find(const hl_heap *h, uint64_t slot, uint64_t key) {
  uint32_t i = (uint32_t)(slot >> (64 - HL_PREFIX_NODE_BITS));
  if (h->prefix_nodes[i].key == key) return &h->prefix_nodes[i];
  if (h->prefix_nodes[i ^ 1].key == key) return &h->prefix_nodes[i ^ 1];
  return NULL;
}

/* Two ways per slot, the newer node first: with one, two chains of a program that took one
 * node went on evicting each other (tidy: 9% of its identifications walked). */
static hl_prefix_node *node_put(hl_heap *h, uint64_t slot, uint64_t key) {
  uint32_t i = (uint32_t)(slot >> (64 - HL_PREFIX_NODE_BITS));
  hl_prefix_node *n = &h->prefix_nodes[i];
  if (n->key != key && h->prefix_nodes[i ^ 1].key != key) h->prefix_nodes[i ^ 1] = *n;
  else if (n->key != key) n = &h->prefix_nodes[i ^ 1];
  n->key = key;
  return n;
}

static void remember(hl_heap *h, uintptr_t pc, const hl_trace *tr, unsigned steps, uint16_t site) {
  uint64_t key = hl_chain_key(0, pc), slot = hl_chain_slot(0, pc);
  for (unsigned k = 0;; k++) {
    hl_prefix_node *n = node_put(h, slot, key);
    if (k == steps) {
      n->decided = 1;
      n->site = site;
      return;
    }
    n->decided = 0;
    n->rule = tr->step[k].rule;
    key = hl_chain_key(key, tr->step[k].pc);
    slot = hl_chain_slot(slot, tr->step[k].pc);
  }
}

/* The walk, for a chain not in this thread's cache; it enters the chain when its steps
 * alone decided. The longest matching rule wins, as for select (plan.c, decide). The walk
 * goes only as far as the frames decide: a first frame's rules are in frame order, so the
 * rules that still match the frames so far are one run, narrowed frame by frame, and the
 * walk stops when none of them is longer. It went to the deepest rule's depth every time:
 * lua5.4's allocator function begins rules of up to 12 frames, and walking 12 frames
 * per allocation where 4 decide on average was 281M of the 450M instructions the
 * runtime added to its training run (docs/results.md section 29). */
static HL_NOINLINE uint16_t site_walk(hl_frame f, uint32_t cslot) {
  const px_first *e = first_of(f.pc);
  if (e == NULL && !hl_plan_pc_skipped(f.pc)) return 0;
  if (e != NULL && e->depth == 1) {
    uint16_t site = e->rules[0].site;
    site_cache[cslot].pc = f.pc, site_cache[cslot].site = site;
    return site;
  }
  stat_add(&px.walks);
  /* the thread's scratch trace (a walk allocates nothing, so no plan walk is under way) */
  hl_heap *h = hl_heap_get();
  hl_trace *tr = h != NULL ? &h->walk_trace : NULL;
  if (tr != NULL) tr->nsteps = 0, tr->replayable = 1;
  uintptr_t chain[HL_WALK_MAX_FRAMES];
  hl_walk w;
  hl_walk_start(&w, f, chain, tr);
  uint16_t site = 0;
  int decided = 0;
  if (e == NULL) { /* called from a skipped module: find the program's frame */
    if (!hl_walk_next(&w)) return 0;
    e = first_of(chain[0]);
    if (e == NULL || e->depth == 1) {
      site = e == NULL ? 0 : e->rules[0].site;
      decided = 1;
      goto done;
    }
    hl_walk_start(&w, w.f, chain, tr); /* a walk of its own from there, as the profiler's */
  }
  (void)hl_walk_next(&w); /* frame 0, which the rules do not compare: the table's key */
  uint32_t lo = 0, hi = e->count;
  for (unsigned k = 1;; k++) {
    if (lo < hi && e->rules[lo].nframes == k) site = e->rules[lo++].site; /* exactly frames 0..k-1 */
    if (lo == hi) {
      decided = 1;
      break;
    }
    if (w.n <= k && !hl_walk_next(&w)) break; /* the stack ended: no longer rule can match */
    hl_frame_rules_narrow(e->rules, k, chain[k], &lo, &hi);
  }
done:
  if (decided && tr != NULL && tr->replayable && tr->nsteps > 0 && tr->nsteps <= HL_WALK_MAX_FRAMES)
    remember(h, f.pc, tr, tr->nsteps, site);
  return site;
}

/* The PreFix site of the allocation whose entry point's frame is fp; 0: none. */
static uint16_t site_of(void *const *fp) {
  hl_frame f = hl_caller_frame(fp);
  uint32_t cslot = site_slot(f.pc);
  if (site_cache[cslot].pc == f.pc) return site_cache[cslot].site;
  /* the empty heap of a thread without one has no keys: it misses */
  const hl_heap *h = hl_tl_heap;
  uint64_t key = hl_chain_key(0, f.pc), slot = hl_chain_slot(0, f.pc);
  const hl_prefix_node *n = node_find(h, slot, key);
  if (n != NULL) {
    hl_frame g = f;
    for (;;) {
      if (n->decided) return n->site;
      if (!hl_unwind_step_recorded(&g, &n->rule)) break;
      key = hl_chain_key(key, g.pc);
      slot = hl_chain_slot(slot, g.pc);
      if ((n = node_find(h, slot, key)) == NULL) break;
    }
  }
  return site_walk(f, cslot);
}

/* ---- counter values -> slots ---- */

/* The rank of v among counter c's values (its slot is first_slot + rank), or -1. Called by
 * c's owner only, for its values in rising order. */
static int64_t rank_of(px_counter *c, uint64_t v) {
  switch (c->kind) {
    case HL_COUNTER_ALL:
      return v < c->count ? (int64_t)v : -1;
    case HL_COUNTER_RECYCLE:
      return (int64_t)(c->mask ? v & c->mask : v % c->count);
    case HL_COUNTER_REGULAR: {
      int member = v >= c->start && (v - c->start) % c->stride == 0 && (v - c->start) / c->stride < c->count;
      uint64_t below_prog = v <= c->start ? 0 : (v - c->start + c->stride - 1) / c->stride;
      if (below_prog > c->count) below_prog = c->count;
      uint32_t below_extra = 0;
      for (uint32_t i = 0; i < c->nextra; i++) {
        member |= c->extra[i] == v;
        below_extra += c->extra[i] < v;
      }
      return member ? (int64_t)(below_prog + below_extra) : -1;
    }
    case HL_COUNTER_FIXED: {
      /* The values only rise, so the range holding v, or the next above it, only moves
       * forward: a binary search over a counter's ranges per allocation cost lua5.4's
       * training run 18M instructions (a counter of its allocator has 7,554 ranges). */
      uint32_t r = c->next_range, end = c->first_range + c->nranges;
      while (r < end && px.range_hi[r] < v) r++;
      c->next_range = r;
      return r < end && px.range_lo[r] <= v ? (int64_t)(px.range_rank[r] + (v - px.range_lo[r])) : -1;
    }
    default:
      return -1;
  }
}

/* Reached by the counter's owner only, so its counts and the cut are its own to write. */
static void refuse(px_counter *c, _Atomic(uint64_t) *why) {
  stat_add(why);
  uint32_t r = atomic_load_explicit(&c->refused, memory_order_relaxed) + 1;
  atomic_store_explicit(&c->refused, r, memory_order_relaxed);
  if (r >= HL_PREFIX_CUT_MIN && (uint64_t)r * HL_PREFIX_CUT_SHARE >= atomic_load_explicit(&c->tried, memory_order_relaxed) &&
      !atomic_load_explicit(&c->cut, memory_order_relaxed)) {
    atomic_store_explicit(&c->cut, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&px.live_gen, 1, memory_order_release);
    atomic_fetch_add_explicit(&px.cut, 1, memory_order_relaxed);
    if (atomic_load_explicit(&c->next, memory_order_relaxed) <= c->last + 1)
      atomic_fetch_sub_explicit(&px.live, 1, memory_order_relaxed);
  }
}

/* The owner test failed: this thread owns c now (it was unclaimed), or it never will. The
 * CAS is paid once per counter; a thread that is not the owner pays a load. */
static HL_NOINLINE int claim(px_counter *c) {
  if (px_self == PX_NOBODY) px_self = atomic_fetch_add_explicit(&px_threads, 1, memory_order_relaxed) + 1;
  uint64_t o = atomic_load_explicit(&c->owner, memory_order_relaxed);
  if (o == 0 && atomic_compare_exchange_strong_explicit(&c->owner, &o, px_self, memory_order_relaxed,
                                                        memory_order_relaxed))
    return 1;
  return o == px_self;
}

static inline int owns(px_counter *c) {
  return HL_LIKELY(atomic_load_explicit(&c->owner, memory_order_relaxed) == px_self) || claim(c);
}

/* The owner's next value on c. */
static inline uint64_t count(px_counter *c) {
  uint64_t v = atomic_load_explicit(&c->next, memory_order_relaxed);
  atomic_store_explicit(&c->next, v + 1, memory_order_relaxed);
  if (HL_UNLIKELY(v == c->last)) atomic_fetch_add_explicit(&px.live_gen, 1, memory_order_release); /* its last value */
  if (HL_UNLIKELY(v > c->last) && v == c->last + 1 && !atomic_load_explicit(&c->cut, memory_order_relaxed))
    atomic_fetch_sub_explicit(&px.live, 1, memory_order_relaxed); /* past its last value, once */
  return v;
}

/* The return address whose allocation hl_prefix_try counted without placing it, so that the
 * full path it goes on to does not count it again (0: none). Only allocations at that same
 * return address could see a stale value, and each of them passes hl_prefix_try first,
 * which resets it. */
static __thread uintptr_t counted_ra __attribute__((tls_model("initial-exec")));

/* The allocation's value on site's counter, and its slot when it has one. */
static void *place(uint16_t site, size_t size) {
  px_counter *c = &px.counters[px.site_counter[site]];
  if (!owns(c)) {
    if (HL_UNLIKELY(hl_state.counting) && !atomic_load_explicit(&c->cut, memory_order_relaxed) &&
        atomic_load_explicit(&c->next, memory_order_relaxed) <= c->last) /* while c may still place */
      stat_add(&px.refused_thread);
    return NULL;
  }
  uint64_t v = count(c);
  if (HL_UNLIKELY(v > c->last)) return NULL;
  if (atomic_load_explicit(&c->cut, memory_order_relaxed)) return NULL;
  int64_t r = rank_of(c, v);
  if (r < 0) return NULL;
  uint32_t s = c->first_slot + (uint32_t)r;
  atomic_store_explicit(&c->tried, atomic_load_explicit(&c->tried, memory_order_relaxed) + 1, memory_order_relaxed);
  if (px.site[s] != site) {
    refuse(c, &px.refused_site);
    return NULL;
  }
  if (size > px.size[s]) {
    refuse(c, &px.refused_size);
    return NULL;
  }
  /* only the owner turns a slot FREE -> TAKEN, so no CAS; acquire pairs with the free's
   * release (the threading argument at the top) */
  if (atomic_load_explicit(&px.state[s], memory_order_acquire) != SLOT_FREE) {
    stat_add(&px.refused_busy);
    return NULL;
  }
  atomic_store_explicit(&px.state[s], SLOT_TAKEN, memory_order_relaxed);
  px.requested[s] = (uint32_t)size;
  stat_add(&px.taken);
  return (void *)(px.base + px.offset[s]);
}

/* Called only while hl_prefix_on: the slot for this allocation, or NULL. */
void *hl_prefix_alloc(size_t size, void *const *fp) {
  if (atomic_load_explicit(&hl_state.policy, memory_order_relaxed) != HL_POLICY_PLAN) return NULL;
  if (HL_UNLIKELY(counted_ra != 0) && counted_ra == hl_caller_frame(fp).pc) {
    counted_ra = 0; /* hl_prefix_try counted it */
    return NULL;
  }
  uint16_t site = site_of(fp);
  if (site == 0) return NULL;
  return place(site, size);
}

/* malloc's PreFix path (interpose.c, malloc_missed), taken before the full path: a return
 * address this thread has identified as a one-frame site (the per-thread cache that site_of
 * fills) is counted and placed here, with no frame to find, no policy dispatch, no rule
 * table probe. A plan by call site (docs/prefix.md) has only such sites. NULL: not placed;
 * the full path then places the object elsewhere (counted_ra tells it the counting is done)
 * or, for a return address not cached, identifies it. */
void *hl_prefix_try(size_t size, uintptr_t ra) {
  counted_ra = 0;
  uint32_t slot = site_slot(ra);
  if (site_cache[slot].pc != ra || site_cache[slot].site == 0) return NULL;
  if (atomic_load_explicit(&hl_state.policy, memory_order_relaxed) != HL_POLICY_PLAN) return NULL;
  void *p = place(site_cache[slot].site, size);
  if (p == NULL) counted_ra = ra;
  return p;
}

/* realloc(p, n) with p and n not 0 made a new object in the profile (the profiler's realloc
 * records one): its site's counter counts it too, although it takes no slot. */
void hl_prefix_count_realloc(void *const *fp) {
  if (atomic_load_explicit(&hl_state.policy, memory_order_relaxed) != HL_POLICY_PLAN) return;
  uint16_t site = site_of(fp);
  if (site == 0) return;
  px_counter *c = &px.counters[px.site_counter[site]];
  if (!owns(c)) return; /* another thread's object: not numbered, as its allocations are not */
  (void)count(c);
  stat_add(&px.reallocs);
}

/* ---- region pointers ---- */

/* The slot that starts at p, or aborts as glibc does for a pointer it never returned. */
static uint32_t slot_at(void *p, const char *func) {
  uintptr_t off = (uintptr_t)p - px.base;
  uint32_t s = px.owner[off >> px.align_shift];
  if (s == 0 || px.offset[s - 1] != off) hl_free_invalid(p, 0, func);
  return s - 1;
}

/* Any thread. The load sees TAKEN whenever the program handed the object over properly
 * (that ordering includes the owner's store), so FREE here is a double free; two frees that
 * race each other can both pass it (the top of this file). */
static void slot_free(void *p, const char *func) {
  uint32_t s = slot_at(p, func);
  if (atomic_load_explicit(&px.state[s], memory_order_relaxed) != SLOT_TAKEN)
    hl_free_invalid(p, HL_SIZEMAP_FREE, func); /* "double free detected" */
  atomic_store_explicit(&px.state[s], SLOT_FREE, memory_order_release);
  stat_add(&px.freed);
}

static void px_free(void *p) {
  if (in_region(p)) slot_free(p, "free");
  else below.free(p);
}

static void px_sized_delete(void *p, size_t n) {
  if (in_region(p)) slot_free(p, "free");
  else below.sized_delete(p, n);
}

static void px_sized_delete_array(void *p, size_t n) {
  if (in_region(p)) slot_free(p, "free");
  else below.sized_delete_array(p, n);
}

static size_t px_usable(void *p) {
  if (in_region(p)) {
    uint32_t s = slot_at(p, "malloc_usable_size");
    if (atomic_load_explicit(&px.state[s], memory_order_relaxed) != SLOT_TAKEN)
      hl_free_invalid(p, HL_SIZEMAP_FREE, "malloc_usable_size");
    return px.size[s];
  }
  return below.usable(p);
}

/* In place while it fits (Figure 6), else it moves to the allocator underneath. */
static void *px_realloc(void *p, size_t n) {
  if (!in_region(p)) return below.realloc(p, n);
  uint32_t s = slot_at(p, "realloc");
  if (atomic_load_explicit(&px.state[s], memory_order_relaxed) != SLOT_TAKEN) hl_free_invalid(p, HL_SIZEMAP_FREE, "realloc");
  if (n == 0) { /* whatever the allocator underneath does with realloc(q, 0) */
    slot_free(p, "realloc");
    return below.realloc(below.malloc(1), 0);
  }
  if (n <= px.size[s]) {
    px.requested[s] = (uint32_t)n;
    return p;
  }
  void *q = below.malloc(n);
  if (q == NULL) return NULL; /* p stays valid, as realloc promises */
  memcpy(q, p, px.requested[s]);
  slot_free(p, "realloc");
  stat_add(&px.moved);
  return q;
}

/* ---- loading ---- */

_Static_assert(sizeof(px_rule) <= HL_PLAN_SORT_MAX_ELEMENT, "rules fit hl_plan_sort's buffer");

int hl_prefix_load(const hl_plan_spec *spec, const hl_plan_rule_spec *prules, const hl_plan_slot_spec *slots,
                   uint32_t *owner, const uintptr_t *bias, const uint8_t *loaded) {
  if (spec->region_bytes == 0) return 1;
  uint32_t n = spec->nslots, nc = spec->ncounters;
  void *region = mmap(NULL, spec->region_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
  if (region == MAP_FAILED) return 0;
  if (hl_state.opt.huge_pages) madvise(region, spec->region_bytes, MADV_HUGEPAGE); /* as the pools' range (chunk.c) */
  px.offset = hl_meta_alloc(sizeof(uint32_t) * (n + 1));
  px.size = hl_meta_alloc(sizeof(uint32_t) * (n + 1));
  px.requested = hl_meta_alloc(sizeof(uint32_t) * (n + 1));
  px.site = hl_meta_alloc(sizeof(uint16_t) * (n + 1));
  px.state = hl_meta_alloc(n + 1);
  px.align_shift = (uint32_t)__builtin_ctz(spec->region_align);
  px.owner = owner;
  px.counters = hl_meta_alloc(sizeof(px_counter) * (nc + 1));
  px.site_counter = hl_meta_alloc(sizeof(uint16_t) * (spec->nsites + 1));
  px.range_lo = hl_meta_alloc(sizeof(uint32_t) * (spec->nranges + 1));
  px.range_hi = hl_meta_alloc(sizeof(uint32_t) * (spec->nranges + 1));
  px.range_rank = hl_meta_alloc(sizeof(uint32_t) * (spec->nranges + 1));
  if (!px.offset || !px.size || !px.requested || !px.site || !px.state || !px.counters ||
      !px.site_counter || !px.range_lo || !px.range_hi || !px.range_rank)
    return 0;
  for (uint32_t k = 0; k <= nc; k++) px.counters[k].first_slot = UINT32_MAX;
  for (uint32_t i = 0; i < n; i++) { /* file order is (counter, value) order */
    px.offset[i] = slots[i].offset;
    px.size[i] = slots[i].size;
    px.site[i] = slots[i].site;
    px_counter *c = &px.counters[slots[i].counter];
    if (i < c->first_slot) c->first_slot = i;
  }
  for (uint32_t k = 1; k <= nc; k++) {
    const hl_plan_counter_spec *cs = &spec->counters[k];
    px_counter *c = &px.counters[k];
    c->kind = cs->kind;
    c->nextra = cs->nextra;
    c->start = cs->start;
    c->stride = cs->stride ? cs->stride : 1;
    c->count = cs->count;
    memcpy(c->extra, cs->extra, sizeof c->extra);
    c->mask = cs->kind == HL_COUNTER_RECYCLE && cs->count > 1 && (cs->count & (cs->count - 1)) == 0 ? cs->count - 1 : 0;
    c->last = cs->kind == HL_COUNTER_RECYCLE ? UINT64_MAX
              : cs->kind == HL_COUNTER_ALL   ? (uint64_t)cs->count - 1
              : cs->kind == HL_COUNTER_REGULAR ? (uint64_t)cs->start + (uint64_t)cs->stride * (cs->count - 1)
                                               : spec->range_hi[cs->first_range + cs->count - 1];
    if (cs->kind == HL_COUNTER_REGULAR && cs->nextra && cs->extra[cs->nextra - 1] > c->last)
      c->last = cs->extra[cs->nextra - 1];
    if (cs->kind == HL_COUNTER_FIXED) {
      c->first_range = c->next_range = cs->first_range;
      c->nranges = cs->count;
      uint32_t rank = 0;
      for (uint32_t r = cs->first_range; r < cs->first_range + cs->count; r++) {
        px.range_rank[r] = rank;
        rank += spec->range_hi[r] - spec->range_lo[r] + 1;
      }
    }
  }
  memcpy(px.range_lo, spec->range_lo, sizeof(uint32_t) * spec->nranges);
  memcpy(px.range_hi, spec->range_hi, sizeof(uint32_t) * spec->nranges);
  memcpy(px.site_counter, spec->site_counter, sizeof(uint16_t) * (spec->nsites + 1));

  /* the rules whose first frame is in a module loaded now; frames further out in a module
   * not loaded match nothing (PreFix sites of modules loaded later are not placed) */
  uint32_t nr = 0;
  for (uint32_t i = 0; i < spec->nprules; i++) nr += loaded[hl_plan_frame_module(prules[i].frames[0])];
  px_rule *rules = hl_meta_alloc(sizeof(px_rule) * (nr + 1));
  uint32_t cap = 16;
  while (cap < 2 * nr) cap <<= 1;
  px_first *firsts = hl_meta_alloc(sizeof(px_first) * cap);
  if (rules == NULL || firsts == NULL) return 0;
  uint32_t k = 0;
  for (uint32_t i = 0; i < spec->nprules; i++) {
    if (!loaded[hl_plan_frame_module(prules[i].frames[0])]) continue;
    px_rule *r = &rules[k++];
    r->site = prules[i].group;
    r->nframes = prules[i].nframes;
    for (unsigned f = 0; f < r->nframes; f++) {
      uint32_t m = hl_plan_frame_module(prules[i].frames[f]);
      r->frames[f] = loaded[m] ? bias[m] + (uintptr_t)hl_plan_frame_offset(prules[i].frames[f]) : 0;
    }
  }
  hl_plan_sort(rules, nr, sizeof rules[0], hl_frame_rule_before);
  for (uint32_t i = 0; i < nr;) {
    uint32_t j = i;
    uint8_t depth = 0;
    for (; j < nr && rules[j].frames[0] == rules[i].frames[0]; j++)
      if (rules[j].nframes > depth) depth = rules[j].nframes;
    uint32_t h = pc_hash(rules[i].frames[0]) & (cap - 1);
    while (firsts[h].pc) h = (h + 1) & (cap - 1);
    firsts[h] = (px_first){rules[i].frames[0], &rules[i], j - i, depth, 0};
    i = j;
  }
  px.firsts = firsts;
  px.first_mask = cap - 1;
  atomic_store_explicit(&px.live, nc, memory_order_relaxed);
  px.nslots = n;
  px.ncounters = nc;
  px.nsites = spec->nsites;
  px.base = (uintptr_t)region;
  px.bytes = spec->region_bytes;

  /* region pointers come back through the allocator underneath's entry points */
  below.free = hl_next_alloc.free;
  below.realloc = hl_next_alloc.realloc;
  below.malloc = hl_next_alloc.malloc;
  below.usable = hl_next_alloc.malloc_usable_size;
  below.sized_delete = hl_next_alloc.sized_delete;
  below.sized_delete_array = hl_next_alloc.sized_delete_array;
  hl_next_alloc.free = px_free;
  hl_next_alloc.realloc = px_realloc;
  if (below.usable) hl_next_alloc.malloc_usable_size = px_usable;
  if (below.sized_delete) hl_next_alloc.sized_delete = px_sized_delete;
  if (below.sized_delete_array) hl_next_alloc.sized_delete_array = px_sized_delete_array;
  /* every allocation at a PreFix site must reach the full path, whatever its size */
  hl_state.opt.max_size = UINT32_MAX;
  hl_prefix_on = 1;
  return 1;
}

void hl_prefix_stats(hl_prefix_stats_t *out) {
  out->region_bytes = px.bytes;
  out->slots = px.nslots;
  out->taken = atomic_load(&px.taken);
  out->refused_site = atomic_load(&px.refused_site);
  out->refused_size = atomic_load(&px.refused_size);
  out->refused_busy = atomic_load(&px.refused_busy);
  out->refused_thread = atomic_load(&px.refused_thread);
  out->cut = atomic_load(&px.cut);
  out->freed = atomic_load(&px.freed);
  out->moved = atomic_load(&px.moved);
  out->reallocs = atomic_load(&px.reallocs);
  out->walks = atomic_load(&px.walks);
}
