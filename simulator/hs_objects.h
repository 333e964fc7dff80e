/* hlsim: heap objects, allocation contexts, the oracle layout (hs_objects.c). */
#ifndef HLSIM_OBJECTS_H
#define HLSIM_OBJECTS_H
#include "pub_tool_basics.h"
#include "model.h"

#define HO_MAX_HOT 64
#define HO_PACKED_BASE 0x700000000000ULL /* the oracle's packed heap: no client address */

typedef struct {
   Addr start;
   SizeT size;
   Addr packed;     /* oracle address, 0 until first touched */
   UInt ctx;
   UInt next_free;  /* free id list */
   UInt live;
} HsObj;

typedef struct {
   Addr ra;
   const HChar* desc;
   ULong allocs, bytes, accesses;
   UInt region;     /* oracle region: 0 = not in the hot list, k = k-th hottest */
} HsCtx;

extern HsObj* ho_objs;
extern HsCtx* ho_ctx;
extern UInt ho_nctx;
extern Bool ho_oracle;
extern ULong ho_live_objects, ho_total_objects, ho_packed_bytes;

void ho_init(UInt max_contexts, Bool oracle);
const HChar* ho_set_hot(const HChar* list);
void ho_alloc(Addr p, SizeT n, Addr ra);
void ho_alloc_ctx(Addr p, SizeT n, UInt ctx);
/* the oracle helper: context `c` (the next index) was created for return address `ra` */
void ho_add_context(UInt c, Addr ra);
void ho_free(Addr p);
UInt ho_find(Addr a);
Bool ho_in_heap_page(Addr a);
unsigned ho_classify_ctx(void* ctx, unsigned long long a);

/* The oracle address of `a`, counting the access to its context; 0 = allocator metadata,
 * not part of the oracle's stream. Most accesses touch the same object as the heap access
 * before them, or one of a few pages with no live object (the stack, globals): the last
 * object and the last HO_PLAIN_PAGES such pages are cached. A free forgets the object if it
 * is the one cached; an allocation forgets the cached pages it overlaps. */
#define HO_PLAIN_PAGES 4
extern Addr ho_last_lo, ho_last_len, ho_last_delta;
extern Addr ho_plain_page[HO_PLAIN_PAGES];
extern ULong* ho_last_count;
Addr ho_remap_lookup(Addr a);
static inline Addr ho_remap(Addr a)
{
   if (a - ho_last_lo < ho_last_len) {
      (*ho_last_count)++;
      return a + ho_last_delta;
   }
   Addr pg = a >> 12;
   if (pg == ho_plain_page[0] || pg == ho_plain_page[1] || pg == ho_plain_page[2] || pg == ho_plain_page[3])
      return a;
   return ho_remap_lookup(a);
}

/* A reference made inside an allocation call (malloc, free, ...; `sp` = the stack pointer at
 * the call's entry): the allocator's stack frames are kept, as any other non-heap reference,
 * and so are touches of live objects (realloc copying out of the old block); everything else
 * is the allocator's metadata, which the oracle does not have. The page test of ho_remap
 * cannot tell: glibc writes the top chunk's header just past each new allocation, on a page
 * that may hold no object yet. */
#define HO_ALLOCATOR_STACK (1 << 20) /* bytes below the entry stack pointer: the allocator's frames */
static inline Addr ho_remap_in_allocator(Addr a, Addr sp)
{
   if (a - ho_last_lo < ho_last_len) {
      (*ho_last_count)++;
      return a + ho_last_delta;
   }
   if (a - (sp - HO_ALLOCATOR_STACK) < HO_ALLOCATOR_STACK + 4096) return a; /* its frames, and the caller's top */
   return ho_find(a) ? ho_remap_lookup(a) : 0;
}

/* One reference replayed in the oracle's layout (`alloc_sp`: the entry stack pointer of the
 * allocation call it is made in, 0 = none); allocator metadata is dropped, and counted. */
static inline void ho_oracle_access(hs_model* m, Addr a, UInt size, Bool store, Addr pc, Addr alloc_sp,
                                    ULong* dropped)
{
   Addr o = alloc_sp ? ho_remap_in_allocator(a, alloc_sp) : ho_remap(a);
   if (o) hs_access(m, o, size, store, pc);
   else (*dropped)++;
}
#endif
