// DSA's top-down phase: what callers know about a callee's nodes. The bottom-up graph of a
// function describes its objects as if its formals pointed to fresh, complete memory; only the
// callers know whether the memory they pass in is reachable by unknown code, and which of
// their own nodes each callee node stands for at each call site.
//
// DSA builds the top-down graph of a function by copying every caller's graph into it. Here
// the bottom-up graphs stay as they are (the transformation needs them, and heap cloning has
// already given each call site its own copy of the callee's nodes) and the top-down facts are
// kept beside them, per representative node of each SCC graph:
//   - Callers: for each call site the transformation redirects (resolved direct calls from
//     other SCCs, indirect calls promoted to if-chains), the caller's node this node maps to
//     there (the inverse of NodeInCaller), or null where the call site's copy does not have it;
//   - ExternalFromCaller: some known caller passes in memory that unknown code can reach
//     (propagated along call edges, callers first, then along the callee's own edges);
//   - CallerFunctions: functions the callers' nodes hold (a function pointer passed in);
//   - UnknownCallers: reachable from a formal or the return value of a function that code
//     outside this translation unit may call (not internal, or its address is taken).
// A node reachable from formals is complete in the top-down sense when it has neither.
#pragma once

#include "BottomUp.h"

#include <map>
#include <set>
#include <vector>

namespace hlapa {

struct CallerEdge {
  const llvm::CallBase *Call = nullptr;
  unsigned CallerSCC = 0;
  const DSNode *CallerNode = nullptr; // representative in the caller's graph; null if unmapped
};

struct TDNodeInfo {
  std::vector<CallerEdge> Callers;
  std::set<const llvm::Function *> CallerFunctions;
  bool ExternalFromCaller = false;
  bool UnknownCallers = false;
  bool complete() const { return !ExternalFromCaller && !UnknownCallers; }
};

class TopDown {
public:
  explicit TopDown(const BottomUp &BU) : BU(BU) {}
  void run();
  // Facts about representative N of SCC `SCC`'s graph; null for nodes no caller maps and no
  // unknown caller reaches (they are private to the SCC: the bottom-up graph is complete).
  const TDNodeInfo *info(unsigned SCC, const DSNode *N) const;
  // Nodes external only because of what a caller passes in (not external bottom-up).
  unsigned externalFromCallerNodes() const { return ExternalFromCallerCount; }
  // Of the indirect calls left as unknown code, those whose callee set is known top-down (the
  // function-pointer node and what every caller passes for it hold only functions defined
  // here, and no unknown code or caller can put another there): what the paper's
  // equivalence-class graphs would need. Heap: of those, the ones with a pointer argument
  // reaching a heap node or memory that comes from the callers.
  void countIndirect(unsigned &Candidates, unsigned &Heap) const;

private:
  const BottomUp &BU;
  std::vector<std::map<const DSNode *, TDNodeInfo>> Info;
  unsigned ExternalFromCallerCount = 0;
};

} // namespace hlapa
