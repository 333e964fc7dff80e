// Local DS graph construction (DSA's local phase), on optimized SSA IR.
#include "LocalAnalysis.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/GetElementPtrTypeIterator.h"
#include "llvm/IR/GlobalAlias.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Operator.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <numeric>

using namespace llvm;

namespace hlapa {

bool isPtrLike(Type *T, const DataLayout &DL) {
  if (T->isPointerTy()) return true;
  if (T->isIntegerTy()) return T->getIntegerBitWidth() == DL.getPointerSizeInBits();
  if (auto *VT = dyn_cast<VectorType>(T)) return isPtrLike(VT->getElementType(), DL);
  if (auto *AT = dyn_cast<ArrayType>(T)) return isPtrLike(AT->getElementType(), DL);
  if (auto *ST = dyn_cast<StructType>(T)) {
    for (Type *E : ST->elements())
      if (isPtrLike(E, DL)) return true;
  }
  return false;
}

DSHandle LocalAnalysis::constantHandle(const Constant *C) {
  if (isa<ConstantPointerNull>(C) || isa<UndefValue>(C) || isa<ConstantInt>(C) || isa<ConstantFP>(C))
    return {};
  if (auto *GA = dyn_cast<GlobalAlias>(C)) return constantHandle(GA->getAliasee());
  if (auto *GV = dyn_cast<GlobalValue>(C)) return G.globalHandle(GV);
  if (auto *CE = dyn_cast<ConstantExpr>(C)) {
    if (auto *GEP = dyn_cast<GEPOperator>(CE)) {
      DSHandle Base = constantHandle(cast<Constant>(GEP->getPointerOperand()));
      APInt Off(DL.getIndexTypeSizeInBits(GEP->getType()), 0);
      if (Base && GEP->accumulateConstantOffset(DL, Off)) return G.offsetBy(Base, Off.getSExtValue());
      if (Base) G.collapse(Base.Node);
      return Base;
    }
    DSHandle Out;
    for (const Use &U : CE->operands()) {
      DSHandle H = constantHandle(cast<Constant>(U.get()));
      if (!H) continue;
      if (Out) G.unify(Out, H);
      else Out = H;
    }
    return Out;
  }
  // Aggregate constants holding addresses: one handle for all of them (conservative).
  DSHandle Out;
  for (const Use &U : C->operands()) {
    DSHandle H = constantHandle(cast<Constant>(U.get()));
    if (!H) continue;
    if (Out) G.unify(Out, H);
    else Out = H;
  }
  return Out;
}

DSHandle LocalAnalysis::handleOf(const Value *V) {
  if (!isPtrLike(V->getType(), DL) && !V->getType()->isPointerTy()) return {};
  if (auto *C = dyn_cast<Constant>(V)) return constantHandle(C);
  if (isa<MetadataAsValue>(V) || isa<InlineAsm>(V)) return {};
  DSHandle &Slot = G.handleSlot(V);
  if (Slot) return Slot;
  DSNode *N = G.makeNode();
  G.handleSlot(V) = {N, 0}; // re-fetch: makeNode does not touch the map, but keep it obvious
  return {N, 0};
}

void LocalAnalysis::escapeToUnknown(const Value *V) {
  DSHandle H = handleOf(V);
  if (H) DSGraph::resolve(H).Node->Flags |= ExternalNode;
}

// The load whose value a store of an integer narrower than a pointer writes back, through
// integer casts, phis and selects (a temporary of another width, a swap across iterations).
const LoadInst *LocalAnalysis::narrowCopySource(const Value *V) {
  if (!V->getType()->isIntegerTy() || isPtrLike(V->getType(), DL)) return nullptr;
  SmallVector<const Value *, 8> Work{V};
  SmallPtrSet<const Value *, 8> Seen;
  while (!Work.empty()) {
    const Value *X = Work.pop_back_val();
    if (!Seen.insert(X).second || Seen.size() > 32) continue;
    if (auto *L = dyn_cast<LoadInst>(X)) return L;
    if (isa<TruncInst>(X) || isa<ZExtInst>(X) || isa<SExtInst>(X) || isa<BitCastInst>(X) || isa<FreezeInst>(X))
      Work.push_back(cast<Instruction>(X)->getOperand(0));
    else if (auto *P = dyn_cast<PHINode>(X))
      for (const Value *In : P->incoming_values()) Work.push_back(In);
    else if (auto *Sel = dyn_cast<SelectInst>(X)) {
      Work.push_back(Sel->getTrueValue());
      Work.push_back(Sel->getFalseValue());
    }
  }
  return nullptr;
}

// An address that walks through memory: a GEP with a variable index, or a loop-carried
// pointer (phi, select), possibly offset by constant GEPs.
static bool movingAddress(const Value *P) {
  for (int Depth = 0; Depth < 8; ++Depth) {
    if (isa<PHINode>(P) || isa<SelectInst>(P)) return true;
    auto *GEP = dyn_cast<GEPOperator>(P);
    if (!GEP) return false;
    if (!GEP->hasAllConstantIndices()) return true;
    P = GEP->getPointerOperand();
  }
  return true;
}

// Whether every `Size`-byte piece of a pointer in this node, accessed at H, lies on the same
// field as the pointer itself: the node is collapsed, or an array whose element size divides
// both the piece size and 8 with H on an element start (uint32_t digits copied one by one:
// the two halves of a pointer are both field 0). Otherwise the copy collapses the node.
static bool piecesShareAnEdge(DSHandle H, uint64_t Size) {
  const DSNode *N = H.Node;
  if (N->has(CollapsedNode)) return true;
  uint64_t S = N->Stride;
  return S && N->Ranges.empty() && 8 % S == 0 && Size % S == 0 && H.Offset % S == 0;
}

void LocalAnalysis::loadStore(DSHandle Ptr, DSHandle Val, Type *T) {
  if (!Ptr || !Val) return;
  uint64_t Size = DL.getTypeStoreSize(T).getKnownMinValue();
  if (Size <= DL.getPointerSize()) {
    G.unify(G.edge(Ptr), Val);
    return;
  }
  // A wide value (vector, aggregate) covers several fields: all of them share its handle.
  for (uint64_t K = 0; K < Size; K += DL.getPointerSize()) G.unify(G.edge(Ptr, K), Val);
}

void LocalAnalysis::analyze(Function &F) {
  for (Argument &A : F.args()) handleOf(&A);
  for (Instruction &I : instructions(F)) visit(I, F);
  noteAlignments(F);
}

// The alignment pass (APA 5.4) may give a pool 8-byte slots only if no object of its node
// needs more. What an object needs is read from how the code touches it: every load, store,
// atomic and GEP through a pointer into the node contributes the ABI alignment of its types
// and the alignment the front end put on the access. The access's own alignment matters:
// clang derives it from the C type (an __int128 or an _Alignas(16) struct gets `align 16`
// even where LLVM 16's ABI alignment of the IR type is 8), so it catches what the IR types
// miss. A GEP's source and indexed types cover fields taken by address and handed on
// (&n->ld). Calls add the `align`/byval alignments of pointer arguments (memcpy of a
// struct carries its alignment). This runs after the instruction walk, so it looks up the
// handles the walk made and creates none: the points-to graph is the same as without it.
void LocalAnalysis::noteAlignments(Function &F) {
  auto nodeOf = [&](const Value *P) -> DSNode * {
    if (isa<Constant>(P) || !G.hasHandle(P)) return nullptr; // constants: globals, not heap
    return DSGraph::resolve(G.handleSlot(P)).Node;
  };
  auto note = [&](const Value *P, uint64_t A) {
    if (DSNode *N = nodeOf(P)) N->noteAlign(A);
  };
  auto typeAlign = [&](Type *T) -> uint64_t {
    return T->isSized() ? DL.getABITypeAlign(T).value() : 16; // unsized: in doubt
  };
  for (Instruction &I : instructions(F)) {
    if (auto *L = dyn_cast<LoadInst>(&I)) {
      note(L->getPointerOperand(), std::max(typeAlign(L->getType()), L->getAlign().value()));
    } else if (auto *S = dyn_cast<StoreInst>(&I)) {
      note(S->getPointerOperand(),
           std::max(typeAlign(S->getValueOperand()->getType()), S->getAlign().value()));
    } else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I)) {
      note(X->getPointerOperand(),
           std::max(typeAlign(X->getNewValOperand()->getType()), X->getAlign().value()));
    } else if (auto *X = dyn_cast<AtomicRMWInst>(&I)) {
      note(X->getPointerOperand(), std::max(typeAlign(X->getValOperand()->getType()), X->getAlign().value()));
    } else if (auto *GEP = dyn_cast<GetElementPtrInst>(&I)) {
      uint64_t A = typeAlign(GEP->getSourceElementType());
      for (gep_type_iterator GTI = gep_type_begin(GEP), E = gep_type_end(GEP); GTI != E; ++GTI)
        A = std::max(A, typeAlign(GTI.getIndexedType()));
      note(GEP->getPointerOperand(), A);
    } else if (auto *CB = dyn_cast<CallBase>(&I)) {
      Function *Callee = CB->getCalledFunction();
      // scanf's conversions store long doubles (%Lf) and more through its pointer
      // arguments, types this IR never shows: such a node's types are in doubt.
      bool Scanf = Callee && Callee->isDeclaration() && Callee->getName().contains("scanf");
      for (unsigned A = 0; A < CB->arg_size(); ++A) {
        const Value *Arg = CB->getArgOperand(A);
        if (!Arg->getType()->isPointerTy()) continue;
        DSNode *N = nodeOf(Arg);
        if (!N) continue;
        if (Scanf) N->AlignDoubt = true;
        if (MaybeAlign PA = CB->getParamAlign(A)) N->noteAlign(PA->value());
        if (Type *BV = CB->getParamByValType(A)) N->noteAlign(typeAlign(BV));
      }
    }
  }
}

void LocalAnalysis::visit(Instruction &I, Function &F) {
  auto unifyWith = [&](const Value *Other) {
    if (DSHandle H = handleOf(Other)) G.unify(handleOf(&I), H);
  };
  switch (I.getOpcode()) {
  case Instruction::Alloca: {
    DSNode *N = G.makeNode(StackNode);
    G.unify(handleOf(&I), {N, 0});
    return;
  }
  case Instruction::Load: {
    auto &L = cast<LoadInst>(I);
    if (isPtrLike(L.getType(), DL)) loadStore(handleOf(L.getPointerOperand()), handleOf(&L), L.getType());
    return;
  }
  case Instruction::Store: {
    auto &S = cast<StoreInst>(I);
    Type *T = S.getValueOperand()->getType();
    if (isPtrLike(T, DL)) loadStore(handleOf(S.getPointerOperand()), handleOf(S.getValueOperand()), T);
    else if (const LoadInst *L = narrowCopySource(S.getValueOperand()))
      // Bytes (or 16/32-bit pieces) loaded from one object and stored into another at a
      // moving address: a copy loop written by hand (`*d++ = *s++`, `d[i] = s[i]` in a
      // generic copy or swap). They may be the pieces of a pointer, so what the two objects
      // point to is one node: both collapse to one field and their edges are unified. (The
      // objects themselves stay apart: a string copied from argv does not make its copy
      // external, only what the copy could point to.) A copy between fixed fields
      // (`a->n = b->m`) is not one.
      if (movingAddress(L->getPointerOperand()) || movingAddress(S.getPointerOperand()))
        if (DSHandle Src = handleOf(L->getPointerOperand()))
          if (DSHandle Dst = handleOf(S.getPointerOperand())) {
            uint64_t Size = DL.getTypeStoreSize(T).getFixedValue();
            for (DSHandle H : {Src, Dst})
              if (!piecesShareAnEdge(DSGraph::resolve(H), Size)) G.collapse(DSGraph::resolve(H).Node);
            G.unify(G.edge(Src), G.edge(Dst));
          }
    return;
  }
  case Instruction::AtomicCmpXchg: {
    auto &X = cast<AtomicCmpXchgInst>(I);
    if (isPtrLike(X.getNewValOperand()->getType(), DL)) {
      DSHandle Field = G.edge(handleOf(X.getPointerOperand()));
      G.unify(Field, handleOf(X.getNewValOperand()));
      G.unify(Field, handleOf(X.getCompareOperand()));
      G.unify(Field, handleOf(&X));
    }
    return;
  }
  case Instruction::AtomicRMW: {
    auto &X = cast<AtomicRMWInst>(I);
    if (isPtrLike(X.getValOperand()->getType(), DL)) {
      DSHandle Field = G.edge(handleOf(X.getPointerOperand()));
      G.unify(Field, handleOf(X.getValOperand()));
      G.unify(Field, handleOf(&X));
    }
    return;
  }
  case Instruction::GetElementPtr: {
    auto &GEP = cast<GetElementPtrInst>(I);
    DSHandle Base = handleOf(GEP.getPointerOperand());
    if (!Base) return;
    if (GEP.getType()->isVectorTy()) {
      G.collapse(Base.Node);
      G.unify(handleOf(&I), Base);
      return;
    }
    // Walk the indices with their types, as DSA does: a struct index selects a field, an
    // index into an array inside the object is any element of it (recorded as an array range
    // of the node), and a variable first index makes the whole node an array of its type.
    DSNode *N = DSGraph::resolve(Base).Node;
    int64_t Off = 0;
    uint64_t Stride = 0;
    bool First = true;
    Type *Aggregate = nullptr; // the type the current index selects in (null: the pointer level)
    for (gep_type_iterator GTI = gep_type_begin(GEP), E = gep_type_end(GEP); GTI != E;
         Aggregate = GTI.getIndexedType(), ++GTI, First = false) {
      Value *Idx = GTI.getOperand();
      auto *C = dyn_cast<ConstantInt>(Idx);
      if (StructType *ST = GTI.getStructTypeOrNull()) {
        Off += DL.getStructLayout(ST)->getElementOffset(cast<ConstantInt>(Idx)->getZExtValue());
        continue;
      }
      uint64_t ES = DL.getTypeAllocSize(GTI.getIndexedType()).getKnownMinValue();
      uint64_t Count = 0;
      if (auto *AT = dyn_cast_or_null<ArrayType>(Aggregate)) Count = AT->getNumElements();
      else if (auto *VT = dyn_cast_or_null<FixedVectorType>(Aggregate)) Count = VT->getNumElements();
      if (!First && Count) {
        int64_t Here = (int64_t)DSGraph::resolve(Base).Offset + Off;
        if (Here >= 0) G.addArrayRange(N, (uint64_t)Here, Count * ES, ES);
        if (C) Off += C->getSExtValue() * (int64_t)ES; // normalized by the range
        continue;
      }
      if (C) Off += C->getSExtValue() * (int64_t)ES;
      else Stride = std::gcd(Stride, ES);
    }
    if (Stride) G.setStride(DSGraph::resolve(Base).Node, Stride);
    G.unify(handleOf(&I), G.offsetBy(Base, Off));
    return;
  }
  case Instruction::IntToPtr: {
    if (DSHandle H = handleOf(I.getOperand(0))) {
      G.unify(handleOf(&I), H);
      DSGraph::resolve(H).Node->Flags |= IntToPtrNode;
    } else if (!isa<Constant>(I.getOperand(0))) { // a pointer made from arithmetic we do not follow
      DSGraph::resolve(handleOf(&I)).Node->Flags |= ExternalNode;
    }
    return;
  }
  case Instruction::BitCast:
  case Instruction::AddrSpaceCast:
  case Instruction::PtrToInt:
  case Instruction::Freeze:
    if (isPtrLike(I.getType(), DL) && isPtrLike(I.getOperand(0)->getType(), DL)) unifyWith(I.getOperand(0));
    else opaqueArithmetic(I); // a pointer cut to a narrower integer, an i64 from a double
    return;
  case Instruction::Mul:
  case Instruction::UDiv:
  case Instruction::SDiv:
  case Instruction::URem:
  case Instruction::SRem:
  case Instruction::Shl:
  case Instruction::LShr:
  case Instruction::AShr:
  case Instruction::Trunc:
  case Instruction::ZExt:
  case Instruction::SExt:
  case Instruction::FPToUI:
  case Instruction::FPToSI:
    opaqueArithmetic(I);
    return;
  case Instruction::Add:
  case Instruction::Sub:
  case Instruction::And:
  case Instruction::Or:
  case Instruction::Xor:
    if (isPtrLike(I.getType(), DL))
      for (Value *Op : I.operands())
        if (!isa<Constant>(Op)) unifyWith(Op);
    return;
  case Instruction::PHI:
  case Instruction::Select:
  case Instruction::ExtractValue:
  case Instruction::InsertValue:
  case Instruction::ExtractElement:
  case Instruction::InsertElement:
  case Instruction::ShuffleVector:
    if (!isPtrLike(I.getType(), DL)) return;
    for (Value *Op : I.operands())
      if (isPtrLike(Op->getType(), DL)) unifyWith(Op);
    return;
  case Instruction::Ret: {
    auto &R = cast<ReturnInst>(I);
    Value *V = R.getReturnValue();
    if (V && isPtrLike(V->getType(), DL)) {
      DSHandle &Slot = G.returnSlot(&F);
      if (!Slot) Slot = {G.makeNode(), 0};
      G.unify(G.returnSlot(&F), handleOf(V));
    }
    return;
  }
  case Instruction::VAArg: {
    if (isPtrLike(I.getType(), DL)) DSGraph::resolve(handleOf(&I)).Node->Flags |= ExternalNode | VarArgNode;
    return;
  }
  case Instruction::Call:
  case Instruction::Invoke:
  case Instruction::CallBr:
    visitCall(cast<CallBase>(I));
    return;
  default:
    return;
  }
}

// An instruction the points-to walk does not follow: a pointer-sized integer it makes is
// OpaqueInt, and a pointer whose integer it takes is ArithEscape (DSGraph.h).
void LocalAnalysis::opaqueArithmetic(Instruction &I) {
  if (isPtrLike(I.getType(), DL) && I.getType()->isIntegerTy())
    DSGraph::resolve(handleOf(&I)).Node->Flags |= OpaqueIntNode;
  for (Value *Op : I.operands())
    if (!isa<Constant>(Op) && isPtrLike(Op->getType(), DL) && (!isa<CallBase>(I) || Op->getType()->isIntegerTy()))
      if (DSHandle H = handleOf(Op)) DSGraph::resolve(H).Node->Flags |= ArithEscapeNode;
}

void LocalAnalysis::visitUnknownCall(CallBase &CB) {
  Kinds[&CB] = CalleeKind::Unknown;
  // Pointer-sized integers too: a pointer handed over as an intptr_t handle is kept by the
  // unknown code as surely as a pointer, and one that comes back as an integer may be one.
  for (Value *A : CB.args())
    if (isPtrLike(A->getType(), DL)) escapeToUnknown(A);
  if (isPtrLike(CB.getType(), DL)) DSGraph::resolve(handleOf(&CB)).Node->Flags |= ExternalNode;
}

void LocalAnalysis::visitCall(CallBase &CB) {
  if (CB.isInlineAsm()) {
    visitUnknownCall(CB);
    return;
  }
  Function *Callee = dyn_cast<Function>(CB.getCalledOperand()->stripPointerCasts());
  if (!Callee) {
    Resolver.deferIndirectCall(CB);
    return;
  }
  if (!Callee->isDeclaration()) {
    if (!Resolver.resolveDirectCall(CB, *Callee, G)) visitUnknownCall(CB);
    return;
  }
  CalleeKind K = classifyCallee(Callee->getName(), Callee->isIntrinsic());
  Kinds[&CB] = K;
  auto arg = [&](unsigned I) -> Value * { return I < CB.arg_size() ? CB.getArgOperand(I) : nullptr; };
  switch (K) {
  case CalleeKind::Malloc:
  case CalleeKind::Calloc: {
    DSNode *N = G.makeNode(HeapNode);
    N->AllocSites.insert({&CB});
    uint64_t Size = 0;
    if (K == CalleeKind::Malloc) {
      if (auto *C = dyn_cast_or_null<ConstantInt>(arg(0))) Size = C->getZExtValue();
    } else if (auto *C0 = dyn_cast_or_null<ConstantInt>(arg(0))) {
      if (auto *C1 = dyn_cast_or_null<ConstantInt>(arg(1))) Size = C0->getZExtValue() * C1->getZExtValue();
    }
    if (Size) N->AllocSize = Size;
    else N->AllocSizeMixed = true;
    G.unify(handleOf(&CB), {N, 0});
    return;
  }
  case CalleeKind::Realloc: {
    DSHandle R = handleOf(&CB);
    if (DSHandle Old = handleOf(arg(0))) G.unify(R, Old);
    DSNode *N = DSGraph::resolve(handleOf(&CB)).Node;
    N->Flags |= HeapNode;
    N->AllocSites.insert({&CB});
    N->AllocSizeMixed = true;
    return;
  }
  case CalleeKind::Free: {
    if (DSHandle H = handleOf(arg(0))) {
      DSNode *N = DSGraph::resolve(H).Node;
      N->Flags |= HeapNode;
      N->FreeSites.insert({&CB});
    }
    return;
  }
  case CalleeKind::NoCapture:
    return;
  case CalleeKind::Intrinsic:
    // A pointer from an intrinsic not known to pass one through is not followed: unknown;
    // pointer-sized integers in and out of one (bswap, fshl, umax, ...) are arithmetic.
    if (CB.getType()->isPointerTy()) DSGraph::resolve(handleOf(&CB)).Node->Flags |= ExternalNode;
    else opaqueArithmetic(CB);
    return;
  case CalleeKind::ReturnsArg0:
    if (arg(0) && isPtrLike(CB.getType(), DL)) G.unify(handleOf(&CB), handleOf(arg(0)));
    return;
  case CalleeKind::MemCopy:
    // Bytes (and so pointers) move between the two objects: make them one node.
    if (arg(0) && arg(1)) G.unify(handleOf(arg(0)), handleOf(arg(1)));
    if (arg(0) && isPtrLike(CB.getType(), DL)) G.unify(handleOf(&CB), handleOf(arg(0)));
    return;
  case CalleeKind::StrToNum:
    if (arg(0) && arg(1))
      if (DSHandle End = handleOf(arg(1))) G.unify(G.edge(End), handleOf(arg(0)));
    return;
  case CalleeKind::ExternalResult:
    if (CB.getType()->isPointerTy()) DSGraph::resolve(handleOf(&CB)).Node->Flags |= ExternalNode;
    return;
  case CalleeKind::Unknown:
    visitUnknownCall(CB);
    return;
  }
}

} // namespace hlapa
