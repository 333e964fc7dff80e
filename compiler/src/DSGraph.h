// DS graphs (APA section 2.1): a field-sensitive, unification-based points-to graph.
// A node stands for a set of memory objects; an edge goes from a byte offset of a node to a
// (node, offset) handle. Nodes are merged with union-find and never freed while the graph
// lives, so a handle taken early stays valid: resolve() follows the merges. As in DSA, two
// nodes met at different offsets merge with a shift (the one seen at the smaller offset
// lies inside the other's objects); only the same node met at two offsets collapses.
#pragma once

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Value.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace hlapa {

struct DSNode;

// A pointer into a node: which node, and at which byte offset of its objects.
struct DSHandle {
  DSNode *Node = nullptr;
  uint64_t Offset = 0;
  explicit operator bool() const { return Node != nullptr; }
};

// Memory classes and facts about a node's objects (the M set and flags of the paper).
enum DSFlag : unsigned {
  HeapNode = 1u << 0,      // H: returned by malloc/calloc/realloc or passed to free here or below
  StackNode = 1u << 1,     // S: an alloca
  GlobalNode = 1u << 2,    // G: a global variable or function
  ExternalNode = 1u << 3,  // reachable by code this translation unit cannot see
  CollapsedNode = 1u << 4, // accessed at inconsistent offsets: one field only
  ArrayNode = 1u << 5,     // indexed with a variable index
  VarArgNode = 1u << 6,    // reached through va_arg (treated as external)
  // Pointers hidden in integers (LocalAnalysis): OpaqueInt, a pointer-sized integer made by
  // arithmetic the analysis does not follow (mul, shift, div, extension, ...); IntToPtr, an
  // inttoptr made a pointer from a value of the node; ArithEscape, a pointer into the node
  // went as an integer into such arithmetic (or was cut to a narrower integer). OpaqueInt
  // with IntToPtr is external (the pointer made may be anything); ArithEscape is external
  // when the module may turn a hidden integer back into a pointer (propagateExternal).
  OpaqueIntNode = 1u << 7,
  IntToPtrNode = 1u << 8,
  ArithEscapeNode = 1u << 9,
};

// An allocation or free call inside the translation unit, as the statistics name it.
struct DSSite {
  const llvm::CallBase *Call = nullptr;
  bool operator<(const DSSite &O) const { return Call < O.Call; }
};

// An array inside the objects of a node (a struct field `T a[N]`): its elements are one
// field, as DSA treats array types as their element type.
struct ArrayRange {
  uint64_t Start = 0, Bytes = 0, Elem = 0;
  bool operator==(const ArrayRange &O) const { return Start == O.Start && Bytes == O.Bytes && Elem == O.Elem; }
};

struct DSNode {
  DSNode *Forward = nullptr; // union-find parent; null for a representative
  uint64_t ForwardOffset = 0; // where this node's offset 0 lies in the parent's objects
  unsigned Flags = 0;
  std::map<uint64_t, DSHandle> Edges; // offset -> target (offset 0 only when collapsed)
  std::set<const llvm::GlobalValue *> Globals;
  std::set<DSSite> AllocSites; // every malloc-family call whose objects are in this node
  std::set<DSSite> FreeSites;
  uint64_t AllocSize = 0;      // the constant size of every allocation, or 0 when mixed
  bool AllocSizeMixed = false;
  uint64_t Stride = 0;         // array element size: offsets are taken modulo it (0: none)
  std::vector<ArrayRange> Ranges; // arrays inside the objects (largest first)
  // What alignment the objects need (APA 5.4, LocalAnalysis::noteAlignments): the largest
  // alignment of a type or access seen through a pointer into the node; AlignSeen once any
  // was seen (a node nobody accesses here has unknown types); AlignDoubt when code may store
  // a type the analysis cannot see (a scanf-family call writing through the pointer).
  uint64_t MaxAlign = 0;
  bool AlignSeen = false;
  bool AlignDoubt = false;
  unsigned Id = 0;

  bool has(unsigned F) const { return (Flags & F) != 0; }
  void noteAlign(uint64_t A) {
    AlignSeen = true;
    if (A > MaxAlign) MaxAlign = A;
  }
};

class DSGraph {
public:
  DSGraph() = default;
  DSGraph(const DSGraph &) = delete;
  DSGraph &operator=(const DSGraph &) = delete;

  DSNode *makeNode(unsigned Flags = 0);
  static DSNode *find(DSNode *N);
  static DSHandle resolve(DSHandle H);

  // The handle stored at field `Offset` of the object H points to (created empty if absent).
  DSHandle edge(DSHandle H, uint64_t ExtraOffset = 0);
  void unify(DSHandle A, DSHandle B);
  void collapse(DSNode *N);
  // A variable index of element size `Stride` was used on N: fields repeat every Stride bytes.
  void setStride(DSNode *N, uint64_t Stride);
  // An array of `Bytes` bytes with elements of `Elem` bytes starts at offset `Start` of N.
  void addArrayRange(DSNode *N, uint64_t Start, uint64_t Bytes, uint64_t Elem);
  // Pointer arithmetic: the same node at another offset; a negative offset collapses.
  DSHandle offsetBy(DSHandle H, int64_t Delta);

  // Values of the functions this graph describes, and their handles.
  bool hasHandle(const llvm::Value *V) const { return ValueMap.count(V) != 0; }
  DSHandle &handleSlot(const llvm::Value *V) { return ValueMap[V]; }
  const llvm::DenseMap<const llvm::Value *, DSHandle> &values() const { return ValueMap; }

  DSHandle globalHandle(const llvm::GlobalValue *G);
  const std::map<const llvm::GlobalValue *, DSHandle> &globals() const { return Globals; }

  DSHandle &returnSlot(const llvm::Function *F) { return Returns[F]; }
  const std::map<const llvm::Function *, DSHandle> &returns() const { return Returns; }

  // Copies the nodes reachable from `Roots` (handles of graph `From`) into this graph and
  // returns the copy of each root; `Map` receives old representative -> new node.
  std::vector<DSHandle> cloneFrom(const DSGraph &From, const std::vector<DSHandle> &Roots,
                                  std::map<const DSNode *, DSNode *> &Map);

  // Representatives reachable from the given roots (following edges).
  std::set<DSNode *> reachable(const std::vector<DSHandle> &Roots) const;
  // Every representative node.
  std::vector<DSNode *> representatives() const;
  // Gives every node reachable from an ExternalNode the flag too (code that can reach an
  // object can reach what it points to).
  // OpaqueInt+IntToPtr nodes, and ArithEscape nodes if `HiddenPointers`, are external first.
  void propagateExternal(bool HiddenPointers = false);

  size_t nodeCount() const { return Nodes.size(); }
  // A readable dump (HEAPLAYOUT_CC_DEBUG=1): nodes, flags, edges and the values on them.
  void print(llvm::raw_ostream &OS) const;

private:
  void mergeInto(DSNode *Keep, DSNode *Gone, uint64_t Delta);
  void rekeyEdges(DSNode *N);
  static uint64_t normalize(const DSNode *N, uint64_t Off);
  std::deque<std::unique_ptr<DSNode>> Nodes;
  llvm::DenseMap<const llvm::Value *, DSHandle> ValueMap;
  std::map<const llvm::GlobalValue *, DSHandle> Globals;
  std::map<const llvm::Function *, DSHandle> Returns;
  std::vector<std::pair<DSHandle, DSHandle>> Pending; // unify worklist
  bool Unifying = false;
  unsigned NextId = 1;
};

} // namespace hlapa
