// DSA's bottom-up phase: strongly connected components of the direct call graph, callees
// first. The functions of one SCC share one graph (calls inside it unify actuals with
// formals); a call to a finished SCC copies the callee's graph into the caller at that call
// site (heap cloning: each call site gets its own copy of the callee's objects, which is
// what keeps two lists built by one function apart). The copy's node map is kept per call
// site: it is the paper's NodeInCaller.
#pragma once

#include "DSGraph.h"
#include "ExternalFunctions.h"
#include "LocalAnalysis.h"

#include "llvm/IR/Module.h"

#include <map>
#include <memory>
#include <vector>

namespace hlapa {

// A call the transformation redirects to a callee's clone, with the node map of the callee's
// graph copied at that call site (for an indirect call promoted to an if-chain, one per callee).
struct CallEdge {
  const llvm::CallBase *Call = nullptr;
  const llvm::Function *Callee = nullptr;
  const std::map<const DSNode *, DSNode *> *Map = nullptr;
};

struct SCCInfo {
  std::vector<llvm::Function *> Members;
  std::unique_ptr<DSGraph> Graph;
};

class BottomUp : public CallResolver {
public:
  explicit BottomUp(llvm::Module &M);
  void run();

  const std::vector<SCCInfo> &sccs() const { return SCCs; }
  unsigned sccOf(const llvm::Function *F) const { return SCCIndex.at(F); }
  bool hasBody(const llvm::Function *F) const { return SCCIndex.count(F) != 0; }
  // Some inttoptr may rebuild a pointer hidden in untracked arithmetic (DSGraph.h flags).
  bool hiddenPointers() const { return HiddenPointers; }
  // Callee node (in the callee's graph) -> its copy in the caller's graph, per call site.
  const std::map<const DSNode *, DSNode *> *nodeMap(const llvm::CallBase *CB) const;
  // Calls to functions with a body that were resolved as calls (not as unknown code).
  bool isResolvedCall(const llvm::CallBase *CB) const { return Resolved.count(CB) != 0; }
  CalleeKind kindOf(const llvm::CallBase *CB) const;
  // The node a value of function F points to, or null.
  DSNode *nodeOf(const llvm::Value *V, const llvm::Function *F) const;

  bool resolveDirectCall(llvm::CallBase &CB, llvm::Function &Callee, DSGraph &G) override;
  void deferIndirectCall(llvm::CallBase &CB) override { Deferred.push_back(&CB); }

  // An indirect call whose possible callees are known (the function pointer's node is local
  // to the caller and holds only functions defined here): the callees, and per callee the
  // node map of its graph's copy at this call site.
  const std::vector<llvm::Function *> *indirectCallees(const llvm::CallBase *CB) const;
  const std::map<const DSNode *, DSNode *> *indirectNodeMap(const llvm::CallBase *CB, const llvm::Function *F) const;
  // Every call between two SCCs that is resolved (direct) or promoted (indirect): the call
  // edges the top-down phase follows.
  std::vector<CallEdge> callEdges() const;

  // Indirect calls: all, and those promoted to if-chains; the others are unknown code.
  unsigned indirectCalls() const { return IndirectCalls; }
  unsigned indirectPromoted() const { return IndirectCallees.size(); }
  // With whether the function pointer's node was external before the call was made unknown.
  const std::vector<std::pair<llvm::CallBase *, bool>> &unknownIndirectCalls() const { return UnknownIndirect; }

private:
  void computeSCCs();
  void resolveIndirectCalls(DSGraph &G);
  void inlineCallee(llvm::CallBase &CB, llvm::Function &Callee, DSGraph &G,
                    std::map<const DSNode *, DSNode *> &Map);
  llvm::Module &M;
  const llvm::DataLayout &DL;
  std::vector<SCCInfo> SCCs;
  std::map<const llvm::Function *, unsigned> SCCIndex;
  std::map<const llvm::CallBase *, std::map<const DSNode *, DSNode *>> CallMaps;
  std::map<const llvm::CallBase *, CalleeKind> Kinds;
  std::set<const llvm::CallBase *> Resolved;
  std::vector<llvm::CallBase *> Deferred;
  std::map<const llvm::CallBase *, std::vector<llvm::Function *>> IndirectCallees;
  std::map<std::pair<const llvm::CallBase *, const llvm::Function *>, std::map<const DSNode *, DSNode *>>
      IndirectMaps;
  unsigned CurrentSCC = 0;
  LocalAnalysis *Current = nullptr;
  bool HiddenPointers = false;
  unsigned IndirectCalls = 0;
  std::vector<std::pair<llvm::CallBase *, bool>> UnknownIndirect;
};

} // namespace hlapa
