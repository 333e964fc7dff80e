// The escape analysis on bottom-up graphs and the choice of a pool for each heap node.
#include "PoolPlan.h"

#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

#include <algorithm>
#include <functional>

using namespace llvm;

namespace hlapa {

const char *const ReasonExternal = "reachable by code outside this translation unit (unknown or indirect call, "
                                   "exported global, int-to-pointer)";
const char *const ReasonSingleton = "no object points to it (Selective PA)";
const char *const ReasonSharedInSCC = "used by several functions of one recursive cycle";
const char *const ReasonNoCleanExit = "owner function has invoke/setjmp (no safe pooldestroy point)";
const char *const ReasonNoPoolFromCaller = "the caller passes no pool (original kept for unknown callers)";
const char *const ReasonRecursiveOwner =
    "owner function is recursive (a pool descriptor per frame could overflow the stack)";
const char *const ReasonNoCallerPool = "no caller passes a pool for it (top-down)";

// A function where a pool cannot be destroyed at every exit (exceptions, setjmp).
static bool hasUnusualExits(const Function &F) {
  for (const Instruction &I : instructions(F)) {
    if (isa<InvokeInst>(I) || isa<ResumeInst>(I) || isa<CallBrInst>(I)) return true;
    if (auto *CB = dyn_cast<CallBase>(&I))
      if (CB->hasFnAttr(Attribute::ReturnsTwice)) return true;
  }
  return false;
}

// A descriptor is 1 KiB of stack: in a function that can recurse, one per frame could
// overflow a stack the original program fits in.
static bool isRecursive(const SCCInfo &S, const Function &F) {
  if (S.Members.size() > 1) return true;
  for (const Instruction &I : instructions(F))
    if (auto *CB = dyn_cast<CallBase>(&I))
      if (CB->getCalledOperand()->stripPointerCasts() == &F) return true;
  return false;
}

static SCCPlan planOne(const SCCInfo &S, unsigned Index, const GlobalsGraph &GGr) {
  SCCPlan P;
  const DSGraph &G = *S.Graph;
  std::vector<DSHandle> EscapeRoots, GlobalRoots;
  for (Function *F : S.Members) {
    for (Argument &A : F->args()) {
      auto It = G.values().find(&A);
      if (It != G.values().end()) EscapeRoots.push_back(It->second);
    }
    auto R = G.returns().find(F);
    if (R != G.returns().end()) EscapeRoots.push_back(R->second);
  }
  for (auto &GH : G.globals()) GlobalRoots.push_back(GH.second);
  std::set<DSNode *> Escaping = G.reachable(EscapeRoots);
  std::set<DSNode *> FromGlobals = G.reachable(GlobalRoots);

  // Which functions of the SCC reach each node (the owner of a local pool).
  std::map<DSNode *, std::set<const Function *>> ReachedBy;
  if (S.Members.size() > 1) {
    std::map<const Function *, std::vector<DSHandle>> RootsOf;
    for (auto &VH : G.values()) {
      const Function *F = nullptr;
      if (auto *A = dyn_cast<Argument>(VH.first)) F = A->getParent();
      else if (auto *I = dyn_cast<Instruction>(VH.first)) F = I->getFunction();
      if (F) RootsOf[F].push_back(VH.second);
    }
    for (auto &FR : RootsOf)
      for (DSNode *N : G.reachable(FR.second)) ReachedBy[N].insert(FR.first);
  }

  for (DSNode *N : G.representatives()) {
    if (!N->has(HeapNode)) continue;
    NodePlan NP;
    if (N->has(ExternalNode)) {
      NP.Reason = ReasonExternal;
    } else if (FromGlobals.count(N)) {
      const DSNode *GN = GGr.nodeFor(Index, N);
      if (!GN || GN->has(ExternalNode)) NP.Reason = ReasonExternal;
      else if (GGr.disabledReason()) NP.Reason = GGr.disabledReason();
      else {
        NP.Kind = PoolKind::Global;
        NP.GlobalNode = GN;
      }
    } else if (Escaping.count(N)) {
      NP.Kind = PoolKind::Argument;
      P.ArgNodes.push_back(N);
    } else {
      const Function *Owner = S.Members.size() == 1 ? S.Members[0] : nullptr;
      if (!Owner && ReachedBy[N].size() == 1) Owner = *ReachedBy[N].begin();
      if (!Owner) NP.Reason = ReasonSharedInSCC;
      else if (hasUnusualExits(*Owner)) NP.Reason = ReasonNoCleanExit;
      else if (isRecursive(S, *Owner)) NP.Reason = ReasonRecursiveOwner;
      else {
        NP.Kind = PoolKind::Local;
        NP.Owner = Owner;
      }
    }
    P.Nodes[N] = NP;
  }
  return P;
}

// MaximalDS (APA section 6): local heap nodes of one owner joined by an edge share the pool
// of one of them. Pools of arguments follow, because their owners collocate the same way.
static void collocateMaximal(const DSGraph &G, SCCPlan &P) {
  std::map<const DSNode *, const DSNode *> Parent;
  std::function<const DSNode *(const DSNode *)> root = [&](const DSNode *N) {
    while (Parent[N] != N) N = Parent[N] = Parent[Parent[N]];
    return N;
  };
  for (auto &NP : P.Nodes)
    if (NP.second.Kind == PoolKind::Local) Parent[NP.first] = NP.first;
  for (DSNode *N : G.representatives()) {
    auto From = P.Nodes.find(N);
    if (From == P.Nodes.end() || From->second.Kind != PoolKind::Local) continue;
    for (auto &E : N->Edges) {
      auto To = P.Nodes.find(DSGraph::find(E.second.Node));
      if (To == P.Nodes.end() || To->second.Kind != PoolKind::Local || To->second.Owner != From->second.Owner)
        continue;
      const DSNode *A = root(From->first), *B = root(To->first);
      if (A != B) Parent[std::max(A, B, [](const DSNode *X, const DSNode *Y) { return X->Id < Y->Id; })] =
          std::min(A, B, [](const DSNode *X, const DSNode *Y) { return X->Id < Y->Id; });
    }
  }
  for (auto &NP : P.Nodes)
    if (NP.second.Kind == PoolKind::Local) NP.second.Leader = root(NP.first);
}

// OnePoolPerCollection (APA section 6). A collection is a set of heap nodes one traversal can
// walk over: a node of array objects (the paper's A flag: a variable index on the node's own
// pointer; collapsed nodes have no type, which the paper treats as an array of bytes) or a strongly connected component of the graph with
// a cycle in it (a recursive structure: a list, a tree). Each collection gets one pool, and a
// heap node that is not in a collection joins the pool of the one collection it can be reached
// from without passing through another collection (the data its elements point to). Read
// narrowly, as for MaximalDS: the graph is that of one owner's local pool candidates (the edges
// between them; nodes on malloc, argument and global pools are not walked through), and a node
// reached from no collection, or from two, keeps a pool of its own, since no single traversal
// owns it.
static void collocateCollections(const DSGraph &G, SCCPlan &P) {
  std::vector<const DSNode *> Cand;
  std::map<const DSNode *, std::vector<const DSNode *>> Succ;
  for (auto &NP : P.Nodes)
    if (NP.second.Kind == PoolKind::Local) Cand.push_back(NP.first);
  std::set<std::pair<const DSNode *, const DSNode *>> Seen;
  for (const DSNode *N : Cand) {
    const NodePlan &From = P.Nodes[N];
    for (auto &E : N->Edges) {
      const DSNode *T = DSGraph::find(E.second.Node);
      auto To = P.Nodes.find(T);
      if (To == P.Nodes.end() || To->second.Kind != PoolKind::Local || To->second.Owner != From.Owner) continue;
      if (Seen.insert({N, T}).second) Succ[N].push_back(T);
    }
  }
  // Tarjan's strongly connected components over the candidates.
  std::map<const DSNode *, unsigned> Index, Low, Comp;
  std::vector<const DSNode *> Stack;
  std::set<const DSNode *> OnStack;
  std::vector<std::vector<const DSNode *>> Comps;
  unsigned Next = 0;
  std::function<void(const DSNode *)> strong = [&](const DSNode *V) {
    Index[V] = Low[V] = Next++;
    Stack.push_back(V);
    OnStack.insert(V);
    for (const DSNode *W : Succ[V]) {
      if (!Index.count(W)) {
        strong(W);
        Low[V] = std::min(Low[V], Low[W]);
      } else if (OnStack.count(W)) {
        Low[V] = std::min(Low[V], Index[W]);
      }
    }
    if (Low[V] != Index[V]) return;
    Comps.emplace_back();
    const DSNode *W;
    do {
      W = Stack.back();
      Stack.pop_back();
      OnStack.erase(W);
      Comp[W] = Comps.size() - 1;
      Comps.back().push_back(W);
    } while (W != V);
  };
  for (const DSNode *N : Cand)
    if (!Index.count(N)) strong(N);

  auto byId = [](const DSNode *X, const DSNode *Y) { return X->Id < Y->Id; };
  std::vector<const DSNode *> CollectionLeader(Comps.size(), nullptr);
  for (unsigned C = 0; C < Comps.size(); ++C) {
    const std::vector<const DSNode *> &Members = Comps[C];
    bool IsCollection = Members.size() > 1;
    for (const DSNode *N : Members) {
      // ArrayNode is also set by an array field inside a struct (Ranges), which makes no
      // collection of the struct's objects; Stride is a variable index on the node's pointer.
      if (N->Stride != 0 || N->has(CollapsedNode)) IsCollection = true;
      for (const DSNode *T : Succ[N]) IsCollection |= T == N;
    }
    if (IsCollection) CollectionLeader[C] = *std::min_element(Members.begin(), Members.end(), byId);
  }
  // Which collections reach each other node without passing through another collection.
  std::map<const DSNode *, std::set<unsigned>> ReachedFrom;
  for (unsigned C = 0; C < Comps.size(); ++C) {
    if (!CollectionLeader[C]) continue;
    std::vector<const DSNode *> Work(Comps[C].begin(), Comps[C].end());
    std::set<const DSNode *> Visited(Work.begin(), Work.end());
    while (!Work.empty()) {
      const DSNode *N = Work.back();
      Work.pop_back();
      for (const DSNode *T : Succ[N]) {
        if (CollectionLeader[Comp[T]] || !Visited.insert(T).second) continue;
        ReachedFrom[T].insert(C);
        Work.push_back(T);
      }
    }
  }
  for (const DSNode *N : Cand) {
    NodePlan &NP = P.Nodes[N];
    if (const DSNode *L = CollectionLeader[Comp[N]]) NP.Leader = L;
    else if (ReachedFrom[N].size() == 1) NP.Leader = CollectionLeader[*ReachedFrom[N].begin()];
  }
}

std::vector<SCCPlan> planPools(const BottomUp &BU, const GlobalsGraph &GG, const PlanOptions &Opts) {
  std::vector<SCCPlan> Plans;
  for (unsigned I = 0; I < BU.sccs().size(); ++I) {
    const SCCInfo &S = BU.sccs()[I];
    SCCPlan P = planOne(S, I, GG);
    if (Opts.SelectivePA) {
      std::set<DSNode *> PointedTo;
      for (DSNode *N : S.Graph->representatives())
        for (auto &E : N->Edges) PointedTo.insert(DSGraph::find(E.second.Node));
      for (auto &NP : P.Nodes)
        if (NP.second.Kind == PoolKind::Local && !PointedTo.count(const_cast<DSNode *>(NP.first))) {
          NP.second.Kind = PoolKind::Malloc;
          NP.second.Reason = ReasonSingleton;
          NP.second.Owner = nullptr;
        }
    }
    for (auto &NP : P.Nodes) NP.second.Leader = NP.first;
    if (Opts.MaximalDS) collocateMaximal(*S.Graph, P);
    else if (Opts.OnePoolPerCollection) collocateCollections(*S.Graph, P);
    Plans.push_back(std::move(P));
  }
  return Plans;
}

// Whether F's original body, rather than its clone, may run: it is visible to other units, or
// some use of it is not a direct call the transformation redirects to the clone. A closed
// program (global pools on: one unit, no function address taken, no threads) has no other
// unit, so only main is entered from outside.
static bool originalMayRun(const Function &F, const BottomUp &BU, bool ClosedProgram) {
  if (F.getName() == "main") return true;
  if (!F.hasLocalLinkage() && !ClosedProgram) return true;
  for (const Use &U : F.uses()) {
    auto *CB = dyn_cast<CallBase>(U.getUser());
    if (!CB || !CB->isCallee(&U) || !BU.isResolvedCall(CB)) return true;
  }
  return false;
}

void refineWithTopDown(std::vector<SCCPlan> &Plans, const BottomUp &BU, const TopDown &TD, const GlobalsGraph &GG,
                       TopDownChanges &Changes) {
  const bool Closed = GG.disabledReason() == nullptr;
  for (unsigned I = BU.sccs().size(); I-- > 0;) {
    SCCPlan &P = Plans[I];
    if (P.ArgNodes.empty()) continue;
    const SCCInfo &S = BU.sccs()[I];
    // A surviving original calls the clones of its own SCC with null pools (it has none).
    bool OriginalPassesNull = false;
    for (Function *F : S.Members) {
      if (!originalMayRun(*F, BU, Closed)) continue;
      for (const Instruction &Ins : instructions(*F))
        if (auto *CB = dyn_cast<CallBase>(&Ins); CB && BU.isResolvedCall(CB))
          if (auto *C = dyn_cast<Function>(CB->getCalledOperand()->stripPointerCasts()); C && BU.hasBody(C))
            OriginalPassesNull |= BU.sccOf(C) == I;
    }
    bool OriginalsMayRun = false;
    for (Function *F : S.Members) OriginalsMayRun |= originalMayRun(*F, BU, Closed);

    std::vector<const DSNode *> Kept;
    for (const DSNode *A : P.ArgNodes) {
      // What the call sites pass for A, as PoolTransform's poolFor will pass it.
      bool Null = OriginalPassesNull, NonNull = false;
      std::set<const DSNode *> Globals;
      const TDNodeInfo *T = TD.info(I, A);
      if (T && T->ExternalFromCaller) ++Changes.ArgsExternalFromCaller;
      for (const CallerEdge &E : T ? T->Callers : std::vector<CallerEdge>{}) {
        const NodePlan *CP = E.CallerNode ? Plans[E.CallerSCC].planOf(E.CallerNode) : nullptr;
        const Function *Caller = E.Call->getFunction();
        if (!CP || CP->Kind == PoolKind::Malloc) Null = true;
        else if (CP->Kind == PoolKind::Global) Globals.insert(CP->GlobalNode);
        else if (CP->Kind == PoolKind::Local) (CP->Owner == Caller ? NonNull : Null) = true;
        else { // the caller's clone passes its own parameter, its original (if it may run) null
          NonNull = true;
          Null |= originalMayRun(*Caller, BU, Closed);
        }
      }
      NodePlan &NP = P.Nodes[DSGraph::find(const_cast<DSNode *>(A))];
      if (!NonNull && Globals.empty()) {
        NP.Kind = PoolKind::Malloc;
        NP.Reason = ReasonNoCallerPool;
        ++Changes.ArgsToMalloc;
      } else if (!NonNull && !Null && Globals.size() == 1 && !OriginalsMayRun) {
        // The original would use the global pool too, on memory an unknown caller malloc'ed:
        // only when no original can run.
        NP.Kind = PoolKind::Global;
        NP.GlobalNode = *Globals.begin();
        ++Changes.ArgsToGlobal;
      } else {
        Kept.push_back(A);
        continue;
      }
      Changes.PoolArgsRemoved += S.Members.size();
    }
    if (Kept.empty()) Changes.ClonesAvoided += S.Members.size();
    P.ArgNodes = Kept;
  }
}

} // namespace hlapa
