/* hlsim model: caches, data TLB, prefetchers and a time estimate, in plain C.
 *
 * No libc and no Valgrind calls: only arithmetic on tables whose memory the host supplies
 * through hs_config.alloc. The same file is compiled into the Valgrind tool (hlsim) and into
 * the native test driver (tests/simulator/model_test.c).
 *
 * Model, in one paragraph: up to three cache levels (L1D, L2, LLC), each set-associative
 * with true LRU, write-allocate, no write-back traffic modelled (a store is an access like a
 * load, as in cachegrind). Levels are non-inclusive: a level is looked up only when the one
 * above missed, and a miss fills every level that missed. A demand access that straddles
 * lines is split into one access per L1 line. The data TLB has up to two levels (DTLB,
 * STLB), LRU, looked up once per L1-line access. Prefetchers are triggered by L1 demand
 * accesses and fill level `pf_level` (0 = L1) and every level beyond it that misses; a
 * prefetched line carries a tag in its fill level until the first demand hit (useful,
 * "covered") or its eviction (useless). Prefetches are instantaneous (timeliness is not
 * modelled). Time estimate: per L1-line access, the hit latency of the level that served it
 * (memory latency when none did) plus the DTLB-miss / page-walk penalty.
 */
#ifndef HLSIM_MODEL_H
#define HLSIM_MODEL_H

#include "timing.h"

typedef unsigned long long hs_u64;

#define HS_MAX_LEVELS 3
#define HS_MAX_TLB 2
#define HS_MAX_DIMS 2

enum hs_prefetcher {
  HS_PF_NONE = 0,
  HS_PF_NEXTLINE, /* prefetch-on-miss: line i+1..i+degree on an L1 miss of line i */
  HS_PF_TAGGED,   /* as nextline, and again on the first demand hit on a prefetched line */
  HS_PF_STRIDE,   /* per-PC stride table: issue when the stride repeated `stride_conf` times */
  HS_PF_CC_ONE,   /* ccmalloc paper's prefetch-one-cc-on-miss: next line, misses in the pool range only */
  HS_PF_CC_ALL,   /* prefetch-all-cc-on-miss: the rest of the cc-block, misses in the pool range only */
  HS_PF_COUNT
};

typedef struct {
  hs_u64 size;      /* bytes; 0 = no such level */
  unsigned ways;    /* 0 = fully associative */
  unsigned line;    /* bytes, power of two, 16..256 (any power of two works) */
  unsigned latency; /* cycles for a hit served by this level */
} hs_cache_cfg;

typedef struct {
  unsigned entries; /* 0 = no such level */
  unsigned ways;    /* 0 = fully associative */
  unsigned penalty; /* cycles added when this level misses */
} hs_tlb_cfg;

typedef struct {
  unsigned nlevels;                  /* 1..3 cache levels */
  hs_cache_cfg level[HS_MAX_LEVELS];
  unsigned mem_latency;              /* cycles for an access no cache level served */
  unsigned ntlb;                     /* 0..2 TLB levels */
  hs_tlb_cfg tlb[HS_MAX_TLB];
  unsigned page_shift;               /* 12 = 4 KiB pages, 21 = 2 MiB */
  unsigned fault_cost;               /* cycles for the first touch of a page since it was mapped
                                        (a page fault), checked on a miss in the last TLB level;
                                        0, or no TLB, = not modelled */
  int prefetcher;                    /* enum hs_prefetcher */
  unsigned pf_level;                 /* level index the prefetches fill (0 = L1) */
  unsigned pf_degree;                /* lines per trigger (nextline, tagged, stride) */
  unsigned stride_entries;           /* stride table size, power of two */
  unsigned stride_conf;              /* confirmations before the stride prefetcher issues */
  hs_u64 pool_lo, pool_hi;           /* the heaplayout pool range [lo, hi), for cc prefetchers */
  unsigned cc_block;                 /* cc-block size in bytes (power of two) */
  /* Issue 26's parts, each off by default (tunables.h has their parameters): */
  int timing;                        /* 1: run the core timing model (timing.c) on every access */
  hs_timing_cfg tcfg;
  int pf_adjacent;                   /* L2 adjacent-line: an L2 miss also fetches the other line of its 128-byte pair */
  int pf_streamer;                   /* L2 streamer: per 4 KiB page, runs ahead of a confirmed direction */
  unsigned streamer_dist, streamer_degree;
  int dram;                          /* DRAM row buffer: memory accesses to an open row cost dram_hit */
  unsigned dram_banks, dram_row, dram_hit;
  int walk_cache;                    /* an STLB miss walks: PTE (and, on a PDE-cache miss, PDE) lines through the caches */
  int phys_index;                    /* L2 and LLC indexed by a pseudo-random page frame, as physically indexed caches are */
  /* Attribution, in up to two independent dimensions (e.g. pool and allocation context):
   * bucket of an address (< nbuckets[d]), called on misses and prefetch events only. */
  unsigned ndims;
  unsigned nbuckets[HS_MAX_DIMS];
  unsigned (*classify[HS_MAX_DIMS])(void *ctx, hs_u64 addr);
  /* Memory for the tables (need not be zeroed); NULL on failure. */
  void *(*alloc)(void *ctx, hs_u64 bytes);
  void *ctx;
} hs_config;

typedef struct {
  hs_u64 accesses;    /* demand accesses that reached this level */
  hs_u64 misses;      /* demand misses */
  hs_u64 pf_issued;   /* prefetches that filled this level (pf_level only) */
  hs_u64 pf_useful;   /* prefetched lines hit by demand before eviction */
  hs_u64 pf_useless;  /* prefetched lines evicted unused */
  hs_u64 pf_resident; /* prefetched lines still cached and unused at hs_finish */
} hs_level_stats;

typedef struct {
  hs_u64 misses[HS_MAX_LEVELS];
  hs_u64 tlb_misses[HS_MAX_TLB];
  hs_u64 pf_useful, pf_useless;
} hs_bucket_stats;

typedef struct {
  hs_u64 refs;        /* demand references (loads + stores) */
  hs_u64 loads, stores;
  hs_u64 line_accesses; /* L1-line accesses (a straddling reference counts twice) */
  hs_u64 covered;     /* demand hits on a line a prefetch brought */
  hs_u64 cycles;      /* the time estimate */
  hs_u64 served[HS_MAX_LEVELS + 1]; /* line accesses served by each level; [nlevels] = memory */
  hs_level_stats level[HS_MAX_LEVELS];
  hs_u64 tlb_accesses[HS_MAX_TLB];
  hs_u64 tlb_misses[HS_MAX_TLB];
  hs_u64 tlb_cycles;
  hs_u64 faults, fault_cycles; /* first touches of pages (part of cycles) */
  hs_u64 l2pf_issued, l2pf_useful; /* adjacent-line and streamer prefetches into L2, and those hit by demand */
  hs_u64 dram_accesses, dram_row_hits; /* memory reads (demand, prefetch, walk) and those to an open row */
  hs_u64 walks, walk_pde_misses, walk_cycles; /* page walks (STLB misses) with --walk-cache */
} hs_stats;

typedef struct hs_model hs_model;

/* Fill `cfg` with the defaults (a current x86 core; see docs/simulator.md). */
void hs_default_config(hs_config *cfg);
/* Check a configuration: 0 if fine, else a static message. */
const char *hs_check_config(const hs_config *cfg);
/* Build a model (tables from cfg->alloc); NULL on a bad config or failed allocation. */
hs_model *hs_new(const hs_config *cfg);
/* One demand reference of `size` bytes at `addr` by instruction `pc`. */
void hs_access(hs_model *m, hs_u64 addr, unsigned size, int is_store, hs_u64 pc);
/* The same, with the core timing's inputs: the instruction's index in the run and, for a
 * load of 8 bytes, the value it read (0 if not known). */
void hs_access_timed(hs_model *m, hs_u64 addr, unsigned size, int is_store, hs_u64 pc, hs_u64 instr, hs_u64 value);
/* The core timing model (NULL unless cfg.timing). */
hs_timing *hs_get_timing(hs_model *m);
/* Set the heaplayout pool range (for the cc prefetchers) once it is known. */
void hs_set_pool_range(hs_model *m, hs_u64 lo, hs_u64 hi);
/* [lo, hi) was unmapped (munmap, madvise DONTNEED, brk shrinking): its pages fault again. */
void hs_unmap(hs_model *m, hs_u64 lo, hs_u64 hi);
/* End of run: unused prefetched lines still cached are counted as useless. */
void hs_finish(hs_model *m);
const hs_stats *hs_get_stats(hs_model *m);
const hs_bucket_stats *hs_get_bucket(const hs_model *m, unsigned dim, unsigned bucket);
/* the same bucket, writable (a host that attributes elsewhere moves its counts in and out) */
hs_bucket_stats *hs_bucket(hs_model *m, unsigned dim, unsigned bucket);
const char *hs_prefetcher_name(int pf);
int hs_prefetcher_from_name(const char *name); /* -1 if unknown */

#endif
