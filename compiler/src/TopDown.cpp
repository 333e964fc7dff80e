// The top-down phase over the bottom-up graphs: callers first, so that when an SCC's facts
// are pushed into its callees they already include everything its own callers told it.
#include "TopDown.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Instructions.h"

using namespace llvm;

namespace hlapa {

// Formals and return values of the SCC's functions: what a caller can see of its graph.
static std::vector<DSHandle> interfaceRoots(const SCCInfo &S, bool OnlyOpenToUnknownCode) {
  const DSGraph &G = *S.Graph;
  std::vector<DSHandle> Roots;
  for (Function *F : S.Members) {
    // An internal function whose address never leaves it is called only from this unit.
    if (OnlyOpenToUnknownCode && F->hasLocalLinkage() && !F->hasAddressTaken()) continue;
    for (Argument &A : F->args()) {
      auto It = G.values().find(&A);
      if (It != G.values().end()) Roots.push_back(It->second);
    }
    auto R = G.returns().find(F);
    if (R != G.returns().end()) Roots.push_back(R->second);
  }
  return Roots;
}

void TopDown::run() {
  const std::vector<SCCInfo> &SCCs = BU.sccs();
  Info.assign(SCCs.size(), {});
  std::vector<std::vector<CallEdge>> Incoming(SCCs.size());
  for (const CallEdge &E : BU.callEdges()) {
    unsigned Caller = BU.sccOf(E.Call->getFunction()), Callee = BU.sccOf(E.Callee);
    if (Caller != Callee && E.Map) Incoming[Callee].push_back(E);
  }
  // SCCs are numbered callees first, so every caller of SCC I has a larger number: walking
  // down from the top, an SCC's callers have all pushed their facts before it is finished.
  for (unsigned I = SCCs.size(); I-- > 0;) {
    const DSGraph &G = *SCCs[I].Graph;
    std::map<const DSNode *, TDNodeInfo> &Mine = Info[I];
    std::set<DSNode *> Interface = G.reachable(interfaceRoots(SCCs[I], false));
    for (const CallEdge &E : Incoming[I]) {
      unsigned CallerSCC = BU.sccOf(E.Call->getFunction());
      const std::map<const DSNode *, TDNodeInfo> &Theirs = Info[CallerSCC];
      for (DSNode *N : Interface) {
        auto It = E.Map->find(N);
        const DSNode *C = It == E.Map->end() ? nullptr : DSGraph::find(It->second);
        TDNodeInfo &T = Mine[N];
        T.Callers.push_back({E.Call, CallerSCC, C});
        if (!C) continue;
        auto CT = Theirs.find(C);
        for (const GlobalValue *GV : C->Globals)
          if (auto *F = dyn_cast<Function>(GV)) T.CallerFunctions.insert(F);
        if (CT != Theirs.end()) T.CallerFunctions.insert(CT->second.CallerFunctions.begin(), CT->second.CallerFunctions.end());
        if (C->has(ExternalNode) || (CT != Theirs.end() && CT->second.ExternalFromCaller))
          T.ExternalFromCaller = true;
        // A caller's own formal passed on: whoever calls that caller from outside reaches it.
        if (CT != Theirs.end() && CT->second.UnknownCallers) T.UnknownCallers = true;
      }
    }
    // What unknown code can reach, it can reach through: close over the graph's edges.
    std::vector<DSHandle> FromCallers;
    for (auto &KV : Mine)
      if (KV.second.ExternalFromCaller) FromCallers.push_back({const_cast<DSNode *>(KV.first), 0});
    for (DSNode *N : G.reachable(FromCallers)) Mine[N].ExternalFromCaller = true;
    std::vector<DSHandle> Open = interfaceRoots(SCCs[I], true);
    for (auto &KV : Mine)
      if (KV.second.UnknownCallers) Open.push_back({const_cast<DSNode *>(KV.first), 0});
    for (DSNode *N : G.reachable(Open)) Mine[N].UnknownCallers = true;
    for (auto &KV : Mine)
      if (KV.second.ExternalFromCaller && !KV.first->has(ExternalNode)) ++ExternalFromCallerCount;
  }
}

void TopDown::countIndirect(unsigned &Candidates, unsigned &Heap) const {
  Candidates = Heap = 0;
  for (auto &[CB, WasExternal] : BU.unknownIndirectCalls()) {
    const Function *Caller = CB->getFunction();
    unsigned I = BU.sccOf(Caller);
    const DSGraph &G = *BU.sccs()[I].Graph;
    DSNode *N = BU.nodeOf(CB->getCalledOperand(), Caller);
    if (!N || WasExternal) continue;
    const TDNodeInfo *T = info(I, N);
    if (T && (T->ExternalFromCaller || T->UnknownCallers)) continue;
    std::set<const Function *> Callees = T ? T->CallerFunctions : std::set<const Function *>{};
    bool Known = true;
    for (const GlobalValue *GV : N->Globals) {
      auto *F = dyn_cast<Function>(GV);
      if (!F) Known = false;
      else Callees.insert(F);
    }
    for (const Function *F : Callees) Known &= !F->isDeclaration() && !F->isVarArg();
    if (!Known || Callees.empty()) continue;
    ++Candidates;
    std::vector<DSHandle> Args;
    for (const Value *A : CB->args())
      if (G.hasHandle(A)) Args.push_back(G.values().lookup(A));
    for (DSNode *R : G.reachable(Args))
      if (R->has(HeapNode) || info(I, R)) {
        ++Heap;
        break;
      }
  }
}

const TDNodeInfo *TopDown::info(unsigned SCC, const DSNode *N) const {
  auto It = Info[SCC].find(DSGraph::find(const_cast<DSNode *>(N)));
  return It == Info[SCC].end() ? nullptr : &It->second;
}

} // namespace hlapa
