/* hlsim model: see model.h. Plain C, no library calls. */
#include "model.h"
#include "timing_access.h"

#define EMPTY (~0ULL) /* an empty way; (EMPTY >> 1) is no line number a 64-bit address has */

/* One set-associative array, used for caches (entries: line << 1 | prefetched) and TLBs
 * (entries: page << 1). Each set's ways are kept in MRU-first order, as in cachegrind. */
typedef struct {
  hs_u64 *tags;
  hs_u64 sets, set_mask;
  unsigned ways, shift, pow2;
  unsigned hashed; /* the set is a hash of the whole key (an LLC's slice and set hash), not its low bits */
} hs_array;

typedef struct {
  hs_u64 pc, last;
  long long stride;
  unsigned conf;
  unsigned dist; /* strides to look ahead, at least a line: set with the stride (no division per access) */
} hs_stride_ent;

/* one L2 streamer stream: a 4 KiB page, the last line offset in it, the direction seen
 * `conf` times in a row, and how far ahead it has prefetched */
typedef struct {
  hs_u64 page;
  int last, dir, upto;
  unsigned conf;
} hs_stream;

struct hs_model {
  hs_config cfg;
  hs_stats st;
  hs_array cache[HS_MAX_LEVELS];
  hs_array tlb[HS_MAX_TLB];
  unsigned lat[HS_MAX_LEVELS + 1];
  hs_stride_ent *stride;
  hs_bucket_stats *buckets[HS_MAX_DIMS];
  hs_u64 l1_line, l1_mask;
  /* L1-line accesses that hit the MRU way of their L1 set and of their DTLB set: nothing
   * reorders, so they are only counted here and folded into `st` by fold_fast() */
  hs_u64 fast;
  hs_u64 last_line; /* L1 line of the last demand access, known MRU in L1 (and its page in the DTLB) */
  hs_u64 last_page; /* page of the last TLB access: MRU in its DTLB set (no prefetch touches a TLB) */
  unsigned char **touched; /* pages touched since mapped: [page >> TOUCH_BITS] -> bitmap, or NULL */
  hs_timing *timing;       /* the core timing model, or NULL */
  hs_u64 cur_instr, cur_value; /* the access being simulated: instruction index, loaded value */
  int cur_load;
  unsigned l2pf_level;     /* level the L2 prefetchers fill: L2, or the LL with two levels */
  hs_stream *streams;
  hs_u64 *dram_open;       /* open row of each bank (EMPTY: none) */
  unsigned dram_row_shift; /* log2 of the row size (a power of two): no division per memory read */
  hs_array pde;            /* paging-structure cache (--walk-cache) */
  /* the line the stride prefetcher last prefetched, known present in the fill level until
   * the next fill of any level (only a fill evicts): prefetching it again would do nothing */
  hs_u64 stride_memo;
  hs_u64 memo_page, memo_frame; /* frame_memo(): EMPTY is no page number */
};

#define TOUCH_BITS 20  /* pages per bitmap (128 KiB of bits) */
#define TOUCH_TOP 16   /* bitmaps: 2^(16+20) pages of 4 KiB = the 48-bit address space */

/* ------------------------------------------------------------------------ small helpers */

static unsigned log2u(hs_u64 v) {
  unsigned s = 0;
  while (((hs_u64)1 << s) < v) s++;
  return s;
}
static int is_pow2(hs_u64 v) { return v && !(v & (v - 1)); }

static void zero(void *p, hs_u64 n) {
  unsigned char *b = (unsigned char *)p;
  for (hs_u64 i = 0; i < n; i++) b[i] = 0;
}

void hs_default_config(hs_config *c) {
  zero(c, sizeof *c);
  c->nlevels = 3;
  c->level[0] = (hs_cache_cfg){48 << 10, 12, 64, 5};    /* L1D: 48 KiB, 12-way, 5 cycles */
  c->level[1] = (hs_cache_cfg){2 << 20, 16, 64, 15};    /* L2: 2 MiB, 16-way, 15 cycles */
  c->level[2] = (hs_cache_cfg){4 << 20, 16, 64, 50};    /* LLC share: 4 MiB, 16-way, 50 cycles */
  c->mem_latency = 250;                                 /* DRAM: ~80 ns at 3 GHz */
  c->ntlb = 2;
  c->tlb[0] = (hs_tlb_cfg){64, 4, 7};                   /* DTLB miss that hits the STLB: 7 cycles */
  c->tlb[1] = (hs_tlb_cfg){1536, 12, 30};               /* STLB miss: page walk, 30 cycles */
  c->fault_cost = 5000; /* first touch of a page: ~2 us on these VMs (benchmarks/page_fault_cost.c) */
  c->page_shift = 12;
  c->prefetcher = HS_PF_NONE;
  c->pf_level = 0;
  c->pf_degree = 1;
  c->stride_entries = 256;
  c->stride_conf = 2;
  c->cc_block = 256;
  hs_timing_default(&c->tcfg);
  c->streamer_dist = HS_STREAMER_DIST;
  c->streamer_degree = HS_STREAMER_DEGREE;
  c->dram_banks = HS_DRAM_BANKS;
  c->dram_row = HS_DRAM_ROW;
  c->dram_hit = HS_DRAM_HIT;
}

const char *hs_check_config(const hs_config *c) {
  if (c->nlevels < 1 || c->nlevels > HS_MAX_LEVELS) return "the number of cache levels must be 1 to 3";
  for (unsigned i = 0; i < c->nlevels; i++) {
    const hs_cache_cfg *l = &c->level[i];
    if (!is_pow2(l->line) || l->line < 4 || l->line > 4096) return "a line size must be a power of two (16 to 256 typical)";
    if (l->size < l->line) return "a cache must hold at least one line";
    hs_u64 lines = l->size / l->line;
    if (lines * l->line != l->size) return "a cache size must be a multiple of its line size";
    unsigned ways = l->ways ? l->ways : (unsigned)lines;
    if (lines % ways) return "a cache's lines must divide evenly into its ways";
  }
  if (c->ntlb > HS_MAX_TLB) return "at most two TLB levels";
  for (unsigned i = 0; i < c->ntlb; i++) {
    const hs_tlb_cfg *t = &c->tlb[i];
    if (!t->entries) return "a TLB level needs entries";
    unsigned ways = t->ways ? t->ways : t->entries;
    if (t->entries % ways) return "TLB entries must divide evenly into its ways";
  }
  if (c->page_shift < 10 || c->page_shift > 30) return "page size must be 1 KiB to 1 GiB";
  if (c->prefetcher < 0 || c->prefetcher >= HS_PF_COUNT) return "unknown prefetcher";
  if (c->pf_level >= c->nlevels) return "the prefetch fill level must be a cache level";
  if (c->pf_degree < 1 || c->pf_degree > 64) return "prefetch degree must be 1 to 64";
  if (c->prefetcher == HS_PF_STRIDE && (!is_pow2(c->stride_entries) || c->stride_conf > 15))
    return "stride table entries must be a power of two and confidence at most 15";
  if ((c->prefetcher == HS_PF_CC_ONE || c->prefetcher == HS_PF_CC_ALL) && !is_pow2(c->cc_block))
    return "the cc-block size must be a power of two";
  if (c->ndims > HS_MAX_DIMS) return "at most two attribution dimensions";
  for (unsigned d = 0; d < c->ndims; d++)
    if (!c->nbuckets[d] || !c->classify[d]) return "an attribution dimension needs buckets and a classify function";
  if (!c->alloc) return "no allocation function";
  if (c->timing) {
    const char *e = hs_timing_check(&c->tcfg);
    if (e) return e;
  }
  if (c->pf_streamer && (c->streamer_dist < 1 || c->streamer_dist > 63 || c->streamer_degree < 1 || c->streamer_degree > 16))
    return "streamer distance must be 1 to 63 lines and degree 1 to 16";
  if (c->dram && (!is_pow2(c->dram_banks) || c->dram_banks > 1024 || !is_pow2(c->dram_row) || c->dram_row < 512 || c->dram_hit > c->mem_latency))
    return "DRAM banks and row size must be powers of two (rows 512 B or more) and the open-row latency at most the memory latency";
  if (c->walk_cache && !c->ntlb) return "--walk-cache needs a TLB";
  return 0;
}

static int array_init(hs_model *m, hs_array *a, hs_u64 entries, unsigned ways, unsigned shift) {
  if (!ways) ways = (unsigned)entries;
  a->ways = ways;
  a->sets = entries / ways;
  a->pow2 = is_pow2(a->sets);
  a->set_mask = a->sets - 1;
  a->shift = shift;
  a->tags = (hs_u64 *)m->cfg.alloc(m->cfg.ctx, entries * sizeof(hs_u64));
  if (!a->tags) return 0;
  for (hs_u64 i = 0; i < entries; i++) a->tags[i] = EMPTY;
  return 1;
}

hs_model *hs_new(const hs_config *cfg) {
  if (hs_check_config(cfg)) return 0;
  hs_model *m = (hs_model *)cfg->alloc(cfg->ctx, sizeof(hs_model));
  if (!m) return 0;
  zero(m, sizeof *m);
  m->cfg = *cfg;
  for (unsigned i = 0; i < cfg->nlevels; i++) {
    const hs_cache_cfg *l = &cfg->level[i];
    if (!array_init(m, &m->cache[i], l->size / l->line, l->ways, log2u(l->line))) return 0;
    m->lat[i] = l->latency;
  }
  m->lat[cfg->nlevels] = cfg->mem_latency;
  for (unsigned i = 0; i < cfg->ntlb; i++)
    if (!array_init(m, &m->tlb[i], cfg->tlb[i].entries, cfg->tlb[i].ways, cfg->page_shift)) return 0;
  if (cfg->fault_cost && cfg->ntlb) {
    m->touched = (unsigned char **)cfg->alloc(cfg->ctx, sizeof(unsigned char *) << TOUCH_TOP);
    if (!m->touched) return 0;
    zero(m->touched, sizeof(unsigned char *) << TOUCH_TOP);
  }
  if (cfg->prefetcher == HS_PF_STRIDE) {
    m->stride = (hs_stride_ent *)cfg->alloc(cfg->ctx, cfg->stride_entries * sizeof(hs_stride_ent));
    if (!m->stride) return 0;
    zero(m->stride, cfg->stride_entries * sizeof(hs_stride_ent));
    for (unsigned i = 0; i < cfg->stride_entries; i++) m->stride[i].pc = EMPTY;
  }
  for (unsigned d = 0; d < cfg->ndims; d++) {
    m->buckets[d] = (hs_bucket_stats *)cfg->alloc(cfg->ctx, cfg->nbuckets[d] * sizeof(hs_bucket_stats));
    if (!m->buckets[d]) return 0;
    zero(m->buckets[d], cfg->nbuckets[d] * sizeof(hs_bucket_stats));
  }
  if (cfg->timing) {
    m->timing = hs_timing_new(&cfg->tcfg, cfg->alloc, cfg->ctx);
    if (!m->timing) return 0;
  }
  m->l2pf_level = cfg->nlevels > 1 ? 1 : 0;
  /* physically indexed hardware: the LLC spreads lines over its slices and sets by a hash */
  if (cfg->phys_index && cfg->nlevels > 1) m->cache[cfg->nlevels - 1].hashed = 1;
  if (cfg->pf_streamer) {
    m->streams = (hs_stream *)cfg->alloc(cfg->ctx, HS_STREAMER_ENTRIES * sizeof(hs_stream));
    if (!m->streams) return 0;
    zero(m->streams, HS_STREAMER_ENTRIES * sizeof(hs_stream));
    for (unsigned i = 0; i < HS_STREAMER_ENTRIES; i++) m->streams[i].page = EMPTY;
  }
  if (cfg->dram) {
    m->dram_open = (hs_u64 *)cfg->alloc(cfg->ctx, cfg->dram_banks * sizeof(hs_u64));
    if (!m->dram_open) return 0;
    for (unsigned i = 0; i < cfg->dram_banks; i++) m->dram_open[i] = EMPTY;
    m->dram_row_shift = log2u(cfg->dram_row);
  }
  if (cfg->walk_cache && !array_init(m, &m->pde, HS_PDE_ENTRIES, HS_PDE_WAYS, 0)) return 0;
  m->last_line = EMPTY;
  m->last_page = EMPTY;
  m->stride_memo = EMPTY;
  m->memo_page = EMPTY;
  m->l1_line = cfg->level[0].line;
  m->l1_mask = ~(m->l1_line - 1);
  return m;
}

/* The buckets an address is charged to, one per attribution dimension (NULL: none). */
typedef struct {
  hs_bucket_stats *b[HS_MAX_DIMS];
} hs_charge;

static inline void classify(hs_model *m, hs_u64 addr, hs_charge *c) {
  for (unsigned d = 0; d < HS_MAX_DIMS; d++) {
    c->b[d] = 0;
    if (d < m->cfg.ndims) {
      unsigned k = m->cfg.classify[d](m->cfg.ctx, addr);
      if (k < m->cfg.nbuckets[d]) c->b[d] = &m->buckets[d][k];
    }
  }
}
#define CHARGE(c, field) do { for (unsigned d_ = 0; d_ < HS_MAX_DIMS; d_++) if ((c).b[d_]) (c).b[d_]->field++; } while (0)

static inline hs_u64 *set_of(hs_array *a, hs_u64 key) {
  if (a->hashed) key = (key ^ (key >> 17)) * 0x9e3779b97f4a7c15ULL >> 20;
  hs_u64 set = a->pow2 ? (key & a->set_mask) : (key % a->sets);
  return a->tags + set * a->ways;
}

/* Look `key` up; on a hit move it to MRU, on a miss insert it at MRU (evicting the LRU way).
 * Returns 1 on a hit. *flag gets the hit entry's prefetch bit (cleared when `demand`);
 * *victim gets the evicted entry on a miss. A new entry carries `newflag`. */
static inline int ref(hs_array *a, hs_u64 key, int demand, unsigned newflag, hs_u64 *victim, unsigned *flag) {
  hs_u64 *s = set_of(a, key);
  hs_u64 k = key << 1;
  if ((s[0] & ~1ULL) == k) {
    *flag = (unsigned)(s[0] & 1);
    if (demand) s[0] = k;
    return 1;
  }
  unsigned w = a->ways;
  for (unsigned i = 1; i < w; i++) {
    if ((s[i] & ~1ULL) == k) {
      hs_u64 v = s[i];
      for (unsigned j = i; j > 0; j--) s[j] = s[j - 1];
      *flag = (unsigned)(v & 1);
      s[0] = demand ? k : v;
      return 1;
    }
  }
  *victim = s[w - 1];
  for (unsigned j = w - 1; j > 0; j--) s[j] = s[j - 1];
  s[0] = k | newflag;
  *flag = 0;
  return 0;
}

/* A prefetch's fill: nothing if `key` is present (its LRU position unchanged), else insert
 * it at MRU with the prefetch tag and return 1 (*victim: the evicted entry). The same as a
 * look-up followed by ref()'s miss path, with one scan of the set instead of two. */
static inline int fill_absent(hs_array *a, hs_u64 key, hs_u64 *victim) {
  hs_u64 *s = set_of(a, key);
  hs_u64 k = key << 1;
  unsigned w = a->ways;
  for (unsigned i = 0; i < w; i++)
    if ((s[i] & ~1ULL) == k) return 0;
#ifdef HS_NO_FASTPATH
  unsigned flag;
  ref(a, key, 0, 1, victim, &flag); /* the second scan, as before this shortcut */
#else
  *victim = s[w - 1];
  for (unsigned j = w - 1; j > 0; j--) s[j] = s[j - 1];
  s[0] = k | 1;
#endif
  return 1;
}

/* The key of the line holding `a` in cache level `lvl`: its line number, or with --phys-index
 * for the levels past L1 the line within a pseudo-random page frame. Hardware indexes L2 and
 * the LLC by physical address, so a power-of-two stride over virtual pages does not pile into
 * a few sets as it does in a virtually indexed model (prefix_hot's 1280-byte hot chain used
 * 512 of L2's 2048 sets). The frame is a bijection of the page number (56 bits), so keys
 * stay exact. */
static inline hs_u64 frame_of(hs_u64 page) {
  const hs_u64 mask = (1ULL << 56) - 1;
  hs_u64 x = page & mask;
  x = ((x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ULL) & mask;
  x = ((x ^ (x >> 27)) * 0x94d049bb133111ebULL) & mask;
  return x ^ (x >> 31);
}

/* frame_of of the last page asked: a miss's L2, LL and DRAM lookups, and the streamer's
 * prefetches, ask for the same page in a row */
static inline hs_u64 frame_memo(hs_model *m, hs_u64 page) {
#ifdef HS_NO_FASTPATH
  (void)m;
  return frame_of(page);
#else
  if (page != m->memo_page) {
    m->memo_page = page;
    m->memo_frame = frame_of(page);
  }
  return m->memo_frame;
#endif
}

static inline hs_u64 key_of(hs_model *m, unsigned lvl, hs_u64 a) {
  unsigned shift = m->cache[lvl].shift;
  if (!m->cfg.phys_index || lvl == 0 || shift > 12) return a >> shift;
  return frame_memo(m, a >> 12) << (12 - shift) | ((a & 4095) >> shift);
}

static void evicted(hs_model *m, unsigned lvl, hs_u64 victim) {
  if (victim == EMPTY || !(victim & 1)) return;
  m->st.level[lvl].pf_useless++;
  if (m->cfg.ndims && !(m->cfg.phys_index && lvl > 0)) { /* a frame key is no address to attribute */
    hs_charge c;
    classify(m, (victim >> 1) << m->cache[lvl].shift, &c);
    CHARGE(c, pf_useless);
  }
}

/* DRAM: whether the row holding `addr` is open in its bank (then it stays open; otherwise
 * it is opened). Consecutive rows go to different banks. */
static int dram_row_hit(hs_model *m, hs_u64 addr) {
  if (m->cfg.phys_index) addr = frame_memo(m, addr >> 12) << 12 | (addr & 4095); /* rows hold physical pages */
#ifdef HS_NO_FASTPATH
  hs_u64 row = addr / m->cfg.dram_row;
#else
  hs_u64 row = addr >> m->dram_row_shift;
#endif
  hs_u64 bank = (row ^ (row >> 7) ^ (row >> 13)) & (m->cfg.dram_banks - 1);
  m->st.dram_accesses++;
  if (m->dram_open[bank] == row) {
    m->st.dram_row_hits++;
    return 1;
  }
  m->dram_open[bank] = row;
  return 0;
}

static void streamer_train(hs_model *m, hs_u64 addr);

/* A prefetch of the line holding `addr` into level `p` and the levels beyond it. */
static void prefetch_into(hs_model *m, hs_u64 addr, unsigned p) {
  hs_u64 victim = EMPTY;
  unsigned flag;
  if (!fill_absent(&m->cache[p], key_of(m, p, addr), &victim)) return;
  m->st.level[p].pf_issued++;
  m->stride_memo = EMPTY;
  if (p == 0) m->last_line = EMPTY; /* the fill may demote the last line from MRU */
  evicted(m, p, victim);
  unsigned i = p + 1;
  for (; i < m->cfg.nlevels; i++) {
    victim = EMPTY;
    if (ref(&m->cache[i], key_of(m, i, addr), 0, 0, &victim, &flag)) break;
  }
  unsigned lat = m->lat[i];
  if (i == m->cfg.nlevels && m->dram_open && dram_row_hit(m, addr)) lat = m->cfg.dram_hit;
  if (m->timing) hs_timing_prefetch(m->timing, addr, lat);
  /* an L1 prefetch is a request to L2 like a demand miss: the streamer sees it */
  if (p == 0 && m->streams) streamer_train(m, addr);
}

static void prefetch(hs_model *m, hs_u64 addr) { prefetch_into(m, addr, m->cfg.pf_level); }

/* an L2 hardware prefetch (adjacent line, streamer) */
static void l2_prefetch(hs_model *m, hs_u64 addr) {
  hs_u64 before = m->st.level[m->l2pf_level].pf_issued;
  prefetch_into(m, addr, m->l2pf_level);
  m->st.l2pf_issued += m->st.level[m->l2pf_level].pf_issued - before;
}

/* The L2 streamer, trained by the demand accesses that reach L2: once `HS_STREAMER_CONFIRM`
 * accesses in a page moved the same way, keep up to streamer_dist lines ahead, issuing at
 * most streamer_degree per access, never past the page (the physical neighbour is unknown). */
static void streamer_train(hs_model *m, hs_u64 addr) {
  hs_u64 page = addr >> 12;
  int off = (int)((addr >> 6) & 63);
  /* fully associative, most recently used first */
  hs_stream *s = m->streams, cur;
  unsigned i = 0;
  while (i < HS_STREAMER_ENTRIES - 1 && s[i].page != page) i++;
  cur = s[i];
  for (; i > 0; i--) s[i] = s[i - 1];
  s[0] = cur;
  hs_stream *e = &s[0];
  if (e->page != page) {
    e->page = page;
    e->last = e->upto = off;
    e->dir = 0;
    e->conf = 0;
    return;
  }
  int d = off - e->last;
  if (!d) return;
  int dir = d > 0 ? 1 : -1;
  if ((d > 0 ? d : -d) > HS_STREAMER_WINDOW) {
    /* a jump is no stream: lines visited out of order within the page train nothing */
    e->last = e->upto = off;
    e->dir = 0;
    e->conf = 0;
    return;
  }
  if (dir == e->dir) {
    e->conf++;
  } else {
    e->dir = dir;
    e->conf = 1;
    e->upto = off;
  }
  e->last = off;
  if (e->conf < HS_STREAMER_CONFIRM) return;
  int next = dir > 0 ? (e->upto > off ? e->upto : off) + 1 : (e->upto < off ? e->upto : off) - 1;
  for (unsigned k = 0; k < m->cfg.streamer_degree; k++, next += dir) {
    if (next < 0 || next > 63 || (next - off) * dir > (int)m->cfg.streamer_dist) break;
    l2_prefetch(m, (page << 12) + ((hs_u64)next << 6));
    e->upto = next;
  }
}

/* One line read by the page walker: through the caches like a demand access (filling what
 * missed) but not counted as one. Returns its latency. */
static unsigned walk_read(hs_model *m, hs_u64 addr) {
  unsigned n = m->cfg.nlevels;
  for (unsigned i = 0; i < n; i++) {
    hs_u64 victim = EMPTY;
    unsigned flag;
    if (ref(&m->cache[i], key_of(m, i, addr), 1, 0, &victim, &flag)) return m->lat[i];
    m->stride_memo = EMPTY;
    evicted(m, i, victim);
  }
  if (m->dram_open && dram_row_hit(m, addr)) return m->cfg.dram_hit;
  return m->lat[n];
}

/* A page walk for `page`: its PTE line (8 bytes per page, so 8 neighbouring pages share one),
 * and the PDE line above it when the paging-structure cache misses. */
static unsigned page_walk(hs_model *m, hs_u64 page) {
  hs_u64 victim;
  unsigned flag, lat = 0;
  m->st.walks++;
  if (!ref(&m->pde, page >> 9, 1, 0, &victim, &flag)) {
    m->st.walk_pde_misses++;
    lat += walk_read(m, HS_WALK_PDE_BASE + (page >> 9) * 8);
  }
  lat += walk_read(m, HS_WALK_BASE + page * 8);
  m->last_line = EMPTY; /* the walk's lines may have demoted it in L1 */
  m->st.walk_cycles += lat;
  return lat;
}

/* A page's first touch since it was mapped: the kernel's page fault (zero-fill), which the
 * footprint of a layout decides. Only pages that missed every TLB level can be new. */
static void first_touch(hs_model *m, hs_u64 page) {
  hs_u64 top = page >> TOUCH_BITS;
  if (top >= ((hs_u64)1 << TOUCH_TOP)) return;
  unsigned char *b = m->touched[top];
  if (!b) {
    b = (unsigned char *)m->cfg.alloc(m->cfg.ctx, (hs_u64)1 << (TOUCH_BITS - 3));
    if (!b) return;
    zero(b, (hs_u64)1 << (TOUCH_BITS - 3));
    m->touched[top] = b;
  }
  hs_u64 bit = page & (((hs_u64)1 << TOUCH_BITS) - 1);
  if (b[bit >> 3] & (1u << (bit & 7))) return;
  b[bit >> 3] |= (unsigned char)(1u << (bit & 7));
  m->st.faults++;
  m->st.fault_cycles += m->cfg.fault_cost;
  m->st.cycles += m->cfg.fault_cost;
}

void hs_unmap(hs_model *m, hs_u64 lo, hs_u64 hi) {
  if (!m->touched || hi <= lo) return;
  hs_u64 p = lo >> m->cfg.page_shift, end = ((hi - 1) >> m->cfg.page_shift) + 1;
  while (p < end) {
    hs_u64 top = p >> TOUCH_BITS;
    if (top >= ((hs_u64)1 << TOUCH_TOP)) return;
    hs_u64 next = (top + 1) << TOUCH_BITS;
    unsigned char *b = m->touched[top];
    if (!b) { p = next; continue; }
    for (; p < end && p < next; p++) {
      hs_u64 bit = p & (((hs_u64)1 << TOUCH_BITS) - 1);
      b[bit >> 3] &= (unsigned char)~(1u << (bit & 7));
    }
  }
}

/* `c`/`classified`: the line access's attribution, looked up at most once and shared with
 * the cache levels (a DTLB miss and an L1 miss of the same access: one lookup, not two). */
static unsigned tlb_access(hs_model *m, hs_u64 addr, hs_charge *c, int *classified) {
  hs_u64 page = addr >> m->cfg.page_shift;
  unsigned lat = 0;
  if (page == m->last_page) { /* a DTLB hit on the set's MRU way: nothing to reorder */
    m->st.tlb_accesses[0]++;
    return 0;
  }
  m->last_page = page;
  for (unsigned i = 0; i < m->cfg.ntlb; i++) {
    hs_u64 victim;
    unsigned flag;
    m->st.tlb_accesses[i]++;
    if (ref(&m->tlb[i], page, 1, 0, &victim, &flag)) return lat;
    m->st.tlb_misses[i]++;
    /* the last level's miss is a page walk: a fixed penalty, or the walk through the caches */
    unsigned pen = m->cfg.walk_cache && i + 1 == m->cfg.ntlb ? page_walk(m, page) : m->cfg.tlb[i].penalty;
    lat += pen;
    m->st.tlb_cycles += pen;
    m->st.cycles += pen;
    if (m->cfg.ndims) {
      if (!*classified) { classify(m, addr, c); *classified = 1; }
      CHARGE(*c, tlb_misses[i]);
    }
  }
  if (m->touched) first_touch(m, page);
  return lat;
}

/* One demand access to the L1 line holding `a`. */
static void demand_line(hs_model *m, hs_u64 a) {
  hs_stats *st = &m->st;
  unsigned n = m->cfg.nlevels, served = n, was_pf = 0;
  st->line_accesses++;
  hs_charge c;
  int classified = !m->cfg.ndims;
  c.b[0] = c.b[1] = 0;
  unsigned tlb_lat = m->cfg.ntlb ? tlb_access(m, a, &c, &classified) : 0;
  for (unsigned i = 0; i < n; i++) {
    hs_u64 victim = EMPTY;
    unsigned flag;
    st->level[i].accesses++;
    if (ref(&m->cache[i], key_of(m, i, a), 1, 0, &victim, &flag)) {
      served = i;
      if (flag) {
        was_pf = 1;
        st->covered++;
        st->level[i].pf_useful++;
        if (!classified) { classify(m, a, &c); classified = 1; }
        CHARGE(c, pf_useful);
      }
      break;
    }
    st->level[i].misses++;
    m->stride_memo = EMPTY;
    if (!classified) { classify(m, a, &c); classified = 1; }
    CHARGE(c, misses[i]);
    evicted(m, i, victim);
  }
  st->served[served]++;
  unsigned lat = m->lat[served];
  if (served == n && m->dram_open && dram_row_hit(m, a)) lat = m->cfg.dram_hit;
  st->cycles += lat;
  m->last_line = a >> m->cache[0].shift;
  if (was_pf && served == m->l2pf_level && served > 0) st->l2pf_useful++;
  if (m->timing && (m->cur_load || served > 0)) /* a store that hits waits for nothing (store buffer) */
    hs_timing_access(m->timing, m->cur_instr, a, lat + tlb_lat, served > 0, m->cur_load, 8, m->cur_value);
  m->cur_value = 0; /* a straddling access's value belongs to its first line */
  if (served > 0) {
    /* the L2 prefetchers see the accesses that reach L2 */
    if (m->cfg.pf_adjacent && served > m->l2pf_level) l2_prefetch(m, (a & m->l1_mask) ^ m->l1_line);
    if (m->streams) streamer_train(m, a);
  }

  switch (m->cfg.prefetcher) {
  case HS_PF_NEXTLINE:
  case HS_PF_TAGGED:
    if (served > 0 || (was_pf && m->cfg.prefetcher == HS_PF_TAGGED)) {
      hs_u64 base = a & m->l1_mask;
      for (unsigned k = 1; k <= m->cfg.pf_degree; k++) prefetch(m, base + k * m->l1_line);
    }
    break;
  case HS_PF_CC_ONE:
  case HS_PF_CC_ALL:
    if (served > 0 && a - m->cfg.pool_lo < m->cfg.pool_hi - m->cfg.pool_lo) {
      hs_u64 base = a & m->l1_mask;
      if (m->cfg.prefetcher == HS_PF_CC_ONE) {
        prefetch(m, base + m->l1_line);
      } else {
        hs_u64 end = (a & ~((hs_u64)m->cfg.cc_block - 1)) + m->cfg.cc_block;
        for (hs_u64 x = base + m->l1_line; x < end; x += m->l1_line) prefetch(m, x);
      }
    }
    break;
  default:
    break;
  }
}

static void stride_train(hs_model *m, hs_u64 addr, hs_u64 pc) {
  hs_stride_ent *e = &m->stride[(pc ^ (pc >> 9) ^ (pc >> 18)) & (m->cfg.stride_entries - 1)];
  if (e->pc != pc) {
    e->pc = pc;
    e->last = addr;
    e->stride = 0;
    e->conf = 0;
    e->dist = 1;
    return;
  }
  long long d = (long long)(addr - e->last);
  e->last = addr;
  if (d == 0) return; /* the same address again: neither confirms nor breaks a stride */
  if (d == e->stride) {
    if (e->conf < 15) e->conf++;
  } else if (e->conf > 0) {
    e->conf--;
  } else {
    e->stride = d;
    hs_u64 abs = (hs_u64)(d < 0 ? -d : d);
    e->dist = abs >= m->l1_line ? 1 : (unsigned)((m->l1_line + abs - 1) / abs); /* look at least a line ahead */
  }
  if (e->conf < m->cfg.stride_conf || e->stride == 0) return;
  hs_u64 dist = e->dist;
#ifdef HS_NO_FASTPATH
  hs_u64 abs = (hs_u64)(e->stride < 0 ? -e->stride : e->stride);
  dist = abs >= m->l1_line ? 1 : (m->l1_line + abs - 1) / abs;
#endif
  hs_u64 line = addr & m->l1_mask;
  for (unsigned k = 1; k <= m->cfg.pf_degree; k++) {
    hs_u64 t = addr + (hs_u64)(e->stride * (long long)(dist * k));
    hs_u64 tl = t & m->l1_mask;
    if (tl != line && tl != m->stride_memo) {
      prefetch(m, t);
      if (m->cfg.pf_level == 0) m->stride_memo = tl; /* (L2 fills by the streamer could evict from L2) */
    }
  }
}

/* Whether the L1-line access at `addr` (line `line`) hits the MRU way of its L1 set and, with
 * a TLB, the MRU way of its DTLB set. Such an access changes no LRU order, clears no
 * prefetch tag (a tagged line never equals line << 1), misses no TLB level (so it is no
 * first touch) and triggers no miss- or tag-driven prefetch: counting it is all the model
 * would do. Two in three of the accesses that are not to the last line are such hits. */
static inline int mru_hit(hs_model *m, hs_u64 addr, hs_u64 line) {
  if (set_of(&m->cache[0], line)[0] != line << 1) return 0;
  if (m->cfg.ntlb) {
    hs_u64 page = addr >> m->cfg.page_shift;
    if (page != m->last_page) {
      if (set_of(&m->tlb[0], page)[0] != page << 1) return 0;
      m->last_page = page;
    }
  }
  return 1;
}

/* The MRU hits counted in m->fast, added to the statistics they stand for. */
static void fold_fast(hs_model *m) {
  hs_stats *st = &m->st;
  st->line_accesses += m->fast;
  st->level[0].accesses += m->fast;
  st->served[0] += m->fast;
  st->cycles += m->fast * m->lat[0];
  if (m->cfg.ntlb) st->tlb_accesses[0] += m->fast;
  m->fast = 0;
}

void hs_access(hs_model *m, hs_u64 addr, unsigned size, int is_store, hs_u64 pc) {
  hs_access_timed(m, addr, size, is_store, pc, 0, 0);
}

void hs_access_timed(hs_model *m, hs_u64 addr, unsigned size, int is_store, hs_u64 pc, hs_u64 instr, hs_u64 value) {
  hs_stats *st = &m->st;
  m->cur_instr = instr;
  m->cur_value = size == 8 ? value : 0;
  m->cur_load = !is_store;
  st->refs++;
  if (is_store) st->stores++; else st->loads++;
  if (size == 0) size = 1;
  hs_u64 first = addr & m->l1_mask, last = (addr + size - 1) & m->l1_mask;
  if (first == last) {
#ifndef HS_NO_FASTPATH
    /* the last access's line is MRU in L1 and its page MRU in the DTLB (prefetches, which
     * may demote it, forget last_line); otherwise look at the two sets' MRU ways */
    hs_u64 line = addr >> m->cache[0].shift;
    if (line == m->last_line || mru_hit(m, addr, line)) {
      m->fast++;
      m->last_line = line;
      if (m->timing && !is_store) hs_timing_access(m->timing, instr, addr, m->lat[0], 0, 1, size, m->cur_value);
      if (m->stride) stride_train(m, addr, pc);
      return;
    }
#endif
    demand_line(m, addr);
  } else {
    demand_line(m, addr);
    for (hs_u64 x = first + m->l1_line; x <= last && x > first; x += m->l1_line) demand_line(m, x);
  }
  if (m->stride) stride_train(m, addr, pc);
}

void hs_set_pool_range(hs_model *m, hs_u64 lo, hs_u64 hi) {
  m->cfg.pool_lo = lo;
  m->cfg.pool_hi = hi;
}

void hs_finish(hs_model *m) {
  fold_fast(m);
  hs_array *a = &m->cache[m->cfg.pf_level];
  hs_u64 n = a->sets * a->ways;
  hs_u64 resident = 0;
  for (hs_u64 i = 0; i < n; i++)
    if (a->tags[i] != EMPTY && (a->tags[i] & 1)) resident++;
  m->st.level[m->cfg.pf_level].pf_resident = resident;
}

const hs_stats *hs_get_stats(hs_model *m) {
  fold_fast(m);
  return &m->st;
}

hs_bucket_stats *hs_bucket(hs_model *m, unsigned d, unsigned b) {
  return d < m->cfg.ndims && b < m->cfg.nbuckets[d] ? &m->buckets[d][b] : 0;
}

hs_timing *hs_get_timing(hs_model *m) { return m->timing; }

const hs_bucket_stats *hs_get_bucket(const hs_model *m, unsigned d, unsigned b) {
  return d < m->cfg.ndims && b < m->cfg.nbuckets[d] ? &m->buckets[d][b] : 0;
}

static const char *const pf_names[HS_PF_COUNT] = {"none", "nextline", "tagged", "stride", "cc-one", "cc-all"};

const char *hs_prefetcher_name(int pf) { return pf >= 0 && pf < HS_PF_COUNT ? pf_names[pf] : "?"; }

int hs_prefetcher_from_name(const char *name) {
  for (int i = 0; i < HS_PF_COUNT; i++) {
    const char *a = pf_names[i], *b = name;
    while (*a && *a == *b) a++, b++;
    if (!*a && !*b) return i;
  }
  return -1;
}
