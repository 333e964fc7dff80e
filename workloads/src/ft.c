/* ft: Ptrdist's minimum spanning tree driven by a Fibonacci heap.
 * A sparse random graph keeps its edges in per-vertex linked lists (allocated interleaved
 * across vertices); each round Prim's algorithm inserts heap items, decreases keys and
 * deletes minima, which links and cuts heap items all over the heap.
 * usage: ft <vertices> <edges-per-vertex> <rounds>
 */
#include "wl_common.h"

typedef struct edge {
    int to;
    int weight;
    struct edge *next;
} edge;

typedef struct item {
    long key;
    int vertex;
    int rank;
    int marked;
    struct item *parent, *child, *left, *right;
} item;

typedef struct {
    item *min;
    long count;
} fheap;

static item *new_item(long key, int v) {
    item *it = (item *)malloc(sizeof *it);
    if (!it) wl_oom("item");
    it->key = key;
    it->vertex = v;
    it->rank = 0;
    it->marked = 0;
    it->parent = it->child = NULL;
    it->left = it->right = it;
    return it;
}

/* splice ring b into ring a */
static void splice(item *a, item *b) {
    item *an = a->right, *bp = b->left;
    a->right = b;
    b->left = a;
    bp->right = an;
    an->left = bp;
}

static void unlink_item(item *x) {
    x->left->right = x->right;
    x->right->left = x->left;
    x->left = x->right = x;
}

static int less(const item *a, const item *b) {
    return a->key < b->key || (a->key == b->key && a->vertex < b->vertex);
}

static void heap_insert(fheap *h, item *x) {
    if (!h->min) {
        h->min = x;
    } else {
        splice(h->min, x);
        if (less(x, h->min)) h->min = x;
    }
    h->count++;
}

static void cut(fheap *h, item *x) {
    item *p = x->parent;
    if (p->child == x) p->child = (x->right == x) ? NULL : x->right;
    unlink_item(x);
    p->rank--;
    x->parent = NULL;
    x->marked = 0;
    splice(h->min, x);
}

static void decrease_key(fheap *h, item *x, long key) {
    x->key = key;
    item *p = x->parent;
    if (p && less(x, p)) {
        cut(h, x);
        while (p->parent) {
            if (!p->marked) {
                p->marked = 1;
                break;
            }
            item *pp = p->parent;
            cut(h, p);
            p = pp;
        }
    }
    if (less(x, h->min)) h->min = x;
}

static item *delete_min(fheap *h) {
    item *z = h->min;
    if (!z) return NULL;
    /* children go to the root list */
    if (z->child) {
        item *c = z->child;
        do {
            c->parent = NULL;
            c = c->right;
        } while (c != z->child);
        splice(z, z->child);
        z->child = NULL;
    }
    item *start = (z->right == z) ? NULL : z->right;
    unlink_item(z);
    h->count--;
    if (!start) {
        h->min = NULL;
        return z;
    }
    /* consolidate */
    item *by_rank[64] = {0};
    /* collect the roots first: linking changes the ring */
    long nroots = 0;
    item *r = start;
    do {
        nroots++;
        r = r->right;
    } while (r != start);
    item **roots = (item **)malloc(sizeof(item *) * (size_t)nroots);
    if (!roots) wl_oom("roots");
    r = start;
    for (long i = 0; i < nroots; i++) {
        roots[i] = r;
        r = r->right;
    }
    for (long i = 0; i < nroots; i++) {
        item *x = roots[i];
        unlink_item(x);
        while (by_rank[x->rank]) {
            item *y = by_rank[x->rank];
            by_rank[x->rank] = NULL;
            if (less(y, x)) {
                item *t = x;
                x = y;
                y = t;
            }
            /* y becomes a child of x */
            y->parent = x;
            y->marked = 0;
            if (x->child)
                splice(x->child, y);
            else
                x->child = y;
            x->rank++;
        }
        by_rank[x->rank] = x;
    }
    free(roots);
    h->min = NULL;
    for (int k = 0; k < 64; k++) {
        item *x = by_rank[k];
        if (!x) continue;
        if (!h->min) {
            h->min = x;
        } else {
            splice(h->min, x);
            if (less(x, h->min)) h->min = x;
        }
    }
    return z;
}

static long prim(edge **adj, int n, long *heap_ops) {
    item **items = (item **)calloc((size_t)n, sizeof(item *));
    char *done = (char *)calloc((size_t)n, 1);
    if (!items || !done) wl_oom("prim");
    fheap h = {NULL, 0};
    const long INF = 1L << 40;
    for (int v = 0; v < n; v++) {
        items[v] = new_item(v == 0 ? 0 : INF, v);
        heap_insert(&h, items[v]);
    }
    long total = 0;
    while (h.count > 0) {
        item *m = delete_min(&h);
        int u = m->vertex;
        done[u] = 1;
        total += m->key;
        (*heap_ops)++;
        for (edge *e = adj[u]; e; e = e->next) {
            if (!done[e->to] && e->weight < items[e->to]->key) {
                decrease_key(&h, items[e->to], e->weight);
                (*heap_ops)++;
            }
        }
        free(m);
        items[u] = NULL;
    }
    free(items);
    free(done);
    return total;
}

static void add_edge(edge **adj, int a, int b, int w) {
    edge *e = (edge *)malloc(sizeof *e);
    if (!e) wl_oom("edge");
    e->to = b;
    e->weight = w;
    e->next = adj[a];
    adj[a] = e;
}

int main(int argc, char **argv) {
    int n = (int)wl_arg(argc, argv, 1, 5000);
    int degree = (int)wl_arg(argc, argv, 2, 8);
    long rounds = wl_arg(argc, argv, 3, 2);
    if (n < 2 || degree < 1) {
        fprintf(stderr, "ft: need vertices >= 2 and edges-per-vertex >= 1\n");
        return 2;
    }
    wl_rng rng;
    wl_seed(&rng, 2024);
    edge **adj = (edge **)calloc((size_t)n, sizeof(edge *));
    if (!adj) wl_oom("adj");
    /* a chain keeps the graph connected; random edges are added in random vertex order */
    for (int v = 1; v < n; v++) {
        int w = (int)wl_below(&rng, 1000000) + 1;
        add_edge(adj, v - 1, v, w);
        add_edge(adj, v, v - 1, w);
    }
    for (long k = 0; k < (long)n * degree / 2; k++) {
        int a = (int)wl_below(&rng, (uint32_t)n), b = (int)wl_below(&rng, (uint32_t)n);
        if (a == b) continue;
        int w = (int)wl_below(&rng, 1000000) + 1;
        add_edge(adj, a, b, w);
        add_edge(adj, b, a, w);
    }
    uint64_t h = 0;
    long total = 0, ops = 0;
    for (long r = 0; r < rounds; r++) {
        total = prim(adj, n, &ops);
        h = wl_mix(h, (uint64_t)total);
        /* change some weights for the next round (both directions alike) */
        for (int v = 0; v < n; v++)
            for (edge *e = adj[v]; e; e = e->next)
                e->weight = (int)((((uint64_t)e->weight * 31u + (uint64_t)(r + 1) * 7u) % 1000000u) + 1);
    }
    printf("vertices: %d mst-weight: %ld heap-ops: %ld\n", n, total, ops);
    printf("checksum: %llu\n", (unsigned long long)h);
    for (int v = 0; v < n; v++) {
        edge *e = adj[v];
        while (e) {
            edge *nx = e->next;
            free(e);
            e = nx;
        }
    }
    free(adj);
    return 0;
}
