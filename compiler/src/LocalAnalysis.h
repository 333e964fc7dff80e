// The local phase of DSA: one pass over a function's instructions adds its points-to facts
// to a DS graph. Calls to functions defined in the translation unit are handed to the
// bottom-up phase (CallResolver); calls to declarations are understood through
// ExternalFunctions.
#pragma once

#include "DSGraph.h"
#include "ExternalFunctions.h"

#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Function.h"

#include <map>

namespace hlapa {

// Whether a value of this type can carry a pointer: pointers, pointer-sized integers
// (ptrtoint round trips, memcpy turned into i64 loads), and vectors/aggregates of them.
bool isPtrLike(llvm::Type *T, const llvm::DataLayout &DL);

class CallResolver {
public:
  virtual ~CallResolver() = default;
  // A call whose callee has a body here; returns false if it must be treated as unknown.
  virtual bool resolveDirectCall(llvm::CallBase &CB, llvm::Function &Callee, DSGraph &G) = 0;
  // An indirect call: decided after the whole SCC is analysed (its function pointer's node
  // is complete only then).
  virtual void deferIndirectCall(llvm::CallBase &CB) = 0;
};

class LocalAnalysis {
public:
  LocalAnalysis(DSGraph &G, const llvm::DataLayout &DL, CallResolver &R,
                std::map<const llvm::CallBase *, CalleeKind> &Kinds)
      : G(G), DL(DL), Resolver(R), Kinds(Kinds) {}

  void analyze(llvm::Function &F);
  DSHandle handleOf(const llvm::Value *V);
  // Marks what a pointer argument of an unknown call points to as external.
  void escapeToUnknown(const llvm::Value *V);
  void visitUnknownCall(llvm::CallBase &CB);
  void opaqueArithmetic(llvm::Instruction &I);


private:
  void visit(llvm::Instruction &I, llvm::Function &F);
  void visitCall(llvm::CallBase &CB);
  void loadStore(DSHandle Ptr, DSHandle Val, llvm::Type *T);
  const llvm::LoadInst *narrowCopySource(const llvm::Value *V);
  // Records on each node the alignment its types need (APA 5.4), after the points-to pass.
  void noteAlignments(llvm::Function &F);
  DSHandle constantHandle(const llvm::Constant *C);

  DSGraph &G;
  const llvm::DataLayout &DL;
  CallResolver &Resolver;
  // How each call to a declaration was understood (for the transformation and statistics).
  std::map<const llvm::CallBase *, CalleeKind> &Kinds;
};

} // namespace hlapa
