// Every tunable of the pass plugin, with its default and why.
#pragma once

namespace hlapa {

// sizeof(Pool) and its alignment in runtime/include/heaplayout/pool.h: a local pool
// descriptor is an alloca of exactly this shape.
constexpr unsigned PoolDescriptorBytes = 4096;
constexpr unsigned PoolDescriptorAlign = 16;

// Environment variables read by the plugin (set by `heaplayout cc`; a plugin loaded by
// -fpass-plugin sees no -mllvm options of its own).
constexpr const char *EnvStatsFile = "HEAPLAYOUT_CC_STATS";  // append one JSON line per TU
constexpr const char *EnvDebug = "HEAPLAYOUT_CC_DEBUG";      // "1": print the DS graphs on stderr
constexpr const char *EnvDisable = "HEAPLAYOUT_CC_DISABLE";  // "1": run nothing (A/B builds)
constexpr const char *EnvNoSelective = "HEAPLAYOUT_CC_NO_SELECTIVE"; // "1": pool singletons too
constexpr const char *EnvWholeProgram = "HEAPLAYOUT_CC_WHOLE_PROGRAM"; // "1": this TU is the program
constexpr const char *EnvCollocate = "HEAPLAYOUT_CC_COLLOCATE"; // "maximal": MaximalDS, "collection": OnePoolPerCollection (APA 6)
constexpr const char *EnvNoBumpPointer = "HEAPLAYOUT_CC_NO_BUMP";    // "1": never use _bp pools
constexpr const char *EnvNoFreeElim = "HEAPLAYOUT_CC_NO_FREE_ELIM";  // "1": keep every poolfree
constexpr const char *EnvNoDestroyMove = "HEAPLAYOUT_CC_NO_DESTROY_MOVE"; // "1": pooldestroy before every return
constexpr const char *EnvNoCreateMove = "HEAPLAYOUT_CC_NO_CREATE_MOVE"; // "1": poolcreate at the entry
constexpr const char *EnvNoTopDown = "HEAPLAYOUT_CC_NO_TOPDOWN"; // "1": plan from the bottom-up graphs alone
constexpr const char *EnvNoAlign = "HEAPLAYOUT_CC_NO_ALIGN"; // "1": every pool keeps 16-byte alignment

// Selective PA (APA 5.1) on by default: the paper found it never hurts and saves a pool
// (1 KiB descriptor + a chunk) per singleton object.
constexpr bool DefaultSelectivePA = true;
// Bump-pointer pools (APA 5.3) on by default: same objects, no free-list bookkeeping.
constexpr bool DefaultBumpPointer = true;
// Pool-free elimination (APA 4.3) on by default: it removes only frees whose slot no later
// allocation could reuse before pooldestroy releases the whole pool, so peak memory stays.
constexpr bool DefaultFreeElim = true;
// pooldestroy placement (APA 4.2) on by default: a pool's memory goes back as soon as nothing
// can touch it any more, and frees before that point become candidates for elimination.
constexpr bool DefaultPlaceDestroys = true;
// poolcreate placement (APA 4.2) on by default: a path that never reaches the data structure
// (an early return) creates no pool, and the pool's memory is taken no earlier than needed.
// It needs the destroy placement (a create moved past an exit must not meet that exit's
// destroy), so HEAPLAYOUT_CC_NO_DESTROY_MOVE=1 turns it off too.
constexpr bool DefaultPlaceCreates = true;
// The top-down phase on by default: it only removes pool parameters whose every caller passes
// null (or one global pool), which the clone would have tested at every allocation.
constexpr bool DefaultTopDown = true;
// The alignment optimization (APA 5.4) on by default: a pool whose objects provably need at
// most 8-byte alignment asks the runtime for 8 (pool.h), which packs 24-, 40-, ... byte
// objects at their size instead of rounding them to a multiple of 16.
constexpr bool DefaultAlign8 = true;

// Constructor priority of the function that creates global pools: 101 is the first one
// not reserved for the implementation, so it runs before the program's own constructors.
constexpr int GlobalPoolCtorPriority = 101;

} // namespace hlapa
