// pooldestroy placement: the facts (metadata), the liveness and the moves.
#include "PoolDestroyPlacement.h"
#include "LocalAnalysis.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Metadata.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

#include <algorithm>

using namespace llvm;

namespace hlapa {

static MDNode *poolSet(LLVMContext &Ctx, const std::vector<unsigned> &Pools) {
  SmallVector<Metadata *, 4> Ops;
  for (unsigned P : Pools) Ops.push_back(ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(Ctx), P)));
  return MDNode::get(Ctx, Ops);
}

static bool inSet(const MDNode *MD, unsigned Index) {
  for (const MDOperand &Op : MD->operands())
    if (auto *C = mdconst::dyn_extract<ConstantInt>(Op); C && C->getZExtValue() == Index) return true;
  return false;
}

static bool isDestroyOf(const Instruction &I, const Value *A) {
  auto *CB = dyn_cast<CallBase>(&I);
  const Function *F = CB ? CB->getCalledFunction() : nullptr;
  return F && F->getName() == "pooldestroy" && CB->getArgOperand(0) == A;
}

static bool isCreateOf(const Instruction &I, const Value *A) {
  auto *CB = dyn_cast<CallBase>(&I);
  const Function *F = CB ? CB->getCalledFunction() : nullptr;
  return F && F->getName() == "poolcreate" && CB->getArgOperand(0) == A;
}

DestroyPlacement::DestroyPlacement(const BottomUp &BU, const SCCPlan &Plan, Function *Orig, Function *V,
                                   ValueToValueMapTy *VMap, const std::vector<const DSNode *> &Leaders)
    : V(V), NumPools(Leaders.size()) {
  LLVMContext &Ctx = V->getContext();
  KindUses = Ctx.getMDKindID("hl.pool.uses");
  KindValue = Ctx.getMDKindID("hl.pool.value");
  const DSGraph &G = *BU.sccs()[BU.sccOf(Orig)].Graph;

  // Which pools each node reaches: reverse reachability from each pool's nodes.
  std::map<const DSNode *, std::vector<const DSNode *>> Preds;
  for (DSNode *N : G.representatives())
    for (auto &E : N->Edges) Preds[DSGraph::find(E.second.Node)].push_back(N);
  std::map<const DSNode *, std::vector<unsigned>> Reaches;
  for (unsigned L = 0; L < Leaders.size(); ++L) {
    std::vector<const DSNode *> Work;
    for (auto &NP : Plan.Nodes)
      if (NP.second.Kind == PoolKind::Local && NP.second.Owner == Orig && NP.second.Leader == Leaders[L])
        Work.push_back(NP.first);
    std::set<const DSNode *> Seen(Work.begin(), Work.end());
    while (!Work.empty()) {
      const DSNode *N = Work.back();
      Work.pop_back();
      Reaches[N].push_back(L);
      for (const DSNode *P : Preds[N])
        if (Seen.insert(P).second) Work.push_back(P);
    }
  }
  std::vector<unsigned> All(NumPools);
  for (unsigned L = 0; L < NumPools; ++L) All[L] = L;
  // A pointer the analysis has no node for could point anywhere; an integer without a node is
  // one of the documented unfollowed cases (pointers through mul/shift/div).
  auto pools = [&](const Value *OV) -> std::vector<unsigned> {
    if (isa<Constant>(OV) || isa<BasicBlock>(OV) || isa<MetadataAsValue>(OV) || isa<InlineAsm>(OV)) return {};
    DSNode *N = BU.nodeOf(OV, Orig);
    if (!N) return OV->getType()->isPointerTy() ? All : std::vector<unsigned>{};
    auto It = Reaches.find(DSGraph::find(N));
    return It == Reaches.end() ? std::vector<unsigned>{} : It->second;
  };

  for (Argument &A : Orig->args())
    ArgPools[Orig == V ? &A : cast<Argument>(VMap->lookup(&A))] = pools(&A);
  for (BasicBlock &BB : *Orig)
    for (Instruction &OI : BB) {
      Instruction *VI = &OI;
      if (Orig != V) {
        VI = dyn_cast_or_null<Instruction>(VMap->lookup(&OI));
        if (!VI) continue;
      }
      std::vector<unsigned> U;
      for (Value *Op : OI.operands())
        for (unsigned P : pools(Op)) U.push_back(P);
      std::sort(U.begin(), U.end());
      U.erase(std::unique(U.begin(), U.end()), U.end());
      VI->setMetadata(KindUses, poolSet(Ctx, U));
      VI->setMetadata(KindValue, poolSet(Ctx, OI.getType()->isVoidTy() ? std::vector<unsigned>{} : pools(&OI)));
    }
}

DestroyPlacement::~DestroyPlacement() {
  for (BasicBlock &BB : *V)
    for (Instruction &I : BB) {
      I.setMetadata(KindUses, nullptr);
      I.setMetadata(KindValue, nullptr);
    }
}

bool DestroyPlacement::uses(const Instruction &I, const AllocaInst *A, unsigned Index,
                            const std::set<const Value *> &Descriptors) const {
  if (isDestroyOf(I, A)) return false;
  for (const Value *Op : I.operands())
    if (Op == A) return true;
  if (const MDNode *MD = I.getMetadata(KindUses)) return inSet(MD, Index);
  // Added by the transformation: judge each operand.
  for (const Value *Op : I.operands()) {
    if (isa<Constant>(Op) || isa<BasicBlock>(Op) || isa<MetadataAsValue>(Op) || isa<InlineAsm>(Op)) continue;
    if (Descriptors.count(Op)) continue;
    if (auto *OI = dyn_cast<Instruction>(Op)) {
      if (const MDNode *MV = OI->getMetadata(KindValue)) {
        if (inSet(MV, Index)) return true;
        continue;
      }
    } else if (auto *Arg = dyn_cast<Argument>(Op)) {
      auto It = ArgPools.find(Arg);
      if (It != ArgPools.end()) {
        if (std::find(It->second.begin(), It->second.end(), Index) != It->second.end()) return true;
        continue;
      }
    }
    if (isPtrLike(Op->getType(), I.getModule()->getDataLayout())) return true;
  }
  return false;
}

bool DestroyPlacement::place(AllocaInst *A, unsigned Index, FunctionCallee Destroy,
                             const std::set<const Value *> &Descriptors) {
  for (BasicBlock &BB : *V) {
    const Instruction *T = BB.getTerminator();
    if (!isa<BranchInst>(T) && !isa<SwitchInst>(T) && !isa<ReturnInst>(T) && !isa<UnreachableInst>(T)) return false;
  }
  DenseMap<const Instruction *, bool> IsUse;
  DenseMap<const BasicBlock *, bool> HasUse, LiveIn, LiveOut;
  for (BasicBlock &BB : *V)
    for (Instruction &I : BB)
      if (isCreateOf(I, A) || uses(I, A, Index, Descriptors)) {
        if (I.isTerminator()) return false;
        IsUse[&I] = HasUse[&BB] = true;
      }
  std::vector<BasicBlock *> Order;
  for (BasicBlock *BB : post_order(&V->getEntryBlock())) Order.push_back(BB);
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (BasicBlock *BB : Order) {
      bool Out = false;
      for (BasicBlock *S : successors(BB)) Out |= LiveIn.lookup(S);
      bool In = Out || HasUse.lookup(BB);
      if (Out != LiveOut.lookup(BB) || In != LiveIn.lookup(BB)) {
        LiveOut[BB] = Out;
        LiveIn[BB] = In;
        Changed = true;
      }
    }
  }
  std::vector<Instruction *> After;                      // last uses within a block
  std::vector<std::pair<BasicBlock *, BasicBlock *>> Edges; // live block -> dead block
  for (BasicBlock *BB : Order) {
    bool Live = LiveOut.lookup(BB);
    for (auto It = BB->rbegin(); It != BB->rend(); ++It)
      if (IsUse.lookup(&*It)) {
        if (!Live) After.push_back(&*It);
        Live = true;
      }
    if (!LiveOut.lookup(BB)) continue;
    std::set<BasicBlock *> Done;
    for (BasicBlock *S : successors(BB)) {
      if (LiveIn.lookup(S) || !Done.insert(S).second) continue;
      if (S->getUniquePredecessor() != BB && llvm::count(successors(BB), S) > 1) return false;
      Edges.push_back({BB, S});
    }
  }

  std::vector<Instruction *> Old;
  for (BasicBlock &BB : *V)
    for (Instruction &I : BB)
      if (isDestroyOf(I, A)) Old.push_back(&I);
  for (Instruction *I : Old) I->eraseFromParent();
  bool Moved = false;
  for (Instruction *I : After) {
    Instruction *At = I->getNextNode();
    while (isa<PHINode>(At)) At = At->getNextNode();
    CallInst::Create(Destroy, {A}, "", At);
    Moved |= !isa<ReturnInst>(At);
  }
  for (auto &E : Edges) {
    BasicBlock *S = E.second;
    BasicBlock *At = S->getUniquePredecessor() == E.first ? S : SplitEdge(E.first, S);
    CallInst::Create(Destroy, {A}, "", &*At->getFirstInsertionPt());
    Moved = true;
  }
  return Moved;
}

} // namespace hlapa
