// What a call to a function without a body in this translation unit does to memory.
// Only functions listed here are understood; any other callee is unknown code, and every
// object it can reach stays on malloc (the per-translation-unit scope, docs/compiler.md).
#pragma once

#include "llvm/ADT/StringRef.h"

namespace hlapa {

enum class CalleeKind {
  Malloc,        // malloc(size): a new heap object
  Calloc,        // calloc(n, size)
  Realloc,       // realloc(p, size): the same heap node as p
  Free,          // free(p)
  NoCapture,     // reads/writes through its pointer arguments, keeps none, frees none
  ReturnsArg0,   // like NoCapture, returns a pointer into its first argument (strchr, fgets)
  MemCopy,       // copies bytes (and so pointers) from its second argument to its first
  StrToNum,      // strtol and friends: *arg1 = a pointer into arg0
  ExternalResult,// NoCapture, returns memory owned by the library (getenv, fopen)
  Intrinsic,     // an LLVM intrinsic that moves no pointers (lifetime, dbg, memset, ...); a
                 // pointer it returns is unknown memory (stacksave, returnaddress, ...)
  Unknown,       // anything else: arguments escape, the result is unknown memory
};

CalleeKind classifyCallee(llvm::StringRef Name, bool IsIntrinsic);
const char *calleeKindName(CalleeKind K);

} // namespace hlapa
