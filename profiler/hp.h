/* hlprof: the heaplayout profiling tool (a Valgrind tool). Shared declarations.
 *
 * One concept per file:
 *   hp_main.c      tool contract: options, init, fini
 *   hp_module.c    modules (path, build-id, load bias) and frame symbols
 *   hp_alloc.c     malloc replacement, allocation contexts, objects, address -> object map
 *   hp_access.c    instrumentation and the per-access helpers
 *   hp_affinity.c  HALO affinity queue (one per thread) and the context affinity graph
 *   hp_edges.c     pointer edges (DPA shape graph)
 *   hp_stream.c    bounded object reference stream
 *   hp_output.c    buffered, line-oriented profile writer
 */
#ifndef HP_H
#define HP_H

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_replacemalloc.h"
#include "pub_tool_options.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_machine.h"
#include "pub_tool_poolalloc.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_xarray.h"

#define HP_FORMAT_VERSION 1
#define HP_TOOL_VERSION "0.1"

/* ---- options (hp_main.c) ---- */
typedef struct {
   const HChar* out_file;
   UInt depth;            /* context depth cap after trimming and recursion reduction */
   UInt max_unwind;       /* raw frames unwound per allocation */
   UInt affinity_distance;/* bytes, HALO's A */
   ULong max_object_size; /* objects larger than this stay out of affinity analysis */
   ULong stream_max;      /* max entries in the reference stream; 0 = no stream */
   Int objects;           /* 0 none, 1 accessed, 2 all */
   ULong progress;        /* print a progress line every N heap accesses; 0 = never */
   const HChar* trim;     /* comma-separated substrings of module paths to trim */
   Bool pointer_edges;
   Bool affinity;
   ULong graph_max;       /* keys kept per graph (affinity, pointer edges, neighbours); 0 = no cap */
   ULong objects_max;     /* O records written at most; 0 = no cap */
   Bool context_cache;    /* contexts by their innermost return addresses (hp_ctxcache.c) */
   Bool sample;           /* time-window sampling (hp_sample.c) */
   UInt sample_period;    /* R: one window in R is profiled */
   ULong sample_window;   /* window length in executed superblocks */
   ULong sample_seed;     /* picks which window of every R */
   Bool sample_retranslate; /* off windows run uninstrumented translations (discarded at each switch) */
   Bool sample_edges;     /* pointer edges recorded in every window too (exact P counts) */
   UInt sample_phase;     /* added to the picked offset: phases 0..R-1 of one seed partition the run */
   Bool follow_forks;     /* a forked child writes a profile of its own (needs %p in --out-file) */
} HpOptions;
extern HpOptions hp_opt;

/* ---- modules and frames (hp_module.c) ---- */
typedef struct HpModule {
   UInt id;
   const void* di;        /* DebugInfo handle, NULL for the unknown module */
   Addr text_lo, text_hi;
   PtrdiffT bias;
   Bool system;           /* frames in it are trimmed from contexts */
   Bool written;
   HChar* path;
   HChar build_id[64];
} HpModule;
HpModule* hp_module_of(Addr ip);
HpModule* hp_frame_module(Addr ip, Bool* below_main);
void hp_module_write(HpModule* m);         /* writes the M record once */
void hp_frame_write_symbol(HpModule* m, Addr ip); /* writes the Y record once per frame */
void hp_module_init(void);
void hp_module_fork_child(void);           /* modules and symbols are written again when used */

/* ---- contexts and objects (hp_alloc.c) ---- */
typedef struct HpObj HpObj;
struct HpCtx;
typedef struct HpCtx {
   struct HpCtx* next;    /* hash chain */
   UWord hash;
   UInt id;
   UInt nframes;
   HChar kind;            /* m c r n N a: how the first object here was allocated */
   ULong nobj, bytes, max_live, live;
   ULong nobj_base;       /* objects of nobj not in this process's profile (allocated before a fork and freed then) */
   ULong loads, stores, lbytes, sbytes;
   ULong last_seq;        /* id of the latest object allocated here */
   HpObj* last_obj;       /* that object (holds a reference) */
   Addr ips[0];
} HpCtx;

struct HpObj {            /* 104 bytes; the first cache line holds what accesses touch */
   Addr addr;
   SizeT size;
   ULong id;              /* global allocation sequence number, from 1 */
   ULong prev_ctx_seq;    /* id of the previous object from the same context, 0 if none */
   ULong next_ctx_seq;    /* id of the next object from the same context, 0 if none yet */
   UInt refs;             /* references: live, affinity queues, ctx->last_obj */
   UInt cid;              /* context id */
   ULong loads;
   /* second line */
   ULong stores, lbytes, sbytes;
   ULong inst;            /* n-th object from its context, from 0 */
   ULong alloc_t;         /* heap-access clock at allocation */
   UShort tid;
   Bool big;              /* larger than max_object_size */
};

extern ULong hp_clock;         /* heap accesses so far: the profile's clock */
extern ULong hp_nobjects;      /* objects allocated so far */
extern UInt  hp_ncontexts;
extern Addr  hp_heap_lo;       /* every tracked block lies in [lo, lo+span) */
extern ULong hp_heap_span;

HpObj* hp_map_find(Addr a);
HpCtx* hp_context_unwind(ThreadId tid, HChar kind);  /* the full unwind: always exact */
HpCtx* hp_context_of(ThreadId tid, HChar kind);      /* through the context cache when on */
void hp_ctxcache_fini(void);                         /* its Z records */
void hp_obj_unref(HpObj* o);
void hp_alloc_init(void);
void hp_alloc_start(void);     /* after the options are read */
void hp_alloc_fini(void);      /* writes live objects and context totals */
void hp_alloc_fork_child(void);/* a forked child's profile: its inherited live objects, counts from zero */
void hp_alloc_write_contexts(UInt n); /* C records of contexts 0..n-1 (a forked child's file starts) */

/* ---- instrumentation (hp_access.c) ---- */
IRSB* hp_instrument(VgCallbackClosure* closure, IRSB* bb, const VexGuestLayout* layout,
                    const VexGuestExtents* vge, const VexArchInfo* archinfo_host,
                    IRType gWordTy, IRType hWordTy);
void hp_access_set_thread(ThreadId tid);
extern ThreadId hp_cur_tid;

/* ---- affinity (hp_affinity.c) ---- */
void hp_affinity_init(void);
void hp_affinity_access(ThreadId tid, HpObj* o, UInt size);
void hp_affinity_thread_exit(ThreadId tid);
void hp_affinity_fini(void);   /* writes A records */
void hp_affinity_reset(void);  /* empties every queue (a sampling window starts) */
void hp_affinity_fork_child(void); /* the graph and the queues emptied (a forked child's profile starts) */
extern ULong hp_affinity_pairs;
extern ULong hp_stat_aff_walks, hp_stat_aff_entries;  /* walks made, queue entries visited */

/* ---- pointer edges (hp_edges.c) ---- */
void hp_edges_init(void);
void hp_edges_store(HpObj* from, Addr at, UWord value);
void hp_edges_fini(void);      /* writes P records */
void hp_edges_fork_child(void);

/* ---- reference stream (hp_stream.c) ---- */
void hp_stream_init(void);
void hp_stream_access(HpObj* o);
void hp_stream_fini(void);
void hp_stream_gap(void);      /* the next access is written even if it repeats the last */
void hp_stream_fork_child(void);

/* ---- time-window sampling (hp_sample.c) ---- */
extern ULong hp_guard_span;    /* the bound translated code checks: hp_heap_span, 0 while off */
extern Bool hp_sample_on;
extern Bool hp_sample_bare;    /* translate without instrumentation (an off window, --sample-retranslate) */
/* Pointer stores recorded in off windows too, so P counts are exact (--sample-edges, default
 * yes): the planner's structure detection tests whether any store linked a field, which a
 * sample answers "no" too often. Not with --sample-retranslate (off windows are bare). */
static inline Bool hp_edges_every_window(void)
{
   return hp_opt.sample && hp_opt.pointer_edges && hp_opt.sample_edges && !hp_opt.sample_retranslate;
}
extern UInt hp_sample_period;  /* 1 when not sampling */
void hp_sample_init(void);
void hp_sample_tick(ULong blocks);  /* at every scheduler boundary */
void hp_sample_fini(void);
/* An access-derived count as written: the sampled count times the period (an unbiased
 * estimate of the full count); unchanged in a full profile. */
static inline ULong hp_est(ULong raw) { return raw * hp_sample_period; }

/* ---- output (hp_output.c) ---- */
Bool hp_out_open(const HChar* path);
void hp_out_printf(const HChar* fmt, ...) PRINTF_CHECK(1, 2);
void hp_out_puts(const HChar* s);
void hp_out_u64(ULong v);              /* fast decimal, no separator */
void hp_out_i64(Long v);
void hp_out_char(HChar c);
void hp_out_escaped(const HChar* s);   /* writes s with space, %, newline as %XX */
void hp_out_flush(void);
UInt hp_out_checksum(void);            /* flushes; CRC-32 of every byte written so far */
void hp_out_close(void);
void hp_out_disable(void);             /* after fork, in a child that writes no profile */
void hp_out_defer(void (*start)(void)); /* after fork, in a child that writes its own: start() opens it at the first write */

/* ---- a small hash of (k1,k2) -> count, used for graphs ---- */
typedef struct { ULong k1, k2, n; } HpCount;
typedef struct {
   HpCount* tab;
   ULong mask, used;
   ULong max_keys;        /* 0: unbounded; else new keys past it are dropped (--graph-max) */
   ULong dropped_keys, dropped_n;
} HpCountMap;
void hp_cm_init(HpCountMap* m, ULong cap_pow2);
void hp_cm_add_slow(HpCountMap* m, ULong k1, ULong k2, ULong n);
void hp_cm_cap(HpCountMap* m);                               /* bounds m at --graph-max keys */
void hp_cm_clear(HpCountMap* m);                             /* every key gone (a forked child starts) */
void hp_cm_write_dropped(const HpCountMap* m, const HChar* name); /* Z records when keys were dropped */
ULong hp_cm_get(const HpCountMap* m, ULong k1, ULong k2);   /* 0 when absent */
static inline ULong hp_cm_hash(ULong a, ULong b)
{
   ULong h = (a ^ (b * 0x9E3779B97F4A7C15ULL)) * 0xC2B2AE3D27D4EB4FULL;
   return h ^ (h >> 32);
}
static inline void hp_cm_add(HpCountMap* m, ULong k1, ULong k2, ULong n)
{
   HpCount* c = &m->tab[hp_cm_hash(k1, k2) & m->mask];
   if (LIKELY(c->k1 == k1 && c->k2 == k2 && c->n)) { c->n += n; return; }
   hp_cm_add_slow(m, k1, k2, n);
}

#endif
