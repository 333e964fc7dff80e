// Bottom-up inlining of callee graphs over the SCCs of the direct call graph.
#include "BottomUp.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"

#include <algorithm>
#include <functional>

using namespace llvm;

namespace hlapa {

BottomUp::BottomUp(Module &M) : M(M), DL(M.getDataLayout()) {}

static Function *directCallee(const CallBase &CB) {
  if (CB.isInlineAsm()) return nullptr;
  return dyn_cast<Function>(CB.getCalledOperand()->stripPointerCasts());
}

// Tarjan's algorithm; components come out callees first (reverse topological order).
void BottomUp::computeSCCs() {
  std::vector<Function *> Defined;
  for (Function &F : M)
    if (!F.isDeclaration()) Defined.push_back(&F);
  // An indirect call may reach any function whose address is taken: order those first.
  std::vector<Function *> AddressTaken;
  for (Function *F : Defined)
    if (F->hasAddressTaken()) AddressTaken.push_back(F);
  std::map<Function *, unsigned> Index, Low;
  std::set<Function *> OnStack;
  std::vector<Function *> Stack;
  unsigned Next = 0;
  std::function<void(Function *)> strong = [&](Function *F) {
    Index[F] = Low[F] = Next++;
    Stack.push_back(F);
    OnStack.insert(F);
    std::vector<Function *> Callees;
    for (Instruction &I : instructions(*F)) {
      auto *CB = dyn_cast<CallBase>(&I);
      if (!CB) continue;
      Function *C = directCallee(*CB);
      if (!C && !CB->isInlineAsm()) Callees.insert(Callees.end(), AddressTaken.begin(), AddressTaken.end());
      if (C && !C->isDeclaration()) Callees.push_back(C);
    }
    for (Function *C : Callees) {
      if (!Index.count(C)) {
        strong(C);
        Low[F] = std::min(Low[F], Low[C]);
      } else if (OnStack.count(C)) {
        Low[F] = std::min(Low[F], Index[C]);
      }
    }
    if (Low[F] == Index[F]) {
      SCCInfo S;
      Function *W;
      do {
        W = Stack.back();
        Stack.pop_back();
        OnStack.erase(W);
        S.Members.push_back(W);
      } while (W != F);
      std::reverse(S.Members.begin(), S.Members.end());
      for (Function *Mem : S.Members) SCCIndex[Mem] = SCCs.size();
      SCCs.push_back(std::move(S));
    }
  };
  for (Function *F : Defined)
    if (!Index.count(F)) strong(F);
}

// Whether some inttoptr may make a pointer from an integer the analysis did not follow: its
// operand is not, through add/sub/and/or/xor/phi/select/freeze, made only of ptrtoints and
// constants (it comes from memory, a call, an argument, or other arithmetic). Then a pointer
// that went into untracked arithmetic may come back anywhere (ArithEscape is external).
static bool mayRebuildHiddenPointers(Module &M) {
  for (Function &F : M)
    for (Instruction &I : instructions(F)) {
      if (!isa<IntToPtrInst>(I)) continue;
      SmallVector<const Value *, 8> Work{I.getOperand(0)};
      SmallPtrSet<const Value *, 16> Seen;
      while (!Work.empty()) {
        const Value *V = Work.pop_back_val();
        if (isa<Constant>(V) || !Seen.insert(V).second) continue;
        auto *X = dyn_cast<Instruction>(V);
        if (!X) return true;
        switch (X->getOpcode()) {
        case Instruction::PtrToInt: continue;
        case Instruction::Add: case Instruction::Sub: case Instruction::And: case Instruction::Or:
        case Instruction::Xor: case Instruction::PHI: case Instruction::Select: case Instruction::Freeze:
          for (const Value *Op : X->operands())
            if (Op->getType() == X->getType()) Work.push_back(Op);
          continue;
        default: return true;
        }
      }
    }
  return false;
}

void BottomUp::run() {
  HiddenPointers = mayRebuildHiddenPointers(M);
  computeSCCs();
  for (unsigned I = 0; I < SCCs.size(); ++I) {
    CurrentSCC = I;
    SCCs[I].Graph = std::make_unique<DSGraph>();
    DSGraph &G = *SCCs[I].Graph;
    LocalAnalysis LA(G, DL, *this, Kinds);
    Current = &LA;
    // Formals first, so that calls inside the SCC find them.
    for (Function *F : SCCs[I].Members)
      for (Argument &A : F->args()) LA.handleOf(&A);
    for (Function *F : SCCs[I].Members) LA.analyze(*F);
    resolveIndirectCalls(G);
    G.propagateExternal(HiddenPointers);
    Current = nullptr;
  }
}

bool BottomUp::resolveDirectCall(CallBase &CB, Function &Callee, DSGraph &G) {
  // Calls the transformation could not give extra arguments to are unknown code.
  if (Callee.isVarArg() || CB.arg_size() != Callee.arg_size() || CB.isMustTailCall() || isa<CallBrInst>(CB) ||
      CB.getFunctionType() != Callee.getFunctionType())
    return false;
  Resolved.insert(&CB);
  unsigned CalleeSCC = SCCIndex.at(&Callee);
  if (CalleeSCC == CurrentSCC) { // same graph: unify actuals with formals directly
    for (unsigned I = 0; I < CB.arg_size(); ++I)
      if (isPtrLike(CB.getArgOperand(I)->getType(), DL))
        G.unify(Current->handleOf(CB.getArgOperand(I)), Current->handleOf(Callee.getArg(I)));
    if (isPtrLike(CB.getType(), DL)) {
      DSHandle &Slot = G.returnSlot(&Callee);
      if (!Slot) Slot = {G.makeNode(), 0};
      G.unify(G.returnSlot(&Callee), Current->handleOf(&CB));
    }
    return true;
  }
  inlineCallee(CB, Callee, G, CallMaps[&CB]);
  return true;
}

void BottomUp::inlineCallee(CallBase &CB, Function &Callee, DSGraph &G, std::map<const DSNode *, DSNode *> &Map) {
  const DSGraph &CG = *SCCs[SCCIndex.at(&Callee)].Graph;
  std::vector<DSHandle> Roots;
  for (Argument &A : Callee.args()) {
    auto It = CG.values().find(&A);
    Roots.push_back(It == CG.values().end() ? DSHandle{} : It->second);
  }
  auto Ret = CG.returns().find(&Callee);
  Roots.push_back(Ret == CG.returns().end() ? DSHandle{} : Ret->second);
  for (auto &GH : CG.globals()) Roots.push_back(GH.second);
  std::vector<DSHandle> Copies = G.cloneFrom(CG, Roots, Map);
  for (unsigned I = 0; I < CB.arg_size(); ++I)
    if (Copies[I] && isPtrLike(CB.getArgOperand(I)->getType(), DL))
      G.unify(Current->handleOf(CB.getArgOperand(I)), Copies[I]);
  if (Copies[CB.arg_size()] && isPtrLike(CB.getType(), DL))
    G.unify(Current->handleOf(&CB), Copies[CB.arg_size()]);
}

// The callees of an indirect call are known when its function pointer's node holds only
// functions with a body here, none reached from outside (formals, returns, globals, external
// memory): then every value that flowed into the pointer was created in this SCC. Each callee
// is inlined at the call site like a direct callee; the transformation then calls each one
// by a test of the pointer (with its own pools). Checked again at the end, since inlining one
// call can merge another call's pointer node with more.
void BottomUp::resolveIndirectCalls(DSGraph &G) {
  std::vector<CallBase *> Calls;
  Calls.swap(Deferred);
  auto calleesOf = [&](CallBase *CB, std::vector<Function *> &Out) -> bool {
    DSHandle FP = Current->handleOf(CB->getCalledOperand());
    DSNode *N = DSGraph::resolve(FP).Node;
    if (!N || N->has(ExternalNode) || N->Globals.empty()) return false;
    std::vector<DSHandle> Outside;
    for (Function *F : SCCs[CurrentSCC].Members) {
      for (Argument &A : F->args())
        if (G.hasHandle(&A)) Outside.push_back(G.handleSlot(&A));
      auto R = G.returns().find(F);
      if (R != G.returns().end()) Outside.push_back(R->second);
    }
    for (auto &GH : G.globals())
      if (!isa<Function>(GH.first)) Outside.push_back(GH.second);
    if (G.reachable(Outside).count(N)) return false;
    Out.clear();
    for (const GlobalValue *GV : N->Globals) {
      auto *F = dyn_cast<Function>(GV);
      if (!F || F->isDeclaration() || F->isVarArg() || F->getFunctionType() != CB->getFunctionType() ||
          !SCCIndex.count(F) || SCCIndex.at(F) >= CurrentSCC)
        return false;
      Out.push_back(const_cast<Function *>(F));
    }
    std::sort(Out.begin(), Out.end(), [](Function *A, Function *B) { return A->getName() < B->getName(); });
    return !isa<InvokeInst>(CB) && !isa<CallBrInst>(CB) && !CB->isMustTailCall();
  };
  // Kept for the statistics (TopDown::countIndirect): would the paper's equivalence-class
  // graphs have handled this call?
  // Whether the pointer's node was external before the call itself made its arguments so
  // (a pointer reached from its own arguments, obj->f(obj), is not external on that account).
  auto noteUnknown = [&](CallBase *CB) {
    DSNode *N = DSGraph::resolve(Current->handleOf(CB->getCalledOperand())).Node;
    UnknownIndirect.push_back({CB, !N || N->has(ExternalNode)});
  };
  IndirectCalls += Calls.size();
  std::vector<std::pair<CallBase *, std::vector<Function *>>> Done;
  for (CallBase *CB : Calls) {
    std::vector<Function *> Fs;
    if (!calleesOf(CB, Fs)) {
      noteUnknown(CB);
      Current->visitUnknownCall(*CB);
      continue;
    }
    for (Function *F : Fs) inlineCallee(*CB, *F, G, IndirectMaps[{CB, F}]);
    Done.push_back({CB, Fs});
  }
  for (auto &D : Done) {
    std::vector<Function *> Fs;
    if (calleesOf(D.first, Fs) && Fs == D.second) IndirectCallees[D.first] = Fs;
    else { // grew or escaped meanwhile: unknown after all
      noteUnknown(D.first);
      Current->visitUnknownCall(*D.first);
    }
  }
}

const std::vector<Function *> *BottomUp::indirectCallees(const CallBase *CB) const {
  auto It = IndirectCallees.find(CB);
  return It == IndirectCallees.end() ? nullptr : &It->second;
}

const std::map<const DSNode *, DSNode *> *BottomUp::indirectNodeMap(const CallBase *CB, const Function *F) const {
  auto It = IndirectMaps.find({CB, F});
  return It == IndirectMaps.end() ? nullptr : &It->second;
}

std::vector<CallEdge> BottomUp::callEdges() const {
  std::vector<CallEdge> Out;
  for (auto &KV : CallMaps) Out.push_back({KV.first, directCallee(*KV.first), &KV.second});
  for (auto &KV : IndirectCallees)
    for (Function *F : KV.second) Out.push_back({KV.first, F, indirectNodeMap(KV.first, F)});
  return Out;
}

const std::map<const DSNode *, DSNode *> *BottomUp::nodeMap(const CallBase *CB) const {
  auto It = CallMaps.find(CB);
  return It == CallMaps.end() ? nullptr : &It->second;
}

CalleeKind BottomUp::kindOf(const CallBase *CB) const {
  auto It = Kinds.find(CB);
  return It == Kinds.end() ? CalleeKind::Unknown : It->second;
}

DSNode *BottomUp::nodeOf(const Value *V, const Function *F) const {
  const DSGraph &G = *SCCs[SCCIndex.at(F)].Graph;
  auto It = G.values().find(V);
  if (It == G.values().end()) return nullptr;
  return DSGraph::resolve(It->second).Node;
}

} // namespace hlapa
