// Registration of the Automatic Pool Allocation pass with the new pass manager.
//
// The pass runs at the PipelineStart extension point, after SROA (mem2reg) of its own, and
// before the rest of the -O pipeline. Why there and not at OptimizerLast (tried first):
// - the optimizer merges call sites: SimplifyCFG sinks `*ta = create(x)` / `*tb = create(x)`
//   into one call, and then no context-sensitive analysis can tell the two lists apart;
// - the rest of the pipeline cleans up after us, as the paper's ICP and dead-argument
//   elimination did: clones are inlined, and a pool parameter that is a constant (or null)
//   at every call site folds its null test away.
// SROA first because unpromoted locals would make every variable a stack node.
#include "BottomUp.h"
#include "GlobalPools.h"
#include "PoolPlan.h"
#include "PoolTransform.h"
#include "Statistics.h"
#include "TopDown.h"
#include "Tunables.h"

#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Transforms/Scalar/SROA.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

using namespace llvm;

namespace {

bool envIs1(const char *Name) {
  const char *V = std::getenv(Name);
  return V && std::strcmp(V, "1") == 0;
}

struct AutomaticPoolAllocationPass : PassInfoMixin<AutomaticPoolAllocationPass> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    if (envIs1(hlapa::EnvDisable)) return PreservedAnalyses::all();
    auto Start = std::chrono::steady_clock::now();
    hlapa::BottomUp BU(M);
    BU.run();
    if (envIs1(hlapa::EnvDebug))
      for (const hlapa::SCCInfo &S : BU.sccs()) {
        errs() << "heaplayout-apa: graph of";
        for (Function *F : S.Members) errs() << " " << F->getName();
        errs() << "\n";
        S.Graph->print(errs());
      }
    hlapa::PlanOptions PO;
    PO.SelectivePA = hlapa::DefaultSelectivePA && !envIs1(hlapa::EnvNoSelective);
    if (const char *C = std::getenv(hlapa::EnvCollocate)) {
      PO.MaximalDS = std::strcmp(C, "maximal") == 0;
      PO.OnePoolPerCollection = std::strcmp(C, "collection") == 0;
    }
    hlapa::GlobalsGraph GG(M, BU, envIs1(hlapa::EnvWholeProgram));
    std::vector<hlapa::SCCPlan> Plans = hlapa::planPools(BU, GG, PO);
    hlapa::TopDownChanges TDC;
    hlapa::TopDown TD(BU);
    TD.run(); // also for the statistics of indirect calls when its plan changes are off
    if (hlapa::DefaultTopDown && !envIs1(hlapa::EnvNoTopDown)) hlapa::refineWithTopDown(Plans, BU, TD, GG, TDC);
    hlapa::TransformOptions TO;
    TO.BumpPointer = hlapa::DefaultBumpPointer && !envIs1(hlapa::EnvNoBumpPointer);
    TO.FreeElim = hlapa::DefaultFreeElim && !envIs1(hlapa::EnvNoFreeElim);
    TO.PlaceDestroys = hlapa::DefaultPlaceDestroys && !envIs1(hlapa::EnvNoDestroyMove);
    TO.PlaceCreates = TO.PlaceDestroys && hlapa::DefaultPlaceCreates && !envIs1(hlapa::EnvNoCreateMove);
    TO.Align8 = hlapa::DefaultAlign8 && !envIs1(hlapa::EnvNoAlign);
    TO.Debug = envIs1(hlapa::EnvDebug);
    hlapa::Statistics Stats;
    Stats.Module = M.getSourceFileName();
    Stats.SCCs = BU.sccs().size();
    Stats.IndirectCalls = BU.indirectCalls();
    Stats.IndirectPromoted = BU.indirectPromoted();
    TD.countIndirect(Stats.IndirectECCandidates, Stats.IndirectECCandidatesHeap);
    Stats.TopDownArgsToMalloc = TDC.ArgsToMalloc;
    Stats.TopDownArgsToGlobal = TDC.ArgsToGlobal;
    Stats.TopDownPoolArgsRemoved = TDC.PoolArgsRemoved;
    Stats.TopDownClonesAvoided = TDC.ClonesAvoided;
    Stats.TopDownArgsExternalFromCaller = TDC.ArgsExternalFromCaller;
    hlapa::transformModule(M, BU, Plans, TO, Stats);
    Stats.AnalysisSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
    if (const char *Path = std::getenv(hlapa::EnvStatsFile); Path && *Path) Stats.appendTo(Path);
    return PreservedAnalyses::none();
  }
  static bool isRequired() { return true; }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "HeapLayoutAPA", "0.1", [](PassBuilder &PB) {
            PB.registerPipelineStartEPCallback([](ModulePassManager &MPM, OptimizationLevel Level) {
              if (Level == OptimizationLevel::O0) return; // functions are optnone: nothing to promote
              MPM.addPass(createModuleToFunctionPassAdaptor(SROAPass(SROAOptions::ModifyCFG)));
              MPM.addPass(AutomaticPoolAllocationPass());
            });
            // `opt -passes=heaplayout-apa` for tests on hand-written IR.
            PB.registerPipelineParsingCallback(
                [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
                  if (Name != "heaplayout-apa") return false;
                  MPM.addPass(AutomaticPoolAllocationPass());
                  return true;
                });
          }};
}
