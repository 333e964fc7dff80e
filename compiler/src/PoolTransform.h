// The code transformation (APA figure 4): local pool descriptors with poolcreate at entry
// and pooldestroy at every return, internal clones of functions with pool descriptor
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
  bool Debug = false;      // report each transformation decision on stderr
};

// Returns true if the module changed.
bool transformModule(llvm::Module &M, const BottomUp &BU, const std::vector<SCCPlan> &Plans,
                     const TransformOptions &Opts, Statistics &Stats);

} // namespace hlapa
