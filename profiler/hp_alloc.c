/* Malloc replacement, allocation contexts, objects, and the address -> live object map. */
#include "hp.h"

ULong hp_clock;
ULong hp_nobjects;
UInt  hp_ncontexts;
Addr  hp_heap_lo;
ULong hp_heap_span;
static Addr heap_hi;
static PoolAlloc* obj_pool;

/* ------------------------------------------------------------------------------------ */
/* Address map. Address bits 32..47 pick a Mid, bits 18..31 one of its 256 KiB regions.    */
/* A region has a leaf of 16-byte granules for blocks < BIG_BLOCK (a block's granules all   */
/* point at its HpObj) and up to two big blocks overlapping it: a big block is at least a   */
/* region long, so at most one ends and one starts inside any region. Every lookup, hit or  */
/* miss, costs two or three dependent loads; addresses in the heap range that belong to no  */
/* tracked block (a program's own arenas, freed memory) are common and must be cheap too.   */
/* Big blocks are also kept in an array sorted by address, for free and for the final dump. */
/* ------------------------------------------------------------------------------------ */
#define BIG_BLOCK (256 * 1024)
#define REALLOC_HEADROOM_MIN 4096   /* a realloc that moves a block this large gives it 50% room */
#define L1_BITS 16   /* address bits 32..47 */
#define L2_BITS 14   /* address bits 18..31 */
#define L3_BITS 14   /* address bits 4..17 */
typedef struct { HpObj* e[1 << L3_BITS]; } Leaf;
typedef struct { Leaf* leaf; HpObj* big[2]; } Region;
typedef struct { Region r[1 << L2_BITS]; } Mid;
static Mid* l1[1 << L1_BITS];

static HpObj** big;          /* sorted by address */
static UInt nbig, capbig;
static Addr big_lo = ~(Addr)0, big_hi;

static inline Region* region_of(Addr a, Bool create)
{
   if (a >> 48) return NULL;
   Mid* m = l1[a >> 32];
   if (!m) {
      if (!create) return NULL;
      m = l1[a >> 32] = VG_(calloc)("hp.map.mid", 1, sizeof(Mid));
   }
   return &m->r[(a >> 18) & ((1 << L2_BITS) - 1)];
}

static inline HpObj** granule_slot(Addr a, Bool create)
{
   Region* r = region_of(a, create);
   if (!r) return NULL;
   if (!r->leaf) {
      if (!create) return NULL;
      r->leaf = VG_(calloc)("hp.map.leaf", 1, sizeof(Leaf));
   }
   return &r->leaf->e[(a >> 4) & ((1 << L3_BITS) - 1)];
}

static void regions_set_big(HpObj* o, HpObj* from, HpObj* to)
{
   for (Addr g = o->addr >> 18; g <= (o->addr + o->size - 1) >> 18; g++) {
      Region* r = region_of(g << 18, True);
      if (!r) continue;
      if (r->big[0] == from) r->big[0] = to;
      else if (r->big[1] == from) r->big[1] = to;
      else tl_assert2(0, "hlprof: more than two big blocks in a region");
   }
}

static HpObj* big_find(Addr a)
{
   if (a < big_lo || a >= big_hi) return NULL;
   UInt lo = 0, hi = nbig;
   while (lo < hi) {
      UInt mid = (lo + hi) / 2;
      HpObj* o = big[mid];
      if (a < o->addr) hi = mid;
      else if (a - o->addr >= o->size) lo = mid + 1;
      else return o;
   }
   return NULL;
}

static HpObj no_obj;              /* size 0: never matches */
static HpObj* last_hit = &no_obj;

HpObj* hp_map_find(Addr a)
{
   static Addr last_region = ~(Addr)0;   /* the last region looked up, and its entry */
   static Region* last_r;
   HpObj* o = last_hit;
   if (a - o->addr < o->size) return o;
   Region* r;
   if ((a >> 18) == last_region) {
      r = last_r;
   } else {
      r = region_of(a, False);
      if (!r) return NULL;
      last_region = a >> 18;
      last_r = r;
   }
   if (r->leaf) {
      o = r->leaf->e[(a >> 4) & ((1 << L3_BITS) - 1)];
      if (o) {
         if (a - o->addr < o->size) { last_hit = o; return o; }
         return NULL;
      }
   }
   for (Int i = 0; i < 2; i++) {
      o = r->big[i];
      if (o && a - o->addr < o->size) { last_hit = o; return o; }
   }
   return NULL;
}

/* The object whose block starts at p (for free/realloc). */
static HpObj* block_at(Addr p)
{
   HpObj** s = granule_slot(p, False);
   if (s && *s && (*s)->addr == p) return *s;
   HpObj* o = big_find(p);
   if (o && o->addr == p) return o;
   if (nbig) /* zero-size blocks never match big_find */
      for (UInt i = 0; i < nbig; i++) if (big[i]->addr == p) return big[i];
   return NULL;
}

static void map_insert(HpObj* o)
{
   Addr a = o->addr;
   SizeT sz = o->size ? o->size : 1;
   if (sz >= BIG_BLOCK) {
      if (nbig == capbig) {
         capbig = capbig ? capbig * 2 : 64;
         big = VG_(realloc)("hp.map.big", big, capbig * sizeof(HpObj*));
      }
      UInt i = nbig;
      while (i > 0 && big[i - 1]->addr > a) { big[i] = big[i - 1]; i--; }
      big[i] = o;
      nbig++;
      big_lo = big[0]->addr;
      if (a + sz > big_hi) big_hi = a + sz;
      regions_set_big(o, NULL, o);
   } else {
      for (Addr g = a & ~(Addr)15; g < a + sz; g += 16) {
         HpObj** s = granule_slot(g, True);
         if (s) *s = o;
      }
   }
   if (hp_heap_span == 0 && heap_hi == 0) { hp_heap_lo = a; heap_hi = a + sz; }
   if (a < hp_heap_lo) hp_heap_lo = a;
   if (a + sz > heap_hi) heap_hi = a + sz;
   hp_heap_span = heap_hi - hp_heap_lo;
   if (hp_sample_on) hp_guard_span = hp_heap_span;
}

static void map_remove(HpObj* o)
{
   if (last_hit == o) last_hit = &no_obj;
   Addr a = o->addr;
   SizeT sz = o->size ? o->size : 1;
   if (sz >= BIG_BLOCK) {
      for (UInt i = 0; i < nbig; i++) {
         if (big[i] == o) {
            for (UInt j = i; j + 1 < nbig; j++) big[j] = big[j + 1];
            nbig--;
            regions_set_big(o, o, NULL);
            break;
         }
      }
      big_lo = nbig ? big[0]->addr : ~(Addr)0;
      if (!nbig) big_hi = 0;
   } else {
      for (Addr g = a & ~(Addr)15; g < a + sz; g += 16) {
         HpObj** s = granule_slot(g, False);
         if (s && *s == o) *s = NULL;
      }
   }
}

/* ------------------------------------------------------------------------------------ */
/* Contexts                                                                              */
/* ------------------------------------------------------------------------------------ */
static HpCtx** ctx_tab;
static UWord ctx_mask;
static HpCtx** ctx_by_id;
static UInt ctx_cap;

static UWord hash_ips(const Addr* ips, UInt n)
{
   UWord h = 0xcbf29ce484222325ULL ^ n;
   for (UInt i = 0; i < n; i++) { h ^= ips[i]; h *= 0x100000001b3ULL; h ^= h >> 31; }
   return h;
}

static void write_context(HpCtx* c)
{
   for (UInt i = 0; i < c->nframes; i++) {
      HpModule* m = hp_module_of(c->ips[i]);
      hp_module_write(m);
      hp_frame_write_symbol(m, c->ips[i]);
   }
   hp_out_printf("C %u %c %u", c->id, c->kind, c->nframes);
   for (UInt i = 0; i < c->nframes; i++) {
      HpModule* m = hp_module_of(c->ips[i]);
      hp_out_printf(" %u:%lx", m->id, (UWord)(c->ips[i] - m->bias));
   }
   hp_out_puts("\n");
   hp_out_flush();
}

/* Trim system frames, stop below main, keep the innermost occurrence of each return address
 * (HALO's recursion reduction), at most hp_opt.depth frames. Returns the number kept; sets
 * *stopped when unwinding reached below main. */
static UInt reduce_frames(const Addr* raw, UInt n, Addr* ips, Bool* stopped)
{
   UInt k = 0;
   *stopped = False;
   for (UInt i = 0; i < n && k < hp_opt.depth; i++) {
      Bool below_main;
      HpModule* m = hp_frame_module(raw[i], &below_main);
      if (below_main) { *stopped = True; break; }
      if (m->system || !m->di) continue;
      Bool seen = False;
      for (UInt j = 0; j < k; j++) if (ips[j] == raw[i]) { seen = True; break; }
      if (!seen) ips[k++] = raw[i];
   }
   return k;
}

HpCtx* hp_context_unwind(ThreadId tid, HChar kind)
{
   Addr raw[512];
   Addr ips[256];
   UInt max = hp_opt.max_unwind < 512 ? hp_opt.max_unwind : 512;
   /* The kept frames depend only on the raw frames up to the depth-th kept one, so unwind a
    * little first and the whole max_unwind only when that was not enough. */
   UInt first = hp_opt.depth * 2 + 8 < max ? hp_opt.depth * 2 + 8 : max;
   Bool stopped;
   UInt n = VG_(get_StackTrace)(tid, raw, first, NULL, NULL, 0);
   UInt k = reduce_frames(raw, n, ips, &stopped);
   if (k < hp_opt.depth && !stopped && n == first && first < max) {
      n = VG_(get_StackTrace)(tid, raw, max, NULL, NULL, 0);
      k = reduce_frames(raw, n, ips, &stopped);
   }
   if (k == 0 && n > 0) ips[k++] = raw[n > 1 ? 1 : 0];

   UWord h = hash_ips(ips, k);
   for (HpCtx* c = ctx_tab[h & ctx_mask]; c; c = c->next)
      if (c->hash == h && c->nframes == k && VG_(memcmp)(c->ips, ips, k * sizeof(Addr)) == 0)
         return c;

   HpCtx* c = VG_(calloc)("hp.ctx", 1, sizeof(HpCtx) + k * sizeof(Addr));
   c->hash = h;
   c->nframes = k;
   c->kind = kind;
   c->id = hp_ncontexts++;
   VG_(memcpy)(c->ips, ips, k * sizeof(Addr));
   if (c->id >= ctx_cap) {
      ctx_cap = ctx_cap ? ctx_cap * 2 : 1024;
      ctx_by_id = VG_(realloc)("hp.ctx.ids", ctx_by_id, ctx_cap * sizeof(HpCtx*));
   }
   ctx_by_id[c->id] = c;
   if (hp_ncontexts > (ctx_mask + 1)) {   /* grow the hash */
      UWord nm = (ctx_mask + 1) * 4 - 1;
      HpCtx** nt = VG_(calloc)("hp.ctx.tab", nm + 1, sizeof(HpCtx*));
      for (UWord i = 0; i <= ctx_mask; i++) {
         HpCtx* e = ctx_tab[i];
         while (e) { HpCtx* nx = e->next; e->next = nt[e->hash & nm]; nt[e->hash & nm] = e; e = nx; }
      }
      VG_(free)(ctx_tab);
      ctx_tab = nt;
      ctx_mask = nm;
   }
   c->next = ctx_tab[h & ctx_mask];
   ctx_tab[h & ctx_mask] = c;
   write_context(c);
   return c;
}

/* ------------------------------------------------------------------------------------ */
/* Objects                                                                               */
/* ------------------------------------------------------------------------------------ */
void hp_obj_unref(HpObj* o)
{
   tl_assert(o->refs > 0);
   if (--o->refs == 0) VG_(freeEltPA)(obj_pool, o);
}

static ULong objects_written, objects_dropped;

static void write_object(HpObj* o, Bool live)
{
   if (hp_opt.objects == 0) return;
   if (hp_opt.objects == 1 && o->loads + o->stores == 0) return;
   if (hp_opt.objects_max && objects_written >= hp_opt.objects_max) {   /* bounds the file, not memory */
      if (objects_dropped++ == 0) hp_out_printf("W objects-truncated %llu\n", objects_written);
      return;
   }
   objects_written++;
   hp_out_char('O'); hp_out_char(' '); hp_out_u64(o->id);
   hp_out_char(' '); hp_out_u64(o->cid);
   hp_out_char(' '); hp_out_u64(o->inst);
   hp_out_char(' '); hp_out_u64(o->size);
   hp_out_char(' '); hp_out_u64(hp_est(o->alloc_t));
   hp_out_char(' ');
   if (live) hp_out_char('-'); else hp_out_u64(hp_est(hp_clock));
   hp_out_char(' '); hp_out_u64(o->tid);
   hp_out_char(' '); hp_out_u64(hp_est(o->loads));
   hp_out_char(' '); hp_out_u64(hp_est(o->stores));
   hp_out_char(' '); hp_out_u64(hp_est(o->lbytes));
   hp_out_char(' '); hp_out_u64(hp_est(o->sbytes));
   hp_out_char('\n');
}

static void account(HpObj* o)
{
   HpCtx* c = ctx_by_id[o->cid];
   c->loads += o->loads; c->stores += o->stores;
   c->lbytes += o->lbytes; c->sbytes += o->sbytes;
   c->live--;
}

/* Allocation-order neighbours: how often an object of context b was the next allocation
 * after one of context a in the same thread. An allocator that serves both from one
 * region in order (glibc's top chunk, a bump pool) places them side by side, and a program
 * that allocates a record and then the list cell pointing to it usually walks them
 * together; the planner keeps such pairs in one group (docs/planning.md). */
#define NEIGHBOUR_THREADS 1024
static HpCountMap neighbours;
static UInt last_ctx_plus1[NEIGHBOUR_THREADS]; /* per thread id: last context + 1, 0 none */

static void count_neighbour(ThreadId tid, UInt cid)
{
   if (tid >= NEIGHBOUR_THREADS) return;
   UInt prev = last_ctx_plus1[tid];
   if (prev) hp_cm_add(&neighbours, prev - 1, cid, 1);
   last_ctx_plus1[tid] = cid + 1;
}

static void record_block(ThreadId tid, void* p, SizeT size, HChar kind)
{
   HpCtx* c = hp_context_of(tid, kind);
   count_neighbour(tid, c->id);
   HpObj* o = VG_(allocEltPA)(obj_pool);
   VG_(memset)(o, 0, sizeof *o);
   o->addr = (Addr)p;
   o->size = size;
   o->id = ++hp_nobjects;
   o->inst = c->nobj++;
   o->alloc_t = hp_clock;
   o->cid = c->id;
   o->tid = tid;
   o->big = size > hp_opt.max_object_size;
   o->prev_ctx_seq = c->last_seq;
   o->refs = 2;                      /* live + ctx->last_obj */
   if (c->last_obj) {
      c->last_obj->next_ctx_seq = o->id;
      hp_obj_unref(c->last_obj);
   }
   c->last_obj = o;
   c->last_seq = o->id;
   c->bytes += size;
   if (++c->live > c->max_live) c->max_live = c->live;
   map_insert(o);
}

static void release_block(HpObj* o)
{
   map_remove(o);
   account(o);
   write_object(o, False);
   hp_obj_unref(o);
}

static void* new_block(ThreadId tid, SizeT size, SizeT align, HChar kind, Bool zero)
{
   void* p = VG_(cli_malloc)(align, size);
   if (!p) return NULL;
   if (zero) VG_(memset)(p, 0, size);
   record_block(tid, p, size, kind);
   return p;
}

static void* hp_malloc(ThreadId tid, SizeT n) { return new_block(tid, n, VG_(clo_alignment), 'm', False); }
static void* hp_new(ThreadId tid, SizeT n) { return new_block(tid, n, VG_(clo_alignment), 'n', False); }
static void* hp_vec_new(ThreadId tid, SizeT n) { return new_block(tid, n, VG_(clo_alignment), 'N', False); }
static void* hp_new_aligned(ThreadId tid, SizeT n, SizeT al) { return new_block(tid, n, al, 'n', False); }
static void* hp_vec_new_aligned(ThreadId tid, SizeT n, SizeT al) { return new_block(tid, n, al, 'N', False); }
static void* hp_memalign(ThreadId tid, SizeT al, SizeT n) { return new_block(tid, n, al, 'a', False); }
static void* hp_calloc(ThreadId tid, SizeT nmemb, SizeT sz)
{
   if (sz && nmemb > (SizeT)-1 / sz) return NULL;
   return new_block(tid, nmemb * sz, VG_(clo_alignment), 'c', True);
}

static void hp_free(ThreadId tid, void* p)
{
   if (!p) return;
   HpObj* o = block_at((Addr)p);
   if (!o) return;                 /* not ours: ignore */
   release_block(o);
   VG_(cli_free)(p);
}
static void hp_delete(ThreadId tid, void* p) { hp_free(tid, p); }
static void hp_delete_aligned(ThreadId tid, void* p, SizeT al) { hp_free(tid, p); }

static void* hp_realloc(ThreadId tid, void* p, SizeT n)
{
   if (!p) return new_block(tid, n, VG_(clo_alignment), 'r', False);
   HpObj* o = block_at((Addr)p);
   if (!o) return NULL;
   if (n == 0) { hp_free(tid, p); return NULL; }
   /* The profile sees a new object at realloc's context either way. The block itself stays
    * where it is when it has room: a program that grows a string by small steps otherwise
    * copies it into fresh pages every time (xsltproc: 61 s of page faults on its measuring
    * input), which glibc's realloc avoids by growing in place. */
   if (n <= VG_(cli_malloc_usable_size)(p)) {
      release_block(o);
      record_block(tid, p, n, 'r');
      return p;
   }
   SizeT room = n >= REALLOC_HEADROOM_MIN ? n + n / 2 : n;
   void* q = VG_(cli_malloc)(VG_(clo_alignment), room);
   if (!q) return NULL;
   VG_(memcpy)(q, p, o->size < n ? o->size : n);
   record_block(tid, q, n, 'r');
   release_block(o);
   VG_(cli_free)(p);
   return q;
}

static SizeT hp_usable_size(ThreadId tid, void* p)
{
   HpObj* o = block_at((Addr)p);
   return o ? o->size : 0;
}

void hp_alloc_init(void)
{
   obj_pool = VG_(newPA)(sizeof(HpObj), 4096, VG_(malloc), "hp.objpool", VG_(free));
   ctx_mask = 1023;
   ctx_tab = VG_(calloc)("hp.ctx.tab", ctx_mask + 1, sizeof(HpCtx*));
   hp_cm_init(&neighbours, 1 << 10);   /* capped in hp_alloc_start, after the options are read */
   VG_(needs_malloc_replacement)(hp_malloc, hp_new, hp_new_aligned, hp_vec_new, hp_vec_new_aligned,
                                 hp_memalign, hp_calloc, hp_free, hp_delete, hp_delete_aligned,
                                 hp_delete, hp_delete_aligned, hp_realloc, hp_usable_size, 0);
}

static void fini_object(HpObj* o)
{
   account(o);
   write_object(o, True);
}

/* f on every live object: each small one once, at its first granule; then the big ones */
static void for_each_live(void (*f)(HpObj*))
{
   for (UWord i1 = 0; i1 < (1 << L1_BITS); i1++) {
      Mid* m = l1[i1];
      if (!m) continue;
      for (UWord i2 = 0; i2 < (1 << L2_BITS); i2++) {
         Leaf* lf = m->r[i2].leaf;
         if (!lf) continue;
         Addr base = (i1 << 32) | (i2 << 18);
         for (UWord i3 = 0; i3 < (1 << L3_BITS); i3++) {
            HpObj* o = lf->e[i3];
            if (o && (o->addr & ~(Addr)15) == base + (i3 << 4)) f(o);
         }
      }
   }
   for (UInt i = 0; i < nbig; i++) f(big[i]);
}

/* A forked child's heap is the objects live at the fork (copies of the parent's) and those
 * it allocates: its profile counts the inherited ones as its own allocations, with no
 * accesses yet, and everything from the fork on. Instance numbers and object ids go on
 * from the parent's (a context's n-th object is the n-th of the program's run). */
static void inherit_object(HpObj* o)
{
   HpCtx* c = ctx_by_id[o->cid];
   c->bytes += o->size;
   o->loads = o->stores = o->lbytes = o->sbytes = 0;
}

void hp_alloc_fork_child(void)
{
   for (UInt i = 0; i < hp_ncontexts; i++) {
      HpCtx* c = ctx_by_id[i];
      c->nobj_base = c->nobj - c->live;
      c->bytes = 0;
      c->max_live = c->live;
      c->loads = c->stores = c->lbytes = c->sbytes = 0;
   }
   for_each_live(inherit_object);
   hp_cm_clear(&neighbours);
   VG_(memset)(last_ctx_plus1, 0, sizeof last_ctx_plus1);
   objects_written = objects_dropped = 0;
}

void hp_alloc_write_contexts(UInt n)
{
   for (UInt i = 0; i < n && i < hp_ncontexts; i++) write_context(ctx_by_id[i]);
}

void hp_alloc_start(void) { hp_cm_cap(&neighbours); }

void hp_alloc_fini(void)
{
   for_each_live(fini_object);
   for (UInt i = 0; i < hp_ncontexts; i++) {
      HpCtx* c = ctx_by_id[i];
      hp_out_printf("X %u %llu %llu %llu %llu %llu %llu %llu\n", c->id, c->nobj - c->nobj_base, c->bytes, c->max_live,
                    hp_est(c->loads), hp_est(c->stores), hp_est(c->lbytes), hp_est(c->sbytes));
   }
   for (ULong i = 0; i <= neighbours.mask; i++) {
      const HpCount* n = &neighbours.tab[i];
      if (n->n) hp_out_printf("N %llu %llu %llu\n", n->k1, n->k2, n->n);
   }
   hp_cm_write_dropped(&neighbours, "neighbours");
   if (objects_dropped) hp_out_printf("Z objects_dropped %llu\n", objects_dropped);
}
