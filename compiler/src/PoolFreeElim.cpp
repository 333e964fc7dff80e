// Pool-free elimination: a backward may-dataflow over each function's CFG per pool, with
// call-graph summaries for what a call does to a pool. Everything that cannot be proven free
// of later allocations keeps its poolfree.
//
// Per pool value P of a function F (a descriptor F owns, or one of F's pool parameters when F
// is a clone), "allocation later" holds at a point if some path from there, before P is
// destroyed, may allocate from P. An allocation is
//   - poolalloc / poolrealloc / poolalloc_bp on P;
//   - a call to a clone that receives P as a pool parameter and may allocate from it
//     (MayAlloc, a fixed point over the clones, recursion included);
//   - any call that can reach code this unit does not know: an indirect call, inline asm, a
//     declaration outside the C library table of ExternalFunctions, or a defined function
//     that calls one of those (ReachesUnknown, transitively). Such code is never given a
//     pool descriptor by the transformation, but the analysis does not rely on that;
//   - P handed to anything else than a pool call's first argument or a clone's pool parameter.
// At a return, a descriptor F owns has just been destroyed (nothing later); a pool parameter
// continues in the callers: ExitLive is the "allocation later" state just after every call of
// the clone, for the pool each caller passes (null passes no pool: the clone takes its malloc
// path and never reaches the poolfree). A caller passing anything else (a global pool, a
// value the analysis does not track) or a use of the clone other than a direct call makes
// ExitLive true. ExitLive and the dataflows are iterated together to the least fixed point.
#include "PoolFreeElim.h"
#include "ExternalFunctions.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugLoc.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace llvm;

namespace hlapa {
namespace {

enum class PoolOp { None, Create, Alloc, Free, Destroy };

PoolOp poolOp(const Function *Callee) {
  if (!Callee || !Callee->isDeclaration()) return PoolOp::None;
  return StringSwitch<PoolOp>(Callee->getName())
      .Cases("poolcreate", "poolinit_bp", PoolOp::Create)
      .Cases("poolalloc", "poolrealloc", "poolalloc_bp", PoolOp::Alloc)
      .Case("poolfree", PoolOp::Free)
      .Cases("pooldestroy", "pooldestroy_bp", PoolOp::Destroy)
      .Default(PoolOp::None);
}

const Function *directCallee(const CallBase &CB) {
  return dyn_cast<Function>(CB.getCalledOperand()->stripPointerCasts());
}

class FreeElim {
public:
  FreeElim(Module &M, const std::map<Function *, std::vector<AllocaInst *>> &Locals,
           const std::map<const Function *, unsigned> &PoolParams, bool Debug)
      : M(M), Locals(Locals), PoolParams(PoolParams), Debug(Debug) {}
  unsigned run();

private:
  using Key = std::pair<const Function *, unsigned>; // a clone, the index among its pool parameters
  using PoolKey = std::pair<const Function *, const Value *>;

  int paramIndex(const Function *F, const Value *V) const;
  bool isPoolOf(const Function *F, const Value *V) const;
  bool callAllocates(const CallBase &CB, const Value *P) const;
  bool callsUnknownDirectly(const Function &F) const;
  void computeReachesUnknown();
  void computeMayAlloc();
  bool exitState(const Function *F, const Value *P) const;
  bool blockOut(const BasicBlock *BB, const PoolKey &K) const;
  bool transfer(const Instruction &I, const Value *P, bool After) const;
  void solve(const Function *F, const Value *P);
  bool allocAfter(const Instruction *I, const Value *P) const;
  bool recomputeExitLive();

  Module &M;
  const std::map<Function *, std::vector<AllocaInst *>> &Locals;
  const std::map<const Function *, unsigned> &PoolParams;
  bool Debug;
  std::map<const Function *, bool> ReachesUnknown;
  std::map<Key, bool> MayAlloc, ExitLive;
  std::set<const Function *> Opaque; // unusual control flow: every point counts as "allocation later"
  std::map<PoolKey, DenseMap<const BasicBlock *, bool>> In;
  std::vector<PoolKey> Pools;
};

int FreeElim::paramIndex(const Function *F, const Value *V) const {
  auto *A = dyn_cast<Argument>(V);
  if (!A || A->getParent() != F) return -1;
  auto It = PoolParams.find(F);
  if (It == PoolParams.end()) return -1;
  unsigned First = F->arg_size() - It->second;
  return A->getArgNo() >= First ? int(A->getArgNo() - First) : -1;
}

bool FreeElim::isPoolOf(const Function *F, const Value *V) const {
  if (paramIndex(F, V) >= 0) return true;
  auto It = Locals.find(const_cast<Function *>(F));
  if (It == Locals.end()) return false;
  for (const AllocaInst *A : It->second)
    if (A == V) return true;
  return false;
}

bool FreeElim::callsUnknownDirectly(const Function &F) const {
  for (const Instruction &I : instructions(F)) {
    auto *CB = dyn_cast<CallBase>(&I);
    if (!CB) continue;
    if (CB->isInlineAsm()) return true;
    const Function *Callee = directCallee(*CB);
    if (!Callee) return true;
    if (!Callee->isDeclaration() || poolOp(Callee) != PoolOp::None) continue;
    if (classifyCallee(Callee->getName(), Callee->isIntrinsic()) == CalleeKind::Unknown) return true;
  }
  return false;
}

void FreeElim::computeReachesUnknown() {
  for (const Function &F : M)
    if (!F.isDeclaration()) ReachesUnknown[&F] = callsUnknownDirectly(F);
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (auto &KV : ReachesUnknown) {
      if (KV.second) continue;
      for (const Instruction &I : instructions(*KV.first)) {
        auto *CB = dyn_cast<CallBase>(&I);
        const Function *Callee = CB ? directCallee(*CB) : nullptr;
        if (Callee && !Callee->isDeclaration() && ReachesUnknown[Callee]) {
          KV.second = Changed = true;
          break;
        }
      }
    }
  }
}

bool FreeElim::callAllocates(const CallBase &CB, const Value *P) const {
  if (CB.isInlineAsm()) return true;
  const Function *Callee = directCallee(CB);
  if (!Callee) return true;
  bool Passes = false;
  for (const Use &A : CB.args()) Passes |= A.get() == P;
  PoolOp Op = poolOp(Callee);
  if (Op != PoolOp::None) {
    for (unsigned I = 1; I < CB.arg_size(); ++I)
      if (CB.getArgOperand(I) == P) return true;
    return Op == PoolOp::Alloc && CB.getArgOperand(0) == P;
  }
  if (Callee->isDeclaration()) {
    if (classifyCallee(Callee->getName(), Callee->isIntrinsic()) == CalleeKind::Unknown) return true;
    return Passes; // a C library function handed a pool descriptor: not something we made, assume the worst
  }
  if (ReachesUnknown.at(Callee)) return true;
  if (!Passes) return false;
  if (Callee->isVarArg()) return true;
  for (unsigned I = 0; I < CB.arg_size(); ++I) {
    if (CB.getArgOperand(I) != P) continue;
    if (I >= Callee->arg_size()) return true;
    int J = paramIndex(Callee, Callee->getArg(I));
    if (J < 0) return true;
    auto It = MayAlloc.find({Callee, unsigned(J)});
    if (It == MayAlloc.end() || It->second) return true;
  }
  return false;
}

void FreeElim::computeMayAlloc() {
  for (auto &KV : PoolParams)
    for (unsigned J = 0; J < KV.second; ++J) MayAlloc[{KV.first, J}] = KV.first->isVarArg();
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (auto &KV : PoolParams) {
      const Function *G = KV.first;
      unsigned First = G->arg_size() - KV.second;
      for (unsigned J = 0; J < KV.second; ++J) {
        if (MayAlloc[{G, J}]) continue;
        const Value *P = G->getArg(First + J);
        for (const Instruction &I : instructions(*G))
          if (auto *CB = dyn_cast<CallBase>(&I); CB && callAllocates(*CB, P)) {
            MayAlloc[{G, J}] = Changed = true;
            break;
          }
      }
    }
  }
}

bool FreeElim::exitState(const Function *F, const Value *P) const {
  int J = paramIndex(F, P);
  if (J < 0) return false; // a descriptor F owns: destroyed right before the return
  auto It = ExitLive.find({F, unsigned(J)});
  return It == ExitLive.end() || It->second;
}

bool FreeElim::blockOut(const BasicBlock *BB, const PoolKey &K) const {
  const Instruction *T = BB->getTerminator();
  if (succ_empty(BB)) return isa<ReturnInst>(T) ? exitState(K.first, K.second) : false;
  const auto &Map = In.at(K);
  for (const BasicBlock *S : successors(BB)) {
    auto It = Map.find(S);
    if (It != Map.end() && It->second) return true;
  }
  return false;
}

// The state before I from the state after it.
bool FreeElim::transfer(const Instruction &I, const Value *P, bool After) const {
  auto *CB = dyn_cast<CallBase>(&I);
  if (!CB) return After;
  if (poolOp(directCallee(*CB)) == PoolOp::Destroy && CB->getArgOperand(0) == P) return false;
  return After || callAllocates(*CB, P);
}

void FreeElim::solve(const Function *F, const Value *P) {
  PoolKey K{F, P};
  auto &Map = In[K];
  Map.clear();
  if (Opaque.count(F)) return;
  for (const BasicBlock &BB : *F) Map[&BB] = false;
  std::vector<const BasicBlock *> Order; // successors before predecessors, as far as loops allow
  for (const BasicBlock *BB : post_order(&F->getEntryBlock())) Order.push_back(BB);
  for (bool Changed = true; Changed;) {
    Changed = false;
    for (const BasicBlock *BB : Order) {
      bool S = blockOut(BB, K);
      for (auto It = BB->rbegin(); It != BB->rend(); ++It) S = transfer(*It, P, S);
      if (S && !Map[BB]) Map[BB] = Changed = true;
    }
  }
}

// "Allocation later" just after I.
bool FreeElim::allocAfter(const Instruction *I, const Value *P) const {
  const Function *F = I->getFunction();
  if (Opaque.count(F)) return true;
  const BasicBlock *BB = I->getParent();
  bool S = blockOut(BB, {F, P});
  for (auto It = BB->rbegin(); &*It != I; ++It) S = transfer(*It, P, S);
  return S;
}

bool FreeElim::recomputeExitLive() {
  bool Changed = false;
  for (auto &KV : PoolParams) {
    const Function *G = KV.first;
    unsigned First = G->arg_size() - KV.second;
    for (unsigned J = 0; J < KV.second; ++J) {
      bool &L = ExitLive[{G, J}];
      if (L) continue;
      bool Now = G->isVarArg();
      for (const Use &U : G->uses()) {
        if (Now) break;
        auto *CB = dyn_cast<CallBase>(U.getUser());
        if (!CB || !CB->isCallee(&U) || CB->arg_size() != G->arg_size()) {
          Now = true;
          break;
        }
        const Value *A = CB->getArgOperand(First + J);
        if (isa<ConstantPointerNull>(A)) continue;
        const Function *Caller = CB->getFunction();
        Now = !isPoolOf(Caller, A) || allocAfter(CB, A);
      }
      if (Now) L = Changed = true;
    }
  }
  return Changed;
}

unsigned FreeElim::run() {
  for (auto &KV : Locals)
    for (AllocaInst *A : KV.second) Pools.push_back({KV.first, A});
  for (auto &KV : PoolParams)
    for (unsigned J = 0; J < KV.second; ++J)
      Pools.push_back({KV.first, KV.first->getArg(KV.first->arg_size() - KV.second + J)});
  for (auto &P : Pools) {
    const Function *F = P.first;
    for (const BasicBlock &BB : *F) {
      const Instruction *T = BB.getTerminator();
      if (!isa<BranchInst>(T) && !isa<SwitchInst>(T) && !isa<ReturnInst>(T) && !isa<UnreachableInst>(T))
        Opaque.insert(F);
      for (const Instruction &I : BB)
        if (auto *CB = dyn_cast<CallBase>(&I); CB && CB->hasFnAttr(Attribute::ReturnsTwice)) Opaque.insert(F);
    }
  }
  computeReachesUnknown();
  computeMayAlloc();
  for (auto &KV : PoolParams)
    for (unsigned J = 0; J < KV.second; ++J) ExitLive[{KV.first, J}] = false;
  do {
    for (auto &P : Pools) solve(P.first, P.second);
  } while (recomputeExitLive());

  std::vector<CallBase *> Dead;
  for (auto &P : Pools)
    for (const Instruction &I : instructions(*P.first)) {
      auto *CB = dyn_cast<CallBase>(&I);
      if (CB && poolOp(directCallee(*CB)) == PoolOp::Free && CB->getArgOperand(0) == P.second &&
          !allocAfter(CB, P.second))
        Dead.push_back(const_cast<CallBase *>(CB));
    }
  for (CallBase *CB : Dead) {
    if (Debug) {
      errs() << "heaplayout-apa: poolfree eliminated in " << CB->getFunction()->getName();
      if (const DebugLoc &DL = CB->getDebugLoc()) errs() << " at line " << DL.getLine();
      errs() << "\n";
    }
    CB->eraseFromParent();
  }
  return Dead.size();
}

} // namespace

unsigned eliminatePoolFrees(Module &M, const std::map<Function *, std::vector<AllocaInst *>> &Locals,
                            const std::map<const Function *, unsigned> &PoolParams, bool Debug) {
  return FreeElim(M, Locals, PoolParams, Debug).run();
}

} // namespace hlapa
