/* Pointer edges (DPA's dynamic storage shape graph): an 8-byte store into heap object A of
 * a value that points into heap object B counts one edge (context of A, offset of the
 * field in A, context of B). Objects larger than --max-object-size record offset -1
 * (arrays: the field offset would only say which element).
 *
 * Each edge also counts the stores whose two objects are co-allocatable (no object from
 * either context was allocated between them, HALO's rule): a link between objects that a
 * shared pool would place side by side, such as an owner and the companion allocated with
 * it. A link between objects allocated far apart (a list cell made long after the record
 * it points to) is not. */
#include "hp.h"

static HpCountMap edges, adjacent;

void hp_edges_init(void)
{
   hp_cm_init(&edges, 1 << 12);
   hp_cm_init(&adjacent, 1 << 10);
   hp_cm_cap(&edges);
   hp_cm_cap(&adjacent);
}

/* No object of from's or to's context was allocated strictly between the two. */
static Bool coallocatable(const HpObj* a, const HpObj* b)
{
   if (a == b) return False;
   const HpObj* e = a->id < b->id ? a : b;   /* earlier */
   const HpObj* l = a->id < b->id ? b : a;   /* later */
   if (l->prev_ctx_seq > e->id) return False;
   return e->next_ctx_seq == 0 || e->next_ctx_seq >= l->id;
}

void hp_edges_store(HpObj* from, Addr at, UWord value)
{
   HpObj* to = hp_map_find(value);
   if (!to) return;
   ULong off = from->big ? ~0ULL : (ULong)(at - from->addr);
   ULong key = ((ULong)from->cid << 32) | to->cid;
   hp_cm_add(&edges, key, off, 1);
   if (coallocatable(from, to)) hp_cm_add(&adjacent, key, off, 1);
}

void hp_edges_fork_child(void)
{
   hp_cm_clear(&edges);
   hp_cm_clear(&adjacent);
}

void hp_edges_fini(void)
{
   /* A sampled profile records pointer stores in every window (hp_access.c), so its counts
    * are exact; only off windows run without instrumentation (--sample-retranslate) are
    * they a sample, written times R. */
   ULong r = hp_edges_every_window() ? 1 : hp_sample_period;
   for (ULong i = 0; i <= edges.mask; i++) {
      HpCount* c = &edges.tab[i];
      if (!c->n) continue;
      hp_out_printf("P %llu %lld %llu %llu %llu\n", c->k1 >> 32, (Long)c->k2, c->k1 & 0xffffffffULL, c->n * r,
                    hp_cm_get(&adjacent, c->k1, c->k2) * r);
   }
   hp_cm_write_dropped(&edges, "pointer_edges");
}
