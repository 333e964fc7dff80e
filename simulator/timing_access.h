/* hlsim core timing, the part run on every access (see timing.h for the model): the state and
 * hs_timing_access / hs_timing_prefetch, inline so that the model's per-access path (model.c)
 * folds them in. As calls into timing.c they cost about 7% of a --hw run (treeadd).
 * Times are in 1/100 cycle. */
#ifndef HLSIM_TIMING_ACCESS_H
#define HLSIM_TIMING_ACCESS_H

#include "timing.h"
#include "tunables.h"

#define MAX_MSHR 64
/* left to itself the compiler keeps hs_timing_access a call: inlined, the model's L1-hit path
 * drops the branches on its constant arguments */
#define HS_ALWAYS_INLINE inline __attribute__((always_inline))

typedef struct {
  hs_tu64 instr, done;
} pending;

typedef struct {
  hs_tu64 key, ready; /* value (or line) and when it is available */
} stamp;

struct hs_timing {
  hs_timing_cfg cfg;
  hs_timing_stats st;
  hs_tu64 cpi;             /* 1/100 cycle per instruction */
  pending fifo[HS_FIFO];   /* L1 load misses in program order, not yet retired */
  unsigned head, n;
  hs_tu64 mshr[MAX_MSHR];  /* completion time of each fill buffer's miss */
  stamp vals[HS_DEP_TABLE]; /* late loaded values, by their 64-byte line */
  stamp lines[HS_LINE_TABLE]; /* line fills, by line */
  hs_tu64 pfq[HS_PF_QUEUE]; /* completion time of each prefetch in flight */
  hs_tu64 last_start;      /* when the last access started: the time its prefetches issue */
  hs_tu64 last_done;       /* the latest completion seen */
  hs_tu64 vals_max, lines_max; /* the latest ready time in each table: below the dispatch time, no lookup */
  hs_tu64 last_load_miss;  /* deps=all: when the previous load miss completes */
};

static inline unsigned slot_of(hs_tu64 k, unsigned n) { return (unsigned)((k ^ (k >> 11) ^ (k >> 23)) & (n - 1)); }

/* Misses at instruction j hold instruction j + ROB back until they complete. */
static inline void retire_until(hs_timing *t, hs_tu64 instr) {
  while (t->n) {
    pending *p = &t->fifo[t->head];
    hs_tu64 at;
    if (p->instr + t->cfg.rob <= instr) at = (p->instr + t->cfg.rob) * t->cpi + t->st.stall;
    else if (t->n == HS_FIFO) at = instr * t->cpi + t->st.stall; /* full: the oldest must go now */
    else break;
    if (p->done > at) t->st.stall += p->done - at;
    t->head = (t->head + 1) % HS_FIFO;
    t->n--;
  }
}

/* when the address `addr` is available, if it derives from a late loaded value (else 0) */
static inline hs_tu64 address_ready(hs_timing *t, hs_tu64 addr) {
  hs_tu64 line = addr >> 6;
  unsigned probes = t->cfg.span <= 64 ? 1 : t->cfg.span / 64 + 1;
  for (unsigned k = 0; k < probes && k <= line; k++) {
    const stamp *s = &t->vals[slot_of(line - k, HS_DEP_TABLE)];
    if (s->key <= addr && addr - s->key < t->cfg.span) return s->ready;
  }
  return 0;
}

static inline hs_tu64 line_ready(hs_timing *t, hs_tu64 addr) {
  const stamp *s = &t->lines[slot_of(addr >> 6, HS_LINE_TABLE)];
  return s->key == addr >> 6 ? s->ready : 0;
}

/* One demand access at instruction `instr` that was served after `latency` cycles; `l1_miss`
 * when the L1 missed (it then takes a fill buffer); `value` is what a load of 8 bytes read
 * (0 if unknown or not a load of 8). */
static HS_ALWAYS_INLINE void hs_timing_access(hs_timing *t, hs_tu64 instr, hs_tu64 addr, unsigned latency, int l1_miss, int is_load,
                      unsigned size, hs_tu64 value) {
  /* (what retire_until would find first: nothing to retire, most of the time) */
#ifdef HS_NO_FASTPATH
  if (t->n) retire_until(t, instr);
#else
  if (t->n && (t->fifo[t->head].instr + t->cfg.rob <= instr || t->n == HS_FIFO)) retire_until(t, instr);
#endif
  hs_tu64 dispatch = instr * t->cpi + t->st.stall, start = dispatch, lat = (hs_tu64)latency * 100;
  int dependent = 0;
  if (is_load && t->cfg.deps == HS_DEPS_VALUE && t->vals_max > start) {
    hs_tu64 r = address_ready(t, addr);
    if (r > start) start = r, dependent = 1;
  } else if (is_load && l1_miss && t->cfg.deps == HS_DEPS_ALL && t->last_load_miss > start) {
    start = t->last_load_miss;
    dependent = 1;
  }
  /* the hardware prefetchers see the access when its address is known, before it waits for
   * a fill buffer or a line on its way: its prefetches issue then */
  t->last_start = start;
  hs_tu64 done, lr = t->lines_max > dispatch ? line_ready(t, addr) : 0;
  if (l1_miss) {
    unsigned best = 0;
    for (unsigned i = 1; i < t->cfg.mshr; i++)
      if (t->mshr[i] < t->mshr[best]) best = i;
    if (t->mshr[best] > start) start = t->mshr[best], t->st.mshr_waits++;
    done = start + lat;
    if (lr > done) done = lr, t->st.line_waits++; /* a prefetch of this line is still on its way */
    t->mshr[best] = done;
    stamp *l = &t->lines[slot_of(addr >> 6, HS_LINE_TABLE)];
    l->key = addr >> 6;
    l->ready = done;
    if (done > t->lines_max) t->lines_max = done;
    if (is_load) {
      t->st.load_misses++;
      t->st.dependent += dependent;
      t->last_load_miss = done;
    }
  } else {
    if (lr > start) start = lr, t->st.line_waits++;
    done = start + lat;
  }
  /* a load that completes late holds retirement back like a miss */
  if (is_load && (l1_miss || done > dispatch + lat)) {
    if (t->n == HS_FIFO) retire_until(t, instr); /* makes room */
    t->fifo[(t->head + t->n) % HS_FIFO] = (pending){instr, done};
    t->n++;
  }
  if (done > t->last_done) t->last_done = done;
  /* a late 8-byte load's value may be the base of a later address */
  if (is_load && size == 8 && value && t->cfg.deps == HS_DEPS_VALUE && (l1_miss || start > dispatch)) {
    stamp *s = &t->vals[slot_of(value >> 6, HS_DEP_TABLE)];
    s->key = value;
    s->ready = done;
    if (done > t->vals_max) t->vals_max = done;
  }
}

/* A prefetch of the line holding `addr`, triggered by the last access, served after `latency`
 * cycles: a demand access to the line before it arrives waits for it (timeliness). */
static inline void hs_timing_prefetch(hs_timing *t, hs_tu64 addr, unsigned latency) {
  /* issued when the access that triggered it started, once a prefetch-queue slot is free */
  unsigned best = 0;
  for (unsigned i = 1; i < HS_PF_QUEUE; i++)
    if (t->pfq[i] < t->pfq[best]) best = i;
  hs_tu64 start = t->last_start > t->pfq[best] ? t->last_start : t->pfq[best];
  hs_tu64 done = start + (hs_tu64)latency * 100;
  hs_tu64 lr = line_ready(t, addr); /* served by a level the line is still arriving in */
  if (lr > done) done = lr;
  t->pfq[best] = done;
  stamp *l = &t->lines[slot_of(addr >> 6, HS_LINE_TABLE)];
  l->key = addr >> 6;
  l->ready = done;
  if (done > t->lines_max) t->lines_max = done;
}

#endif
