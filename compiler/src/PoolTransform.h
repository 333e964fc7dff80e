// The code transformation (APA figure 4): local pool descriptors with poolcreate at entry
// and pooldestroy at every return (then moved to the pool's uses, PoolDestroyPlacement.h),
// internal clones of functions with pool descriptor
// parameters (the original stays for callers outside the translation unit and indirect
// calls, and uses malloc), malloc/calloc/realloc/free replaced by pool calls, and direct
// calls redirected to the clones with the callers' pools (NodeInCaller).
#pragma once

#include "BottomUp.h"
#include "PoolPlan.h"
#include "Statistics.h"

#include "llvm/IR/Module.h"

namespace hlapa {

struct TransformOptions {
  bool BumpPointer = true; // APA 5(3): pools never freed into use the _bp entry points
  bool FreeElim = true;    // APA 4.3/5(2): drop poolfree calls whose memory is never reused
  bool PlaceDestroys = true; // APA 4.2: pooldestroy after a local pool's last use
  bool PlaceCreates = true;  // APA 4.2: poolcreate before a local pool's first use (needs PlaceDestroys)
  bool Align8 = true;      // APA 5.4: align 8 for pools whose objects need no more
  bool Debug = false;      // report each transformation decision on stderr
};

// Returns true if the module changed.
// The align argument of a pool's poolcreate (APA 5.4): 8 when every node sharing the pool
// is known to need at most 8-byte alignment, else 0 (the runtime's default 16).
uint64_t poolAlignment(const std::vector<const DSNode *> &Nodes);

bool transformModule(llvm::Module &M, const BottomUp &BU, const std::vector<SCCPlan> &Plans,
                     const TransformOptions &Opts, Statistics &Stats);

} // namespace hlapa
