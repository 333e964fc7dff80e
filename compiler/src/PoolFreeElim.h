// Pool-free elimination (APA sections 4.3 and 5.2), run on the module after the
// transformation has placed every pool call.
//
// A poolfree is removable when, on every path from it to the destruction of its pool, no
// allocation can be served from that pool: the freed slot would never be reused, and
// pooldestroy returns it with the rest of the pool anyway. Frees of the pools a function
// owns (a descriptor on its stack, destroyed before every return) are candidates, and so are
// frees in a clone on a pool parameter when every caller that passes a pool passes one that
// is, in turn, free of later allocations until its own destruction. Global pools are never
// destroyed, so their frees always stay.
#pragma once

#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

#include <map>
#include <vector>

namespace hlapa {

// Returns the number of poolfree calls removed. `Locals`: each function's own pool
// descriptors (pooldestroy before every return); `PoolParams`: each clone's number of trailing
// pool descriptor parameters; `Debug`: name each removed call on stderr.
unsigned eliminatePoolFrees(llvm::Module &M, const std::map<llvm::Function *, std::vector<llvm::AllocaInst *>> &Locals,
                            const std::map<const llvm::Function *, unsigned> &PoolParams, bool Debug);

} // namespace hlapa
