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

/* Fork the helper that runs `oracle` (the model built for it) with `max_contexts` contexts.
 * False, with the reason in *why, if it cannot be started: the caller runs the oracle
 * in-process as before. */
Bool of_start(hs_model* oracle, UInt max_contexts, const HChar** why);

/* One data reference, as the tool saw it (before remapping). */
void of_access(Addr a, UInt size, Bool store, Addr pc);
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
