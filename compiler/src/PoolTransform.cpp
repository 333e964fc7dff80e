// Rewriting functions to use pools (APA figure 4, lines 12-20, with the per-TU cloning).
#include "PoolTransform.h"
#include "PoolDestroyPlacement.h"
#include "PoolFreeElim.h"
#include "Tunables.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

using namespace llvm;

namespace hlapa {

// 8 only on positive evidence for every node: types were seen (AlignSeen), none of them or
// of their accesses wants more than 8, no library call may have stored an unseen type, and
// the node is not collapsed (its fields were met at inconsistent offsets: the types seen
// may not be all there is). Anything else keeps the runtime's 16, today's behaviour.
uint64_t poolAlignment(const std::vector<const DSNode *> &Nodes) {
  if (Nodes.empty()) return 0;
  for (const DSNode *N : Nodes) {
    const DSNode *R = DSGraph::find(const_cast<DSNode *>(N));
    if (!R->AlignSeen || R->AlignDoubt || R->MaxAlign > 8 || R->has(CollapsedNode)) return 0;
  }
  return 8;
}

namespace {

struct PoolAPI {
  FunctionCallee Create, Destroy, Alloc, Free, Realloc, InitBP, AllocBP, DestroyBP;
};

struct PoolRef {
  Value *Pool = nullptr;  // null: stays on malloc
  bool MaybeNull = false; // a pool parameter: a caller without a pool passes null
  const char *Reason = "";
};

class Transformer {
public:
  Transformer(Module &M, const BottomUp &BU, const std::vector<SCCPlan> &Plans, const TransformOptions &Opts,
              Statistics &Stats)
      : M(M), BU(BU), Plans(Plans), Opts(Opts), Stats(Stats), Ctx(M.getContext()),
        PtrTy(PointerType::getUnqual(M.getContext())), SizeTy(M.getDataLayout().getIntPtrType(M.getContext())) {}

  bool run();

private:
  using PoolMap = std::map<const DSNode *, PoolRef>;
  void declareAPI();
  Function *makeClone(Function *F, unsigned NPools, ValueToValueMapTy &VMap);
  void rewrite(Function *Orig, Function *V, bool IsClone, const std::vector<CallBase *> &OrigCalls,
               ValueToValueMapTy *VMap);
  PoolRef poolFor(const DSNode *N, const SCCPlan &Plan, const PoolMap &PM) const;
  void rewriteMallocFamily(CallBase *VC, CalleeKind K, const PoolRef &P);
  void redirectCall(CallBase *OC, CallBase *VC, Function *Orig, const PoolMap &PM, const SCCPlan &Plan);
  // The pools a call to Callee at OC passes, given the node map of the callee's graph there.
  SmallVector<Value *, 4> poolArgs(Function *Callee, Function *Orig, const std::map<const DSNode *, DSNode *> *NodeMap,
                                   const PoolMap &PM, const SCCPlan &Plan);
  void promoteIndirectCall(CallBase *OC, CallBase *VC, Function *Orig, const PoolMap &PM, const SCCPlan &Plan,
                           const std::vector<Function *> &Callees);
  Value *emitPoolPath(IRBuilder<> &B, CallBase *VC, CalleeKind K, Value *Pool);
  void useBumpPointer(AllocaInst *Pool);
  void collectStatistics();
  Value *globalPool(const DSNode *GlobalNode, uint64_t SizeHint);

  Module &M;
  const BottomUp &BU;
  const std::vector<SCCPlan> &Plans;
  const TransformOptions &Opts;
  Statistics &Stats;
  LLVMContext &Ctx;
  PointerType *PtrTy;
  IntegerType *SizeTy;
  PoolAPI API;
  std::map<Function *, Function *> Clones;
  std::map<const Function *, unsigned> PoolParams; // clone -> pool parameters added
  std::map<Function *, std::vector<AllocaInst *>> LocalPools; // descriptors each function owns
  std::map<const CallBase *, const char *> KeptReason;
  std::set<const CallBase *> Fallbacks; // the malloc branch behind a null pool parameter
  std::map<const DSNode *, GlobalVariable *> GlobalPools;
  Function *GlobalInit = nullptr; // the constructor that creates the global pools
};

void Transformer::declareAPI() {
  Type *Void = Type::getVoidTy(Ctx);
  API.Create = M.getOrInsertFunction("poolcreate", Void, PtrTy, SizeTy, SizeTy);
  API.Destroy = M.getOrInsertFunction("pooldestroy", Void, PtrTy);
  API.Alloc = M.getOrInsertFunction("poolalloc", PtrTy, PtrTy, SizeTy);
  API.Free = M.getOrInsertFunction("poolfree", Void, PtrTy, PtrTy);
  API.Realloc = M.getOrInsertFunction("poolrealloc", PtrTy, PtrTy, PtrTy, SizeTy);
  API.InitBP = M.getOrInsertFunction("poolinit_bp", Void, PtrTy, SizeTy);
  API.AllocBP = M.getOrInsertFunction("poolalloc_bp", PtrTy, PtrTy, SizeTy);
  API.DestroyBP = M.getOrInsertFunction("pooldestroy_bp", Void, PtrTy);
}

Function *Transformer::makeClone(Function *F, unsigned NPools, ValueToValueMapTy &VMap) {
  std::vector<Type *> Params(F->getFunctionType()->param_begin(), F->getFunctionType()->param_end());
  for (unsigned I = 0; I < NPools; ++I) Params.push_back(PtrTy);
  FunctionType *FT = FunctionType::get(F->getReturnType(), Params, F->isVarArg());
  Function *C = Function::Create(FT, GlobalValue::InternalLinkage, F->getAddressSpace(), F->getName() + ".hlpool", &M);
  auto NewArg = C->arg_begin();
  for (Argument &A : F->args()) {
    VMap[&A] = &*NewArg;
    NewArg->setName(A.getName());
    ++NewArg;
  }
  for (unsigned I = 0; I < NPools; ++I, ++NewArg) NewArg->setName("hl.pool.arg" + Twine(I));
  SmallVector<ReturnInst *, 8> Returns;
  CloneFunctionInto(C, F, VMap, CloneFunctionChangeType::LocalChangesOnly, Returns);
  C->setLinkage(GlobalValue::InternalLinkage);
  C->setVisibility(GlobalValue::DefaultVisibility);
  C->setComdat(nullptr);
  C->setDSOLocal(true);
  return C;
}

PoolRef Transformer::poolFor(const DSNode *N, const SCCPlan &Plan, const PoolMap &PM) const {
  PoolRef R;
  if (!N) {
    R.Reason = "no points-to node (not analysed)";
    return R;
  }
  const DSNode *Rep = DSGraph::find(const_cast<DSNode *>(N));
  const NodePlan *NP = Plan.planOf(Rep);
  if (!NP) {
    R.Reason = "no points-to node (not analysed)";
    return R;
  }
  if (NP->Kind == PoolKind::Malloc) {
    R.Reason = NP->Reason;
    return R;
  }
  if (NP->Kind == PoolKind::Global) {
    R.Pool = const_cast<Transformer *>(this)->globalPool(NP->GlobalNode, Rep->AllocSizeMixed ? 0 : Rep->AllocSize);
    return R;
  }
  auto It = PM.find(Rep);
  if (It == PM.end()) {
    R.Reason = NP->Kind == PoolKind::Argument ? ReasonNoPoolFromCaller : ReasonSharedInSCC;
    return R;
  }
  return It->second;
}

Value *Transformer::emitPoolPath(IRBuilder<> &B, CallBase *VC, CalleeKind K, Value *Pool) {
  switch (K) {
  case CalleeKind::Malloc:
    return B.CreateCall(API.Alloc, {Pool, VC->getArgOperand(0)});
  case CalleeKind::Calloc: {
    // calloc's contract: NULL when n * size overflows, zeroed memory otherwise.
    Value *Mul = B.CreateBinaryIntrinsic(Intrinsic::umul_with_overflow, VC->getArgOperand(0), VC->getArgOperand(1));
    Value *Total = B.CreateExtractValue(Mul, 0);
    Value *Size = B.CreateSelect(B.CreateExtractValue(Mul, 1), ConstantInt::getAllOnesValue(SizeTy), Total);
    Value *P = B.CreateCall(API.Alloc, {Pool, Size});
    Value *Len = B.CreateSelect(B.CreateIsNull(P), ConstantInt::get(SizeTy, 0), Size);
    B.CreateMemSet(P, B.getInt8(0), Len, MaybeAlign(1));
    return P;
  }
  case CalleeKind::Realloc:
    return B.CreateCall(API.Realloc, {Pool, VC->getArgOperand(0), VC->getArgOperand(1)});
  case CalleeKind::Free:
    B.CreateCall(API.Free, {Pool, VC->getArgOperand(0)});
    return nullptr;
  default:
    return nullptr;
  }
}

void Transformer::rewriteMallocFamily(CallBase *VC, CalleeKind K, const PoolRef &P) {
  if (!P.Pool) {
    KeptReason[VC] = P.Reason;
    return;
  }
  if (!P.MaybeNull) {
    IRBuilder<> B(VC);
    Value *R = emitPoolPath(B, VC, K, P.Pool);
    if (R) VC->replaceAllUsesWith(R);
    VC->eraseFromParent();
    return;
  }
  // A pool parameter is null when the caller has no pool for this node: keep malloc then.
  IRBuilder<> B(VC);
  Value *HasPool = B.CreateIsNotNull(P.Pool);
  Instruction *ThenT = nullptr, *ElseT = nullptr;
  SplitBlockAndInsertIfThenElse(HasPool, VC, &ThenT, &ElseT);
  IRBuilder<> BT(ThenT);
  BT.SetCurrentDebugLocation(VC->getDebugLoc());
  Value *PoolResult = emitPoolPath(BT, VC, K, P.Pool);
  auto *Fallback = cast<CallBase>(VC->clone());
  Fallback->insertBefore(ElseT);
  Fallbacks.insert(Fallback);
  if (PoolResult) {
    PHINode *Phi = PHINode::Create(VC->getType(), 2, "", VC);
    Phi->addIncoming(PoolResult, ThenT->getParent());
    Phi->addIncoming(Fallback, ElseT->getParent());
    VC->replaceAllUsesWith(Phi);
  }
  VC->eraseFromParent();
}

SmallVector<Value *, 4> Transformer::poolArgs(Function *Callee, Function *Orig,
                                              const std::map<const DSNode *, DSNode *> *NodeMap, const PoolMap &PM,
                                              const SCCPlan &Plan) {
  const SCCPlan &CalleePlan = Plans[BU.sccOf(Callee)];
  bool SameSCC = BU.sccOf(Callee) == BU.sccOf(Orig);
  SmallVector<Value *, 4> Pools;
  for (const DSNode *A : CalleePlan.ArgNodes) {
    const DSNode *CallerNode = nullptr;
    if (SameSCC) CallerNode = A;
    else if (NodeMap) {
      auto It = NodeMap->find(A);
      if (It != NodeMap->end()) CallerNode = It->second;
    }
    PoolRef P = CallerNode ? poolFor(CallerNode, Plan, PM) : PoolRef{};
    Pools.push_back(P.Pool ? P.Pool : ConstantPointerNull::get(PtrTy));
  }
  return Pools;
}

void Transformer::promoteIndirectCall(CallBase *OC, CallBase *VC, Function *Orig, const PoolMap &PM,
                                      const SCCPlan &Plan, const std::vector<Function *> &Callees) {
  bool AnyClone = false;
  for (Function *F : Callees) AnyClone |= Clones.count(F) != 0;
  auto *Call = dyn_cast<CallInst>(VC);
  if (!AnyClone || !Call) return;
  // if (fp == f1) f1.hlpool(args, pools of f1) else if ... else fp(args): each callee gets
  // the pools its own graph asks for (instead of the paper's merged equivalence-class graph).
  Value *FP = Call->getCalledOperand();
  BasicBlock *Head = Call->getParent();
  BasicBlock *Join = Head->splitBasicBlock(Call, "hl.icall.join");
  Head->getTerminator()->eraseFromParent();
  Function *F = Head->getParent();
  PHINode *Phi = Call->getType()->isVoidTy() ? nullptr : PHINode::Create(Call->getType(), Callees.size() + 1, "", Call);
  SmallVector<Value *, 8> Args(Call->args());
  BasicBlock *Cur = Head;
  for (Function *Callee : Callees) {
    BasicBlock *CallBB = BasicBlock::Create(Ctx, "hl.icall", F, Join);
    BasicBlock *Next = BasicBlock::Create(Ctx, "hl.icall.next", F, Join);
    IRBuilder<> B(Cur);
    B.CreateCondBr(B.CreateICmpEQ(FP, Callee), CallBB, Next);
    IRBuilder<> BC(CallBB);
    BC.SetCurrentDebugLocation(Call->getDebugLoc());
    SmallVector<Value *, 8> CallArgs(Args);
    Function *Target = Callee;
    auto CI = Clones.find(Callee);
    if (CI != Clones.end()) {
      Target = CI->second;
      for (Value *P : poolArgs(Callee, Orig, BU.indirectNodeMap(OC, Callee), PM, Plan)) CallArgs.push_back(P);
    }
    CallInst *New = BC.CreateCall(Target, CallArgs);
    New->setCallingConv(Call->getCallingConv());
    New->setAttributes(Call->getAttributes());
    BC.CreateBr(Join);
    if (Phi) Phi->addIncoming(New, CallBB);
    Cur = Next;
  }
  if (Phi) Call->replaceAllUsesWith(Phi);
  Call->removeFromParent();
  Call->insertInto(Cur, Cur->end()); // the analysis says unreachable; kept as the safe fallback
  BranchInst::Create(Join, Cur);
  if (Phi) Phi->addIncoming(Call, Cur);
}

void Transformer::redirectCall(CallBase *OC, CallBase *VC, Function *Orig, const PoolMap &PM, const SCCPlan &Plan) {
  Function *Callee = dyn_cast<Function>(OC->getCalledOperand()->stripPointerCasts());
  auto CI = Clones.find(Callee);
  if (CI == Clones.end()) return;
  SmallVector<Value *, 8> Args(VC->args());
  for (Value *P : poolArgs(Callee, Orig, BU.nodeMap(OC), PM, Plan)) Args.push_back(P);
  Function *Clone = CI->second;
  CallBase *New;
  if (auto *Inv = dyn_cast<InvokeInst>(VC))
    New = InvokeInst::Create(Clone, Inv->getNormalDest(), Inv->getUnwindDest(), Args, "", VC);
  else {
    auto *Call = CallInst::Create(Clone, Args, "", VC);
    Call->setTailCallKind(cast<CallInst>(VC)->getTailCallKind());
    New = Call;
  }
  New->setCallingConv(VC->getCallingConv());
  New->setAttributes(VC->getAttributes());
  New->setDebugLoc(VC->getDebugLoc());
  New->takeName(VC);
  VC->replaceAllUsesWith(New);
  VC->eraseFromParent();
}

void Transformer::useBumpPointer(AllocaInst *Pool) {
  SmallVector<CallInst *, 8> Uses;
  for (User *U : Pool->users()) {
    auto *C = dyn_cast<CallInst>(U);
    if (!C || C->getArgOperand(0) != Pool) return;
    Function *F = C->getCalledFunction();
    if (!F) return;
    StringRef N = F->getName();
    if (N != "poolcreate" && N != "poolalloc" && N != "pooldestroy") return;
    for (unsigned I = 1; I < C->arg_size(); ++I)
      if (C->getArgOperand(I) == Pool) return;
    Uses.push_back(C);
  }
  for (CallInst *C : Uses) {
    IRBuilder<> B(C);
    StringRef N = C->getCalledFunction()->getName();
    Value *R = nullptr;
    if (N == "poolcreate") B.CreateCall(API.InitBP, {Pool, C->getArgOperand(2)});
    else if (N == "poolalloc") R = B.CreateCall(API.AllocBP, {Pool, C->getArgOperand(1)});
    else B.CreateCall(API.DestroyBP, {Pool});
    if (R) C->replaceAllUsesWith(R);
    C->eraseFromParent();
  }
}

Value *Transformer::globalPool(const DSNode *GlobalNode, uint64_t SizeHint) {
  auto It = GlobalPools.find(GlobalNode);
  if (It != GlobalPools.end()) return It->second;
  auto *Ty = ArrayType::get(Type::getInt8Ty(Ctx), PoolDescriptorBytes);
  auto *GV = new GlobalVariable(M, Ty, false, GlobalValue::InternalLinkage, ConstantAggregateZero::get(Ty),
                                "hl.global.pool");
  GV->setAlignment(Align(PoolDescriptorAlign));
  GlobalPools[GlobalNode] = GV;
  if (!GlobalInit) {
    GlobalInit = Function::Create(FunctionType::get(Type::getVoidTy(Ctx), false), GlobalValue::InternalLinkage,
                                  "hl.create.global.pools", &M);
    ReturnInst::Create(Ctx, BasicBlock::Create(Ctx, "entry", GlobalInit));
    // Before the program's own constructors, which may allocate into these pools.
    appendToGlobalCtors(M, GlobalInit, GlobalPoolCtorPriority);
  }
  IRBuilder<> B(GlobalInit->getEntryBlock().getTerminator());
  // The globals-graph node holds every function's accesses to the data structure.
  uint64_t Alignment = Opts.Align8 ? poolAlignment({GlobalNode}) : 0;
  B.CreateCall(API.Create, {GV, ConstantInt::get(SizeTy, SizeHint), ConstantInt::get(SizeTy, Alignment)});
  return GV;
}

void Transformer::rewrite(Function *Orig, Function *V, bool IsClone, const std::vector<CallBase *> &OrigCalls,
                          ValueToValueMapTy *VMap) {
  const SCCPlan &Plan = Plans[BU.sccOf(Orig)];
  PoolMap PM;
  if (IsClone)
    for (unsigned I = 0; I < Plan.ArgNodes.size(); ++I)
      PM[Plan.ArgNodes[I]] = PoolRef{V->getArg(Orig->arg_size() + I), true, ""};

  // The facts for pooldestroy placement are taken from the function as the analysis saw it.
  std::vector<const DSNode *> Leaders;
  for (auto &NP : Plan.Nodes)
    if (NP.second.Kind == PoolKind::Local && NP.second.Owner == Orig && NP.second.Leader == NP.first)
      Leaders.push_back(NP.first);
  std::unique_ptr<DestroyPlacement> Placement;
  if (Opts.PlaceDestroys && !Leaders.empty())
    Placement = std::make_unique<DestroyPlacement>(BU, Plan, Orig, V, VMap, Leaders);

  std::vector<AllocaInst *> Locals;
  BasicBlock &Entry = V->getEntryBlock();
  Instruction *AfterAllocas = &*Entry.getFirstInsertionPt();
  while (isa<AllocaInst>(AfterAllocas)) AfterAllocas = AfterAllocas->getNextNode();
  for (auto &NP : Plan.Nodes) {
    if (NP.second.Kind != PoolKind::Local || NP.second.Owner != Orig || NP.second.Leader != NP.first) continue;
    auto *A = new AllocaInst(ArrayType::get(Type::getInt8Ty(Ctx), PoolDescriptorBytes), 0, nullptr,
                             Align(PoolDescriptorAlign), "hl.pool", &Entry.front());
    IRBuilder<> B(AfterAllocas);
    uint64_t Hint = NP.first->AllocSizeMixed ? 0 : NP.first->AllocSize;
    std::vector<const DSNode *> Members; // the nodes collocated into this pool (APA 6), itself included
    for (auto &Other : Plan.Nodes)
      if (Other.second.Kind == PoolKind::Local && Other.second.Owner == Orig && Other.second.Leader == NP.first)
        Members.push_back(Other.first);
    uint64_t Alignment = Opts.Align8 ? poolAlignment(Members) : 0;
    B.CreateCall(API.Create, {A, ConstantInt::get(SizeTy, Hint), ConstantInt::get(SizeTy, Alignment)});
    PM[NP.first] = PoolRef{A, false, ""};
    Locals.push_back(A);
  }
  for (auto &NP : Plan.Nodes) // collocated nodes share their leader's pool
    if (NP.second.Kind == PoolKind::Local && NP.second.Owner == Orig && NP.second.Leader != NP.first)
      if (auto L = PM.find(NP.second.Leader); L != PM.end()) PM[NP.first] = L->second;

  // Nodes first: redirecting a call replaces its result, and a free of that result would
  // then find no node (Orig is rewritten in place when V is Orig).
  std::map<const CallBase *, const DSNode *> MallocFamilyNode;
  for (CallBase *OC : OrigCalls) {
    CalleeKind K = BU.kindOf(OC);
    if (K == CalleeKind::Malloc || K == CalleeKind::Calloc || K == CalleeKind::Realloc)
      MallocFamilyNode[OC] = BU.nodeOf(OC, Orig);
    else if (K == CalleeKind::Free)
      MallocFamilyNode[OC] = BU.nodeOf(OC->getArgOperand(0), Orig);
  }
  for (CallBase *OC : OrigCalls) {
    CallBase *VC = OC;
    if (IsClone) {
      auto It = VMap->find(OC);
      if (It == VMap->end() || !It->second) continue;
      VC = dyn_cast<CallBase>(&*It->second);
      if (!VC) continue;
    }
    if (const std::vector<Function *> *Fs = BU.indirectCallees(OC)) {
      promoteIndirectCall(OC, VC, Orig, PM, Plan, *Fs);
      continue;
    }
    if (BU.isResolvedCall(OC)) {
      redirectCall(OC, VC, Orig, PM, Plan);
      continue;
    }
    CalleeKind K = BU.kindOf(OC);
    if (K == CalleeKind::Malloc || K == CalleeKind::Calloc || K == CalleeKind::Realloc || K == CalleeKind::Free)
      rewriteMallocFamily(VC, K, poolFor(MallocFamilyNode[OC], Plan, PM));
  }

  if (!Locals.empty()) {
    std::vector<ReturnInst *> Returns;
    for (BasicBlock &BB : *V)
      if (auto *R = dyn_cast<ReturnInst>(BB.getTerminator())) Returns.push_back(R);
    for (ReturnInst *R : Returns)
      for (AllocaInst *A : Locals) CallInst::Create(API.Destroy, {A}, "", R);
    LocalPools[V] = Locals;
    if (Placement) {
      std::set<const Value *> Descriptors(Locals.begin(), Locals.end());
      for (unsigned I = Orig->arg_size(); I < V->arg_size(); ++I) Descriptors.insert(V->getArg(I));
      // Locals were made in the order of Leaders.
      for (unsigned I = 0; I < Locals.size(); ++I) {
        bool Late = false;
        Stats.PoolsDestroyedEarly += Placement->place(Locals[I], I, API.Destroy, Descriptors, Opts.PlaceCreates, Late);
        Stats.PoolsCreatedLate += Late;
      }
    }
  }
}

void Transformer::collectStatistics() {
  for (Function &F : M) {
    if (F.isDeclaration()) continue;
    ++Stats.Functions;
    if (F.getName().endswith(".hlpool")) {
      ++Stats.ClonedFunctions;
      unsigned Extra = PoolParams[&F];
      Stats.PoolArgsTotal += Extra;
      Stats.PoolArgsMax = std::max(Stats.PoolArgsMax, Extra);
    }
    for (Instruction &I : instructions(F)) {
      auto *CB = dyn_cast<CallBase>(&I);
      if (!CB) continue;
      Function *Callee = CB->getCalledFunction();
      if (!Callee || !Callee->isDeclaration()) continue;
      StringRef N = Callee->getName();
      if (N == "poolcreate" || N == "poolinit_bp") ++Stats.StaticPools;
      if (N == "poolinit_bp") ++Stats.BumpPointerPools;
      if (N == "poolcreate" || N == "poolinit_bp") { // align: the last argument of both
        auto *C = dyn_cast<ConstantInt>(CB->getArgOperand(CB->arg_size() - 1));
        if (C && C->getZExtValue() == 8) ++Stats.Align8Pools;
      }
      if (N == "poolcreate" || N == "poolinit_bp") {
        // poolcreate's size hint (argument 1) is non-zero when every allocation has one size.
        if (N == "poolcreate") {
          if (auto *C = dyn_cast<ConstantInt>(CB->getArgOperand(1)); C && !C->isZero()) ++Stats.SingleSizePools;
        }
      }
      if (N == "poolalloc" || N == "poolalloc_bp" || N == "poolrealloc") ++Stats.AllocSitesPooled;
      if (N == "poolfree") ++Stats.FreeSitesPooled;
      if ((N == "malloc" || N == "calloc" || N == "realloc") && !Fallbacks.count(CB)) {
        ++Stats.AllocSitesKept;
        auto It = KeptReason.find(CB);
        Stats.KeptReasons[It == KeptReason.end() ? "not analysed" : It->second]++;
      }
    }
  }
  // Bump-pointer pools lose their size hint (poolinit_bp has none): count them from the plan.
  for (const SCCPlan &P : Plans)
    for (auto &NP : P.Nodes) {
      std::string Key = NP.second.Kind == PoolKind::Local      ? "local pool"
                        : NP.second.Kind == PoolKind::Argument ? "pool argument"
                        : NP.second.Kind == PoolKind::Global   ? "global pool"
                                                               : std::string("malloc: ") + NP.second.Reason;
      Stats.HeapNodes[Key]++;
    }
}

bool Transformer::run() {
  declareAPI();
  // Clones first: they copy the bodies before any rewriting.
  std::map<Function *, std::unique_ptr<ValueToValueMapTy>> VMaps;
  std::vector<Function *> Originals;
  for (const SCCInfo &S : BU.sccs())
    for (Function *F : S.Members) Originals.push_back(F);
  for (Function *F : Originals) {
    const SCCPlan &P = Plans[BU.sccOf(F)];
    if (P.ArgNodes.empty()) continue;
    VMaps[F] = std::make_unique<ValueToValueMapTy>();
    Clones[F] = makeClone(F, P.ArgNodes.size(), *VMaps[F]);
    PoolParams[Clones[F]] = P.ArgNodes.size();
  }
  for (Function *F : Originals) {
    std::vector<CallBase *> Calls;
    for (Instruction &I : instructions(*F))
      if (auto *CB = dyn_cast<CallBase>(&I)) Calls.push_back(CB);
    auto CI = Clones.find(F);
    if (CI != Clones.end()) rewrite(F, CI->second, true, Calls, VMaps[F].get());
    rewrite(F, F, false, Calls, nullptr);
  }
  // An internal original nobody calls any more is dead: the clones replaced it.
  for (auto &KV : Clones)
    if (KV.first->hasLocalLinkage() && KV.first->use_empty()) {
      LocalPools.erase(KV.first);
      KV.first->eraseFromParent();
    }
  // Both need every call of every pool in place: a free in a clone is judged by its callers,
  // and a pool whose last frees go may become a bump-pointer pool.
  if (Opts.FreeElim) Stats.FreeSitesEliminated = eliminatePoolFrees(M, LocalPools, PoolParams, Opts.Debug);
  if (Opts.BumpPointer)
    for (auto &KV : LocalPools)
      for (AllocaInst *A : KV.second) useBumpPointer(A);
  Stats.GlobalPools = GlobalPools.size();
  collectStatistics();
  Stats.FreeSitesPooled += Stats.FreeSitesEliminated; // counted as rewritten, then removed
  return true;
}

} // namespace

bool transformModule(Module &M, const BottomUp &BU, const std::vector<SCCPlan> &Plans, const TransformOptions &Opts,
                     Statistics &Stats) {
  Transformer T(M, BU, Plans, Opts, Stats);
  return T.run();
}

} // namespace hlapa
