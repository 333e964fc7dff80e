/* hlsim: the oracle in a helper process, fed through a ring in shared memory (see the header).
 *
 * Ring records are two words. A reference: w0 = address | size << 47 | store << 63 (client
 * addresses are below 2^47; sizes are at most 0xffff), w1 = pc (below 2^48). The other kinds
 * carry their kind in the top four bits of w1: an allocation (w0 = p, w1 = ctx << 40 | n),
 * a free (w0 = p), a new context (w0 = ra, w1 = ctx), and a reference whose address does
 * not fit (w0 = address, w1 = store << 59 | size), followed by a record holding its pc.
 *
 * Synchronisation: one producer (the tool runs one client thread at a time), one consumer.
 * Each side publishes its index every BATCH records, so the two cores rarely share a line;
 * x86 keeps stores in order, so a compiler barrier before publishing is enough. A side that
 * must wait spins briefly, then sleeps a millisecond in poll(). The helper exits if the
 * parent goes away.
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
#include "hs_objects.h"
#include "hs_oracle_feed.h"

/* Valgrind's core maps vgdb's shared memory with the first; neither is in the tool headers. */
extern SysRes VG_(am_shared_mmap_file_float_valgrind)(SizeT length, UInt prot, Int fd, Off64T offset);
extern Int VG_(kill)(Int pid, Int signo);

#define RING_BITS 20            /* 1M records, 16 MiB: ~15 ms of the producer's slack */
#define RING ((ULong)1 << RING_BITS)
#define BATCH 4096              /* records between index updates */
#define SPINS 2000              /* checks before sleeping */

enum { K_ACCESS = 0, K_ALLOC = 1, K_FREE = 2, K_CONTEXT = 3, K_WIDE = 4, K_PC = 5 };
#define KIND(w1) ((UInt)((w1) >> 60))
#define TAG(k) ((ULong)(k) << 60)

typedef struct { ULong w0, w1; } Rec;

typedef struct {
   volatile ULong head; /* records written (producer) */
   char pad0[56];
   volatile ULong tail; /* records replayed (helper) */
   char pad1[56];
   volatile UInt done;  /* producer: head is final */
   volatile UInt ok;    /* helper: the results below are written */
   volatile Int helper_pid;
   hs_stats stats;
   ULong packed_bytes, dropped;
   UInt nctx;
} Shared;

Bool of_active;
static Shared* sh;
static ULong* ctx_accesses; /* [max_contexts], after the header */
static Rec* ring;
static ULong head, tail_seen; /* producer's own index and its last view of the tail */
static Int helper_pid, parent_pid;
static UInt max_ctx;

static inline void barrier(void) { __asm__ __volatile__("" ::: "memory"); }
static inline void cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }
static void nap(void) { VG_(poll)(NULL, 0, 1); }

/* ------------------------------------------------------------------ the helper */

static void helper_exit_if_orphaned(void)
{
   if (VG_(kill)(parent_pid, 0) != 0) VG_(exit)(1);
}

static void helper_main(hs_model* oracle)
{
   ULong t = 0, dropped = 0;
   UInt waits = 0;
   ho_oracle = True; /* the helper asks which pages hold objects; the parent does not */
   for (;;) {
      ULong h = sh->head;
      if (h == t) {
         if (sh->done) {
            barrier();
            if (sh->head == t) break;
            continue;
         }
         if (++waits < SPINS) cpu_relax();
         else { nap(); helper_exit_if_orphaned(); }
         continue;
      }
      waits = 0;
      barrier();
      for (; t < h; t++) {
         const Rec* r = &ring[t & (RING - 1)];
         ULong w0 = r->w0, w1 = r->w1;
         switch (KIND(w1)) {
         case K_ACCESS:
            ho_oracle_access(oracle, w0 & (((Addr)1 << 47) - 1), (UInt)((w0 >> 47) & 0xffff),
                             (Bool)(w0 >> 63), w1, &dropped);
            break;
         case K_ALLOC:
            ho_alloc_ctx(w0, w1 & (((ULong)1 << 40) - 1), (UInt)((w1 >> 40) & 0xfffff));
            break;
         case K_FREE: ho_free(w0); break;
         case K_CONTEXT: ho_add_context((UInt)(w1 & 0xffffffff), w0); break;
         case K_WIDE: {
            const Rec* pc = &ring[(t + 1) & (RING - 1)];
            if (t + 1 == h) goto publish; /* its pc record is not published yet: wait for it */
            ho_oracle_access(oracle, w0, (UInt)(w1 & 0xffff), (Bool)((w1 >> 59) & 1), pc->w0, &dropped);
            t++;
            break;
         }
         default:
            VG_(fmsg)("hlsim: oracle helper: bad ring record\n");
            VG_(exit)(1);
         }
         if ((t & (BATCH - 1)) == 0) sh->tail = t;
      }
   publish:
      barrier();
      sh->tail = t;
   }
   hs_finish(oracle);
   sh->stats = *hs_get_stats(oracle);
   sh->packed_bytes = ho_packed_bytes;
   sh->dropped = dropped;
   sh->nctx = ho_nctx;
   for (UInt c = 0; c < ho_nctx && c < max_ctx; c++) ctx_accesses[c] = ho_ctx[c].accesses;
   barrier();
   sh->ok = 1;
   VG_(exit)(0);
}

/* ------------------------------------------------------------------ the parent */

Bool of_start(hs_model* oracle, UInt max_contexts, const HChar** why)
{
   max_ctx = max_contexts;
   SizeT ctx_bytes = ((SizeT)max_contexts * sizeof(ULong) + 4095) & ~(SizeT)4095;
   SizeT size = 4096 + ctx_bytes + RING * sizeof(Rec);
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
   ctx_accesses = (ULong*)((Addr)sh + 4096);
   ring = (Rec*)((Addr)sh + 4096 + ctx_bytes);
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

static void publish(void)
{
   barrier();
   sh->head = head;
}

static void wait_for_space(void)
{
   publish();
   for (UInt waits = 0; head - (tail_seen = sh->tail) >= RING; waits++) {
      if (waits < SPINS) cpu_relax();
      else nap();
   }
}

static inline void push(ULong w0, ULong w1)
{
   if (head - tail_seen >= RING) wait_for_space();
   Rec* r = &ring[head & (RING - 1)];
   r->w0 = w0;
   r->w1 = w1;
   if ((++head & (BATCH - 1)) == 0) publish();
}

void of_access(Addr a, UInt size, Bool store, Addr pc)
{
   if (LIKELY((a >> 47) == 0 && (pc >> 48) == 0)) {
      push(a | (ULong)size << 47 | (ULong)store << 63, pc);
   } else {
      push(a, TAG(K_WIDE) | (ULong)store << 59 | size);
      push(pc, TAG(K_PC));
   }
}

void of_new_context(UInt ctx, Addr ra) { push(ra, TAG(K_CONTEXT) | ctx); }

void of_alloc(Addr p, SizeT n, UInt ctx)
{
   ULong size = n < ((ULong)1 << 40) ? n : ((ULong)1 << 40) - 1;
   push(p, TAG(K_ALLOC) | (ULong)ctx << 40 | size);
}

void of_free(Addr p) { push(p, TAG(K_FREE)); }

Bool of_finish(hs_stats* stats, ULong* dropped)
{
   if (!of_active) return False;
   of_active = False;
   publish();
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
   for (UInt c = 0; c < sh->nctx && c < ho_nctx; c++) ho_ctx[c].accesses = ctx_accesses[c];
   return True;
}

void of_forget(void)
{
   of_active = False;
   helper_pid = 0;
}
