/* hlsim core timing: what an out-of-order core makes of the cache model's latencies.
 *
 * The cache model says where each access was served and at what latency; this turns those
 * latencies into run time the way a core with a reorder buffer does (an interval model):
 * instruction i dispatches at i x CPI + the stalls so far; a miss occupies a fill buffer
 * (MSHR) and completes at its start + latency; it starts at its dispatch, or, when its
 * address was loaded by a miss still in flight (a pointer chase), when that load completes.
 * Instruction j + ROB cannot dispatch before the miss at j completes: a stall. So misses
 * within a ROB of each other overlap (memory-level parallelism) unless one's address comes
 * from the other, and a chain of dependent misses costs the sum of its latencies.
 *
 * Which loads are dependent: `value` mode remembers the 64-bit values of loads that finished
 * late (a miss, or a hit on a line still in flight, or a load that itself waited) and treats
 * a later load whose address lies within HS_DEP_SPAN bytes above such a value as derived from
 * it (base pointer + field offset); `none` treats every miss as independent (perfect MLP within
 * the window); `all` serializes each load miss behind the previous one (no MLP).
 * Plain C, no library calls; the host supplies memory. */
#ifndef HLSIM_TIMING_H
#define HLSIM_TIMING_H

typedef unsigned long long hs_tu64;

enum hs_deps { HS_DEPS_VALUE = 0, HS_DEPS_NONE, HS_DEPS_ALL };

typedef struct {
  unsigned rob;      /* instructions */
  unsigned mshr;     /* misses in flight, 1..64 */
  unsigned cpi_x100; /* cycles per instruction without stalls, in 1/100 */
  unsigned deps;     /* enum hs_deps */
  unsigned span;     /* bytes above a loaded pointer that derive from it */
} hs_timing_cfg;

typedef struct {
  hs_tu64 stall;          /* cycles (1/100) of dispatch stalled behind an incomplete miss */
  hs_tu64 load_misses;    /* L1 load misses timed */
  hs_tu64 dependent;      /* of them, started late because their address came from a late load */
  hs_tu64 mshr_waits;     /* misses that waited for a free fill buffer */
  hs_tu64 line_waits;     /* L1 hits on a line whose fill was still in flight */
} hs_timing_stats;

typedef struct hs_timing hs_timing;

void hs_timing_default(hs_timing_cfg *c);
const char *hs_timing_check(const hs_timing_cfg *c);
hs_timing *hs_timing_new(const hs_timing_cfg *c, void *(*alloc)(void *ctx, hs_tu64 bytes), void *ctx);
/* The per-access calls, hs_timing_access (one demand access) and hs_timing_prefetch (a
 * prefetch triggered by it), are inline in timing_access.h. */
/* Cycles of the whole run after `instr` instructions: dispatch time or the last completion. */
hs_tu64 hs_timing_cycles(hs_timing *t, hs_tu64 instr);
const hs_timing_stats *hs_timing_get_stats(const hs_timing *t);
const char *hs_deps_name(unsigned deps);
int hs_deps_from_name(const char *name); /* -1 if unknown */

#endif
