// pooldestroy placement: the facts (metadata), the liveness and the moves.
#include "PoolDestroyPlacement.h"
#include "LocalAnalysis.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/SCCIterator.h"
#include "llvm/IR/Dominators.h"
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

// Where poolcreate can go (APA 4.2): the nearest common dominator of the pool's uses, so
// that every path that uses the pool has created it; moved up the dominator tree out of any
// CFG cycle, so that it runs at most once per call (in a loop it would make a pool per
// iteration, and the destroy placement below assumes one create per path). A phi's use is
// at the end of each predecessor. Returns the instruction to insert before, or null to keep
// the create where it is (no use on a path from the entry).
static Instruction *createPoint(Function &F, const DominatorTree &DT, const std::vector<Instruction *> &Uses) {
  BasicBlock *Common = nullptr;
  auto meet = [&](BasicBlock *BB) {
    if (!DT.isReachableFromEntry(BB)) return;
    Common = Common ? DT.findNearestCommonDominator(Common, BB) : BB;
  };
  for (Instruction *U : Uses) {
    meet(U->getParent());
    if (auto *Phi = dyn_cast<PHINode>(U))
      for (BasicBlock *Pred : Phi->blocks()) meet(Pred);
  }
  if (!Common) return nullptr;
  std::set<const BasicBlock *> InCycle;
  for (scc_iterator<Function *> It = scc_begin(&F); !It.isAtEnd(); ++It)
    if (It.hasCycle())
      for (BasicBlock *BB : *It) InCycle.insert(BB);
  BasicBlock *At = Common;
  while (InCycle.count(At)) At = DT.getNode(At)->getIDom()->getBlock(); // the entry is in no cycle
  if (At == Common)
    for (Instruction &I : *At)
      if (std::find(Uses.begin(), Uses.end(), &I) != Uses.end())
        return isa<PHINode>(I) ? &*At->getFirstInsertionPt() : &I;
  return At->getTerminator();
}

// Whether the create is anywhere but right after the entry's allocas and other creates.
static bool createdLate(const Instruction *Create) {
  for (const Instruction &I : Create->getFunction()->getEntryBlock()) {
    if (&I == Create) return false;
    if (isa<AllocaInst>(I)) continue;
    auto *CB = dyn_cast<CallBase>(&I);
    const Function *F = CB ? CB->getCalledFunction() : nullptr;
    if (!F || (F->getName() != "poolcreate" && F->getName() != "poolinit_bp")) return true;
  }
  return true;
}

bool DestroyPlacement::place(AllocaInst *A, unsigned Index, FunctionCallee Destroy,
                             const std::set<const Value *> &Descriptors, bool MoveCreate, bool &CreateMoved) {
  CreateMoved = false;
  for (BasicBlock &BB : *V) {
    const Instruction *T = BB.getTerminator();
    if (!isa<BranchInst>(T) && !isa<SwitchInst>(T) && !isa<ReturnInst>(T) && !isa<UnreachableInst>(T)) return false;
  }
  DenseMap<const Instruction *, bool> IsUse;
  DenseMap<const BasicBlock *, bool> HasUse, LiveIn, LiveOut;
  Instruction *Create = nullptr;
  std::vector<Instruction *> Uses;
  for (BasicBlock &BB : *V)
    for (Instruction &I : BB) {
      if (isCreateOf(I, A)) {
        Create = &I;
        continue;
      }
      if (uses(I, A, Index, Descriptors)) {
        if (I.isTerminator()) return false;
        IsUse[&I] = HasUse[&BB] = true;
        Uses.push_back(&I);
      }
    }
  if (!Create) return false;

  // The create counts as a use: the pool is live from it on. Moved first, so that the
  // liveness below starts there; put back if the destroys cannot be placed after all.
  DominatorTree DT(*V);
  Instruction *OrigNext = Create->getNextNode();
  if (MoveCreate)
    if (Instruction *At = createPoint(*V, DT, Uses); At && At != Create) Create->moveBefore(At);
  IsUse[Create] = HasUse[Create->getParent()] = true;
  auto giveUp = [&] {
    Create->moveBefore(OrigNext);
    return false;
  };
  // Only what comes after the create can see the pool: the blocks it dominates (it runs at
  // most once on any path, so every block it dominates is reached through it exactly once).
  BasicBlock *CreateBB = Create->getParent();
  auto afterCreate = [&](BasicBlock *BB) { return DT.dominates(CreateBB, BB); };

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
    // Before the create the pool is "live" only because the create follows: no destroy there.
    if (!afterCreate(BB)) continue;
    bool Live = LiveOut.lookup(BB);
    for (auto It = BB->rbegin(); It != BB->rend(); ++It) {
      if (IsUse.lookup(&*It)) {
        if (!Live) After.push_back(&*It);
        Live = true;
      }
      if (&*It == Create) break;
    }
    if (!LiveOut.lookup(BB)) continue;
    std::set<BasicBlock *> Done;
    for (BasicBlock *S : successors(BB)) {
      if (LiveIn.lookup(S) || !Done.insert(S).second) continue;
      if (S->getUniquePredecessor() != BB && llvm::count(successors(BB), S) > 1) return giveUp();
      Edges.push_back({BB, S});
    }
  }

  CreateMoved = createdLate(Create);
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
