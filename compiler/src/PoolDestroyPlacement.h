// poolcreate/pooldestroy placement (APA section 4.2): a local pool is created right before the
// first point where it can be used and destroyed right after the last point where it, or any
// object in it, can still be used, instead of at the entry and before every return.
//
// Which instructions use a pool is decided from the DS graph of the original function, before
// the transformation rewrites it: an instruction uses pool P if one of its operands points to
// a node from which one of P's nodes is reachable (a pointer into the pool, or to memory that
// holds one, directly or through other objects), or if it takes P's descriptor. The facts are
// kept as metadata on the instructions (so they follow clones and moves made by the
// transformation and cannot be confused by reused addresses) and removed at the end.
// Instructions the transformation adds carry none: one of those uses every pool when an
// operand is pointer-like and not known (a pool descriptor, a constant, a value with facts).
//
// The poolcreate moves first (unless HEAPLAYOUT_CC_NO_CREATE_MOVE=1) to the nearest common
// dominator of the uses, hoisted out of any CFG cycle: a path that never uses the pool (an
// early return) creates none, and the create runs at most once per call.
// Placement is then a backward liveness over the CFG from those uses (poolcreate counts as
// one), restricted to the blocks the create dominates, and a pooldestroy goes after each use that no path continues from, and on each CFG
// edge from a block where the pool is live to one where it is not. Every path from the entry
// to a return passes exactly one of them. A pool keeps its destroys before the returns when
// the function has control flow this does not handle (invoke, indirectbr, callbr) or an edge
// that cannot be split alone (two edges from one switch to one block).
#pragma once

#include "BottomUp.h"
#include "PoolPlan.h"

#include "llvm/IR/Instructions.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <map>
#include <set>
#include <vector>

namespace hlapa {

class DestroyPlacement {
public:
  // Tags the instructions of V (Orig itself, or its clone made with VMap, both still as
  // cloned) with the pools of `Leaders` (the leader nodes of Orig's local pools) they use.
  DestroyPlacement(const BottomUp &BU, const SCCPlan &Plan, llvm::Function *Orig, llvm::Function *V,
                   llvm::ValueToValueMapTy *VMap, const std::vector<const DSNode *> &Leaders);
  ~DestroyPlacement(); // removes the tags
  // After the transformation: moves the poolcreate (if MoveCreate) and the pooldestroy calls
  // of pool `Index` (descriptor A). `Descriptors`: every pool descriptor value of V (never a
  // pointer into a pool). Returns true if a destroy now stands somewhere else than right
  // before a return; CreateMoved says whether the create is no longer at the entry.
  bool place(llvm::AllocaInst *A, unsigned Index, llvm::FunctionCallee Destroy,
             const std::set<const llvm::Value *> &Descriptors, bool MoveCreate, bool &CreateMoved);

private:
  bool uses(const llvm::Instruction &I, const llvm::AllocaInst *A, unsigned Index,
            const std::set<const llvm::Value *> &Descriptors) const;
  llvm::Function *V;
  unsigned NumPools;
  unsigned KindUses = 0, KindValue = 0; // metadata: pools an instruction's operands / its result reach
  std::map<const llvm::Argument *, std::vector<unsigned>> ArgPools;
};

} // namespace hlapa
