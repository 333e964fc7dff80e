/* hlsim's native-time model parameters (issue 26), in one place: each default with the reason
 * for it. The older cache / TLB defaults are in hs_default_config (model.c); options.c parses
 * both; docs/simulator.md lists them. All the parts below are off unless switched on
 * (--timing=mlp, --pf-adjacent, --pf-streamer, --dram, --walk-cache, or all with --hw=yes). */
#ifndef HLSIM_TUNABLES_H
#define HLSIM_TUNABLES_H

/* ---- core timing (timing.c): memory-level parallelism and dependent loads */
#define HS_ROB 224            /* reorder-buffer entries of a Skylake-class core: misses this close overlap */
#define HS_MSHR 12            /* L1D fill buffers (Skylake 12): at most this many misses in flight */
#define HS_CPI_X100 25        /* 0.25 cycles per instruction without stalls (4-wide), as --instr-cost */
#define HS_DEP_SPAN 128       /* a load within this many bytes above a loaded pointer derives from it (struct fields) */
#define HS_DEP_TABLE 4096     /* recently loaded late pointers remembered (direct-mapped, by 64-byte line) */
#define HS_LINE_TABLE 1024    /* lines whose fill is still in flight (a hit on one waits for it) */
#define HS_PF_QUEUE 16        /* prefetches in flight at once (the L2's 16-entry superqueue) */
#define HS_FIFO 256           /* outstanding misses kept in program order (more than ROB / misses need) */

/* ---- L2 hardware prefetchers (model.c) */
#define HS_STREAMER_ENTRIES 32  /* Intel's L2 streamer tracks 32 streams, one 4 KiB page each */
#define HS_STREAMER_DIST 4      /* lines kept ahead: a dependent chase over sequential lines runs at 1/4 of the
                                   memory latency per line on these VMs, twice as fast over 4 streams (chase_latency.c) */
#define HS_STREAMER_WINDOW 4     /* a move of more lines within the page breaks the stream: lines shuffled
                                   within pages run 3.6x a sequential chase natively (chase_latency.c) */
#define HS_STREAMER_DEGREE 2    /* new prefetches per access on a confirmed stream */
#define HS_STREAMER_CONFIRM 2   /* accesses in one direction before the stream is trusted */
/* the adjacent-line prefetcher completes the 128-byte pair on an L2 miss: no parameter */

/* ---- DRAM row buffer (model.c) */
#define HS_DRAM_BANKS 32        /* 2 ranks x 16 banks (DDR4) across the channel */
#define HS_DRAM_ROW 8192        /* bytes per row: 8 KiB pages on DDR4 x8 DIMMs */
#define HS_DRAM_HIT 180         /* cycles for an access to the open row: tRP + tRCD (~28 ns) saved of ~83 ns */

/* ---- page walks through the caches (model.c) */
#define HS_PDE_ENTRIES 32       /* paging-structure cache for the level above the PTE (2 MiB regions) */
#define HS_PDE_WAYS 4
#define HS_WALK_BASE (1ULL << 56)     /* synthetic addresses of the PTE lines (above any user address) */
#define HS_WALK_PDE_BASE (1ULL << 57) /* and of the PDE lines */

#endif
