/* hlsim: heap objects, allocation contexts, the oracle layout (hs_objects.c). */
#ifndef HLSIM_OBJECTS_H
#define HLSIM_OBJECTS_H
#include "pub_tool_basics.h"

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
void ho_free(Addr p);
UInt ho_find(Addr a);
Bool ho_in_heap_page(Addr a);
Addr ho_remap_slow(HsObj* o);
unsigned ho_classify_ctx(void* ctx, unsigned long long a);

/* the oracle address of `a`, counting the access to its context; 0 = allocator metadata,
 * not part of the oracle's stream */
static inline Addr ho_remap(Addr a)
{
   UInt id = ho_find(a);
   if (!id) return ho_in_heap_page(a) ? 0 : a;
   HsObj* o = &ho_objs[id];
   ho_ctx[o->ctx].accesses++;
   Addr base = o->packed ? o->packed : ho_remap_slow(o);
   return base + (a - o->start);
}
#endif
