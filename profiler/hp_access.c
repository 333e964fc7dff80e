/* Instrumentation: every guest load and store calls a helper, guarded inline by a range
 * check against [hp_heap_lo, hp_heap_lo + hp_heap_span) so that stack and global accesses
 * cost no call. Accesses whose address is the stack pointer plus a constant (push, pop,
 * call, ret, spills: a large share of all accesses) are not instrumented at all, which also
 * keeps translations small; a stack placed in a heap block is thereby not counted as heap
 * accesses, which is what the affinity analysis wants anyway. The helper maps the address to its live object, counts the access, and
 * feeds the affinity queue, the reference stream and the pointer-edge counter. */
#include "hp.h"

ThreadId hp_cur_tid = 1;
static ULong next_progress = ~0ULL;

void hp_access_set_thread(ThreadId tid) { hp_cur_tid = tid; }

static void progress(void)
{
   next_progress = hp_clock + hp_opt.progress;
   VG_(message)(Vg_UserMsg, "hlprof: progress: %llu heap accesses, %llu objects, %u contexts\n",
                hp_clock, hp_nobjects, hp_ncontexts);
   hp_out_flush();
}

static inline void after_access(HpObj* o, UWord sz)
{
   if (hp_opt.affinity && !o->big) hp_affinity_access(hp_cur_tid, o, (UInt)sz);
   if (hp_opt.stream_max) hp_stream_access(o);
   if (UNLIKELY(hp_clock >= next_progress)) progress();
}

static VG_REGPARM(2) void hp_on_load(Addr a, UWord sz)
{
   HpObj* o = hp_map_find(a);
   if (!o) return;
   hp_clock++;
   o->loads++;
   o->lbytes += sz;
   after_access(o, sz);
}

static VG_REGPARM(2) void hp_on_store(Addr a, UWord sz)
{
   HpObj* o = hp_map_find(a);
   if (!o) return;
   hp_clock++;
   o->stores++;
   o->sbytes += sz;
   after_access(o, sz);
}

/* An 8-byte integer store: also a possible pointer edge. */
static VG_REGPARM(2) void hp_on_store8(Addr a, UWord value)
{
   HpObj* o = hp_map_find(a);
   if (!o) return;
   hp_clock++;
   o->stores++;
   o->sbytes += 8;
   if (hp_opt.pointer_edges && value - hp_heap_lo < hp_heap_span) hp_edges_store(o, a, value);
   after_access(o, 8);
}

/* A 16- or 32-byte vector store (a compiler filling two or four pointer fields at once,
 * e.g. movups of {p, back}): one access of its size; each 8-byte lane is a possible
 * pointer edge at its own offset. */
static void store_lanes(Addr a, UWord sz, const UWord* lane, Int nlanes)
{
   HpObj* o = hp_map_find(a);
   if (!o) return;
   hp_clock++;
   o->stores++;
   o->sbytes += sz;
   if (hp_opt.pointer_edges)
      for (Int i = 0; i < nlanes; i++)
         if (lane[i] - hp_heap_lo < hp_heap_span && a + 8 * (Addr)i - o->addr < o->size)
            hp_edges_store(o, a + 8 * (Addr)i, lane[i]);
   after_access(o, sz);
}

static VG_REGPARM(3) void hp_on_store16(Addr a, UWord lo, UWord hi)
{
   UWord lane[2] = { lo, hi };
   store_lanes(a, 16, lane, 2);
}

static void hp_on_store32(Addr a, UWord l0, UWord l1, UWord l2, UWord l3)
{
   UWord lane[4] = { l0, l1, l2, l3 };
   store_lanes(a, 32, lane, 4);
}

void hp_access_init_progress(void)
{
   if (hp_opt.progress) next_progress = hp_opt.progress;
}

typedef struct {
   IRSB* sb;
   IRTemp lo, span;
} Instr;

static IRExpr* heap_guard(Instr* in, IRExpr* addr)
{
   IRTypeEnv* env = in->sb->tyenv;
   if (in->lo == IRTemp_INVALID) {
      in->lo = newIRTemp(env, Ity_I64);
      in->span = newIRTemp(env, Ity_I64);
      addStmtToIRSB(in->sb, IRStmt_WrTmp(in->lo, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&hp_heap_lo))));
      addStmtToIRSB(in->sb, IRStmt_WrTmp(in->span, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&hp_guard_span))));
   }
   IRTemp d = newIRTemp(env, Ity_I64);
   IRTemp g = newIRTemp(env, Ity_I1);
   addStmtToIRSB(in->sb, IRStmt_WrTmp(d, IRExpr_Binop(Iop_Sub64, addr, IRExpr_RdTmp(in->lo))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(g, IRExpr_Binop(Iop_CmpLT64U, IRExpr_RdTmp(d), IRExpr_RdTmp(in->span))));
   return IRExpr_RdTmp(g);
}

/* A vector store: its 64-bit lanes go to the helper as values (pointer edges). */
static void add_vector_store(Instr* in, IRExpr* addr, IRExpr* data, IRType ty)
{
   IRTypeEnv* env = in->sb->tyenv;
   IRDirty* di;
   if (ty == Ity_V128) {
      IRTemp lo = newIRTemp(env, Ity_I64), hi = newIRTemp(env, Ity_I64);
      addStmtToIRSB(in->sb, IRStmt_WrTmp(lo, IRExpr_Unop(Iop_V128to64, data)));
      addStmtToIRSB(in->sb, IRStmt_WrTmp(hi, IRExpr_Unop(Iop_V128HIto64, data)));
      di = unsafeIRDirty_0_N(3, "hp_on_store16", VG_(fnptr_to_fnentry)(hp_on_store16),
                             mkIRExprVec_3(addr, IRExpr_RdTmp(lo), IRExpr_RdTmp(hi)));
   } else {
      static const IROp lane_op[4] = { Iop_V256to64_0, Iop_V256to64_1, Iop_V256to64_2, Iop_V256to64_3 };
      IRTemp t[4];
      for (Int i = 0; i < 4; i++) {
         t[i] = newIRTemp(env, Ity_I64);
         addStmtToIRSB(in->sb, IRStmt_WrTmp(t[i], IRExpr_Unop(lane_op[i], data)));
      }
      di = unsafeIRDirty_0_N(0, "hp_on_store32", VG_(fnptr_to_fnentry)(hp_on_store32),
                             mkIRExprVec_5(addr, IRExpr_RdTmp(t[0]), IRExpr_RdTmp(t[1]), IRExpr_RdTmp(t[2]),
                                           IRExpr_RdTmp(t[3])));
   }
   di->guard = heap_guard(in, addr);
   addStmtToIRSB(in->sb, IRStmt_Dirty(di));
}

/* kind: 0 load, 1 store, 2 store of a 64-bit value (arg = the value) */
static void add_event(Instr* in, Int kind, IRExpr* addr, IRExpr* arg, IRExpr* guard)
{
   const HChar* name;
   void* fn;
   switch (kind) {
   case 0: name = "hp_on_load"; fn = hp_on_load; break;
   case 1: name = "hp_on_store"; fn = hp_on_store; break;
   default: name = "hp_on_store8"; fn = hp_on_store8; break;
   }
   IRDirty* di = unsafeIRDirty_0_N(2, name, VG_(fnptr_to_fnentry)(fn), mkIRExprVec_2(addr, arg));
   di->guard = guard ? guard : heap_guard(in, addr);
   addStmtToIRSB(in->sb, IRStmt_Dirty(di));
}

static inline Bool on_stack(const Bool* sp_based, IRExpr* addr)
{
   return addr->tag == Iex_RdTmp && sp_based[addr->Iex.RdTmp.tmp];
}

IRSB* hp_instrument(VgCallbackClosure* closure, IRSB* bbIn, const VexGuestLayout* layout,
                    const VexGuestExtents* vge, const VexArchInfo* archinfo_host,
                    IRType gWordTy, IRType hWordTy)
{
   if (gWordTy != hWordTy) VG_(tool_panic)("host/guest word size mismatch");
   Instr in;
   in.sb = deepCopyIRSBExceptStmts(bbIn);
   /* temps holding SP + constant (the IR is flat: an address is a temp or a constant) */
   Int ntemps = bbIn->tyenv->types_used;
   Bool sp_small[256];
   Bool* sp_based = ntemps <= 256 ? sp_small : VG_(malloc)("hp.spbased", ntemps);
   VG_(memset)(sp_based, 0, ntemps);
   in.lo = in.span = IRTemp_INVALID;
   Int i = 0;
   while (i < bbIn->stmts_used && bbIn->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(in.sb, bbIn->stmts[i]);
      i++;
   }
   for (; i < bbIn->stmts_used; i++) {
      IRStmt* st = bbIn->stmts[i];
      if (!st || st->tag == Ist_NoOp) continue;
      switch (st->tag) {
      case Ist_WrTmp: {
         IRExpr* data = st->Ist.WrTmp.data;
         if (data->tag == Iex_Get && data->Iex.Get.offset == layout->offset_SP && data->Iex.Get.ty == Ity_I64)
            sp_based[st->Ist.WrTmp.tmp] = True;
         else if (data->tag == Iex_Binop && (data->Iex.Binop.op == Iop_Add64 || data->Iex.Binop.op == Iop_Sub64)
                  && data->Iex.Binop.arg1->tag == Iex_RdTmp && sp_based[data->Iex.Binop.arg1->Iex.RdTmp.tmp]
                  && data->Iex.Binop.arg2->tag == Iex_Const)
            sp_based[st->Ist.WrTmp.tmp] = True;
         else if (data->tag == Iex_Load && !on_stack(sp_based, data->Iex.Load.addr))
            add_event(&in, 0, data->Iex.Load.addr,
                      mkIRExpr_HWord(sizeofIRType(data->Iex.Load.ty)), NULL);
         break;
      }
      case Ist_Store: {
         if (on_stack(sp_based, st->Ist.Store.addr)) break;
         IRExpr* data = st->Ist.Store.data;
         IRType ty = typeOfIRExpr(bbIn->tyenv, data);
         if (ty == Ity_I64)
            add_event(&in, 2, st->Ist.Store.addr, data, NULL);
         else if ((ty == Ity_V128 || ty == Ity_V256) && hp_opt.pointer_edges &&
                  (data->tag == Iex_RdTmp || data->tag == Iex_Const))
            add_vector_store(&in, st->Ist.Store.addr, data, ty);
         else
            add_event(&in, 1, st->Ist.Store.addr, mkIRExpr_HWord(sizeofIRType(ty)), NULL);
         break;
      }
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         IRType ty = typeOfIRExpr(bbIn->tyenv, sg->data);
         add_event(&in, 1, sg->addr, mkIRExpr_HWord(sizeofIRType(ty)), sg->guard);
         break;
      }
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType tres = Ity_INVALID, tload = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &tres, &tload);
         add_event(&in, 0, lg->addr, mkIRExpr_HWord(sizeofIRType(tload)), lg->guard);
         break;
      }
      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         IRType ty = typeOfIRExpr(bbIn->tyenv, cas->dataLo);
         Int sz = sizeofIRType(ty) * (cas->dataHi ? 2 : 1);
         add_event(&in, 0, cas->addr, mkIRExpr_HWord(sz), NULL);
         if (ty == Ity_I64 && !cas->dataHi)
            add_event(&in, 2, cas->addr, cas->dataLo, NULL);
         else
            add_event(&in, 1, cas->addr, mkIRExpr_HWord(sz), NULL);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None && d->mAddr) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_event(&in, 0, d->mAddr, mkIRExpr_HWord(d->mSize), NULL);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_event(&in, 1, d->mAddr, mkIRExpr_HWord(d->mSize), NULL);
         }
         break;
      }
      default:
         break;
      }
      addStmtToIRSB(in.sb, st);
   }
   if (sp_based != sp_small) VG_(free)(sp_based);
   return in.sb;
}
