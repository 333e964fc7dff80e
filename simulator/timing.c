/* hlsim core timing: see timing.h; the per-access half is in timing_access.h. Times are in
 * 1/100 cycle. */
#include "timing_access.h"

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
