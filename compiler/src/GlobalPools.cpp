// The globals graph and the conditions under which global pools are safe.
#include "GlobalPools.h"

#include "llvm/IR/Module.h"

using namespace llvm;

namespace hlapa {

static const char *const NotWholeProgram =
    "reachable from a global variable, and other translation units may run (global pools need the whole program)";
static const char *const StartsThreads = "reachable from a global variable in a program that starts threads";
static const char *const AddressTaken =
    "reachable from a global variable, and a function's address is taken (it may run on another thread)";

GlobalsGraph::GlobalsGraph(Module &M, const BottomUp &BU, bool WholeProgram) {
  if (!WholeProgram) Disabled = NotWholeProgram;
  for (const char *Name : {"pthread_create", "thrd_create", "clone", "fork"})
    if (!Disabled && M.getFunction(Name)) Disabled = StartsThreads;
  for (Function &F : M)
    if (!Disabled && !F.isDeclaration() && F.hasAddressTaken()) Disabled = AddressTaken;
  Maps.resize(BU.sccs().size());
  for (unsigned I = 0; I < BU.sccs().size(); ++I) {
    const DSGraph &G = *BU.sccs()[I].Graph;
    std::vector<DSHandle> Roots;
    for (auto &GH : G.globals()) Roots.push_back(GH.second);
    GG.cloneFrom(G, Roots, Maps[I]);
  }
  GG.propagateExternal(BU.hiddenPointers());
}

const DSNode *GlobalsGraph::nodeFor(unsigned SCC, const DSNode *N) const {
  auto It = Maps[SCC].find(DSGraph::find(const_cast<DSNode *>(N)));
  return It == Maps[SCC].end() ? nullptr : DSGraph::find(It->second);
}

} // namespace hlapa
