// Pools for data structures reachable from global variables (APA section 4.1): one pool
// descriptor per node of a globals graph, a module-level variable created by a constructor
// and never destroyed (the objects may live until exit).
//
// The globals graph unifies, over every SCC graph, what is reachable from the globals, so a
// node of any function's graph that is reachable from a global has exactly one descriptor.
// A pool is used by one thread at a time, so global pools are built only when this
// translation unit is the whole program (the driver says so: one source compiled and linked
// in one command, HEAPLAYOUT_CC_WHOLE_PROGRAM=1, or --global-pools), starts no threads and
// hands no function address to code that could call it from another thread.
#pragma once

#include "BottomUp.h"

#include <map>
#include <vector>

namespace hlapa {

class GlobalsGraph {
public:
  GlobalsGraph(llvm::Module &M, const BottomUp &BU, bool WholeProgram);
  // Why global pools are off for this module, or null when they are on.
  const char *disabledReason() const { return Disabled; }
  // The globals-graph node of a node of SCC `SCC`'s graph, or null if not reachable from a global.
  const DSNode *nodeFor(unsigned SCC, const DSNode *N) const;

private:
  DSGraph GG;
  std::vector<std::map<const DSNode *, DSNode *>> Maps; // per SCC: its rep -> GG node
  const char *Disabled = nullptr;
};

} // namespace hlapa
