// Bottom-up inlining of callee graphs over the SCCs of the direct call graph.
#include "BottomUp.h"

#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

#include <algorithm>
#include <functional>

using namespace llvm;

namespace hlapa {

BottomUp::BottomUp(Module &M) : M(M), DL(M.getDataLayout()) {}

static Function *directCallee(const CallBase &CB) {
  if (CB.isInlineAsm()) return nullptr;
  return dyn_cast<Function>(CB.getCalledOperand()->stripPointerCasts());
}

// Tarjan's algorithm; components come out callees first (reverse topological order).
void BottomUp::computeSCCs() {
  std::vector<Function *> Defined;
  for (Function &F : M)
    if (!F.isDeclaration()) Defined.push_back(&F);
  std::map<Function *, unsigned> Index, Low;
  std::set<Function *> OnStack;
  std::vector<Function *> Stack;
  unsigned Next = 0;
  std::function<void(Function *)> strong = [&](Function *F) {
    Index[F] = Low[F] = Next++;
    Stack.push_back(F);
    OnStack.insert(F);
    for (Instruction &I : instructions(*F)) {
      auto *CB = dyn_cast<CallBase>(&I);
      if (!CB) continue;
      Function *C = directCallee(*CB);
      if (!C || C->isDeclaration()) continue;
      if (!Index.count(C)) {
        strong(C);
        Low[F] = std::min(Low[F], Low[C]);
      } else if (OnStack.count(C)) {
        Low[F] = std::min(Low[F], Index[C]);
      }
    }
    if (Low[F] == Index[F]) {
      SCCInfo S;
      Function *W;
      do {
        W = Stack.back();
        Stack.pop_back();
        OnStack.erase(W);
        S.Members.push_back(W);
      } while (W != F);
      std::reverse(S.Members.begin(), S.Members.end());
      for (Function *Mem : S.Members) SCCIndex[Mem] = SCCs.size();
      SCCs.push_back(std::move(S));
    }
  };
  for (Function *F : Defined)
    if (!Index.count(F)) strong(F);
}

void BottomUp::run() {
  computeSCCs();
  for (unsigned I = 0; I < SCCs.size(); ++I) {
    CurrentSCC = I;
    SCCs[I].Graph = std::make_unique<DSGraph>();
    DSGraph &G = *SCCs[I].Graph;
    LocalAnalysis LA(G, DL, *this, Kinds);
    Current = &LA;
    // Formals first, so that calls inside the SCC find them.
    for (Function *F : SCCs[I].Members)
      for (Argument &A : F->args()) LA.handleOf(&A);
    for (Function *F : SCCs[I].Members) LA.analyze(*F);
    G.propagateExternal();
    Current = nullptr;
  }
}

bool BottomUp::resolveDirectCall(CallBase &CB, Function &Callee, DSGraph &G) {
  // Calls the transformation could not give extra arguments to are unknown code.
  if (Callee.isVarArg() || CB.arg_size() != Callee.arg_size() || CB.isMustTailCall() || isa<CallBrInst>(CB) ||
      CB.getFunctionType() != Callee.getFunctionType())
    return false;
  Resolved.insert(&CB);
  unsigned CalleeSCC = SCCIndex.at(&Callee);
  if (CalleeSCC == CurrentSCC) { // same graph: unify actuals with formals directly
    for (unsigned I = 0; I < CB.arg_size(); ++I)
      if (isPtrLike(CB.getArgOperand(I)->getType(), DL))
        G.unify(Current->handleOf(CB.getArgOperand(I)), Current->handleOf(Callee.getArg(I)));
    if (isPtrLike(CB.getType(), DL)) {
      DSHandle &Slot = G.returnSlot(&Callee);
      if (!Slot) Slot = {G.makeNode(), 0};
      G.unify(G.returnSlot(&Callee), Current->handleOf(&CB));
    }
    return true;
  }
  const DSGraph &CG = *SCCs[CalleeSCC].Graph;
  std::vector<DSHandle> Roots;
  for (Argument &A : Callee.args()) {
    auto It = CG.values().find(&A);
    Roots.push_back(It == CG.values().end() ? DSHandle{} : It->second);
  }
  auto Ret = CG.returns().find(&Callee);
  Roots.push_back(Ret == CG.returns().end() ? DSHandle{} : Ret->second);
  for (auto &GH : CG.globals()) Roots.push_back(GH.second);
  std::map<const DSNode *, DSNode *> &Map = CallMaps[&CB];
  std::vector<DSHandle> Copies = G.cloneFrom(CG, Roots, Map);
  for (unsigned I = 0; I < CB.arg_size(); ++I)
    if (Copies[I] && isPtrLike(CB.getArgOperand(I)->getType(), DL))
      G.unify(Current->handleOf(CB.getArgOperand(I)), Copies[I]);
  if (Copies[CB.arg_size()] && isPtrLike(CB.getType(), DL))
    G.unify(Current->handleOf(&CB), Copies[CB.arg_size()]);
  return true;
}

const std::map<const DSNode *, DSNode *> *BottomUp::nodeMap(const CallBase *CB) const {
  auto It = CallMaps.find(CB);
  return It == CallMaps.end() ? nullptr : &It->second;
}

CalleeKind BottomUp::kindOf(const CallBase *CB) const {
  auto It = Kinds.find(CB);
  return It == Kinds.end() ? CalleeKind::Unknown : It->second;
}

DSNode *BottomUp::nodeOf(const Value *V, const Function *F) const {
  const DSGraph &G = *SCCs[SCCIndex.at(F)].Graph;
  auto It = G.values().find(V);
  if (It == G.values().end()) return nullptr;
  return DSGraph::resolve(It->second).Node;
}

} // namespace hlapa
