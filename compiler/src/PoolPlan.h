// Which heap nodes get pools (APA section 3.3, the pdmap). For each SCC graph, every node
// with the H flag is one of:
//   Local    - no pointer to it leaves the function that owns it: a pool descriptor on that
//              function's stack, created and destroyed around its uses (PoolDestroyPlacement.h);
//   Argument - reachable from a formal or the return value: a pool descriptor parameter
//              added to (a clone of) every function of the SCC, passed by the callers;
//   Global   - reachable from a global variable: the pool of its globals-graph node;
//   Malloc   - anything not proven: stays on malloc, with the reason.
#pragma once

#include "BottomUp.h"
#include "GlobalPools.h"
#include "TopDown.h"

#include <map>
#include <string>
#include <vector>

namespace hlapa {

enum class PoolKind { Malloc, Local, Argument, Global };

struct NodePlan {
  PoolKind Kind = PoolKind::Malloc;
  const char *Reason = "";            // for Malloc: why it stays there
  const llvm::Function *Owner = nullptr; // for Local
  const DSNode *GlobalNode = nullptr;    // for Global: its node in the globals graph
  const DSNode *Leader = nullptr;        // for Local: the node whose pool it shares (itself by default)
};

struct SCCPlan {
  std::map<const DSNode *, NodePlan> Nodes; // representatives with the H flag
  std::vector<const DSNode *> ArgNodes;     // pool parameters, in order
  const NodePlan *planOf(const DSNode *N) const {
    auto It = Nodes.find(DSGraph::find(const_cast<DSNode *>(N)));
    return It == Nodes.end() ? nullptr : &It->second;
  }
};

struct PlanOptions {
  bool SelectivePA = true; // APA 5(1): nodes no object points to stay on malloc
  bool MaximalDS = false;  // APA 6: connected heap nodes share one pool (else one per node)
  bool OnePoolPerCollection = false; // APA 6: a collection and what hangs off it alone share one pool
};

std::vector<SCCPlan> planPools(const BottomUp &BU, const GlobalsGraph &GG, const PlanOptions &Opts);

// What the top-down facts changed in the plans (statistics).
struct TopDownChanges {
  unsigned ArgsToMalloc = 0;       // pool-argument nodes no caller passes a pool for
  unsigned ArgsToGlobal = 0;       // pool-argument nodes every caller passes one global pool for
  unsigned PoolArgsRemoved = 0;    // pool parameters the clones no longer get
  unsigned ClonesAvoided = 0;      // functions that need no clone any more
  unsigned ArgsExternalFromCaller = 0; // pool-argument nodes some caller passes unknown memory into
};

// Decides pool-argument nodes by what their callers pass (TopDown.h): a node for which every
// call site passes no pool stays on malloc without a parameter, and one for which every call
// site passes the same global pool uses that pool directly. Callers first, so a caller's own
// argument nodes are already decided when its callees are.
void refineWithTopDown(std::vector<SCCPlan> &Plans, const BottomUp &BU, const TopDown &TD, const GlobalsGraph &GG,
                       TopDownChanges &Changes);

// The reasons, as the statistics print them.
extern const char *const ReasonExternal;
extern const char *const ReasonSingleton;
extern const char *const ReasonSharedInSCC;
extern const char *const ReasonNoCleanExit;
extern const char *const ReasonNoPoolFromCaller;
extern const char *const ReasonRecursiveOwner;
extern const char *const ReasonNoCallerPool;

} // namespace hlapa
