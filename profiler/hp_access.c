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

/* An 8-byte integer store: also a possible pointer edge. Pointer edges are recorded in every
 * window of a sampled profile (the off-window guard of these stores is hp_heap_span): the
 * planner's structure detection asks whether any store through a field ever linked two
 * objects of one structure, which a sample of the stores answers "no" too often. */
static VG_REGPARM(2) void hp_on_store8(Addr a, UWord value)
{
   HpObj* o = hp_map_find(a);
   if (!o) return;
   if (UNLIKELY(!hp_sample_on)) {
      if (hp_edges_every_window() && value - hp_heap_lo < hp_heap_span) hp_edges_store(o, a, value);
      return;
   }
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
   if (hp_sample_on) {
      hp_clock++;
      o->stores++;
      o->sbytes += sz;
   }
   if (hp_opt.pointer_edges && (hp_sample_on || hp_edges_every_window()))
      for (Int i = 0; i < nlanes; i++)
         if (lane[i] - hp_heap_lo < hp_heap_span && a + 8 * (Addr)i - o->addr < o->size)
            hp_edges_store(o, a + 8 * (Addr)i, lane[i]);
   if (hp_sample_on) after_access(o, sz);
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

/* Consecutive accesses of one superblock through one base register (fields of one struct:
 * p->a, p->b, p->c) call one helper for the group. When every access's first byte lies in
 * the object of the first, counting them at once is exactly what separate calls would do:
 * after the first access, the others are deduplicated by the affinity queue and collapsed by
 * the stream, so only their counters remain. Otherwise each is handled on its own, in order.
 * desc holds GROUP_MAX members of 21 bits: offset from base (int16), size code (3 bits, 7 =
 * no member), kind (2 bits: 0 load, 1 store, 2 an 8-byte store whose value is `value`). */
#define GROUP_MAX 3
static const UInt code_size[8] = { 1, 2, 4, 8, 16, 32, 0, 0 };

static VG_REGPARM(3) void hp_on_group(Addr base, ULong desc, UWord value)
{
   Addr at[GROUP_MAX] = { 0 };
   UInt sz[GROUP_MAX];
   Int kind[GROUP_MAX];
   Int n = 0;
   for (; n < GROUP_MAX; n++) {
      ULong d = desc >> (21 * n);
      UInt code = (d >> 16) & 7;
      if (code == 7) break;
      at[n] = base + (Addr)(Long)(Short)(d & 0xffff);
      sz[n] = code_size[code];
      kind[n] = (d >> 19) & 3;
   }
   if (UNLIKELY(!hp_sample_on)) {   /* an off window: only a pointer store (see hp_on_store8) */
      for (Int i = 0; i < n; i++)
         if (kind[i] == 2 && hp_edges_every_window()) {
            HpObj* o = hp_map_find(at[i]);
            if (o && value - hp_heap_lo < hp_heap_span) hp_edges_store(o, at[i], value);
         }
      return;
   }
   HpObj* o = hp_map_find(at[0]);
   Bool same = o != NULL;
   for (Int i = 1; same && i < n; i++) same = at[i] - o->addr < o->size;
   if (LIKELY(same)) {
      for (Int i = 0; i < n; i++) {
         if (kind[i] == 0) {
            o->loads++;
            o->lbytes += sz[i];
         } else {
            o->stores++;
            o->sbytes += sz[i];
            if (kind[i] == 2 && hp_opt.pointer_edges && value - hp_heap_lo < hp_heap_span)
               hp_edges_store(o, at[i], value);
         }
      }
      hp_clock += n;
      after_access(o, sz[0]);
      return;
   }
   for (Int i = 0; i < n; i++) {
      if (kind[i] == 0) hp_on_load(at[i], sz[i]);
      else if (kind[i] == 1) hp_on_store(at[i], sz[i]);
      else hp_on_store8(at[i], value);
   }
}

void hp_access_init_progress(void)
{
   if (hp_opt.progress) next_progress = hp_opt.progress;
}

typedef struct {
   Int kind;              /* as add_event's */
   Int off;               /* from the group's base temp */
   UInt size;
   IRExpr* addr;          /* the access's own address, for a group of one */
   IRExpr* arg;           /* add_event's arg: size, or the stored value (kind 2) */
} Member;

typedef struct {
   IRSB* sb;
   IRTemp lo, span;
   IRTemp span_ptr;       /* the bound for stores that may write a pointer: edges in every window */
   IRTemp* root;          /* per temp: the temp it is a constant offset from (itself if none) */
   Long* root_off;
   IRTemp base;           /* the open group: base temp and members */
   Int n;
   Member m[GROUP_MAX];
} Instr;

/* The bound temp: hp_guard_span (0 in an off window), or for a store that may write a
 * pointer hp_heap_span when pointer edges are recorded in every window (the same value
 * whenever accesses are profiled, so a full profile is unchanged). */
static IRTemp span_temp(Instr* in, Bool ptr)
{
   IRTypeEnv* env = in->sb->tyenv;
   if (in->lo == IRTemp_INVALID) {
      in->lo = newIRTemp(env, Ity_I64);
      in->span = newIRTemp(env, Ity_I64);
      addStmtToIRSB(in->sb, IRStmt_WrTmp(in->lo, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&hp_heap_lo))));
      addStmtToIRSB(in->sb, IRStmt_WrTmp(in->span, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&hp_guard_span))));
   }
   if (!ptr || !hp_edges_every_window()) return in->span;
   if (in->span_ptr == IRTemp_INVALID) {
      in->span_ptr = newIRTemp(env, Ity_I64);
      addStmtToIRSB(in->sb, IRStmt_WrTmp(in->span_ptr, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&hp_heap_span))));
   }
   return in->span_ptr;
}

static IRExpr* heap_guard_for(Instr* in, IRExpr* addr, Bool ptr)
{
   IRTypeEnv* env = in->sb->tyenv;
   IRTemp span = span_temp(in, ptr);
   IRTemp d = newIRTemp(env, Ity_I64);
   IRTemp g = newIRTemp(env, Ity_I1);
   addStmtToIRSB(in->sb, IRStmt_WrTmp(d, IRExpr_Binop(Iop_Sub64, addr, IRExpr_RdTmp(in->lo))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(g, IRExpr_Binop(Iop_CmpLT64U, IRExpr_RdTmp(d), IRExpr_RdTmp(span))));
   return IRExpr_RdTmp(g);
}

static IRExpr* heap_guard(Instr* in, IRExpr* addr) { return heap_guard_for(in, addr, False); }

/* A store of the 64-bit `value`, guarded by g (its address against hp_heap_span): in an off
 * window the helper is wanted only when the value points into the heap, so the guard becomes
 * g && (profiling on || value in the heap); integer and floating-point stores cost no call.
 * (lua5.4's measuring input, whose 8-byte heap stores are mostly pointers, pays about 2x
 * native for the off-window edges with or without this check.) Unchanged when edges are not
 * recorded in every window. */
static IRExpr* pointer_guard(Instr* in, IRExpr* g, IRExpr* value)
{
   if (!hp_edges_every_window()) return g;
   IRTypeEnv* env = in->sb->tyenv;
   IRTemp on = newIRTemp(env, Ity_I1), d = newIRTemp(env, Ity_I64), ptr = newIRTemp(env, Ity_I1);
   IRTemp either = newIRTemp(env, Ity_I1), r = newIRTemp(env, Ity_I1);
   addStmtToIRSB(in->sb, IRStmt_WrTmp(on, IRExpr_Binop(Iop_CmpNE64, IRExpr_RdTmp(in->span), IRExpr_Const(IRConst_U64(0)))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(d, IRExpr_Binop(Iop_Sub64, value, IRExpr_RdTmp(in->lo))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(ptr, IRExpr_Binop(Iop_CmpLT64U, IRExpr_RdTmp(d), IRExpr_RdTmp(in->span_ptr))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(either, IRExpr_Binop(Iop_Or1, IRExpr_RdTmp(on), IRExpr_RdTmp(ptr))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(r, IRExpr_Binop(Iop_And1, g, IRExpr_RdTmp(either))));
   return IRExpr_RdTmp(r);
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
   di->guard = heap_guard_for(in, addr, True);
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
   di->guard = guard ? guard : kind == 2 ? pointer_guard(in, heap_guard_for(in, addr, True), arg)
                                         : heap_guard(in, addr);
   addStmtToIRSB(in->sb, IRStmt_Dirty(di));
}

static UInt size_code(UInt sz)
{
   for (UInt c = 0; c < 6; c++) if (code_size[c] == sz) return c;
   return 7;
}

/* Emits the open group: one helper for two or more members, the plain helper for one. */
static void flush_group(Instr* in)
{
   if (in->n == 0) return;
   if (in->n == 1) {
      add_event(in, in->m[0].kind, in->m[0].addr, in->m[0].arg, NULL);
      in->n = 0;
      return;
   }
   IRTypeEnv* env = in->sb->tyenv;
   Long lo_off = in->m[0].off, hi_end = 0;
   ULong desc = ~0ULL;
   IRExpr* value = mkIRExpr_HWord(0);
   Bool ptr = False;
   for (Int i = 0; i < in->n; i++) {
      Member* mb = &in->m[i];
      if (mb->off < lo_off) lo_off = mb->off;
      if (mb->off + (Long)mb->size > hi_end) hi_end = mb->off + mb->size;
      ULong d = ((ULong)(UShort)(Short)mb->off) | ((ULong)size_code(mb->size) << 16) | ((ULong)mb->kind << 19);
      desc &= ~(0x1fffffULL << (21 * i));
      desc |= d << (21 * i);
      if (mb->kind == 2) { value = mb->arg; ptr = True; }
   }
   /* guard: the group's bytes [base+lo_off, base+hi_end) may overlap the heap span, i.e.
    * base+lo_off lies in [lo - ext, lo + span) with ext = hi_end - lo_off */
   ULong ext = (ULong)(hi_end - lo_off);
   IRTemp span = span_temp(in, ptr);
   IRTemp a = newIRTemp(env, Ity_I64), d = newIRTemp(env, Ity_I64), lim = newIRTemp(env, Ity_I64);
   IRTemp g = newIRTemp(env, Ity_I1);
   addStmtToIRSB(in->sb, IRStmt_WrTmp(a, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(in->base),
                                                      IRExpr_Const(IRConst_U64((ULong)lo_off + ext)))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(d, IRExpr_Binop(Iop_Sub64, IRExpr_RdTmp(a), IRExpr_RdTmp(in->lo))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(lim, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(span),
                                                        IRExpr_Const(IRConst_U64(ext)))));
   addStmtToIRSB(in->sb, IRStmt_WrTmp(g, IRExpr_Binop(Iop_CmpLT64U, IRExpr_RdTmp(d), IRExpr_RdTmp(lim))));
   IRDirty* di = unsafeIRDirty_0_N(3, "hp_on_group", VG_(fnptr_to_fnentry)(hp_on_group),
                                   mkIRExprVec_3(IRExpr_RdTmp(in->base), IRExpr_Const(IRConst_U64(desc)), value));
   di->guard = ptr ? pointer_guard(in, IRExpr_RdTmp(g), value) : IRExpr_RdTmp(g);
   addStmtToIRSB(in->sb, IRStmt_Dirty(di));
   in->n = 0;
}

/* A load or store that may join the open group (kind 0, 1 or 2 as add_event's). */
static void group_access(Instr* in, Int kind, IRExpr* addr, IRExpr* arg, UInt size)
{
   IRTemp base = IRTemp_INVALID;
   Long off = 0;
   if (addr->tag == Iex_RdTmp) {
      base = in->root[addr->Iex.RdTmp.tmp];
      off = in->root_off[addr->Iex.RdTmp.tmp];
   }
   Bool joinable = base != IRTemp_INVALID && off >= -32768 && off <= 32767 && size_code(size) != 7;
   if (in->n > 0) {
      Bool fits = joinable && base == in->base && in->n < GROUP_MAX;
      for (Int i = 0; fits && i < in->n; i++) if (kind == 2 && in->m[i].kind == 2) fits = False;
      if (!fits) flush_group(in);
   }
   if (!joinable) {
      add_event(in, kind, addr, arg, NULL);
      return;
   }
   in->base = base;
   in->m[in->n++] = (Member){ .kind = kind, .off = (Int)off, .size = size, .addr = addr, .arg = arg };
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
   if (hp_sample_bare) return bbIn;   /* an off window under --sample-retranslate */
   Instr in;
   in.sb = deepCopyIRSBExceptStmts(bbIn);
   /* temps holding SP + constant (the IR is flat: an address is a temp or a constant) */
   Int ntemps = bbIn->tyenv->types_used;
   Bool sp_small[256];
   Bool* sp_based = ntemps <= 256 ? sp_small : VG_(malloc)("hp.spbased", ntemps);
   VG_(memset)(sp_based, 0, ntemps);
   in.lo = in.span = in.span_ptr = IRTemp_INVALID;
   in.root = VG_(malloc)("hp.root", (ntemps ? ntemps : 1) * sizeof(IRTemp));
   in.root_off = VG_(malloc)("hp.rootoff", (ntemps ? ntemps : 1) * sizeof(Long));
   for (Int t = 0; t < ntemps; t++) { in.root[t] = t; in.root_off[t] = 0; }
   in.n = 0;
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
            group_access(&in, 0, data->Iex.Load.addr, mkIRExpr_HWord(sizeofIRType(data->Iex.Load.ty)),
                         sizeofIRType(data->Iex.Load.ty));
         if (data->tag == Iex_Binop && (data->Iex.Binop.op == Iop_Add64 || data->Iex.Binop.op == Iop_Sub64)
             && data->Iex.Binop.arg1->tag == Iex_RdTmp && data->Iex.Binop.arg2->tag == Iex_Const
             && data->Iex.Binop.arg2->Iex.Const.con->tag == Ico_U64) {
            IRTemp b = data->Iex.Binop.arg1->Iex.RdTmp.tmp;
            Long c = (Long)data->Iex.Binop.arg2->Iex.Const.con->Ico.U64;
            in.root[st->Ist.WrTmp.tmp] = in.root[b];
            in.root_off[st->Ist.WrTmp.tmp] = in.root_off[b] + (data->Iex.Binop.op == Iop_Add64 ? c : -c);
         } else if (data->tag == Iex_RdTmp) {
            in.root[st->Ist.WrTmp.tmp] = in.root[data->Iex.RdTmp.tmp];
            in.root_off[st->Ist.WrTmp.tmp] = in.root_off[data->Iex.RdTmp.tmp];
         }
         break;
      }
      case Ist_Store: {
         if (on_stack(sp_based, st->Ist.Store.addr)) break;
         IRExpr* data = st->Ist.Store.data;
         IRType ty = typeOfIRExpr(bbIn->tyenv, data);
         if (ty == Ity_I64)
            group_access(&in, 2, st->Ist.Store.addr, data, 8);
         else if ((ty == Ity_V128 || ty == Ity_V256) && hp_opt.pointer_edges &&
                  (data->tag == Iex_RdTmp || data->tag == Iex_Const)) {
            flush_group(&in);
            add_vector_store(&in, st->Ist.Store.addr, data, ty);
         } else
            group_access(&in, 1, st->Ist.Store.addr, mkIRExpr_HWord(sizeofIRType(ty)), sizeofIRType(ty));
         break;
      }
      case Ist_StoreG: {
         flush_group(&in);
         IRStoreG* sg = st->Ist.StoreG.details;
         IRType ty = typeOfIRExpr(bbIn->tyenv, sg->data);
         add_event(&in, 1, sg->addr, mkIRExpr_HWord(sizeofIRType(ty)), sg->guard);
         break;
      }
      case Ist_LoadG: {
         flush_group(&in);
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType tres = Ity_INVALID, tload = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &tres, &tload);
         add_event(&in, 0, lg->addr, mkIRExpr_HWord(sizeofIRType(tload)), lg->guard);
         break;
      }
      case Ist_CAS: {
         flush_group(&in);
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
         flush_group(&in);
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None && d->mAddr) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_event(&in, 0, d->mAddr, mkIRExpr_HWord(d->mSize), NULL);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_event(&in, 1, d->mAddr, mkIRExpr_HWord(d->mSize), NULL);
         }
         break;
      }
      case Ist_Exit:
         flush_group(&in);   /* members after a taken exit must not be counted */
         break;
      default:
         break;
      }
      addStmtToIRSB(in.sb, st);
   }
   flush_group(&in);
   VG_(free)(in.root);
   VG_(free)(in.root_off);
   if (sp_based != sp_small) VG_(free)(sp_based);
   return in.sb;
}
