/* HALO affinity graph (HALO section 4.1). Each thread has an affinity queue of its most
 * recent macro-accesses to heap objects no larger than --max-object-size. A new access to
 * object u (context x) of s bytes:
 *   - deduplication: if the newest queue entry is u itself, nothing happens;
 *   - otherwise the queue is walked from newest to oldest, summing entry sizes onto s; every
 *     entry v reached while the sum (u + entries between + v) stays <= A bytes is a
 *     candidate; u itself is skipped (no self-affinity), each object counts at most once
 *     per walk (no double counting), and only co-allocatable pairs count: no object
 *     allocated strictly between u and v may come from x or from v's context y;
 *   - each counted v adds 1 to the undirected edge weight w(x, y) (x == y is allowed);
 *   - u is pushed as a new entry of size s.
 * With A = 32 and 4-byte accesses to distinct objects, each access is affine to the 7
 * before it, as in HALO's Figure 5.
 *
 * Beyond HALO: pairs of two objects of the same context that fail only co-allocatability
 * (a structure traversed in another order than it was allocated, such as a list whose cells
 * were appended at different times) are counted per context as its *walk* weight (R
 * records). HALO drops them because no pool can put such objects side by side; they still
 * say that the context is traversed on its own, which a pool shared with other contexts
 * spreads out. */
#include "hp.h"

/* A queue entry carries copies of the object's fields, so that the walk reads only the
 * (contiguous) queue. next_ctx_seq is set once, when the context allocates again; the copy
 * is refreshed from the object only while it is still 0.
 *
 * Each object has at most one entry within reach. When u is pushed and the walk met an older
 * entry of u, that entry is taken out and its bytes are kept as a gap of its newer neighbour
 * (gap: bytes of removed entries between an entry and the next older one), so every
 * distance stays what it was. An older entry of u that the walk did not reach lies beyond A
 * and stays beyond it for every later walk (the distance to it only grows). This gives "no
 * double counting" without per-object marks, and keeps walks short when a few objects are
 * accessed in turn (the A B A B ... of a byte-wise compare). */
typedef struct {
   HpObj* o;
   UInt size, cid;
   ULong id, prev_ctx_seq, next_ctx_seq;
   UInt gap;
} QEnt;
typedef struct { QEnt* e; UInt head, n; } Queue;

static ULong* walk;        /* per context: same-context pairs that are not co-allocatable */
static UInt nwalk;
static Queue* queues;
static UInt nqueues;
static UInt qcap;
static HpCountMap graph;
ULong hp_affinity_pairs;
ULong hp_stat_aff_walks, hp_stat_aff_entries;

void hp_affinity_init(void)
{
   qcap = 16;
   while (qcap < hp_opt.affinity_distance + 2) qcap *= 2;
   hp_cm_init(&graph, 1 << 12);
   hp_cm_cap(&graph);
}

/* Co-allocatable: no object allocated strictly between u and v comes from u's or v's context.
 * With e the earlier and l the later of the two: l's context allocated nothing after e
 * (l->prev_ctx_seq <= e->id) and e's context nothing before l (e->next_ctx_seq >= l->id). */
static inline Bool coallocatable(HpObj* u, QEnt* v)
{
   if (v->id < u->id) {
      if (u->prev_ctx_seq > v->id) return False;
      if (v->next_ctx_seq == 0) v->next_ctx_seq = v->o->next_ctx_seq;
      ULong nx = v->next_ctx_seq;
      return nx == 0 || nx >= u->id;
   } else {
      if (v->prev_ctx_seq > u->id) return False;
      return u->next_ctx_seq == 0 || u->next_ctx_seq >= v->id;
   }
}

/* Edge counts pass through a small direct-mapped cache of pending counts (64 KiB, stays in
 * L2) before the graph table, which for thousands of contexts is megabytes: the same few
 * edges recur in a loop, and each table update would be a cache miss. */
#define ECACHE_BITS 12
typedef struct { ULong key, n; } EdgeCacheEnt;   /* n == 0: empty */
static EdgeCacheEnt ecache[1 << ECACHE_BITS];

static inline void add_edge(UInt x, UInt y, UInt n)
{
   if (x > y) { UInt t = x; x = y; y = t; }
   ULong key = ((ULong)x << 32) | y;
   EdgeCacheEnt* c = &ecache[(key * 0x9E3779B97F4A7C15ULL) >> (64 - ECACHE_BITS)];
   if (LIKELY(c->key == key && c->n)) {
      c->n += n;
   } else {
      if (c->n) hp_cm_add(&graph, c->key, 0, c->n);
      c->key = key;
      c->n = n;
   }
   hp_affinity_pairs += n;
}

static void count_walk(UInt x, UInt n)
{
   if (UNLIKELY(x >= nwalk)) {
      UInt cap = nwalk ? nwalk : 256;
      while (cap <= x) cap *= 2;
      walk = VG_(realloc)("hp.walk", walk, cap * sizeof(ULong));
      VG_(memset)(walk + nwalk, 0, (cap - nwalk) * sizeof(ULong));
      nwalk = cap;
   }
   walk[x] += n;
}

void hp_affinity_access(ThreadId tid, HpObj* u, UInt sz)
{
   if (UNLIKELY(tid >= nqueues)) {
      UInt n = tid + 16;
      queues = VG_(realloc)("hp.affqs", queues, n * sizeof(Queue));
      VG_(memset)(queues + nqueues, 0, (n - nqueues) * sizeof(Queue));
      nqueues = n;
   }
   Queue* q = &queues[tid];
   UInt mask = qcap - 1;
   if (UNLIKELY(!q->e)) q->e = VG_(calloc)("hp.affq", qcap, sizeof(QEnt));
   if (q->n && q->e[(q->head - 1) & mask].o == u) return;
   hp_stat_aff_walks++;

   ULong dist = sz;
   ULong A = hp_opt.affinity_distance;
   UInt x = u->cid, run_y = 0, run_n = 0;   /* consecutive hits on one context, added at once */
   UInt k_u = 0;                            /* position of u's older entry, if reached */
   UInt walk_n = 0;                         /* u's own context, not co-allocatable */
   /* locals: add_edge writes memory the compiler cannot tell apart from *q */
   QEnt* const ents = q->e;
   const UInt head = q->head, n = q->n;
   for (UInt k = 1; k <= n; k++) {
      QEnt* e = &ents[(head - k) & mask];
      dist += e->size;
      if (dist > A) break;
      hp_stat_aff_entries++;
      if (e->o == u) {
         k_u = k;
      } else if (!coallocatable(u, e)) {
         walk_n += e->cid == x;
      } else {
         if (e->cid != run_y && run_n) {
            add_edge(x, run_y, run_n);
            run_n = 0;
         }
         run_y = e->cid;
         run_n++;
      }
      dist += e->gap;
   }
   if (run_n) add_edge(x, run_y, run_n);
   if (walk_n) count_walk(x, walk_n);
   QEnt ent = { .o = u, .size = sz, .cid = u->cid, .id = u->id, .prev_ctx_seq = u->prev_ctx_seq,
                .next_ctx_seq = u->next_ctx_seq, .gap = 0 };
   if (k_u) {
      /* k_u >= 2: position 1 is not u (deduplication above). Positions 1..k_u-1 move one
       * older, the old entry's bytes join the gap of its newer neighbour, u becomes newest;
       * u keeps the reference its old entry held. */
      QEnt* old = &q->e[(q->head - k_u) & mask];
      ULong moved = (ULong)old->size + old->gap + q->e[(q->head - k_u + 1) & mask].gap;
      for (UInt j = k_u; j >= 2; j--) q->e[(q->head - j) & mask] = q->e[(q->head - j + 1) & mask];
      q->e[(q->head - k_u) & mask].gap = moved > 0x7fffffffULL ? 0x7fffffffU : (UInt)moved;
      q->e[(q->head - 1) & mask] = ent;
      return;
   }
   if (q->n == qcap) {
      hp_obj_unref(q->e[(q->head - q->n) & mask].o);
      q->n--;
   }
   q->e[q->head] = ent;
   u->refs++;
   q->head = (q->head + 1) & mask;
   q->n++;
}

void hp_affinity_thread_exit(ThreadId tid)
{
   if (tid >= nqueues) return;
   Queue* q = &queues[tid];
   UInt mask = qcap - 1;
   while (q->n) {
      hp_obj_unref(q->e[(q->head - q->n) & mask].o);
      q->n--;
   }
}

void hp_affinity_reset(void)
{
   for (UInt t = 0; t < nqueues; t++) hp_affinity_thread_exit(t);
}

void hp_affinity_fork_child(void)
{
   hp_affinity_reset();
   hp_cm_clear(&graph);
   VG_(memset)(ecache, 0, sizeof ecache);
   if (walk) VG_(memset)(walk, 0, nwalk * sizeof(ULong));
   hp_affinity_pairs = 0;
   hp_stat_aff_walks = hp_stat_aff_entries = 0;
}

void hp_affinity_fini(void)
{
   for (UInt i = 0; i < (1 << ECACHE_BITS); i++)
      if (ecache[i].n) hp_cm_add(&graph, ecache[i].key, 0, ecache[i].n);
   for (ULong i = 0; i <= graph.mask; i++) {
      HpCount* c = &graph.tab[i];
      if (c->n) hp_out_printf("A %llu %llu %llu\n", c->k1 >> 32, c->k1 & 0xffffffffULL, hp_est(c->n));
   }
   for (UInt x = 0; x < nwalk; x++)
      if (walk[x]) hp_out_printf("R %u %llu\n", x, hp_est(walk[x]));
   hp_cm_write_dropped(&graph, "affinity");
}
