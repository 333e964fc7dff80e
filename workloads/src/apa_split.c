/* apa_split: the running example of Automatic Pool Allocation (figure 1). An input list L of
 * records is copied into two new lists A and B by a predicate (splitclone); both lists' nodes
 * come from one creation function, so they are allocated interleaved. Each list is then
 * processed on its own many times, and both are freed; the process repeats with a new
 * predicate. Per-list (per data-structure instance) placement would make each walk dense.
 * usage: apa_split <nodes> <rounds> <walks-per-round>
 */
#include "wl_common.h"

typedef struct data {
    long value;
    long count;
} data;

typedef struct list {
    struct list *next;
    data *d;
    long local; /* per-copy scratch */
} list;

__attribute__((noinline)) static list *createnode(data *d) {
    list *n = (list *)malloc(sizeof *n);
    if (!n) wl_oom("node");
    n->d = d;
    n->local = 0;
    n->next = NULL;
    return n;
}

static int some_predicate(const data *d, int round) { return ((d->value >> (round % 5)) & 1) != 0; }

/* iterative splitclone: appends to the tails of A and B */
static void splitclone(list *l, list **ra, list **rb, int round) {
    list **ta = ra, **tb = rb;
    *ra = *rb = NULL;
    for (; l; l = l->next) {
        if (some_predicate(l->d, round)) {
            *ta = createnode(l->d);
            ta = &(*ta)->next;
        } else {
            *tb = createnode(l->d);
            tb = &(*tb)->next;
        }
    }
}

static uint64_t process_portion(list *l, long walks, long salt) {
    uint64_t h = 0;
    for (long w = 0; w < walks; w++) {
        long s = 0;
        for (list *n = l; n; n = n->next) {
            n->local = (n->local * 3 + n->d->value + w + salt) & 0xffff;
            s += n->local;
        }
        h = wl_mix(h, (uint64_t)s);
    }
    return h;
}

static void free_list(list *l) {
    while (l) {
        list *n = l->next;
        free(l);
        l = n;
    }
}

int main(int argc, char **argv) {
    long n = wl_arg(argc, argv, 1, 100000);
    long rounds = wl_arg(argc, argv, 2, 4);
    long walks = wl_arg(argc, argv, 3, 5);
    wl_rng rng;
    wl_seed(&rng, 61);
    /* the input list L, each node with its own data record */
    list *L = NULL, **tail = &L;
    for (long i = 0; i < n; i++) {
        data *d = (data *)malloc(sizeof *d);
        if (!d) wl_oom("data");
        d->value = (long)wl_below(&rng, 1 << 20);
        d->count = 0;
        *tail = createnode(d);
        tail = &(*tail)->next;
    }
    uint64_t h = 0;
    long na_total = 0;
    for (long r = 0; r < rounds; r++) {
        list *A, *B;
        splitclone(L, &A, &B, (int)r);
        h = wl_mix(h, process_portion(A, walks, r));
        h = wl_mix(h, process_portion(B, walks, r + 1000));
        for (list *x = A; x; x = x->next) {
            x->d->count++;
            na_total++;
        }
        free_list(A);
        free_list(B);
    }
    long counts = 0;
    for (list *x = L; x; x = x->next) counts += x->d->count * (x->d->value & 7);
    printf("nodes: %ld in-A: %ld weighted: %ld\n", n, na_total, counts);
    printf("checksum: %llu\n", (unsigned long long)wl_mix(h, (uint64_t)counts));
    while (L) {
        list *x = L->next;
        free(L->d);
        free(L);
        L = x;
    }
    return 0;
}
