/* hlsim: the oracle simulated in a helper process (hs_oracle_feed.c).
 *
 * The oracle is a second full model (hs_objects.c remaps, model.c simulates), which doubled
 * the tool's time. With the helper, the tool forks at start-up; the parent writes each data
 * reference and each allocation, free and new context to a ring in shared memory, in program
 * order, and the helper replays them through its own copy of the object map and the oracle
 * model. Same events, same order, same code: the helper's counts are those the in-process
 * oracle gives (tests/test_simulator.py compares them). The parent's cost per reference is
 * one 16-byte store; the helper uses a second core when there is one.
 */
#ifndef HLSIM_ORACLE_FEED_H
#define HLSIM_ORACLE_FEED_H
#include "pub_tool_basics.h"
#include "model.h"

/* true while the parent feeds a helper (hs_objects.c then forwards allocations and frees) */
extern Bool of_active;

/* Fork the helper that runs `oracle` (the model built for it) with `max_contexts` contexts;
 * `with_pc`: references carry their instruction address (the stride prefetcher needs it).
 * False, with the reason in *why, if it cannot be started: the caller runs the oracle
 * in-process as before. */
Bool of_start(hs_model* oracle, UInt max_contexts, Bool with_pc, const HChar** why);

/* The producer's side of the ring, inline because every data reference passes here. A
 * reference is one word, address | size << 47 | store << 63 (client addresses are below
 * 2^47, sizes 1..0xffff), then its pc when `with_pc`; a word with size 0 starts any other
 * record (hs_oracle_feed.c). Words are written with non-temporal stores: the parent never
 * reads them, and the ring would otherwise push the model's tables out of its caches. */
#define OF_RING_BITS 20              /* 1M words, 8 MiB: ~8 ms of the producer's slack */
#define OF_RING ((ULong)1 << OF_RING_BITS)
#define OF_BATCH 4096                /* words between index updates */
/* of_wp: where the next word goes; of_wend: how far the producer may write before
 * of_refill() publishes, waits for room or wraps (never more than OF_BATCH words ahead) */
extern ULong *of_wp, *of_wend;
extern Bool of_with_pc;
void of_refill(void);
void of_access_wide(Addr a, UInt size, Bool store, Addr pc);

static inline void of_put(ULong w)
{
   __asm__ __volatile__("movnti %1, %0" : "=m"(*of_wp) : "r"(w));
   of_wp++;
}

/* a record of up to 3 words begins */
static inline void of_begin(void)
{
   if (UNLIKELY(of_wp + 3 > of_wend)) of_refill();
}

/* One data reference, as the tool saw it (before remapping). */
static inline void of_access(Addr a, UInt size, Bool store, Addr pc)
{
   if (UNLIKELY((a >> 47) != 0)) { of_access_wide(a, size, store, pc); return; }
   of_begin();
   of_put(a | (ULong)(size ? size : 1) << 47 | (ULong)store << 63);
   if (of_with_pc) of_put(pc);
}

/* the entry stack pointer of the allocation call the references that follow are made in,
 * 0 = none (hs_objects.h: ho_remap_in_allocator); sent when it changes */
extern Addr of_alloc_sp;
void of_allocator_state(Addr sp);
/* The main model's events of one classification (a line access's misses, TLB misses and
 * useful prefetch, or an evicted prefetched line), for the helper to charge to the context
 * of the object at `a` then: it holds the same object map at the same point of the stream,
 * so the parent need not walk the map on its misses. */
void of_charge(Addr a, const hs_bucket_stats* events);
/* After of_finish: per context, the accesses and the charged events, OF_ROW words each
 * (accesses, misses[3], tlb_misses[2], pf_useful, pf_useless). */
#define OF_ROW 8
const ULong* of_context_rows(UInt* n);
void of_new_context(UInt ctx, Addr ra);
void of_alloc(Addr p, SizeT n, UInt ctx);
void of_free(Addr p);

/* End of the run: let the helper finish and copy its results into `stats`, the contexts'
 * access counts (ho_ctx[].accesses), ho_packed_bytes and *dropped. False if the helper
 * failed (the oracle is then left out of the output). */
Bool of_finish(hs_stats* stats, ULong* dropped);

/* The client forked: this process is a copy of the parent and must not write to the ring. */
void of_forget(void);
#endif
