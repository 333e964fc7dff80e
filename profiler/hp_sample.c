/* Time-window sampling (--sample=yes): heap accesses are profiled in one window out of every
 * --sample-period, and every count that comes from accesses is written multiplied by the
 * period, an unbiased estimate of the full profile's count.
 *
 * Windows are --sample-window superblocks of guest code long (Valgrind's own count of
 * executed blocks, the same whether a window is profiled or not). Which windows are profiled
 * is stratified: the windows are taken R at a time, and in each such run one window is
 * profiled, at an offset drawn from (--sample-seed, the run's index) plus --sample-phase,
 * modulo R. Every window, so every block and heap access, is profiled with probability
 * exactly 1/R whatever the program does, so count * R has the full count as its expectation
 * (Horvitz-Thompson). One window per run of R keeps the number of profiled windows fixed
 * (little variance on short runs), and a fresh offset per run keeps a program that repeats
 * itself from meeting the same phase every time (aliasing). The first version used one
 * offset for the whole run (systematic sampling); on lua5.4's measuring input two affinity
 * edges came out 2.9x their full weight with it, and within 0.7-1.4x with this (one run
 * each: consistent with aliasing, not proof of it). The R phases of one seed partition the windows, so
 * for a deterministic program their raw counts add up to the full profile's exactly
 * (tests/test_profiler_scale.py).
 * Switching happens at Valgrind's scheduler boundaries (the start_client_code hook: every
 * thread time slice of at most 100,000 blocks, and after every system call and allocation),
 * so a window starts or ends within one time slice of its nominal boundary. Off means the
 * bound that translated code compares heap addresses against is 0, so no helper is called:
 * an off window costs the inline range check per non-stack access, nothing is retranslated.
 * Allocations are recorded in every window (contexts, objects, the address map), so an
 * access in an on window to an object allocated in an off one is attributed exactly;
 * allocation counts, sizes and neighbours (X and N records' object fields) are exact.
 *
 * Affinity: the queues are emptied when a window turns on, so no pair spans an off window;
 * the first accesses of each on window see a shorter history than in a full profile (at most
 * A bytes' worth of pairs lost per window), a small downward bias reported in the docs. */
#include "hp.h"
#include "pub_tool_transtab.h"
extern Bool vgPlain_ok_to_discard_translations;   /* coregrind's, not in the tool headers */

ULong hp_guard_span;        /* translated code's bound: hp_heap_span, 0 while off */
Bool hp_sample_on = True;
Bool hp_sample_bare;        /* --sample-retranslate: translate without instrumentation now */
UInt hp_sample_period = 1;  /* R; 1 = every access profiled */
static ULong cur_window = ~0ULL;
static ULong on_since, on_blocks, last_blocks, windows_on, retranslations;

void hp_sample_init(void)
{
   if (!hp_opt.sample) return;
   hp_sample_period = hp_opt.sample_period;
   hp_sample_on = False;
   hp_guard_span = 0;
   hp_sample_bare = hp_opt.sample_retranslate;
}

/* splitmix64 of (seed, run of R windows): the profiled window's offset in that run */
static ULong offset_in_run(ULong run)
{
   ULong z = hp_opt.sample_seed * 0xD1B54A32D192ED03ULL + run + 0x9E3779B97F4A7C15ULL;
   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
   z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
   return ((z ^ (z >> 31)) + hp_opt.sample_phase) % hp_sample_period;
}

void hp_sample_tick(ULong blocks)
{
   if (!hp_opt.sample) return;
   last_blocks = blocks;
   ULong w = blocks / hp_opt.sample_window;
   if (w == cur_window) return;
   cur_window = w;
   Bool now = w % hp_sample_period == offset_in_run(w / hp_sample_period);
   if (now == hp_sample_on) return;
   if (now) {
      hp_affinity_reset();
      hp_stream_gap();
      on_since = blocks;
      windows_on++;
   } else {
      on_blocks += blocks - on_since;
   }
   hp_sample_on = now;
   hp_guard_span = now ? hp_heap_span : 0;
   if (hp_opt.sample_retranslate) {
      /* Off windows run code translated without instrumentation (--tool=none's cost, not
       * that of idle instrumented code); every switch throws all translations away, as
       * callgrind's instrumentation toggle does, so it only pays with long windows. */
      hp_sample_bare = !now;
      /* The core allows discarding only inside a tool's client-request handler, a
       * scheduler-level point like this hook (no translation is running here); the flag
       * is the core's own (pub_core_transtab.h), set as its request wrapper sets it. */
      vgPlain_ok_to_discard_translations = True;
      VG_(discard_translations_safely)((Addr)0x1000, ~(SizeT)0xfff, "hlprof-sample");
      vgPlain_ok_to_discard_translations = False;
      retranslations++;
   }
}

void hp_sample_fini(void)
{
   if (!hp_opt.sample) return;
   if (hp_sample_on) on_blocks += last_blocks - on_since;
   hp_out_printf("Z sample_blocks %llu\n", last_blocks);
   hp_out_printf("Z sample_on_blocks %llu\n", on_blocks);
   hp_out_printf("Z sample_windows_on %llu\n", windows_on);
   hp_out_printf("Z sampled_heap_accesses %llu\n", hp_clock);
   if (hp_opt.sample_retranslate) hp_out_printf("Z sample_retranslations %llu\n", retranslations);
}
