// Union-find over DS nodes with field-wise unification (Steensgaard-style, made
// field-sensitive as in DSA: nodes merge at equal offsets, and collapse to one field when
// the same memory is seen at two different offsets).
#include "DSGraph.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalValue.h"

#include <algorithm>
#include <numeric>

using namespace llvm;

namespace hlapa {

DSNode *DSGraph::makeNode(unsigned Flags) {
  Nodes.push_back(std::make_unique<DSNode>());
  DSNode *N = Nodes.back().get();
  N->Flags = Flags;
  N->Id = NextId++;
  return N;
}

// Root of N, with path compression that keeps each node's offset into the root.
static DSNode *findRoot(DSNode *N, uint64_t &Off) {
  Off = 0;
  if (!N) return nullptr;
  SmallVector<DSNode *, 8> Path;
  DSNode *Root = N;
  while (Root->Forward) {
    Path.push_back(Root);
    Root = Root->Forward;
  }
  uint64_t Acc = 0;
  for (auto It = Path.rbegin(); It != Path.rend(); ++It) {
    Acc += (*It)->ForwardOffset;
    (*It)->ForwardOffset = Acc;
    (*It)->Forward = Root;
  }
  Off = N == Root ? 0 : N->ForwardOffset;
  return Root;
}

DSNode *DSGraph::find(DSNode *N) {
  uint64_t Off;
  return findRoot(N, Off);
}

DSHandle DSGraph::resolve(DSHandle H) {
  uint64_t Shift;
  DSNode *N = findRoot(H.Node, Shift);
  if (!N) return {};
  return {N, normalize(N, H.Offset + Shift)};
}

uint64_t DSGraph::normalize(const DSNode *N, uint64_t Off) {
  if (N->has(CollapsedNode)) return 0;
  if (N->Stride) Off %= N->Stride;
  for (const ArrayRange &R : N->Ranges) // largest first: outer arrays before inner ones
    if (Off >= R.Start && Off < R.Start + R.Bytes) Off = R.Start + (Off - R.Start) % R.Elem;
  return Off;
}

void DSGraph::rekeyEdges(DSNode *N) {
  std::map<uint64_t, DSHandle> Old;
  Old.swap(N->Edges);
  for (auto &E : Old) {
    uint64_t Key = normalize(N, E.first);
    auto It = N->Edges.find(Key);
    if (It == N->Edges.end()) N->Edges[Key] = E.second;
    else unify(It->second, E.second);
  }
}

void DSGraph::addArrayRange(DSNode *N, uint64_t Start, uint64_t Bytes, uint64_t Elem) {
  N = find(N);
  if (N->has(CollapsedNode) || Elem == 0 || Bytes <= Elem) return;
  ArrayRange New{Start, Bytes, Elem};
  for (const ArrayRange &R : N->Ranges) {
    if (R == New) return;
    bool Disjoint = Start >= R.Start + R.Bytes || R.Start >= Start + Bytes;
    bool Inside = Start >= R.Start && Start + Bytes <= R.Start + R.Bytes;
    bool Around = R.Start >= Start && R.Start + R.Bytes <= Start + Bytes;
    if (!Disjoint && !Inside && !Around) { // two array views that disagree: give up the fields
      collapse(N);
      return;
    }
  }
  N->Flags |= ArrayNode;
  N->Ranges.push_back(New);
  std::stable_sort(N->Ranges.begin(), N->Ranges.end(),
                   [](const ArrayRange &A, const ArrayRange &B) { return A.Bytes > B.Bytes; });
  rekeyEdges(N);
}

DSHandle DSGraph::edge(DSHandle H, uint64_t ExtraOffset) {
  DSHandle R = resolve(H);
  if (!R) return {};
  uint64_t Off = normalize(R.Node, R.Offset + ExtraOffset);
  auto It = R.Node->Edges.find(Off);
  if (It != R.Node->Edges.end()) return It->second;
  DSNode *Target = makeNode();
  // Memory reachable from external memory is external too; record it as soon as it exists.
  if (R.Node->has(ExternalNode)) Target->Flags |= ExternalNode;
  R.Node->Edges[Off] = {Target, 0};
  return {Target, 0};
}

DSHandle DSGraph::offsetBy(DSHandle H, int64_t Delta) {
  DSHandle R = resolve(H);
  if (!R) return {};
  if (R.Node->has(CollapsedNode)) return R;
  int64_t Off = (int64_t)R.Offset + Delta;
  if (R.Node->Stride) { // inside an array: a[i-1] is the same field of another element
    int64_t S = (int64_t)R.Node->Stride;
    Off = ((Off % S) + S) % S;
  }
  if (Off < 0) { // pointing before the object start (container_of and friends)
    collapse(R.Node);
    return resolve({R.Node, 0});
  }
  return resolve({R.Node, (uint64_t)Off});
}

void DSGraph::collapse(DSNode *N) {
  N = find(N);
  N->Flags |= CollapsedNode;
  if (N->Edges.size() <= 1 && (N->Edges.empty() || N->Edges.begin()->first == 0)) return;
  std::map<uint64_t, DSHandle> Old;
  Old.swap(N->Edges);
  DSHandle First = Old.begin()->second;
  N->Edges[0] = First;
  for (auto &E : Old) unify(First, E.second);
}

void DSGraph::setStride(DSNode *N, uint64_t Stride) {
  N = find(N);
  if (Stride == 0 || N->has(CollapsedNode) || N->Stride == Stride) return;
  uint64_t S = N->Stride ? std::gcd(N->Stride, Stride) : Stride;
  if (S == N->Stride) return;
  N->Stride = S;
  N->Flags |= ArrayNode;
  rekeyEdges(N);
}

void DSGraph::mergeInto(DSNode *Keep, DSNode *Gone, uint64_t Delta) {
  std::map<uint64_t, DSHandle> GoneEdges;
  GoneEdges.swap(Gone->Edges);
  Gone->Forward = Keep;
  Gone->ForwardOffset = Delta;
  Keep->Flags |= Gone->Flags;
  Keep->Globals.insert(Gone->Globals.begin(), Gone->Globals.end());
  Keep->AllocSites.insert(Gone->AllocSites.begin(), Gone->AllocSites.end());
  Keep->FreeSites.insert(Gone->FreeSites.begin(), Gone->FreeSites.end());
  if (Gone->AllocSizeMixed || (Keep->AllocSize && Gone->AllocSize && Keep->AllocSize != Gone->AllocSize))
    Keep->AllocSizeMixed = true;
  if (!Keep->AllocSize) Keep->AllocSize = Gone->AllocSize;
  Keep->MaxAlign = std::max(Keep->MaxAlign, Gone->MaxAlign);
  Keep->AlignSeen |= Gone->AlignSeen;
  Keep->AlignDoubt |= Gone->AlignDoubt;
  if (Keep->has(CollapsedNode)) {
    Keep->Flags &= ~CollapsedNode; // let collapse() fold the edges the merge brought
    collapse(Keep);
  } else {
    if (Gone->Stride) setStride(Keep, Gone->Stride);
    for (const ArrayRange &R : Gone->Ranges) addArrayRange(Keep, R.Start + Delta, R.Bytes, R.Elem);
  }
  for (auto &E : GoneEdges) {
    DSHandle At = resolve({Keep, E.first + Delta});
    auto It = Keep->Edges.find(At.Offset);
    if (It == Keep->Edges.end()) Keep->Edges[At.Offset] = E.second;
    else unify(It->second, E.second);
  }
}

void DSGraph::unify(DSHandle A, DSHandle B) {
  if (!A.Node || !B.Node) return;
  Pending.push_back({A, B});
  if (Unifying) return; // the outer call drains the worklist: no deep recursion
  Unifying = true;
  while (!Pending.empty()) {
    auto [X, Y] = Pending.back();
    Pending.pop_back();
    X = resolve(X);
    Y = resolve(Y);
    if (X.Node == Y.Node) {
      if (X.Offset != Y.Offset) collapse(X.Node);
      continue;
    }
    bool Fold = X.Node->has(CollapsedNode) || Y.Node->has(CollapsedNode) ||
                (X.Node->Stride && Y.Node->Stride && X.Node->Stride != Y.Node->Stride);
    if (Fold) {
      collapse(X.Node);
      collapse(Y.Node);
      mergeInto(X.Node, Y.Node, 0);
    } else if (X.Offset >= Y.Offset) {
      mergeInto(X.Node, Y.Node, X.Offset - Y.Offset);
    } else {
      mergeInto(Y.Node, X.Node, Y.Offset - X.Offset);
    }
  }
  Unifying = false;
}

DSHandle DSGraph::globalHandle(const GlobalValue *G) {
  auto It = Globals.find(G);
  if (It != Globals.end()) return It->second;
  DSNode *N = makeNode(GlobalNode);
  N->Globals.insert(G);
  // Code in other translation units can read and write an externally visible variable.
  if (!isa<Function>(G) && !G->hasLocalLinkage()) N->Flags |= ExternalNode;
  DSHandle H{N, 0};
  Globals[G] = H;
  return H;
}

std::vector<DSHandle> DSGraph::cloneFrom(const DSGraph &From, const std::vector<DSHandle> &Roots,
                                         std::map<const DSNode *, DSNode *> &Map) {
  std::vector<DSNode *> Work;
  auto copyOf = [&](DSNode *Old) -> DSNode * {
    Old = find(Old);
    auto It = Map.find(Old);
    if (It != Map.end()) return It->second;
    DSNode *New = makeNode(Old->Flags);
    New->Globals = Old->Globals;
    New->AllocSites = Old->AllocSites;
    New->FreeSites = Old->FreeSites;
    New->AllocSize = Old->AllocSize;
    New->AllocSizeMixed = Old->AllocSizeMixed;
    New->Stride = Old->Stride;
    New->Ranges = Old->Ranges;
    New->MaxAlign = Old->MaxAlign;
    New->AlignSeen = Old->AlignSeen;
    New->AlignDoubt = Old->AlignDoubt;
    Map[Old] = New;
    Work.push_back(Old);
    return New;
  };
  std::vector<DSHandle> Out;
  for (DSHandle R : Roots) {
    DSHandle Res = resolve(R);
    if (!Res) {
      Out.push_back({});
      continue;
    }
    Out.push_back({copyOf(Res.Node), Res.Offset});
  }
  std::vector<DSNode *> Copied;
  while (!Work.empty()) {
    DSNode *Old = Work.back();
    Work.pop_back();
    DSNode *New = Map[Old];
    Copied.push_back(New);
    for (auto &E : Old->Edges) {
      DSHandle T = resolve(E.second);
      New->Edges[E.first] = {copyOf(T.Node), T.Offset};
    }
  }
  // A global is one object in every graph: tie the copy to this graph's node for it.
  for (DSNode *New : Copied) {
    std::set<const GlobalValue *> Gs = New->Globals;
    for (const GlobalValue *G : Gs) unify({New, 0}, globalHandle(G));
  }
  (void)From;
  return Out;
}

std::set<DSNode *> DSGraph::reachable(const std::vector<DSHandle> &Roots) const {
  std::set<DSNode *> Seen;
  std::vector<DSNode *> Work;
  for (DSHandle R : Roots)
    if (DSNode *N = find(R.Node); N && Seen.insert(N).second) Work.push_back(N);
  while (!Work.empty()) {
    DSNode *N = Work.back();
    Work.pop_back();
    for (auto &E : N->Edges)
      if (DSNode *T = find(E.second.Node); T && Seen.insert(T).second) Work.push_back(T);
  }
  return Seen;
}

std::vector<DSNode *> DSGraph::representatives() const {
  std::vector<DSNode *> Out;
  for (auto &N : Nodes)
    if (!N->Forward) Out.push_back(N.get());
  return Out;
}

void DSGraph::propagateExternal(bool HiddenPointers) {
  std::vector<DSHandle> Roots;
  for (DSNode *N : representatives()) {
    if ((N->has(OpaqueIntNode) && N->has(IntToPtrNode)) || (HiddenPointers && N->has(ArithEscapeNode)))
      N->Flags |= ExternalNode;
    if (N->has(ExternalNode)) Roots.push_back({N, 0});
  }
  for (DSNode *N : reachable(Roots)) N->Flags |= ExternalNode;
}

void DSGraph::print(raw_ostream &OS) const {
  std::map<DSNode *, std::vector<std::string>> Names;
  for (auto &VH : ValueMap) {
    if (!VH.first->hasName()) continue;
    DSHandle R = resolve(VH.second);
    Names[R.Node].push_back(VH.first->getName().str() + "@" + std::to_string(R.Offset));
  }
  for (auto &GH : Globals) Names[find(GH.second.Node)].push_back("global " + GH.first->getName().str());
  for (auto &RH : Returns)
    if (RH.second) Names[find(RH.second.Node)].push_back("return of " + RH.first->getName().str());
  for (DSNode *N : representatives()) {
    if (N->Edges.empty() && !N->Flags && !Names.count(N)) continue;
    OS << "  n" << N->Id << " [";
    const char *FlagNames[] = {"H", "S", "G", "X", "collapsed", "array", "vararg", "opaque-int", "inttoptr",
                               "arith-escape"};
    for (unsigned B = 0; B < 10; ++B)
      if (N->Flags & (1u << B)) OS << FlagNames[B] << " ";
    OS << "]";
    if (N->Stride) OS << " stride " << N->Stride;
    if (N->AlignSeen) OS << " align " << N->MaxAlign << (N->AlignDoubt ? "?" : "");
    for (const ArrayRange &R : N->Ranges) OS << " array@" << R.Start << "+" << R.Bytes << "/" << R.Elem;
    for (auto &E : N->Edges) {
      DSHandle T = resolve(E.second);
      OS << " +" << E.first << "->n" << T.Node->Id << "+" << T.Offset;
    }
    for (auto &Nm : Names[N]) OS << " " << Nm;
    OS << "\n";
  }
}

} // namespace hlapa
