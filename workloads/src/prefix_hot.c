/* prefix_hot: PreFix figure 3 (mcf-like). One loop with one allocation site creates many
 * records; only a few dynamic instances are hot: the first three (network header objects, a
 * "fixed" set) and every 16th one after them (a "regular" set). The hot records are then
 * walked and updated many times; the cold ones are read once at the end. With allocation-order
 * placement every hot record shares its page with fifteen cold ones.
 * usage: prefix_hot <records> <passes>
 */
#include "wl_common.h"

typedef struct record {
    long potential;
    long flow;
    int id;
    int depth;
    struct record *next_hot; /* the hot chain */
    struct record *pred;
    long cost[3];
} record; /* 72 bytes */

__attribute__((noinline)) static record *new_record(int id, wl_rng *r) {
    record *x = (record *)malloc(sizeof *x);
    if (!x) wl_oom("record");
    x->id = id;
    x->potential = (long)wl_below(r, 1000);
    x->flow = 0;
    x->depth = 0;
    x->next_hot = NULL;
    x->pred = NULL;
    for (int k = 0; k < 3; k++) x->cost[k] = (long)wl_below(r, 100);
    return x;
}

static int is_hot(long i) { return i < 3 || (i % 16) == 5; }

int main(int argc, char **argv) {
    long n = wl_arg(argc, argv, 1, 100000);
    long passes = wl_arg(argc, argv, 2, 20);
    if (n < 8) {
        fprintf(stderr, "prefix_hot: need at least 8 records\n");
        return 2;
    }
    wl_rng rng;
    wl_seed(&rng, 9);
    record **all = (record **)malloc(sizeof(record *) * (size_t)n);
    if (!all) wl_oom("index");
    record *first_hot = NULL, *last_hot = NULL, *prev = NULL;
    long nhot = 0;
    for (long i = 0; i < n; i++) { /* the single hot allocation site */
        record *x = new_record((int)i, &rng);
        x->pred = prev;
        prev = x;
        all[i] = x;
        if (is_hot(i)) {
            if (last_hot)
                last_hot->next_hot = x;
            else
                first_hot = x;
            last_hot = x;
            nhot++;
        }
    }
    /* the three header objects are consulted on every step of the hot walk */
    record *hdr0 = all[0], *hdr1 = all[1], *hdr2 = all[2];
    uint64_t h = 0;
    for (long p = 0; p < passes; p++) {
        long acc = 0;
        for (record *x = first_hot; x; x = x->next_hot) {
            long reduced = x->cost[p % 3] - x->potential + hdr1->potential;
            if (reduced < 0) {
                x->flow += 1;
                x->potential += hdr2->cost[0] % 7 + 1;
            } else {
                x->potential -= 1;
            }
            x->depth = (x->depth + 1) & 1023;
            acc += reduced;
        }
        hdr0->flow += acc & 0xff;
        h = wl_mix(h, (uint64_t)acc);
    }
    long cold = 0;
    for (long i = 0; i < n; i++) cold += all[i]->potential + all[i]->flow + all[i]->cost[2];
    printf("records: %ld hot: %ld cold-sum: %ld\n", n, nhot, cold);
    printf("checksum: %llu\n", (unsigned long long)wl_mix(h, (uint64_t)cold));
    for (long i = 0; i < n; i++) free(all[i]);
    free(all);
    return 0;
}
