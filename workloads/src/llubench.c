/* llubench: the linked-list update microbenchmark used by the pool-allocation papers.
 * Several lists grow together, each step appending one node to a randomly chosen list, and
 * about every other step also keeps a "log" record of random size in an array; each pass then
 * walks one list at a time and updates its nodes. Nodes of one list therefore sit at irregular
 * distances between nodes of the other lists and log records.
 * usage: llubench <lists> <nodes-per-list> <passes>
 */
#include "wl_common.h"

typedef struct lnode {
    long value;
    long weight;
    struct lnode *next;
} lnode;

typedef struct logrec {
    int step;
    int list;
    char text[40];
} logrec;

int main(int argc, char **argv) {
    int nlists = (int)wl_arg(argc, argv, 1, 4);
    long per_list = wl_arg(argc, argv, 2, 10000);
    long passes = wl_arg(argc, argv, 3, 10);
    if (nlists < 1 || per_list < 1) {
        fprintf(stderr, "llubench: need lists >= 1 and nodes-per-list >= 1\n");
        return 2;
    }
    wl_rng rng;
    wl_seed(&rng, 77);
    lnode **heads = (lnode **)calloc((size_t)nlists, sizeof(lnode *));
    lnode **tails = (lnode **)calloc((size_t)nlists, sizeof(lnode *));
    long nlogs = per_list * nlists + 1;
    logrec **logs = (logrec **)calloc((size_t)nlogs, sizeof(logrec *));
    if (!heads || !tails || !logs) wl_oom("tables");
    long logc = 0;
    /* each step appends to a randomly chosen list, so the gaps between consecutive nodes of one
     * list are irregular (no constant stride for a prefetcher), and half the steps also keep a
     * log record of a random size */
    long total = per_list * nlists;
    for (long s = 0; s < total; s++) {
        int l = (int)wl_below(&rng, (uint32_t)nlists);
        lnode *n = (lnode *)malloc(sizeof *n);
        if (!n) wl_oom("node");
        n->value = (long)wl_below(&rng, 1000);
        n->weight = l + 1;
        n->next = NULL;
        if (tails[l])
            tails[l]->next = n;
        else
            heads[l] = n;
        tails[l] = n;
        if ((wl_next(&rng) & 1) == 0 && logc < nlogs) {
            size_t extra = (size_t)wl_below(&rng, 6) * 16;
            logrec *r = (logrec *)malloc(sizeof *r + extra);
            if (!r) wl_oom("log");
            r->step = (int)s;
            r->list = l;
            snprintf(r->text, sizeof r->text, "s%ld l%d", s, l);
            logs[logc++] = r;
        }
    }
    uint64_t h = 0;
    for (long p = 0; p < passes; p++) {
        for (int l = 0; l < nlists; l++) {
            long sum = 0;
            for (lnode *n = heads[l]; n; n = n->next) {
                n->value = (n->value * 5 + n->weight + p) % 100003;
                sum += n->value;
            }
            h = wl_mix(h, (uint64_t)sum);
        }
        /* every few passes the lists get a few new nodes at the front and lose a few at the end */
        if (p % 8 == 7) {
            for (int l = 0; l < nlists; l++) {
                lnode *n = (lnode *)malloc(sizeof *n);
                if (!n) wl_oom("node");
                n->value = p;
                n->weight = l + 1;
                n->next = heads[l];
                heads[l] = n;
            }
        }
    }
    uint64_t lh = 0;
    for (long i = 0; i < logc; i++) lh += (uint64_t)logs[i]->step * 3u + (uint64_t)logs[i]->list + (uint64_t)logs[i]->text[1];
    printf("lists: %d nodes: %ld logs: %ld\n", nlists, per_list, logc);
    printf("checksum: %llu\n", (unsigned long long)wl_mix(h, lh));
    for (int l = 0; l < nlists; l++) {
        lnode *n = heads[l];
        while (n) {
            lnode *nx = n->next;
            free(n);
            n = nx;
        }
    }
    for (long i = 0; i < logc; i++) free(logs[i]);
    free(logs);
    free(heads);
    free(tails);
    return 0;
}
