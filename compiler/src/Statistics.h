// What the transformation did to one translation unit: the paper's tables 1 and 2 as far as
// they are built (static pools, bump-pointer pools, pool arguments), and every malloc-family
// call that stayed on malloc with the reason. Written as one JSON line per translation unit
// to the file named by HEAPLAYOUT_CC_STATS (heaplayout cc --stats reads it back).
#pragma once

#include <map>
#include <string>

namespace hlapa {

struct Statistics {
  std::string Module;
  unsigned Functions = 0;
  unsigned SCCs = 0;
  unsigned StaticPools = 0;     // poolcreate/poolinit_bp sites
  unsigned GlobalPools = 0;        // of StaticPools: module-level descriptors (APA 4.1)
  unsigned BumpPointerPools = 0;
  unsigned SingleSizePools = 0; // every allocation of one constant size (type-homogeneous proxy)
  unsigned Align8Pools = 0;     // of StaticPools: created with align 8 (APA 5.4)
  unsigned ClonedFunctions = 0;
  unsigned PoolArgsTotal = 0;
  unsigned PoolArgsMax = 0;
  unsigned AllocSitesPooled = 0;   // malloc/calloc/realloc calls rewritten to a pool
  unsigned FreeSitesPooled = 0;   // free calls rewritten to poolfree (eliminated ones included)
  unsigned FreeSitesEliminated = 0; // of those, removed by pool-free elimination
  unsigned PoolsDestroyedEarly = 0;  // local pools with a pooldestroy elsewhere than before a return
  unsigned PoolsCreatedLate = 0;     // local pools whose poolcreate moved past other code of the entry
  // The top-down phase (PoolPlan.h, TopDownChanges).
  unsigned TopDownArgsToMalloc = 0;
  unsigned TopDownArgsToGlobal = 0;
  unsigned TopDownPoolArgsRemoved = 0;
  unsigned TopDownClonesAvoided = 0;
  unsigned TopDownArgsExternalFromCaller = 0;
  unsigned IndirectCalls = 0, IndirectPromoted = 0, IndirectECCandidates = 0, IndirectECCandidatesHeap = 0;
  unsigned AllocSitesKept = 0;     // malloc-family calls left on malloc
  std::map<std::string, unsigned> KeptReasons; // reason -> number of calls
  // Heap (H) nodes of the bottom-up graphs by decision: "local pool", "pool argument",
  // "malloc: <reason>". A callee's node copied into a caller is counted in both graphs.
  std::map<std::string, unsigned> HeapNodes;
  double AnalysisSeconds = 0;

  std::string toJSON() const;
  void appendTo(const std::string &Path) const;
};

} // namespace hlapa
