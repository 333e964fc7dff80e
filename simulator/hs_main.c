/* hlsim: a Valgrind tool that feeds every data load and store of the client to the cache /
 * TLB / prefetcher model in model.c and writes the result as JSON. It does not replace
 * malloc: the layout simulated is the one the client's own allocator produces.
 *
 * Per-pool attribution: an address in the heaplayout pool range is charged to the pool id
 * in its chunk's header (runtime/src/internal.h: struct hl_chunk starts with a u32 magic
 * "HLCK" and a u16 pool id; chunks are aligned to their size and the header lies at its
 * colour's offset, hl_chunk_at). The range comes from --pool-range=LO-HI or is detected as
 * the client's MAP_NORESERVE mmap at --pool-hint (the runtime maps its range from there as
 * it grows: runtime/src/tunables.h, HL_RANGE_HINT; its largest size is --pool-span less
 * the alignment) or, where the runtime could not map there and mapped the whole range
 * anywhere, as a MAP_NORESERVE mmap of exactly --pool-span bytes (range + its alignment,
 * the larger of 16 MiB and a chunk, as hl_range_init maps it).
 */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_machine.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_clreq.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_clientstate.h"
#include "model.h"
#include "options.h"
#include "hs_objects.h"
#include "hs_hooks.h"
#include "hs_oracle_feed.h"

#define HS_CHUNK_MAGIC 0x484c434bu
/* where a chunk's header lies (runtime/src/tunables.h, HL_HEADER_COLORS) */
#define HS_HEADER_COLORS 16u
#define HS_HEADER_COLOR_STEP (4096u + 128u)
#define HS_HEADER_COLOR_BIT 20u
#define MAX_POOLS 65536

static hs_options opts;
static hs_model* model;
static const HChar* out_file = "hlsim.out.%p";
static ULong pool_span = (16ULL << 30) + (16ULL << 20); /* runtime defaults: 16 GiB range + 16 MiB alignment */
static ULong pool_hint = 0x600000000000ULL; /* runtime/src/tunables.h, HL_RANGE_HINT */
static ULong pool_chunk = 1ULL << 20;
static Bool per_pool = True;
static Bool pool_range_given;
static ULong pool_lo, pool_hi;
static Bool track_contexts = True;
static Bool oracle = False;
static Bool trace_hooks = False;
static Long max_contexts = 4096;
static Long top_contexts = 50;
static hs_model* oracle_model;
static const HChar* oracle_hot = NULL;
static ULong oracle_dropped;
static Bool oracle_helper = True; /* run the oracle in a helper process (hs_oracle_feed.c) */
static Bool fixed_random = False;

/* ------------------------------------------------------------------ attribution by pool */

/* Chunk headers known to lie in readable client memory. The range is reserved as it grows,
 * and a prefetch (a stride running past the last chunk) can name a line in its unmapped
 * part: reading that header faulted in the tool, which Valgrind reported as the client's
 * SIGSEGV. Direct-mapped by chunk, each entry the header's address + 1 (0 is no entry);
 * forgotten whenever the client maps, unmaps or reprotects memory. */
#define HEADER_OK 256
static Addr header_ok[HEADER_OK];

static void forget_headers(void)
{
   VG_(memset)(header_ok, 0, sizeof header_ok);
}

/* bucket 0: outside the pool range; 1 + id: heaplayout pool id; MAX_POOLS + 1: in the range
 * but no valid chunk header (or none mapped) */
static unsigned classify(void* ctx, hs_u64 a)
{
   if (a - pool_lo >= pool_hi - pool_lo) return 0;
   Addr c = (Addr)(a & ~(pool_chunk - 1));
   c += ((c >> HS_HEADER_COLOR_BIT) & (HS_HEADER_COLORS - 1)) * HS_HEADER_COLOR_STEP; /* hl_chunk_at */
   Addr* ok = &header_ok[(c >> 20) & (HEADER_OK - 1)];
   if (*ok != c + 1) {
      if (!VG_(am_is_valid_for_client)(c, 8, VKI_PROT_READ)) return MAX_POOLS + 1;
      *ok = c + 1;
   }
   const UInt* magic = (const UInt*)c;
   if (*magic != HS_CHUNK_MAGIC) return MAX_POOLS + 1;
   return 1 + *(const UShort*)(c + 4);
}

static void* host_alloc(void* ctx, hs_u64 n)
{
   void* p = VG_(malloc)("hlsim.model", (SizeT)n);
   return p;
}

/* ------------------------------------------------------------------ instrumentation */

/* With the oracle's helper, the main model's events are charged to contexts by the helper
 * (of_charge): a classification here only hands out a scratch bucket and notes the address;
 * after the reference (or when the scratch runs out; a classification's events are all
 * charged before the next one starts) each used bucket's events go to the ring. */
#define SCRATCH 64
static unsigned ctx_dim;
static UInt n_scratch;
static Addr scratch_addr[SCRATCH];

static void flush_scratch(void)
{
   for (UInt i = 0; i < n_scratch; i++) {
      hs_bucket_stats* b = hs_bucket(model, ctx_dim, (unsigned)max_contexts + i);
      of_charge(scratch_addr[i], b);
      VG_(memset)(b, 0, sizeof *b);
   }
   n_scratch = 0;
}

static unsigned defer_classify(void* ctx, unsigned long long a)
{
   if (!of_active) return ho_classify_ctx(ctx, a); /* a forked client's copy of the tool */
   if (n_scratch == SCRATCH) flush_scratch();
   scratch_addr[n_scratch] = a;
   return (unsigned)max_contexts + n_scratch++;
}

/* The oracle's copy of a reference: to the helper, or to the in-process oracle model. */
static inline void oracle_feed(Addr a, UWord szk, Addr pc)
{
   Addr sp = hk_cur_ra ? hk_cur_sp : 0; /* inside an allocation call: hs_objects.h */
   if (of_active) {
      if (n_scratch) flush_scratch();
      if (UNLIKELY(sp != of_alloc_sp)) of_allocator_state(sp);
      of_access(a, (UInt)(szk & 0xffff), (Bool)(szk >> 16), pc);
   } else if (oracle_model) {
      ho_oracle_access(oracle_model, a, (UInt)(szk & 0xffff), (Bool)(szk >> 16), pc, sp, &oracle_dropped);
   }
}

static VG_REGPARM(2) void on_access(Addr a, UWord szk)
{
   hs_access(model, a, (unsigned)(szk & 0xffff), (int)(szk >> 16), 0);
}

static VG_REGPARM(2) void on_access_oracle(Addr a, UWord szk)
{
   hs_access(model, a, (unsigned)(szk & 0xffff), (int)(szk >> 16), 0);
   oracle_feed(a, szk, 0);
}

/* with the stride prefetcher, which trains on the instruction address */
static VG_REGPARM(3) void on_access_pc(Addr a, UWord szk, UWord pc)
{
   hs_access(model, a, (unsigned)(szk & 0xffff), (int)(szk >> 16), pc);
   if (oracle_model) oracle_feed(a, szk, pc);
}

static Bool want_pc;
static Bool timed; /* the core timing model is on: accesses carry their instruction index and loaded value */
static ULong n_instr;

/* With the timing model: szk holds the access's instruction offset in its superblock above
 * bit 17 (n_instr is brought up to date at every exit, so n_instr + offset is its index),
 * and `value` is what a load of 8 bytes read. */
static VG_REGPARM(3) void on_access_timed(Addr a, UWord szk, UWord value, UWord pc)
{
   hs_access_timed(model, a, (unsigned)(szk & 0xffff), (int)((szk >> 16) & 1), pc, n_instr + (szk >> 17), value);
   if (oracle_model) oracle_feed(a, szk & 0x1ffff, pc);
}

/* Guest instructions executed and their cost in the time
 * estimate, in hundredths of a cycle each. The estimate is then data-access cycles plus
 * instructions x cost: without it an allocator that runs 3x the instructions per malloc, or
 * a layout that needs fewer, looks the same to the model. */
static Long instr_cost = 25;
/* Share (per mille) of the data-access latency sum that shows in run time: an out-of-order
 * core overlaps most of it. The default is fitted (simulator/predict.py) to the absolute run
 * times of the workload suite under glibc; 1000 gives the plain latency sum. */
static Long exposed_pm = 45;

/* n_instr += n, as IR: a load, an add and a store on the counter. */
static void add_instr_count(IRSB* sb, Int n)
{
   if (n <= 0) return;
   IRTemp t1 = newIRTemp(sb->tyenv, Ity_I64), t2 = newIRTemp(sb->tyenv, Ity_I64);
   IRExpr* where = mkIRExpr_HWord((HWord)&n_instr);
   addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, where)));
   addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1), IRExpr_Const(IRConst_U64(n)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)&n_instr), IRExpr_RdTmp(t2)));
}

static void add_event(IRSB* sb, IRExpr* addr, Int size, Bool store, Addr pc, IRExpr* guard, Int ioff, IRExpr* value)
{
   IRDirty* di;
   UWord szk = (UWord)(size > 0xffff ? 0xffff : size) | (store ? 1UL << 16 : 0);
   if (timed)
      di = unsafeIRDirty_0_N(3, "hs_on_access_timed", VG_(fnptr_to_fnentry)(on_access_timed),
                             mkIRExprVec_4(addr, mkIRExpr_HWord(szk | (UWord)ioff << 17),
                                           value ? value : mkIRExpr_HWord(0), mkIRExpr_HWord(pc)));
   else if (want_pc)
      di = unsafeIRDirty_0_N(3, "hs_on_access_pc", VG_(fnptr_to_fnentry)(on_access_pc),
                             mkIRExprVec_3(addr, mkIRExpr_HWord(szk), mkIRExpr_HWord(pc)));
   else if (oracle_model)
      di = unsafeIRDirty_0_N(2, "hs_on_access_oracle", VG_(fnptr_to_fnentry)(on_access_oracle),
                             mkIRExprVec_2(addr, mkIRExpr_HWord(szk)));
   else
      di = unsafeIRDirty_0_N(2, "hs_on_access", VG_(fnptr_to_fnentry)(on_access),
                             mkIRExprVec_2(addr, mkIRExpr_HWord(szk)));
   if (guard) di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static IRSB* hs_instrument(VgCallbackClosure* closure, IRSB* bbIn, const VexGuestLayout* layout,
                           const VexGuestExtents* vge, const VexArchInfo* archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   if (gWordTy != hWordTy) VG_(tool_panic)("host/guest word size mismatch");
   IRSB* sb = deepCopyIRSBExceptStmts(bbIn);
   Int i = 0;
   Addr pc = 0;
   Int pending = 0;   /* instructions since the last count update: flushed before each exit */
   while (i < bbIn->stmts_used && bbIn->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(sb, bbIn->stmts[i]);
      i++;
   }
   if (track_contexts) hk_add_return_check(sb, (Addr)vge->base[0]);
   for (; i < bbIn->stmts_used; i++) {
      IRStmt* st = bbIn->stmts[i];
      if (!st || st->tag == Ist_NoOp) continue;
      if (st->tag == Ist_Exit) {
         add_instr_count(sb, pending);
         pending = 0;
      }
      switch (st->tag) {
      case Ist_IMark:
         pc = (Addr)st->Ist.IMark.addr;
         pending++;
         if (track_contexts) {
            addStmtToIRSB(sb, st);
            hk_add_entry_hook(sb, pc);
            continue;
         }
         break;
      case Ist_WrTmp: {
         IRExpr* data = st->Ist.WrTmp.data;
         if (data->tag == Iex_Load && timed && data->Iex.Load.ty == Ity_I64) {
            /* after the load, so that the timing model sees the value it read */
            addStmtToIRSB(sb, st);
            add_event(sb, data->Iex.Load.addr, 8, False, pc, NULL, pending, IRExpr_RdTmp(st->Ist.WrTmp.tmp));
            continue;
         }
         if (data->tag == Iex_Load)
            add_event(sb, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty), False, pc, NULL, pending, NULL);
         break;
      }
      case Ist_Store: {
         IRType ty = typeOfIRExpr(bbIn->tyenv, st->Ist.Store.data);
         add_event(sb, st->Ist.Store.addr, sizeofIRType(ty), True, pc, NULL, pending, NULL);
         break;
      }
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         IRType ty = typeOfIRExpr(bbIn->tyenv, sg->data);
         add_event(sb, sg->addr, sizeofIRType(ty), True, pc, sg->guard, pending, NULL);
         break;
      }
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType tres = Ity_INVALID, tload = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &tres, &tload);
         add_event(sb, lg->addr, sizeofIRType(tload), False, pc, lg->guard, pending, NULL);
         break;
      }
      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         IRType ty = typeOfIRExpr(bbIn->tyenv, cas->dataLo);
         Int sz = sizeofIRType(ty) * (cas->dataHi ? 2 : 1);
         add_event(sb, cas->addr, sz, False, pc, NULL, pending, NULL);
         add_event(sb, cas->addr, sz, True, pc, NULL, pending, NULL);
         break;
      }
      case Ist_LLSC: {
         IRType ty;
         if (st->Ist.LLSC.storedata == NULL) {
            ty = typeOfIRTemp(bbIn->tyenv, st->Ist.LLSC.result);
            add_event(sb, st->Ist.LLSC.addr, sizeofIRType(ty), False, pc, NULL, pending, NULL);
         } else {
            ty = typeOfIRExpr(bbIn->tyenv, st->Ist.LLSC.storedata);
            add_event(sb, st->Ist.LLSC.addr, sizeofIRType(ty), True, pc, NULL, pending, NULL);
         }
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None && d->mAddr) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_event(sb, d->mAddr, d->mSize, False, pc, NULL, pending, NULL);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_event(sb, d->mAddr, d->mSize, True, pc, NULL, pending, NULL);
         }
         break;
      }
      default:
         break;
      }
      addStmtToIRSB(sb, st);
   }
   add_instr_count(sb, pending);
   return sb;
}

/* ------------------------------------------------------------------ pool range detection */

static void set_pool_range(ULong lo, ULong hi)
{
   pool_lo = lo;
   pool_hi = hi;
   hs_set_pool_range(model, lo, hi);
}

static void pre_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nargs) {}

static ULong last_brk;

static void post_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nargs, SysRes res)
{
   /* pages given back to the kernel fault again on their next touch (main model only: the
    * oracle's addresses are its own packing) */
   if (!sr_isError(res)) {
      if (sysno == __NR_munmap || sysno == __NR_mmap || sysno == __NR_mprotect || sysno == __NR_mremap)
         forget_headers();
      if (sysno == __NR_munmap) hs_unmap(model, args[0], args[0] + args[1]);
      else if (sysno == __NR_mmap) hs_unmap(model, sr_Res(res), sr_Res(res) + args[1]); /* fresh pages */
      else if (sysno == __NR_madvise && args[2] == 4 /* MADV_DONTNEED */)
         hs_unmap(model, args[0], args[0] + args[1]);
      else if (sysno == __NR_brk) {
         ULong now = sr_Res(res);
         if (last_brk && now < last_brk) hs_unmap(model, now, last_brk);
         last_brk = now;
      }
   }
   if (sysno != __NR_mmap || sr_isError(res) || pool_range_given || pool_hi) return;
   if (!(args[3] & VKI_MAP_NORESERVE)) return;
   ULong raw = sr_Res(res);
   ULong align = (ULong)HS_HEADER_COLORS << HS_HEADER_COLOR_BIT;
   if (align < pool_chunk) align = pool_chunk;
   if (args[0] == pool_hint && raw == pool_hint) { /* the first part of a range that grows */
      set_pool_range(raw, raw + pool_span - align);
      return;
   }
   if (args[1] != pool_span) return;
   ULong lo = (raw + align - 1) & ~(align - 1);
   set_pool_range(lo, lo + pool_span - align);
}

/* ------------------------------------------------------------------ options */

static Bool hs_process_cmd_line_option(const HChar* arg)
{
   const HChar* s;
   Long l;
   if VG_STR_CLO(arg, "--out-file", out_file) {}
   else if VG_BINT_CLO(arg, "--pool-span", l, 1, 1LL << 46) { pool_span = l; }
   else if VG_BINT_CLO(arg, "--pool-hint", l, 0, 1LL << 47) { pool_hint = l; }
   else if VG_BINT_CLO(arg, "--pool-chunk", l, 4096, 1LL << 30) {
      if (l & (l - 1)) return False;
      pool_chunk = l;
   }
   else if VG_BOOL_CLO(arg, "--per-pool", per_pool) {}
   else if VG_BOOL_CLO(arg, "--contexts", track_contexts) {}
   else if VG_BOOL_CLO(arg, "--oracle", oracle) {}
   else if VG_BOOL_CLO(arg, "--oracle-helper", oracle_helper) {}
   else if VG_BOOL_CLO(arg, "--trace-hooks", trace_hooks) {}
   else if VG_BOOL_CLO(arg, "--fixed-random", fixed_random) {}
   else if VG_STR_CLO(arg, "--oracle-hot", oracle_hot) {}
   else if VG_BINT_CLO(arg, "--max-contexts", max_contexts, 2, 1 << 20) {}
   else if VG_BINT_CLO(arg, "--instr-cost", instr_cost, 0, 100000) {}
   else if VG_BINT_CLO(arg, "--exposed", exposed_pm, 0, 1000) {}
   else if VG_BINT_CLO(arg, "--top-contexts", top_contexts, 0, 1 << 20) {}
   else {
      int r = hs_options_parse(&opts, arg);
      if (r < 0) VG_(fmsg_bad_option)(arg, "bad value\n");
      if (r == 0) return False;
      if (VG_(strncmp)(arg, "--pool-range=", 13) == 0) pool_range_given = True;
   }
   (void)s;
   return True;
}

static void hs_print_usage(void)
{
   VG_(printf)(
"    --out-file=<file>            JSON result [hlsim.out.%%p]\n"
"    --L1=<size>,<ways>,<line>    L1D [48K,12,64] (--D1 is the same)\n"
"    --L2=<size>,<ways>,<line>    L2 [2M,16,64]\n"
"    --LL=<size>,<ways>,<line>    last level [4M,16,64]\n"
"    --levels=2|3                 2 = L1 + LL (cachegrind's hierarchy) [3]\n"
"    --line=<bytes>               set every level's line size\n"
"    --lat=<l1>,<l2>,<ll>,<mem>   hit latencies in cycles [5,15,50,250]\n"
"    --fault-cost=<cycles>        first touch of a page since mapped (page fault) [5000]\n"
"    --instr-cost=<n>             cycles per instruction in the estimate, in 1/100 [25]\n"
"    --exposed=<n>                per mille of the data-access latency sum counted in the\n"
"                                 estimate (the rest overlaps) [45]\n"
"    --dtlb=<entries>,<ways>,<penalty>  first-level DTLB [64,4,7]\n"
"    --stlb=<entries>,<ways>,<penalty>  second-level TLB [1536,12,30]\n"
"    --tlb-levels=0|1|2, --tlb=yes|no   [2]\n"
"    --page-size=<bytes>          [4096]\n"
"    --prefetch=none|nextline|tagged|stride|cc-one|cc-all  [none]\n"
"    --pf-level=1|2|3             level the prefetches fill [1]\n"
"    --pf-degree=<n>              lines per prefetch trigger [1]\n"
"    --stride-entries=<n>, --stride-conf=<n>  stride table [256, 2]\n"
"    --cc-block=<bytes>           cc-block size for cc-one/cc-all [256]\n"
"    --hw=yes|no                  all of the native-time parts below, and --prefetch=stride [no]\n"
"    --timing=sum|mlp             estimate: exposed latency sum, or the core timing model\n"
"                                 (reorder buffer, fill buffers, dependent loads) [sum]\n"
"    --rob=<n>, --mshr=<n>        reorder-buffer instructions, fill buffers [224, 12]\n"
"    --deps=value|none|all        which load misses wait for an earlier one: address within\n"
"                                 --dep-span bytes above a late-loaded value, none, all [value]\n"
"    --dep-span=<bytes>           [128]\n"
"    --pf-adjacent=yes|no         L2 adjacent-line prefetcher (128-byte pairs) [no]\n"
"    --pf-streamer=yes|no         L2 streamer within 4 KiB pages [no]\n"
"    --streamer=<dist>,<degree>   lines ahead, prefetches per access [16,2]\n"
"    --dram=yes|no                DRAM row buffer: open-row accesses cost --dram-hit [no]\n"
"    --dram-geometry=<banks>,<row bytes>  [32,8192]\n"
"    --dram-hit=<cycles>          [180]\n"
"    --walk-cache=yes|no          page walks read PTE/PDE lines through the caches, with a\n"
"                                 32-entry PDE cache, instead of the fixed STLB penalty [no]\n"
"    --phys-index=yes|no          L2, LLC and DRAM rows see a pseudo-random page frame, as\n"
"                                 physically indexed hardware does [no]\n"
"    --pool-range=<lo>-<hi>       heaplayout pool range (hex), else detected\n"
"    --pool-span=<bytes>, --pool-chunk=<bytes>, --pool-hint=<addr>  how to detect it [16G+16M, 1M, 0x600000000000]\n"
"    --per-pool=yes|no            attribute misses to heaplayout pools [yes]\n"
"    --contexts=yes|no            track heap objects (malloc-family entries and returns seen\n"
"                                 by the tool; nothing replaced or wrapped) and attribute\n"
"                                 misses to allocation call sites [yes]\n"
"    --max-contexts=<n>           call sites tracked, the rest pooled as one [4096]\n"
"    --top-contexts=<n>           call sites written, by L1 misses [50]\n"
"    --oracle=yes|no              also simulate every heap object packed densely in\n"
"                                 first-touch order (needs --contexts=yes) [no]\n"
"    --oracle-hot=<ra>,<ra>,..    hot-first oracle: these call sites' objects (hex return\n"
"                                 addresses, hottest first) packed first, each context apart\n"
"    --oracle-helper=yes|no       simulate the oracle in a helper process fed through shared\n"
"                                 memory (a second core halves the time) [yes]\n");
}

static void hs_print_debug_usage(void)
{
   VG_(printf)("    --trace-hooks=yes|no         print each malloc-family entry point hooked [no]\n");
   VG_(printf)("    --fixed-random=yes|no        the same AT_RANDOM bytes (stack canary) in every run,\n"
               "                                 so that --hw runs repeat to the cycle [no]\n");
}

/* ------------------------------------------------------------------ output */

#define OUTSZ (1 << 16)
static HChar obuf[OUTSZ];
static Int oused, ofd = -1;

static void oflush(void)
{
   Int done = 0;
   while (done < oused) {
      Int n = VG_(write)(ofd, obuf + done, oused - done);
      if (n <= 0) break;
      done += n;
   }
   oused = 0;
}

static void oprintf(const HChar* fmt, ...) PRINTF_CHECK(1, 2);
static void oprintf(const HChar* fmt, ...)
{
   va_list vargs;
   if (oused > OUTSZ - 1024) oflush();
   va_start(vargs, fmt);
   oused += VG_(vsnprintf)(obuf + oused, OUTSZ - oused, fmt, vargs);
   va_end(vargs);
}

/* s as a JSON string: quotes, backslashes and control bytes escaped */
static void ostring(const HChar* s)
{
   oprintf("\"");
   for (; *s; s++) {
      UChar ch = (UChar)*s;
      if (ch == '"' || ch == '\\') oprintf("\\%c", ch);
      else if (ch < 0x20) oprintf("\\u%04x", ch);
      else oprintf("%c", ch);
   }
   oprintf("\"");
}

static void write_bucket_fields(const hs_bucket_stats* b)
{
   const hs_config* c = &opts.cfg;
   oprintf("\"misses\": [");
   for (unsigned i = 0; i < c->nlevels; i++) oprintf("%s%llu", i ? ", " : "", b->misses[i]);
   oprintf("], \"tlb_misses\": [");
   for (unsigned i = 0; i < c->ntlb; i++) oprintf("%s%llu", i ? ", " : "", b->tlb_misses[i]);
   oprintf("], \"pf_useful\": %llu, \"pf_useless\": %llu}", b->pf_useful, b->pf_useless);
}

static ULong bucket_weight(const hs_bucket_stats* b)
{
   ULong any = b->pf_useful + b->pf_useless;
   for (unsigned i = 0; i < HS_MAX_LEVELS; i++) any += b->misses[i];
   for (unsigned i = 0; i < HS_MAX_TLB; i++) any += b->tlb_misses[i];
   return any;
}

static void json_string(const HChar* s)
{
   oprintf("\"");
   for (; s && *s; s++) {
      if (*s == '"' || *s == '\\') oprintf("\\%c", *s);
      else if ((UChar)*s < 32) oprintf(" ");
      else oprintf("%c", *s);
   }
   oprintf("\"");
}

static void write_levels(const hs_stats* s, const hs_config* c, const HChar** names, hs_timing* timing)
{
   ULong access = s->cycles - s->fault_cycles;
   /* with the core timing model the estimate is its run time (instructions and stalls) plus
    * the page faults; otherwise the exposed share of the latency sum plus instructions */
   ULong est = timing ? hs_timing_cycles(timing, n_instr) + s->fault_cycles
                      : access * (ULong)exposed_pm / 1000 + s->fault_cycles + n_instr * (ULong)instr_cost / 100;
   oprintf("\"instructions\": %llu, \"instr_cost\": %lld, \"exposed\": %lld, \"estimate\": %llu, ", n_instr,
           instr_cost, exposed_pm, est);
   if (timing) {
      const hs_timing_stats* t = hs_timing_get_stats(timing);
      oprintf("\"timing\": {\"cycles\": %llu, \"stall_cycles\": %llu, \"load_misses\": %llu, \"dependent\": %llu, "
              "\"mshr_waits\": %llu, \"line_waits\": %llu}, ", hs_timing_cycles(timing, n_instr), t->stall / 100,
              t->load_misses, t->dependent, t->mshr_waits, t->line_waits);
   }
   oprintf("\"l2pf_issued\": %llu, \"l2pf_useful\": %llu, \"dram_accesses\": %llu, \"dram_row_hits\": %llu, "
           "\"walks\": %llu, \"walk_pde_misses\": %llu, \"walk_cycles\": %llu, ", s->l2pf_issued, s->l2pf_useful,
           s->dram_accesses, s->dram_row_hits, s->walks, s->walk_pde_misses, s->walk_cycles);
   oprintf("\"page_faults\": %llu, \"fault_cycles\": %llu, ", s->faults, s->fault_cycles);
   oprintf("\"cycles\": %llu, \"tlb_cycles\": %llu, \"covered\": %llu, \"memory_served\": %llu, \"levels\": [",
           s->cycles, s->tlb_cycles, s->covered, s->served[c->nlevels]);
   for (unsigned i = 0; i < c->nlevels; i++) {
      const hs_level_stats* l = &s->level[i];
      oprintf("%s{\"name\": \"%s\", \"accesses\": %llu, \"misses\": %llu, \"served\": %llu, \"pf_issued\": %llu, "
              "\"pf_useful\": %llu, \"pf_useless\": %llu, \"pf_resident\": %llu}", i ? ", " : "", names[i],
              l->accesses, l->misses, s->served[i], l->pf_issued, l->pf_useful, l->pf_useless, l->pf_resident);
   }
   oprintf("], \"tlb\": [");
   for (unsigned i = 0; i < c->ntlb; i++)
      oprintf("%s{\"name\": \"%s\", \"accesses\": %llu, \"misses\": %llu}", i ? ", " : "", i ? "STLB" : "DTLB",
              s->tlb_accesses[i], s->tlb_misses[i]);
   oprintf("]");
}

static void hs_fini(Int exitcode)
{
   /* the helper's counts (and the contexts' access counts) first: the contexts table uses them */
   static hs_stats helper_stats;
   const hs_stats* oracle_stats = NULL;
   if (of_active) {
      if (of_finish(&helper_stats, &oracle_dropped)) {
         oracle_stats = &helper_stats;
         UInt n;
         const ULong* rows = of_context_rows(&n);
         for (UInt c = 0; c < n; c++) {
            hs_bucket_stats* b = hs_bucket(model, ctx_dim, c);
            const ULong* r = rows + c * OF_ROW;
            for (UInt k = 0; k < 3; k++) b->misses[k] = r[1 + k];
            for (UInt k = 0; k < 2; k++) b->tlb_misses[k] = r[4 + k];
            b->pf_useful = r[6];
            b->pf_useless = r[7];
         }
      } else {
         oracle_model = NULL; /* and the contexts' misses are missing: say so */
         VG_(umsg)("hlsim: the per-context misses were the helper's to count; they are left at 0\n");
      }
   } else if (oracle_model) {
      oracle_stats = hs_get_stats(oracle_model);
   }
   hs_finish(model);
   const hs_stats* s = hs_get_stats(model);
   const hs_config* c = &opts.cfg;
   HChar* path = VG_(expand_file_name)("--out-file", out_file);
   SysRes r = VG_(open)(path, VKI_O_CREAT | VKI_O_TRUNC | VKI_O_WRONLY, 0644);
   if (sr_isError(r)) {
      VG_(message)(Vg_UserMsg, "hlsim: cannot write %s\n", path);
      return;
   }
   ofd = sr_Res(r);
   static const HChar* names3[] = {"L1", "L2", "LL"};
   static const HChar* names2[] = {"L1", "LL"};
   const HChar** names = c->nlevels == 3 ? names3 : names2;
   oprintf("{\"tool\": \"hlsim\", \"version\": 1,\n \"config\": {\"levels\": [");
   for (unsigned i = 0; i < c->nlevels; i++)
      oprintf("%s{\"name\": \"%s\", \"size\": %llu, \"ways\": %u, \"line\": %u, \"latency\": %u}", i ? ", " : "",
              names[i], c->level[i].size, c->level[i].ways, c->level[i].line, c->level[i].latency);
   oprintf("], \"mem_latency\": %u, \"tlb\": [", c->mem_latency);
   for (unsigned i = 0; i < c->ntlb; i++)
      oprintf("%s{\"name\": \"%s\", \"entries\": %u, \"ways\": %u, \"penalty\": %u}", i ? ", " : "",
              i ? "STLB" : "DTLB", c->tlb[i].entries, c->tlb[i].ways, c->tlb[i].penalty);
   oprintf("], \"page_size\": %llu, \"prefetcher\": \"%s\", \"pf_level\": %u, \"pf_degree\": %u, "
           "\"cc_block\": %u, \"pool_range\": [%llu, %llu], ",
           1ULL << c->page_shift, hs_prefetcher_name(c->prefetcher), c->pf_level + 1, c->pf_degree,
           c->cc_block, pool_lo, pool_hi);
   oprintf("\"timing\": \"%s\", \"rob\": %u, \"mshr\": %u, \"deps\": \"%s\", \"dep_span\": %u, "
           "\"pf_adjacent\": %s, \"pf_streamer\": %s, \"streamer\": [%u, %u], \"dram\": %s, \"dram_geometry\": [%u, %u], "
           "\"dram_hit\": %u, \"walk_cache\": %s, \"phys_index\": %s},\n", c->timing ? "mlp" : "sum", c->tcfg.rob, c->tcfg.mshr,
           hs_deps_name(c->tcfg.deps), c->tcfg.span, c->pf_adjacent ? "true" : "false", c->pf_streamer ? "true" : "false",
           c->streamer_dist, c->streamer_degree, c->dram ? "true" : "false", c->dram_banks, c->dram_row, c->dram_hit,
           c->walk_cache ? "true" : "false", c->phys_index ? "true" : "false");
   /* which executable this process ran: a traced command's processes are told apart by it */
   oprintf(" \"exe\": ");
   ostring(VG_(args_the_exename) ? VG_(args_the_exename) : "?");
   oprintf(",");
   oprintf(" \"exit_code\": %d, \"refs\": %llu, \"loads\": %llu, \"stores\": %llu, \"line_accesses\": %llu,\n ",
           exitcode, s->refs, s->loads, s->stores, s->line_accesses);
   write_levels(s, c, names, hs_get_timing(model));
   oprintf(",\n \"pools\": [");
   if (per_pool) {
      Int n = 0;
      for (unsigned id = 0; id < MAX_POOLS + 2; id++) {
         const hs_bucket_stats* b = hs_get_bucket(model, 0, id);
         if (!b) break;
         if (!bucket_weight(b)) continue;
         oprintf("%s\n  ", n++ ? "," : "");
         /* -1: outside the pool range; -2: in the range without a chunk header */
         oprintf("{\"pool\": %d, ", id == 0 ? -1 : id == MAX_POOLS + 1 ? -2 : (Int)id - 1);
         write_bucket_fields(b);
      }
   }
   oprintf("]");
   if (track_contexts) {
      unsigned dim = per_pool ? 1 : 0;
      oprintf(",\n \"objects\": %llu, \"contexts_seen\": %u, \"contexts\": [", ho_total_objects, ho_nctx - 2);
      /* the top contexts by L1 misses, plus the non-heap bucket (0) and the overflow (1) */
      UInt n = ho_nctx, written = 0;
      Bool* done = VG_(calloc)("hlsim.done", n, sizeof(Bool));
      for (Long k = 0; k < top_contexts + 2; k++) {
         Int best = -1;
         ULong bw = 0;
         for (UInt i = 0; i < n; i++) {
            const hs_bucket_stats* b = hs_get_bucket(model, dim, i);
            if (done[i] || !b) continue;
            ULong w = b->misses[0] + 1;
            if (i < 2) w = ~0ULL - i; /* always first */
            if (best < 0 || w > bw) { best = i; bw = w; }
         }
         if (best < 0) break;
         done[best] = True;
         const hs_bucket_stats* b = hs_get_bucket(model, dim, best);
         if (best >= 2 && !bucket_weight(b) && !ho_ctx[best].accesses) continue;
         oprintf("%s\n  {\"context\": %d, \"ra\": \"%#lx\", \"where\": ", written++ ? "," : "",
                 best - 2, ho_ctx[best].ra);
         json_string(ho_ctx[best].desc);
         oprintf(", \"allocs\": %llu, \"bytes\": %llu, \"accesses\": %llu, ", ho_ctx[best].allocs,
                 ho_ctx[best].bytes, ho_ctx[best].accesses);
         write_bucket_fields(b);
      }
      VG_(free)(done);
      oprintf("]");
   }
   if (oracle_model) {
      hs_finish(oracle_model);
      oprintf(",\n \"oracle\": {\"layout\": \"%s\", \"packed_bytes\": %llu, \"metadata_refs_dropped\": %llu, "
              "\"refs\": %llu, \"helper\": %s, ", oracle_hot ? "hot-first" : "dense first-touch", ho_packed_bytes,
              oracle_dropped, oracle_stats->refs, oracle_stats == &helper_stats ? "true" : "false");
      write_levels(oracle_stats, c, names, NULL);
      oprintf("}");
   }
   oprintf("}\n");
   oflush();
   VG_(close)(ofd);
}

/* ------------------------------------------------------------------ init */

/* In a forked client the tool goes on as a copy of the parent: the helper is not its own,
 * and the in-process oracle's map has no page counts, so the copy reports no oracle. */
static void client_forked(ThreadId tid)
{
   of_forget();
   oracle_model = NULL;
}

/* The client's auxiliary vector, set up by the core before the tool's post-option init. */
extern UWord* VG_(client_auxv);

/* The 16 bytes the kernel gives a process (AT_RANDOM) seed its stack canary and pointer
 * guard. An 8-byte load of the canary that completes late enters the timing model's
 * dependence table, so two runs of one build could differ by a few stall cycles. With
 * --fixed-random they are the same 16 bytes in every run, and runs repeat exactly. */
static void fix_client_random(void)
{
   for (UWord* av = VG_(client_auxv); av && av[0] != 0 /* AT_NULL */; av += 2) {
      if (av[0] != 25 /* AT_RANDOM */) continue;
      UChar* r = (UChar*)av[1];
      for (Int i = 0; i < 16; i++) r[i] = (UChar)(0x5a + 17 * i);
      return;
   }
   VG_(fmsg)("hlsim: --fixed-random: the client has no AT_RANDOM\n");
}

static void hs_post_clo_init(void)
{
   if (fixed_random) fix_client_random();
   const HChar* err = hs_options_finish(&opts);
   opts.cfg.tcfg.cpi_x100 = (unsigned)instr_cost; /* one cost per instruction in both estimates */
   opts.cfg.alloc = host_alloc;
   opts.cfg.ctx = NULL;
   if (oracle && !track_contexts) {
      VG_(fmsg)("hlsim: --oracle=yes needs --contexts=yes\n");
      VG_(exit)(1);
   }
   if (!err) err = hs_check_config(&opts.cfg);
   if (!err && oracle) {
      /* the oracle: the same model, no attribution; its pool range is the real one's,
       * which the packed region never falls in, so cc prefetchers stay idle there */
      hs_config oc = opts.cfg;
      oc.timing = 0; /* the oracle's stream carries no instruction indices or values */
      oracle_model = hs_new(&oc);
      if (!oracle_model) err = "cannot build the oracle model";
   }
   if (per_pool) {
      opts.cfg.nbuckets[opts.cfg.ndims] = MAX_POOLS + 2;
      opts.cfg.classify[opts.cfg.ndims++] = classify;
   }
   if (track_contexts) {
      if (oracle_hot) {
         const HChar* e = ho_set_hot(oracle_hot);
         if (e) {
            VG_(fmsg)("hlsim: %s\n", e);
            VG_(exit)(1);
         }
      }
      ho_init((UInt)max_contexts, oracle);
      hk_init(trace_hooks);
      ctx_dim = opts.cfg.ndims;
      opts.cfg.nbuckets[opts.cfg.ndims] = (unsigned)max_contexts;
      opts.cfg.classify[opts.cfg.ndims++] = ho_classify_ctx;
   }
   if (err) {
      VG_(fmsg)("hlsim: %s\n", err);
      VG_(exit)(1);
   }
   want_pc = opts.cfg.prefetcher == HS_PF_STRIDE;
   timed = opts.cfg.timing;
   if (oracle_model && oracle_helper) {
      const HChar* why = NULL;
      if (of_start(oracle_model, (UInt)max_contexts, want_pc, &why)) {
         ho_oracle = False; /* the helper keeps the page counts */
         /* and attributes the main model's events to contexts: scratch buckets past the
          * contexts' collect one classification's events each (defer_classify) */
         opts.cfg.nbuckets[ctx_dim] = (unsigned)max_contexts + SCRATCH;
         opts.cfg.classify[ctx_dim] = defer_classify;
      } else {
         VG_(umsg)("hlsim: %s; the oracle runs in this process\n", why);
      }
   }
   model = hs_new(&opts.cfg);
   if (!model) {
      VG_(fmsg)("hlsim: cannot build the model\n");
      VG_(exit)(1);
   }
   VG_(atfork)(NULL, NULL, client_forked);
   if (pool_range_given) {
      pool_lo = opts.cfg.pool_lo;
      pool_hi = opts.cfg.pool_hi;
   }
}

static void hs_pre_clo_init(void)
{
   VG_(details_name)("hlsim");
   VG_(details_version)("1");
   VG_(details_description)("heaplayout cache, TLB and prefetch simulator");
   VG_(details_copyright_author)("heaplayout");
   VG_(details_bug_reports_to)("heaplayout issue tracker");
   VG_(details_avg_translation_sizeB)(500);
   VG_(basic_tool_funcs)(hs_post_clo_init, hs_instrument, hs_fini);
   VG_(needs_command_line_options)(hs_process_cmd_line_option, hs_print_usage, hs_print_debug_usage);
   VG_(needs_syscall_wrapper)(pre_syscall, post_syscall);
   hs_options_init(&opts);
}

VG_DETERMINE_INTERFACE_VERSION(hs_pre_clo_init)
