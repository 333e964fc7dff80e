/* hlsim: heap objects and allocation contexts (from the preload's client requests), the
 * address -> object map, attribution by context, and the oracle layout.
 *
 * Map: 16-byte granule -> object id, in a 3-level table (bits 47..36, 35..22, 21..4).
 * Contexts: the return address of the outermost allocation call (call site).
 * Oracle: each heap object gets a packed address when it is first touched; packed objects
 * sit back to back (8-byte rounding) in a separate region, in first-touch order; a freed
 * object's packed slot is reused by the next first-touched object of the same rounded size
 * (up to 4 KiB), so the oracle stays dense under churn. Non-heap addresses are unchanged.
 * Accesses to a page holding live objects outside any object are the allocator's own
 * metadata (headers, free-list links): the oracle has none, so they are left out of its
 * stream (ho_remap returns 0).
 * Hot-first variant (--oracle-hot=RA,..., hottest first, from a first run): each listed
 * context packs into its own region in that order, all other contexts after them. */
#include "pub_tool_basics.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_debuginfo.h"
#include "hs_objects.h"
#include "hs_oracle_feed.h"

#define L1_BITS 12
#define L2_BITS 14
#define LEAF_BITS 18
#define G_SHIFT 4
#define LEAF_SHIFT G_SHIFT
#define L2_SHIFT (LEAF_SHIFT + LEAF_BITS)
#define L1_SHIFT (L2_SHIFT + L2_BITS)

/* per leaf: the granule -> object ids, and per 4 KiB page the number of live objects
 * overlapping it (an untracked access in such a page is the allocator's own metadata) */
#define PAGES_PER_LEAF (1 << (L2_SHIFT - 12))
typedef struct { UInt* leaf[1 << L2_BITS]; UShort* pages[1 << L2_BITS]; } L2Node;
static L2Node* top[1 << L1_BITS];

HsObj* ho_objs;
static UInt nobjs_used, objs_cap, free_ids;
HsCtx* ho_ctx;
UInt ho_nctx;
static UInt ctx_cap, max_ctx = 4096;
static UInt* ctx_hash;   /* open addressing: ctx index (0 = empty) */
static UInt ctx_hash_size;
Bool ho_oracle;
/* Region r (0 = unranked contexts, 1.. = the hot list's order) packs from
 * HO_PACKED_BASE + r * 2^36; without a hot list everything is region 0. */
#define NREGIONS (HO_MAX_HOT + 1)
#define REGION_SHIFT 36
static Addr packed_next[NREGIONS];
#define NCLASSES 513 /* rounded sizes 8..4096 in 8-byte steps */
static Addr* class_free[NREGIONS][NCLASSES];
static UInt class_n[NREGIONS][NCLASSES], class_cap[NREGIONS][NCLASSES];
static Addr hot_ra[HO_MAX_HOT];
static UInt nhot;
ULong ho_live_objects, ho_total_objects, ho_packed_bytes;

/* "ra,ra,..." in hex, hottest first; 0 if fine, else a message */
const HChar* ho_set_hot(const HChar* list)
{
   nhot = 0;
   while (*list) {
      HChar* end;
      ULong v = VG_(strtoull16)(list, &end);
      if (end == list) return "--oracle-hot: expected hex return addresses separated by commas";
      if (nhot == HO_MAX_HOT) return "--oracle-hot: too many contexts";
      hot_ra[nhot++] = v;
      list = end;
      if (*list == ',') list++;
      else if (*list) return "--oracle-hot: expected hex return addresses separated by commas";
   }
   return NULL;
}

void ho_init(UInt max_contexts, Bool oracle)
{
   for (UInt r = 0; r < NREGIONS; r++) packed_next[r] = HO_PACKED_BASE + ((Addr)r << REGION_SHIFT);
   max_ctx = max_contexts < 2 ? 2 : max_contexts;
   ho_oracle = oracle;
   ctx_cap = 64;
   ho_ctx = VG_(calloc)("hlsim.ctx", ctx_cap, sizeof(HsCtx));
   ho_nctx = 2; /* 0: not a heap object, 1: contexts beyond --max-contexts */
   ho_ctx[1].desc = "(other contexts)";
   ho_ctx[0].desc = "(not a heap object)";
   ctx_hash_size = 1;
   while (ctx_hash_size < 2 * max_ctx) ctx_hash_size <<= 1;
   ctx_hash = VG_(calloc)("hlsim.ctxhash", ctx_hash_size, sizeof(UInt));
   objs_cap = 1024;
   ho_objs = VG_(calloc)("hlsim.objs", objs_cap, sizeof(HsObj));
   nobjs_used = 1; /* id 0 = none */
}

static UInt** leaf_slot(Addr a, Bool create)
{
   UWord i1 = (a >> L1_SHIFT) & ((1 << L1_BITS) - 1);
   if (a >> (L1_SHIFT + L1_BITS)) return NULL;
   L2Node* n = top[i1];
   if (!n) {
      if (!create) return NULL;
      n = top[i1] = VG_(calloc)("hlsim.map2", 1, sizeof(L2Node));
   }
   return &n->leaf[(a >> L2_SHIFT) & ((1 << L2_BITS) - 1)];
}

static void page_count(Addr a, SizeT n, Int delta)
{
   if (n == 0) n = 1;
   for (Addr pg = a >> 12; pg <= (a + n - 1) >> 12; pg++) {
      Addr addr = pg << 12;
      if (addr >> (L1_SHIFT + L1_BITS)) return;
      L2Node* nd = top[(addr >> L1_SHIFT) & ((1 << L1_BITS) - 1)];
      if (!nd) return;
      UShort** slot = &nd->pages[(addr >> L2_SHIFT) & ((1 << L2_BITS) - 1)];
      if (!*slot) *slot = VG_(calloc)("hlsim.pages", PAGES_PER_LEAF, sizeof(UShort));
      UShort* c = &(*slot)[pg & (PAGES_PER_LEAF - 1)];
      if (delta > 0 && *c < 0xffff) (*c)++;
      else if (delta < 0 && *c > 0 && *c < 0xffff) (*c)--;
   }
}

Bool ho_in_heap_page(Addr a)
{
   if (a >> (L1_SHIFT + L1_BITS)) return False;
   L2Node* n = top[(a >> L1_SHIFT) & ((1 << L1_BITS) - 1)];
   if (!n) return False;
   UShort* pg = n->pages[(a >> L2_SHIFT) & ((1 << L2_BITS) - 1)];
   return pg && pg[(a >> 12) & (PAGES_PER_LEAF - 1)] != 0;
}

UInt ho_find(Addr a)
{
   if (a >> (L1_SHIFT + L1_BITS)) return 0;
   L2Node* n = top[(a >> L1_SHIFT) & ((1 << L1_BITS) - 1)];
   if (!n) return 0;
   UInt* leaf = n->leaf[(a >> L2_SHIFT) & ((1 << L2_BITS) - 1)];
   if (!leaf) return 0;
   return leaf[(a >> LEAF_SHIFT) & ((1 << LEAF_BITS) - 1)];
}

/* set granules of [a, a+n) to id; when clearing (id 0) only those still holding `only` */
static void map_range(Addr a, SizeT n, UInt id, UInt only)
{
   if (n == 0) n = 1;
   Addr g = a >> G_SHIFT, end = (a + n - 1) >> G_SHIFT;
   while (g <= end) {
      Addr addr = g << G_SHIFT;
      UInt** slot = leaf_slot(addr, id != 0);
      Addr leaf_end = ((addr >> L2_SHIFT) + 1) << (L2_SHIFT - G_SHIFT); /* first granule of next leaf */
      if (!slot) return;
      if (!*slot) {
         if (!id) { g = leaf_end; continue; }
         *slot = VG_(calloc)("hlsim.leaf", 1 << LEAF_BITS, sizeof(UInt));
      }
      UInt* leaf = *slot;
      for (; g <= end && g < leaf_end; g++) {
         UInt* e = &leaf[g & ((1 << LEAF_BITS) - 1)];
         if (id || *e == only) *e = id;
      }
   }
}

Addr ho_last_lo, ho_last_len, ho_last_delta;
Addr ho_plain_page[HO_PLAIN_PAGES] = {~(Addr)0, ~(Addr)0, ~(Addr)0, ~(Addr)0};
static UInt plain_next; /* round-robin replacement */
static ULong dummy_count;
ULong* ho_last_count = &dummy_count;

/* Recently remapped objects, by the line of the access (direct-mapped): heap accesses that
 * leave the last object mostly return to one touched shortly before, and this saves the
 * walk of the object map, whose leaves miss the host's caches. A free clears the slots of
 * the object's lines that hold it. */
#define RECENT_BITS 10
typedef struct { Addr lo, len, delta; ULong* count; } Recent;
static Recent recent[1 << RECENT_BITS];
static inline Recent* recent_slot(Addr a) { return &recent[(a >> 6) & ((1 << RECENT_BITS) - 1)]; }

static void forget_recent(Addr p, SizeT n)
{
   Addr first = p >> 6, last = (p + (n ? n : 1) - 1) >> 6;
   if (last - first >= (1 << RECENT_BITS)) {
      for (UInt i = 0; i < (1 << RECENT_BITS); i++)
         if (recent[i].lo == p) recent[i].len = 0;
      return;
   }
   for (Addr l = first; l <= last; l++) {
      Recent* r = recent_slot(l << 6);
      if (r->lo == p) r->len = 0;
   }
}

/* the cached objects (their counters point into ho_ctx, which a new context may move) */
static void forget_object(void)
{
   ho_last_len = 0;
   for (UInt i = 0; i < (1 << RECENT_BITS); i++) recent[i].len = 0;
}

static void forget_plain_pages(Addr p, SizeT n)
{
   Addr lo = p >> 12, hi = (p + (n ? n : 1) - 1) >> 12;
   for (UInt i = 0; i < HO_PLAIN_PAGES; i++)
      if (ho_plain_page[i] >= lo && ho_plain_page[i] <= hi) ho_plain_page[i] = ~(Addr)0;
}

static UInt context_of(Addr ra)
{
   UInt h = (UInt)((ra * 0x9E3779B97F4A7C15ULL) >> 40) & (ctx_hash_size - 1);
   for (;;) {
      UInt c = ctx_hash[h];
      if (c == 0) break;
      if (ho_ctx[c].ra == ra) return c;
      h = (h + 1) & (ctx_hash_size - 1);
   }
   if (ho_nctx >= max_ctx) return 1;
   if (ho_nctx == ctx_cap) {
      ctx_cap *= 2;
      ho_ctx = VG_(realloc)("hlsim.ctx", ho_ctx, ctx_cap * sizeof(HsCtx));
      forget_object();
   }
   UInt c = ho_nctx++;
   VG_(memset)(&ho_ctx[c], 0, sizeof(HsCtx));
   ho_ctx[c].ra = ra;
   for (UInt k = 0; k < nhot; k++)
      if (hot_ra[k] == ra) ho_ctx[c].region = k + 1;
   ho_ctx[c].desc = VG_(strdup)("hlsim.desc", VG_(describe_IP)(VG_(current_DiEpoch)(), ra - 1, NULL));
   ctx_hash[h] = c;
   if (of_active) of_new_context(c, ra);
   return c;
}

void ho_add_context(UInt c, Addr ra)
{
   tl_assert(c == ho_nctx && c < max_ctx);
   if (ho_nctx == ctx_cap) {
      ctx_cap *= 2;
      ho_ctx = VG_(realloc)("hlsim.ctx", ho_ctx, ctx_cap * sizeof(HsCtx));
      forget_object();
   }
   ho_nctx++;
   VG_(memset)(&ho_ctx[c], 0, sizeof(HsCtx));
   ho_ctx[c].ra = ra;
   ho_ctx[c].desc = "";
   for (UInt k = 0; k < nhot; k++)
      if (hot_ra[k] == ra) ho_ctx[c].region = k + 1;
}

void ho_alloc(Addr p, SizeT n, Addr ra)
{
   ho_alloc_ctx(p, n, context_of(ra));
}

void ho_alloc_ctx(Addr p, SizeT n, UInt ctx)
{
   UInt id;
   if (of_active) of_alloc(p, n, ctx);
   forget_plain_pages(p, n);
   if (free_ids) {
      id = free_ids;
      free_ids = ho_objs[id].next_free;
   } else {
      if (nobjs_used == objs_cap) {
         objs_cap *= 2;
         ho_objs = VG_(realloc)("hlsim.objs", ho_objs, objs_cap * sizeof(HsObj));
      }
      id = nobjs_used++;
   }
   HsObj* o = &ho_objs[id];
   o->start = p;
   o->size = n;
   o->packed = 0;
   o->ctx = ctx;
   o->next_free = 0;
   o->live = 1;
   ho_ctx[o->ctx].allocs++;
   ho_ctx[o->ctx].bytes += n;
   ho_live_objects++;
   ho_total_objects++;
   map_range(p, n, id, 0);
   if (ho_oracle) page_count(p, n, +1); /* only the oracle asks which pages hold objects */
}

static UInt size_class(SizeT n)
{
   SizeT r = (n + 7) & ~(SizeT)7;
   if (r == 0) r = 8;
   return r <= 4096 ? (UInt)(r >> 3) : 0;
}

void ho_free(Addr p)
{
   UInt id = ho_find(p);
   if (!id || ho_objs[id].start != p || !ho_objs[id].live) return;
   HsObj* o = &ho_objs[id];
   if (of_active) of_free(p);
   if (ho_last_len && ho_last_lo == p) ho_last_len = 0;
   forget_recent(p, o->size);
   map_range(p, o->size, 0, id);
   if (ho_oracle) page_count(p, o->size, -1);
   if (o->packed) {
      UInt c = size_class(o->size), r = ho_ctx[o->ctx].region;
      if (c) {
         if (class_n[r][c] == class_cap[r][c]) {
            class_cap[r][c] = class_cap[r][c] ? 2 * class_cap[r][c] : 64;
            class_free[r][c] = VG_(realloc)("hlsim.pfree", class_free[r][c], class_cap[r][c] * sizeof(Addr));
         }
         class_free[r][c][class_n[r][c]++] = o->packed;
      }
   }
   o->live = 0;
   o->next_free = free_ids;
   free_ids = id;
   ho_live_objects--;
}

static Addr remap_slow(HsObj* o)
{
   UInt c = size_class(o->size), g = ho_ctx[o->ctx].region;
   if (c && class_n[g][c]) {
      o->packed = class_free[g][c][--class_n[g][c]];
   } else {
      SizeT r = (o->size + 7) & ~(SizeT)7;
      o->packed = packed_next[g];
      packed_next[g] += r ? r : 8;
      ho_packed_bytes += r ? r : 8;
   }
   return o->packed;
}

Addr ho_remap_lookup(Addr a)
{
   Recent* r = recent_slot(a);
   if (a - r->lo < r->len) {
      ho_last_lo = r->lo;
      ho_last_len = r->len;
      ho_last_delta = r->delta;
      ho_last_count = r->count;
      (*ho_last_count)++;
      return a + ho_last_delta;
   }
   UInt id = ho_find(a);
   if (!id) {
      if (ho_in_heap_page(a)) return 0;
      ho_plain_page[plain_next++ % HO_PLAIN_PAGES] = a >> 12;
      return a;
   }
   HsObj* o = &ho_objs[id];
   Addr base = o->packed ? o->packed : remap_slow(o);
   ho_last_lo = o->start;
   ho_last_len = o->size ? o->size : 1;
   ho_last_delta = base - o->start;
   ho_last_count = &ho_ctx[o->ctx].accesses;
   (*ho_last_count)++;
   *r = (Recent){ho_last_lo, ho_last_len, ho_last_delta, ho_last_count};
   return base + (a - o->start);
}

unsigned ho_classify_ctx(void* ctx, unsigned long long a)
{
   UInt id = ho_find((Addr)a);
   if (!id) {
      /* the oracle's packed region: map back through the packed address is not kept;
       * charge it to the object-less bucket */
      return 0;
   }
   return ho_objs[id].ctx;
}
