/* hlsim model options: see options.h. */
#include "options.h"

void hs_options_init(hs_options *o) {
  unsigned char *b = (unsigned char *)o;
  for (unsigned long i = 0; i < sizeof *o; i++) b[i] = 0;
  hs_default_config(&o->cfg);
  o->l1 = o->cfg.level[0];
  o->l2 = o->cfg.level[1];
  o->ll = o->cfg.level[2];
  o->levels = 3;
  o->tlb_levels = 2;
  o->dtlb = o->cfg.tlb[0];
  o->stlb = o->cfg.tlb[1];
  o->pf_level_user = 1;
}

/* "--name=" prefix match; returns the value or 0 */
static const char *val(const char *arg, const char *name) {
  while (*name && *arg == *name) arg++, name++;
  return *name ? 0 : arg;
}

static int streq(const char *a, const char *b) {
  while (*a && *a == *b) a++, b++;
  return *a == *b;
}

/* unsigned number, decimal or 0x hex, with optional K/M/G suffix; *end after it */
static int num(const char **s, hs_u64 *out) {
  const char *p = *s;
  hs_u64 v = 0;
  int digits = 0;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    p += 2;
    for (;; p++, digits++) {
      unsigned d;
      if (*p >= '0' && *p <= '9') d = *p - '0';
      else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
      else if (*p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
      else break;
      v = v * 16 + d;
    }
  } else {
    for (; *p >= '0' && *p <= '9'; p++, digits++) v = v * 10 + (hs_u64)(*p - '0');
  }
  if (!digits) return 0;
  if (*p == 'K' || *p == 'k') v <<= 10, p++;
  else if (*p == 'M' || *p == 'm') v <<= 20, p++;
  else if (*p == 'G' || *p == 'g') v <<= 30, p++;
  *out = v;
  *s = p;
  return 1;
}

/* n comma-separated numbers, exactly */
static int nums(const char *s, hs_u64 *out, int n) {
  for (int i = 0; i < n; i++) {
    if (!num(&s, &out[i])) return 0;
    if (i + 1 < n) {
      if (*s != ',') return 0;
      s++;
    }
  }
  return *s == 0;
}

static int cache_opt(const char *v, hs_cache_cfg *c) {
  hs_u64 x[3];
  if (!nums(v, x, 3) || x[1] > 4096 || x[2] > 4096) return -1;
  c->size = x[0];
  c->ways = (unsigned)x[1];
  c->line = (unsigned)x[2];
  return 1;
}

static int tlb_opt(const char *v, hs_tlb_cfg *t) {
  hs_u64 x[3];
  if (!nums(v, x, 3) || !x[0] || x[0] > (1u << 20) || x[1] > x[0] || x[2] > 100000) return -1;
  t->entries = (unsigned)x[0];
  t->ways = (unsigned)x[1];
  t->penalty = (unsigned)x[2];
  return 1;
}

static int yesno(const char *v, int *out) {
  if (streq(v, "yes")) *out = 1;
  else if (streq(v, "no")) *out = 0;
  else return -1;
  return 1;
}

static int one(const char *v, hs_u64 lo, hs_u64 hi, hs_u64 *out) {
  hs_u64 x;
  if (!nums(v, &x, 1) || x < lo || x > hi) return -1;
  *out = x;
  return 1;
}

int hs_options_parse(hs_options *o, const char *arg) {
  const char *v;
  hs_u64 x;
  hs_config *c = &o->cfg;
  if ((v = val(arg, "--L1="))) return cache_opt(v, &o->l1);
  if ((v = val(arg, "--D1="))) return cache_opt(v, &o->l1); /* cachegrind's name */
  if ((v = val(arg, "--L2="))) return cache_opt(v, &o->l2);
  if ((v = val(arg, "--LL="))) return cache_opt(v, &o->ll);
  if ((v = val(arg, "--levels="))) {
    if (one(v, 2, 3, &x) < 0) return -1;
    o->levels = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--line="))) {
    if (one(v, 4, 4096, &x) < 0) return -1;
    o->line_all = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--lat="))) {
    hs_u64 l[4];
    if (!nums(v, l, 4)) return -1;
    o->l1.latency = (unsigned)l[0];
    o->l2.latency = (unsigned)l[1];
    o->ll.latency = (unsigned)l[2];
    c->mem_latency = (unsigned)l[3];
    return 1;
  }
  if ((v = val(arg, "--fault-cost="))) {
    if (one(v, 0, 10000000, &x) < 0) return -1;
    c->fault_cost = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--dtlb="))) return tlb_opt(v, &o->dtlb);
  if ((v = val(arg, "--stlb="))) return tlb_opt(v, &o->stlb);
  if ((v = val(arg, "--tlb-levels="))) {
    if (one(v, 0, 2, &x) < 0) return -1;
    o->tlb_levels = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--page-size="))) {
    if (one(v, 1024, 1ull << 30, &x) < 0 || (x & (x - 1))) return -1;
    unsigned s = 0;
    while ((1ull << s) < x) s++;
    c->page_shift = s;
    return 1;
  }
  if ((v = val(arg, "--prefetch="))) {
    int p = hs_prefetcher_from_name(v);
    if (p < 0) return -1;
    c->prefetcher = p;
    return 1;
  }
  if ((v = val(arg, "--pf-level="))) {
    if (one(v, 1, 3, &x) < 0) return -1;
    o->pf_level_user = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--pf-degree="))) {
    if (one(v, 1, 64, &x) < 0) return -1;
    c->pf_degree = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--stride-entries="))) {
    if (one(v, 1, 1 << 20, &x) < 0 || (x & (x - 1))) return -1;
    c->stride_entries = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--stride-conf="))) {
    if (one(v, 0, 15, &x) < 0) return -1;
    c->stride_conf = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--cc-block="))) {
    if (one(v, 16, 1 << 20, &x) < 0 || (x & (x - 1))) return -1;
    c->cc_block = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--pool-range="))) {
    hs_u64 lo, hi;
    if (!num(&v, &lo) || *v != '-') return -1;
    v++;
    if (!num(&v, &hi) || *v || hi < lo) return -1;
    c->pool_lo = lo;
    c->pool_hi = hi;
    return 1;
  }
  /* issue 26's parts (tunables.h) */
  if ((v = val(arg, "--timing="))) {
    if (streq(v, "mlp")) c->timing = 1;
    else if (streq(v, "sum")) c->timing = 0;
    else return -1;
    return 1;
  }
  if ((v = val(arg, "--rob="))) {
    if (one(v, 1, 100000, &x) < 0) return -1;
    c->tcfg.rob = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--mshr="))) {
    if (one(v, 1, 64, &x) < 0) return -1;
    c->tcfg.mshr = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--deps="))) {
    int d = hs_deps_from_name(v);
    if (d < 0) return -1;
    c->tcfg.deps = (unsigned)d;
    return 1;
  }
  if ((v = val(arg, "--dep-span="))) {
    if (one(v, 8, 4096, &x) < 0) return -1;
    c->tcfg.span = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--pf-adjacent="))) return yesno(v, &c->pf_adjacent);
  if ((v = val(arg, "--pf-streamer="))) return yesno(v, &c->pf_streamer);
  if ((v = val(arg, "--streamer="))) {
    hs_u64 d[2];
    if (!nums(v, d, 2) || d[0] < 1 || d[0] > 63 || d[1] < 1 || d[1] > 16) return -1;
    c->streamer_dist = (unsigned)d[0];
    c->streamer_degree = (unsigned)d[1];
    return 1;
  }
  if ((v = val(arg, "--dram="))) return yesno(v, &c->dram);
  if ((v = val(arg, "--dram-geometry="))) {
    hs_u64 d[2];
    if (!nums(v, d, 2) || !d[0] || (d[0] & (d[0] - 1)) || d[0] > 1024 || d[1] < 512 || (d[1] & (d[1] - 1))) return -1;
    c->dram_banks = (unsigned)d[0];
    c->dram_row = (unsigned)d[1];
    return 1;
  }
  if ((v = val(arg, "--dram-hit="))) {
    if (one(v, 0, 100000, &x) < 0) return -1;
    c->dram_hit = (unsigned)x;
    return 1;
  }
  if ((v = val(arg, "--walk-cache="))) return yesno(v, &c->walk_cache);
  if ((v = val(arg, "--phys-index="))) return yesno(v, &c->phys_index);
  if ((v = val(arg, "--hw="))) {
    /* every part of issue 26's model at once, with the IP-stride prefetcher into L1 */
    int on;
    if (yesno(v, &on) < 0) return -1;
    /* not the adjacent-line prefetcher: lines shuffled within pages cost a full memory
     * latency per line natively here (chase_latency.c mode 2), as if it were off */
    c->timing = c->pf_streamer = c->dram = c->walk_cache = c->phys_index = on;
    c->pf_adjacent = 0;
    c->prefetcher = on ? HS_PF_STRIDE : HS_PF_NONE;
    return 1;
  }
  if (streq(arg, "--tlb=no")) { o->tlb_levels = 0; return 1; }
  if (streq(arg, "--tlb=yes")) { o->tlb_levels = 2; return 1; }
  return 0;
}

const char *hs_options_finish(hs_options *o) {
  hs_config *c = &o->cfg;
  if (o->line_all) o->l1.line = o->l2.line = o->ll.line = o->line_all;
  c->nlevels = o->levels;
  c->level[0] = o->l1;
  if (o->levels == 3) {
    c->level[1] = o->l2;
    c->level[2] = o->ll;
  } else {
    c->level[1] = o->ll;
  }
  c->ntlb = o->tlb_levels;
  c->tlb[0] = o->dtlb;
  c->tlb[1] = o->stlb;
  if (o->pf_level_user > c->nlevels) return "--pf-level is beyond the last cache level";
  c->pf_level = o->pf_level_user - 1;
  return 0;
}
