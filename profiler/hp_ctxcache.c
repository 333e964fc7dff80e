/* The context cache (--context-cache=yes; on by default with --sample=yes): an allocation's
 * context is looked up by its CACHE_FRAMES innermost raw frames and the stack pointer of the
 * outermost of them, which cost a short unwind, instead of the full unwind (up to
 * 2*depth+8 frames, most of an allocation's cost in C++ programs with deep stacks).
 *
 * The key does not determine the context: two call paths can share the innermost frames and
 * the stack depth there and differ further out. So an entry is trusted only after the full
 * unwind agreed with it, and every VERIFY_EVERY-th use of it is checked by a full unwind
 * again; a disagreement marks the key ambiguous, and its allocations are unwound in full
 * from then on. What can still go wrong: between two checks, allocations from a second path
 * with the same key are counted at the first path's context. The Z records report how
 * often checks disagreed (context_cache_mismatches); the full profile never uses the cache
 * unless asked. A stack shallower than CACHE_FRAMES is its own key: exact. */
#include "hp.h"

#define CACHE_FRAMES 16       /* raw frames in the key (malloc's and new's own among them); 8 put 4.6% of cppcheck's objects at another context, 16 none */
#define CACHE_BITS 14         /* 16K entries, 1.3 MiB */
#define VERIFY_EVERY 16       /* a full unwind checks every 16th use of an entry */

typedef struct {
   Addr ips[CACHE_FRAMES];
   Addr sp;                   /* stack pointer of the outermost key frame */
   HpCtx* ctx;                /* NULL: empty */
   UInt n, uses;
   Bool ambiguous;
} CacheEnt;

static CacheEnt* cache;
static ULong hits, checks, mismatches, misses;

static UWord key_hash(const Addr* ips, UInt n, Addr sp)
{
   UWord h = 0x9E3779B97F4A7C15ULL ^ sp;
   for (UInt i = 0; i < n; i++) { h ^= ips[i]; h *= 0xff51afd7ed558ccdULL; h ^= h >> 29; }
   return h;
}

HpCtx* hp_context_of(ThreadId tid, HChar kind)
{
   if (!hp_opt.context_cache) return hp_context_unwind(tid, kind);
   if (UNLIKELY(!cache)) cache = VG_(calloc)("hp.ctxcache", 1 << CACHE_BITS, sizeof(CacheEnt));
   Addr ips[CACHE_FRAMES], sps[CACHE_FRAMES];
   UInt n = VG_(get_StackTrace)(tid, ips, CACHE_FRAMES, sps, NULL, 0);
   if (n == 0) return hp_context_unwind(tid, kind);
   Addr sp = sps[n - 1];
   CacheEnt* e = &cache[key_hash(ips, n, sp) & ((1 << CACHE_BITS) - 1)];
   Bool same_key = e->ctx && e->n == n && e->sp == sp && VG_(memcmp)(e->ips, ips, n * sizeof(Addr)) == 0;
   if (same_key && !e->ambiguous && ++e->uses % VERIFY_EVERY != 0) {
      hits++;
      return e->ctx;
   }
   HpCtx* c = hp_context_unwind(tid, kind);
   if (same_key) {
      if (!e->ambiguous) {
         checks++;
         if (c != e->ctx) { mismatches++; e->ambiguous = True; }
      }
      return c;
   }
   misses++;
   VG_(memcpy)(e->ips, ips, n * sizeof(Addr));
   e->n = n;
   e->sp = sp;
   e->ctx = c;
   e->uses = 0;
   e->ambiguous = False;
   return c;
}

void hp_ctxcache_fini(void)
{
   if (!hp_opt.context_cache) return;
   hp_out_printf("Z context_cache_hits %llu\n", hits);
   hp_out_printf("Z context_cache_misses %llu\n", misses);
   hp_out_printf("Z context_cache_checks %llu\n", checks);
   hp_out_printf("Z context_cache_mismatches %llu\n", mismatches);
}
