/* hlsim core timing: see timing.h. Times are in 1/100 cycle. */
#include "timing.h"
#include "tunables.h"

#define MAX_MSHR 64

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

void hs_timing_default(hs_timing_cfg *c) {
  c->rob = HS_ROB;
  c->mshr = HS_MSHR;
  c->cpi_x100 = HS_CPI_X100;
  c->deps = HS_DEPS_VALUE;
  c->span = HS_DEP_SPAN;
}

const char *hs_timing_check(const hs_timing_cfg *c) {
  if (c->rob < 1 || c->rob > 100000) return "the reorder buffer must hold 1 to 100000 instructions";
  if (c->mshr < 1 || c->mshr > MAX_MSHR) return "fill buffers (MSHRs) must be 1 to 64";
  if (c->deps > HS_DEPS_ALL) return "unknown dependence mode";
  if (c->span < 8 || c->span > 4096 || (c->span & 63 && c->span > 64)) return "the dependence span must be 8 to 4096 bytes (a multiple of 64 above 64)";
  return 0;
}

hs_timing *hs_timing_new(const hs_timing_cfg *c, void *(*alloc)(void *ctx, hs_tu64 bytes), void *ctx) {
  if (hs_timing_check(c)) return 0;
  hs_timing *t = (hs_timing *)alloc(ctx, sizeof *t);
  if (!t) return 0;
  unsigned char *b = (unsigned char *)t;
  for (hs_tu64 i = 0; i < sizeof *t; i++) b[i] = 0;
  t->cfg = *c;
  t->cpi = c->cpi_x100;
  for (unsigned i = 0; i < HS_DEP_TABLE; i++) t->vals[i].key = ~0ULL;
  for (unsigned i = 0; i < HS_LINE_TABLE; i++) t->lines[i].key = ~0ULL;
  return t;
}

static inline unsigned slot_of(hs_tu64 k, unsigned n) { return (unsigned)((k ^ (k >> 11) ^ (k >> 23)) & (n - 1)); }

/* Misses at instruction j hold instruction j + ROB back until they complete. */
static void retire_until(hs_timing *t, hs_tu64 instr) {
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
static hs_tu64 address_ready(hs_timing *t, hs_tu64 addr) {
  hs_tu64 line = addr >> 6;
  unsigned probes = t->cfg.span <= 64 ? 1 : t->cfg.span / 64 + 1;
  for (unsigned k = 0; k < probes && k <= line; k++) {
    const stamp *s = &t->vals[slot_of(line - k, HS_DEP_TABLE)];
    if (s->key <= addr && addr - s->key < t->cfg.span) return s->ready;
  }
  return 0;
}

static hs_tu64 line_ready(hs_timing *t, hs_tu64 addr) {
  const stamp *s = &t->lines[slot_of(addr >> 6, HS_LINE_TABLE)];
  return s->key == addr >> 6 ? s->ready : 0;
}

void hs_timing_access(hs_timing *t, hs_tu64 instr, hs_tu64 addr, unsigned latency, int l1_miss, int is_load,
                      unsigned size, hs_tu64 value) {
  if (t->n) retire_until(t, instr);
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

void hs_timing_prefetch(hs_timing *t, hs_tu64 addr, unsigned latency) {
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

hs_tu64 hs_timing_cycles(hs_timing *t, hs_tu64 instr) {
  retire_until(t, ~0ULL >> 1);
  hs_tu64 end = instr * t->cpi + t->st.stall;
  if (t->last_done > end) end = t->last_done;
  return end / 100;
}

const hs_timing_stats *hs_timing_get_stats(const hs_timing *t) { return &t->st; }

static const char *const dep_names[] = {"value", "none", "all"};

const char *hs_deps_name(unsigned deps) { return deps <= HS_DEPS_ALL ? dep_names[deps] : "?"; }

int hs_deps_from_name(const char *name) {
  for (int i = 0; i <= HS_DEPS_ALL; i++) {
    const char *a = dep_names[i], *b = name;
    while (*a && *a == *b) a++, b++;
    if (!*a && !*b) return i;
  }
  return -1;
}
