/* hlsim: the oracle in a helper process, fed through a ring in shared memory (see the header).
 *
 * The ring holds 64-bit words. A data reference is one word (address | size << 47 |
 * store << 63, size at least 1), followed by its pc when the stride prefetcher is on. A word
 * whose size field is 0 is a control word: kind in bits 0..3, and
 *   ALLOC:   ctx in bits 4..35; then the object's address, then its size;
 *   FREE:    then the address;
 *   CONTEXT: ctx in bits 4..35; then the call site's return address;
 *   WIDE:    a reference whose address does not fit: store in bit 4, size in bits 5..20;
 *            then the address, then the pc;
 *   ALLOCATOR: the entry stack pointer of the allocation call the references that follow
 *            are made in, in bits 4..46 (it is 8 mod 16 at a call's entry; 0: none);
 *   PAD:     the word 0, filling the ring's end when a record would not fit before it;
 *   CHARGE:  counts of the main model's events, 4 bits each in bits 4..31 (misses[0..2],
 *            tlb_misses[0..1], pf_useful, pf_useless); then the address they are charged by.
 *
 * Synchronisation: one producer (the tool runs one client thread at a time), one consumer.
 * The producer publishes its index at record boundaries at most every OF_BATCH words (words
 * count from the start of the run; word i is at ring[i % OF_RING]), the consumer its own as
 * it goes, so the cores rarely share a line; the non-temporal stores are fenced
 * before each publication, and x86 keeps the other stores in order, so a compiler barrier
 * is enough there. A side that must wait spins, then yields, then sleeps (wait_round). The
 * helper exits if the parent goes away.
 *
 * The helper is forked twice, so that it is not a child of the client's process: a client
 * that waits for all its children (a shell, a test driver) would otherwise wait for it.
 */
#include "pub_tool_basics.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"
#include "hs_objects.h"
#include "hs_oracle_feed.h"

/* Valgrind's core maps vgdb's shared memory with the first; none is in the tool headers. */
extern SysRes VG_(am_shared_mmap_file_float_valgrind)(SizeT length, UInt prot, Int fd, Off64T offset);
extern Int VG_(kill)(Int pid, Int signo);
extern SysRes VG_(do_syscall)(UWord sysno, RegWord, RegWord, RegWord, RegWord, RegWord, RegWord, RegWord, RegWord);

#define SPINS 4000              /* checks with a pause before yielding the core */
#define YIELDS 20000            /* then sched_yield()s before sleeping (an idle client) */

enum { K_PAD = 0, K_ALLOC = 1, K_FREE = 2, K_CONTEXT = 3, K_WIDE = 4, K_ALLOCATOR = 5, K_CHARGE = 6 };
#define SIZE_OF(w) (((w) >> 47) & 0xffff)

typedef struct {
   volatile ULong head; /* words written (producer) */
   char pad0[56];
   volatile ULong tail; /* words replayed (helper) */
   char pad1[56];
   volatile UInt done;  /* producer: head is final */
   volatile UInt ok;    /* helper: the results below are written */
   volatile Int helper_pid;
   hs_stats stats;
   ULong packed_bytes, dropped;
   UInt nctx;
} Shared;

Bool of_active;
static ULong* of_ring;
ULong *of_wp, *of_wend;
static ULong ring_base;  /* words written before of_ring[0] in the current lap */
static ULong tail_seen;  /* the consumer's index, as last read */
Bool of_with_pc;
Addr of_alloc_sp;
static Shared* sh;
static ULong* rows; /* [max_contexts][OF_ROW], after the header: see of_context_rows */
static Int helper_pid, parent_pid;
static UInt max_ctx;

static inline void barrier(void) { __asm__ __volatile__("" ::: "memory"); }
static inline void cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }
static void nap(void) { VG_(poll)(NULL, 0, 1); }

/* One round of waiting for the other side; `n` counts the rounds so far. The two sides run
 * at about the same speed, so a wait is usually short: spin, then give the core away, and
 * sleep only when the other side has been idle for long (a client blocked in a system call). */
static void wait_round(UInt n)
{
   if (n < SPINS) cpu_relax();
   else if (n < SPINS + YIELDS) VG_(do_syscall)(__NR_sched_yield, 0, 0, 0, 0, 0, 0, 0, 0);
   else nap();
}

/* ------------------------------------------------------------------ the helper */

static void helper_exit_if_orphaned(void)
{
   if (VG_(kill)(parent_pid, 0) != 0) VG_(exit)(1);
}

static void helper_main(hs_model* oracle)
{
   ULong t = 0, told = 0, dropped = 0;
   UInt waits = 0;
   Addr alloc_sp = 0;
   const ULong mask = OF_RING - 1;
   ho_oracle = True; /* the helper asks which pages hold objects; the parent does not */
   for (;;) {
      ULong h = sh->head;
      if (h == t) {
         if (sh->done) {
            barrier();
            if (sh->head == t) break;
            continue;
         }
         wait_round(waits++);
         if (waits > SPINS && waits % 1024 == 0) helper_exit_if_orphaned();
         continue;
      }
      waits = 0;
      barrier();
      /* h is at a record boundary: every record begun before it is complete */
      while (t < h) {
         if (t - told >= OF_BATCH) sh->tail = told = t; /* room for the producer as we go */
         ULong w = of_ring[t++ & mask];
         if (LIKELY(SIZE_OF(w) != 0)) {
            Addr pc = of_with_pc ? of_ring[t++ & mask] : 0;
            ho_oracle_access(oracle, w & (((Addr)1 << 47) - 1), (UInt)SIZE_OF(w), (Bool)(w >> 63), pc, alloc_sp,
                             &dropped);
            continue;
         }
         UInt ctx = (UInt)((w >> 4) & 0xffffffff);
         switch (w & 15) {
         case K_ALLOC: {
            Addr p = of_ring[t++ & mask];
            ho_alloc_ctx(p, of_ring[t++ & mask], ctx);
            break;
         }
         case K_FREE: ho_free(of_ring[t++ & mask]); break;
         case K_CONTEXT: ho_add_context(ctx, of_ring[t++ & mask]); break;
         case K_WIDE: {
            Addr a = of_ring[t++ & mask];
            Addr pc = of_ring[t++ & mask];
            ho_oracle_access(oracle, a, (UInt)((w >> 5) & 0xffff), (Bool)((w >> 4) & 1), pc, alloc_sp, &dropped);
            break;
         }
         case K_ALLOCATOR: alloc_sp = (w & ~(ULong)15) ? (w & (((ULong)1 << 47) - 16)) + 8 : 0; break;
         case K_PAD: break;
         case K_CHARGE: {
            UInt c = ho_classify_ctx(NULL, of_ring[t++ & mask]);
            if (c < max_ctx)
               for (UInt k = 0; k < 7; k++) rows[c * OF_ROW + 1 + k] += (w >> (4 + 4 * k)) & 15;
            break;
         }
         default:
            VG_(fmsg)("hlsim: oracle helper: bad ring word\n");
            VG_(exit)(1);
         }
      }
      barrier();
      sh->tail = told = t;
   }
   hs_finish(oracle);
   sh->stats = *hs_get_stats(oracle);
   sh->packed_bytes = ho_packed_bytes;
   sh->dropped = dropped;
   sh->nctx = ho_nctx;
   for (UInt c = 0; c < ho_nctx && c < max_ctx; c++) rows[c * OF_ROW] = ho_ctx[c].accesses;
   barrier();
   sh->ok = 1;
   VG_(exit)(0);
}

/* ------------------------------------------------------------------ the parent */

Bool of_start(hs_model* oracle, UInt max_contexts, Bool with_pc, const HChar** why)
{
   max_ctx = max_contexts;
   of_with_pc = with_pc;
   SizeT ctx_bytes = ((SizeT)max_contexts * OF_ROW * sizeof(ULong) + 4095) & ~(SizeT)4095;
   SizeT size = 4096 + ctx_bytes + OF_RING * sizeof(ULong);
   HChar path[512];
   VG_(snprintf)(path, sizeof path, "%s/hlsim-oracle-%d", VG_(tmpdir)(), VG_(getpid)());
   SysRes r = VG_(open)(path, VKI_O_CREAT | VKI_O_EXCL | VKI_O_RDWR, 0600);
   if (sr_isError(r)) { *why = "cannot create the shared ring file in the temporary directory"; return False; }
   Int fd = sr_Res(r);
   VG_(unlink)(path);
   UChar zero = 0;
   if (VG_(lseek)(fd, size - 1, VKI_SEEK_SET) != (Off64T)(size - 1) || VG_(write)(fd, &zero, 1) != 1) {
      VG_(close)(fd);
      *why = "cannot size the shared ring file";
      return False;
   }
   SysRes m = VG_(am_shared_mmap_file_float_valgrind)(size, VKI_PROT_READ | VKI_PROT_WRITE, fd, 0);
   VG_(close)(fd);
   if (sr_isError(m)) { *why = "cannot map the shared ring"; return False; }
   sh = (Shared*)sr_Res(m);
   tl_assert(sizeof(Shared) <= 4096);
   rows = (ULong*)((Addr)sh + 4096);
   of_ring = (ULong*)((Addr)sh + 4096 + ctx_bytes);
   of_wp = of_wend = of_ring; /* the first record refills */
   parent_pid = VG_(getpid)();
   Int pid = VG_(fork)();
   if (pid < 0) { *why = "cannot fork the helper"; return False; }
   if (pid == 0) {
      Int h = VG_(fork)();
      if (h == 0) helper_main(oracle); /* does not return */
      sh->helper_pid = h;
      VG_(exit)(h > 0 ? 0 : 1);
   }
   Int status = 0;
   if (VG_(waitpid)(pid, &status, 0) != pid || status != 0 || sh->helper_pid <= 0) {
      *why = "cannot fork the helper";
      return False;
   }
   helper_pid = sh->helper_pid;
   of_active = True;
   return True;
}

static void publish(ULong head)
{
   __asm__ __volatile__("sfence" ::: "memory"); /* the non-temporal stores before the index */
   sh->head = head;
}

static void wait_for_room(ULong head, ULong words)
{
   for (UInt waits = 0; head + words - (tail_seen = sh->tail) > OF_RING; waits++) wait_round(waits);
}

void of_refill(void)
{
   ULong head = ring_base + (ULong)(of_wp - of_ring);
   ULong* end = of_ring + OF_RING;
   if (end - of_wp < 3) { /* no record fits before the ring's end: pad to it and start over */
      wait_for_room(head, (ULong)(end - of_wp));
      while (of_wp < end) of_put(K_PAD);
      ring_base += OF_RING;
      of_wp = of_ring;
      head = ring_base;
   }
   publish(head);
   if (head + 3 - tail_seen > OF_RING) wait_for_room(head, 3);
   ULong room = tail_seen + OF_RING - head;
   if (room > OF_BATCH) room = OF_BATCH;
   if (room > (ULong)(end - of_wp)) room = (ULong)(end - of_wp);
   of_wend = of_wp + room;
}

void of_access_wide(Addr a, UInt size, Bool store, Addr pc)
{
   of_begin();
   of_put(K_WIDE | (ULong)store << 4 | (ULong)size << 5);
   of_put(a);
   of_put(pc);
}

void of_allocator_state(Addr sp)
{
   of_alloc_sp = sp;
   of_begin();
   of_put(K_ALLOCATOR | (sp & (((ULong)1 << 47) - 16)));
}

void of_charge(Addr a, const hs_bucket_stats* e)
{
   const ULong n[7] = {e->misses[0], e->misses[1], e->misses[2], e->tlb_misses[0], e->tlb_misses[1],
                       e->pf_useful, e->pf_useless};
   ULong w = K_CHARGE;
   for (UInt k = 0; k < 7; k++) {
      tl_assert(n[k] <= 15); /* one classification: each event at most once */
      w |= n[k] << (4 + 4 * k);
   }
   of_begin();
   of_put(w);
   of_put(a);
}

const ULong* of_context_rows(UInt* n)
{
   *n = sh->nctx < max_ctx ? sh->nctx : max_ctx;
   return rows;
}

void of_new_context(UInt ctx, Addr ra)
{
   of_begin();
   of_put(K_CONTEXT | (ULong)ctx << 4);
   of_put(ra);
}

void of_alloc(Addr p, SizeT n, UInt ctx)
{
   of_begin();
   of_put(K_ALLOC | (ULong)ctx << 4);
   of_put(p);
   of_put(n);
}

void of_free(Addr p)
{
   of_begin();
   of_put(K_FREE);
   of_put(p);
}

Bool of_finish(hs_stats* stats, ULong* dropped)
{
   if (!of_active) return False;
   of_active = False;
   publish(ring_base + (ULong)(of_wp - of_ring));
   barrier();
   sh->done = 1;
   /* wait while the helper lives and makes progress (a crashed helper may stay a zombie) */
   ULong last_tail = sh->tail;
   UInt idle_ms = 0;
   while (!sh->ok) {
      if (VG_(kill)(helper_pid, 0) != 0 || idle_ms > 10000) {
         VG_(umsg)("hlsim: the oracle helper failed; the oracle is left out\n");
         return False;
      }
      nap();
      if (sh->tail != last_tail) { last_tail = sh->tail; idle_ms = 0; }
      else idle_ms++;
   }
   barrier();
   *stats = sh->stats;
   *dropped = sh->dropped;
   ho_packed_bytes = sh->packed_bytes;
   for (UInt c = 0; c < sh->nctx && c < ho_nctx; c++) ho_ctx[c].accesses = rows[c * OF_ROW];
   return True;
}

void of_forget(void)
{
   of_active = False;
   helper_pid = 0;
}
