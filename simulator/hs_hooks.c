/* hlsim: every heap object's birth and death, seen from inside the tool, with nothing added
 * to the client.
 *
 * Why not wrap malloc (a preloaded library, or Valgrind's function wrapping): a wrapper is a
 * frame between the program and the allocator, so the allocator sees the wrapper's return
 * address instead of the program's. heaplayout's runtime places objects by that return
 * address, so under a wrapper `--policy callsite` put every object in one pool: the layout
 * simulated was not the one the program gets. A wrapper also shifts the stack of every
 * allocation call (health: DTLB misses moved by 30%) and costs a redirected call and a client
 * request per call (cxx_netsim: 40% of the simulation's time).
 *
 * Instead, at translation time the first instruction of every malloc-family function (known
 * by its symbol name, hk_kind_of below) gets a call to on_entry, which notes the arguments,
 * the return address and the stack pointer. A call made while another one is pending, with a
 * deeper stack, is the allocator's own nesting (operator new calling malloc, our runtime
 * calling the allocator underneath) and is ignored. The allocation is complete when the
 * program resumes at that return address with the stack popped: a return always lands at the
 * start of a superblock, so each superblock starts with an inline compare of its address
 * against the running thread's pending return address (hk_cur_ra) and calls on_return only
 * on a match (only superblocks whose start follows a call instruction get the compare).
 * Frees are reported at entry.
 *
 * An allocation call left by an exception (operator new throwing bad_alloc) or a longjmp
 * never returns: the next call replaces it when it comes from a frame at least as high, or
 * when the pending call's return-address slot no longer holds its return address (the stack
 * below the catching frame has been reused).
 *
 * Limit: a function without a symbol (a stripped allocator) is not seen. */
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_machine.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_vki.h"
#include "libvex_guest_amd64.h"
#include "hs_objects.h"
#include "hs_hooks.h"

enum { HK_NONE, HK_MALLOC, HK_CALLOC, HK_REALLOC, HK_MEMALIGN, HK_POSIX_MEMALIGN, HK_FREE };

/* The names a malloc-family entry point goes by in glibc, libstdc++, jemalloc, mimalloc,
 * tcmalloc and heaplayout's runtime. Valgrind gives one name per address; aliases are here
 * so that whichever it picks is known. HK_MALLOC: size in the first argument; HK_MEMALIGN:
 * in the second. */
static const struct { const HChar* name; UChar kind; } family[] = {
   {"malloc", HK_MALLOC}, {"__libc_malloc", HK_MALLOC}, {"mi_malloc", HK_MALLOC}, {"tc_malloc", HK_MALLOC},
   {"valloc", HK_MALLOC}, {"__libc_valloc", HK_MALLOC}, {"pvalloc", HK_MALLOC}, {"__libc_pvalloc", HK_MALLOC},
   {"_Znwm", HK_MALLOC}, {"_Znam", HK_MALLOC}, {"_ZnwmRKSt9nothrow_t", HK_MALLOC},
   {"_ZnamRKSt9nothrow_t", HK_MALLOC}, {"_ZnwmSt11align_val_t", HK_MALLOC}, {"_ZnamSt11align_val_t", HK_MALLOC},
   {"_ZnwmSt11align_val_tRKSt9nothrow_t", HK_MALLOC}, {"_ZnamSt11align_val_tRKSt9nothrow_t", HK_MALLOC},
   {"mi_new", HK_MALLOC}, {"mi_new_nothrow", HK_MALLOC}, {"tc_new", HK_MALLOC}, {"tc_newarray", HK_MALLOC},
   {"tc_new_nothrow", HK_MALLOC}, {"tc_newarray_nothrow", HK_MALLOC},
   {"calloc", HK_CALLOC}, {"__libc_calloc", HK_CALLOC}, {"mi_calloc", HK_CALLOC}, {"tc_calloc", HK_CALLOC},
   {"realloc", HK_REALLOC}, {"__libc_realloc", HK_REALLOC}, {"mi_realloc", HK_REALLOC}, {"tc_realloc", HK_REALLOC},
   {"memalign", HK_MEMALIGN}, {"__libc_memalign", HK_MEMALIGN}, {"aligned_alloc", HK_MEMALIGN},
   {"mi_memalign", HK_MEMALIGN}, {"mi_aligned_alloc", HK_MEMALIGN}, {"tc_memalign", HK_MEMALIGN},
   {"posix_memalign", HK_POSIX_MEMALIGN}, {"__posix_memalign", HK_POSIX_MEMALIGN},
   {"mi_posix_memalign", HK_POSIX_MEMALIGN}, {"tc_posix_memalign", HK_POSIX_MEMALIGN},
   {"free", HK_FREE}, {"cfree", HK_FREE}, {"__libc_free", HK_FREE}, {"mi_free", HK_FREE}, {"tc_free", HK_FREE},
   {"_ZdlPv", HK_FREE}, {"_ZdaPv", HK_FREE}, {"_ZdlPvm", HK_FREE}, {"_ZdaPvm", HK_FREE},
   {"_ZdlPvRKSt9nothrow_t", HK_FREE}, {"_ZdaPvRKSt9nothrow_t", HK_FREE}, {"_ZdlPvSt11align_val_t", HK_FREE},
   {"_ZdaPvSt11align_val_t", HK_FREE}, {"_ZdlPvmSt11align_val_t", HK_FREE}, {"_ZdaPvmSt11align_val_t", HK_FREE},
   {"tc_delete", HK_FREE}, {"tc_deletearray", HK_FREE}, {"tc_delete_sized", HK_FREE},
   {"tc_deletearray_sized", HK_FREE},
};

typedef struct {
   Addr ra;   /* return address of the outermost pending call; 0 = none */
   Addr sp;   /* the stack pointer at its entry (pointing at ra) */
   UWord kind, a0, a1;
} Pending;

Addr hk_cur_ra, hk_cur_sp;
static Pending* pending; /* per thread id */
static ThreadId cur_tid;
static Bool trace;

static UChar hk_kind_of(const HChar* name)
{
   /* Valgrind demangles C++ names: every global operator new/delete, whichever library
    * defines it (libstdc++, jemalloc, mimalloc, tcmalloc, our runtime); the mangled names
    * above are for --demangle=no */
   if (VG_(strncmp)(name, "operator new", 12) == 0) return HK_MALLOC;
   if (VG_(strncmp)(name, "operator delete", 15) == 0) return HK_FREE;
   for (UInt i = 0; i < sizeof family / sizeof family[0]; i++)
      if (VG_(strcmp)(name, family[i].name) == 0) return family[i].kind;
   return HK_NONE;
}

static void start_client(ThreadId tid, ULong blocks)
{
   cur_tid = tid;
   hk_cur_ra = pending[tid].ra;
   hk_cur_sp = pending[tid].sp;
}

static void on_entry(UWord kind, Addr sp, UWord a0, UWord a1, UWord a2)
{
   Pending* p = &pending[cur_tid];
   /* inside a pending allocation call: deeper, and the call's return address still in its
    * slot (after an exception or longjmp out of the call, deeper calls have written there) */
   if (p->ra && sp < p->sp && *(Addr*)p->sp == p->ra) return;
   p->ra = *(Addr*)sp;
   p->sp = sp;
   p->kind = kind;
   switch (kind) {
   case HK_MALLOC: p->a1 = a0; break;
   case HK_CALLOC: p->a1 = a0 * a1; break;
   case HK_REALLOC: p->a0 = a0; p->a1 = a1; break;
   case HK_MEMALIGN: p->a1 = a1; break;
   case HK_POSIX_MEMALIGN: p->a0 = a0; p->a1 = a2; break;
   case HK_FREE: ho_free(a0); break; /* still pending: the frees it makes inside are its own */
   }
   hk_cur_ra = p->ra;
   hk_cur_sp = p->sp;
}

static void on_return(Addr sp, UWord rax)
{
   Pending* p = &pending[cur_tid];
   if (sp != p->sp + sizeof(Addr)) return; /* this address, but not the return from the call */
   Addr ra = p->ra;
   p->ra = 0;
   hk_cur_ra = 0;
   switch (p->kind) {
   case HK_MALLOC: case HK_CALLOC: case HK_MEMALIGN:
      if (rax) ho_alloc(rax, p->a1, ra);
      break;
   case HK_REALLOC:
      if (rax || p->a1 == 0) {
         if (p->a0) ho_free(p->a0);
         if (rax) ho_alloc(rax, p->a1, ra);
      }
      break;
   case HK_POSIX_MEMALIGN:
      if ((Int)rax == 0) ho_alloc(*(Addr*)p->a0, p->a1, ra);
      break;
   }
}

void hk_init(Bool trace_hooks)
{
   trace = trace_hooks;
   pending = VG_(calloc)("hlsim.pending", VG_N_THREADS, sizeof(Pending));
   VG_(track_start_client_code)(start_client);
}

static IRExpr* get_reg(IRSB* sb, Int offset)
{
   IRTemp t = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(t, IRExpr_Get(offset, Ity_I64)));
   return IRExpr_RdTmp(t);
}

#define OFF(reg) ((Int)__builtin_offsetof(VexGuestAMD64State, reg))

/* Can `a` be a return address, i.e. do the bytes before it end with a call instruction?
 * Every amd64 call is E8 rel32 or FF /2 (register or memory operand, 2 to 7 bytes after its
 * prefixes), so the test looks for an E8 five bytes back or an FF with reg field 2 two to
 * seven bytes back. It may say yes for a non-return (the check is then only wasted), never
 * no for a return. Most superblocks start after a branch, not a call: this keeps the
 * compare out of about three quarters of them. */
static Bool after_call(Addr a)
{
   if (a < 8 || !VG_(am_is_valid_for_client)(a - 8, 8, VKI_PROT_READ | VKI_PROT_EXEC)) return True;
   const UChar* b = (const UChar*)a;
   if (b[-5] == 0xE8) return True;
   for (Int k = 2; k <= 7; k++)
      if (b[-k] == 0xFF && ((b[-k + 1] >> 3) & 7) == 2) return True;
   return False;
}

void hk_add_return_check(IRSB* sb, Addr base)
{
   if (!after_call(base)) return;
   IRTemp ra = newIRTemp(sb->tyenv, Ity_I64), hit = newIRTemp(sb->tyenv, Ity_I1);
   addStmtToIRSB(sb, IRStmt_WrTmp(ra, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&hk_cur_ra))));
   addStmtToIRSB(sb, IRStmt_WrTmp(hit, IRExpr_Binop(Iop_CmpEQ64, IRExpr_RdTmp(ra),
                                                    IRExpr_Const(IRConst_U64(base)))));
   IRExpr* sp = get_reg(sb, OFF(guest_RSP));
   IRExpr* rax = get_reg(sb, OFF(guest_RAX));
   IRDirty* di = unsafeIRDirty_0_N(2, "hk_on_return", VG_(fnptr_to_fnentry)(on_return), mkIRExprVec_2(sp, rax));
   di->guard = IRExpr_RdTmp(hit);
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

void hk_add_entry_hook(IRSB* sb, Addr pc)
{
   const HChar* name;
   if (!VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), pc, &name)) return;
   UChar kind = hk_kind_of(name);
   if (trace && (kind || VG_(strstr)(name, "alloc") || VG_(strstr)(name, "free") ||
                 VG_(strstr)(name, "operator")))
      VG_(umsg)("hlsim: %s %s at %#lx\n", kind ? "hooked" : "not hooked", name, pc);
   if (!kind) return;
   IRExpr* sp = get_reg(sb, OFF(guest_RSP));
   IRExpr* a0 = get_reg(sb, OFF(guest_RDI));
   IRExpr* a1 = get_reg(sb, OFF(guest_RSI));
   IRExpr* a2 = get_reg(sb, OFF(guest_RDX));
   IRDirty* di = unsafeIRDirty_0_N(0, "hk_on_entry", VG_(fnptr_to_fnentry)(on_entry),
                                   mkIRExprVec_5(mkIRExpr_HWord(kind), sp, a0, a1, a2));
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}
