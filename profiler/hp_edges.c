/* Pointer edges (DPA's dynamic storage shape graph): an 8-byte store into heap object A of
 * a value that points into heap object B counts one edge (context of A, offset of the
 * field in A, context of B). Objects larger than --max-object-size record offset -1
 * (arrays: the field offset would only say which element). */
#include "hp.h"

static HpCountMap edges;

void hp_edges_init(void) { hp_cm_init(&edges, 1 << 12); }

void hp_edges_store(HpObj* from, Addr at, UWord value)
{
   HpObj* to = hp_map_find(value);
   if (!to) return;
   ULong off = from->big ? ~0ULL : (ULong)(at - from->addr);
   hp_cm_add(&edges, ((ULong)from->cid << 32) | to->cid, off, 1);
}

void hp_edges_fini(void)
{
   for (ULong i = 0; i <= edges.mask; i++) {
      HpCount* c = &edges.tab[i];
      if (!c->n) continue;
      hp_out_printf("P %llu %lld %llu %llu\n", c->k1 >> 32, (Long)c->k2, c->k1 & 0xffffffffULL, c->n);
   }
}
