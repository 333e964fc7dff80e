/* Bounded object reference stream (for PreFix-style hot data stream analysis): the ids of
 * the heap objects accessed, all threads interleaved in execution order, consecutive
 * repeats collapsed. Written as S lines of signed deltas between successive ids (the first
 * delta of the whole stream is relative to 0). After --stream-max entries the stream is
 * cut: a W line says so at that moment and the summary records how many were dropped. */
#include "hp.h"

#define PER_LINE 512
static ULong last_id, prev_written, entries, dropped;
static Long pending[PER_LINE];
static UInt npending;

static void flush_line(void)
{
   if (!npending) return;
   hp_out_char('S');
   for (UInt i = 0; i < npending; i++) {
      hp_out_char(' ');
      hp_out_i64(pending[i]);
   }
   hp_out_char('\n');
   npending = 0;
}

void hp_stream_init(void) {}

void hp_stream_gap(void) { last_id = 0; }

void hp_stream_access(HpObj* o)
{
   if (o->id == last_id) return;
   last_id = o->id;
   if (UNLIKELY(entries >= hp_opt.stream_max)) {
      if (dropped++ == 0) {
         flush_line();
         hp_out_printf("W stream-truncated %llu\n", entries);
      }
      return;
   }
   entries++;
   pending[npending++] = (Long)(o->id - prev_written);
   prev_written = o->id;
   if (npending == PER_LINE) flush_line();
}

/* a forked child's stream starts empty (the parent writes what it buffered) */
void hp_stream_fork_child(void)
{
   last_id = prev_written = entries = dropped = 0;
   npending = 0;
}

void hp_stream_fini(void)
{
   flush_line();
   hp_out_printf("Z stream_entries %llu\n", entries);
   hp_out_printf("Z stream_truncated %d\n", dropped ? 1 : 0);
   hp_out_printf("Z stream_dropped %llu\n", dropped);
}
