/* mst: Olden's minimum spanning tree on a complete graph whose edge weights live in one
 * chained hash table per vertex. Prim's algorithm looks every tentative edge up in the
 * destination's table, chasing bucket chains whose entries were allocated interleaved with
 * every other vertex's entries.
 * usage: mst <vertices> <rounds>
 */
#include "wl_common.h"

typedef struct hentry {
    int key; /* the other vertex's index */
    int weight;
    struct hentry *next;
} hentry;

typedef struct htable {
    int size;
    hentry **buckets;
} htable;

typedef struct vertex {
    int index;
    int mindist;
    int in_tree;
    struct vertex *next; /* list of vertices not yet in the tree */
    htable *edges;
} vertex;

static htable *ht_new(int size) {
    htable *t = (htable *)malloc(sizeof *t);
    if (!t) wl_oom("htable");
    t->size = size;
    t->buckets = (hentry **)calloc((size_t)size, sizeof(hentry *));
    if (!t->buckets) wl_oom("buckets");
    return t;
}

static unsigned hash_key(int key, int size) { return ((unsigned)key * 2654435761u >> 7) % (unsigned)size; }

static void ht_insert(htable *t, int key, int weight) {
    hentry *e = (hentry *)malloc(sizeof *e);
    if (!e) wl_oom("hentry");
    unsigned b = hash_key(key, t->size);
    e->key = key;
    e->weight = weight;
    e->next = t->buckets[b];
    t->buckets[b] = e;
}

static int ht_lookup(const htable *t, int key) {
    for (const hentry *e = t->buckets[hash_key(key, t->size)]; e; e = e->next)
        if (e->key == key) return e->weight;
    fprintf(stderr, "mst: missing edge\n");
    exit(4);
}

static int edge_weight(int i, int j, int round) {
    uint64_t a = (uint64_t)(i < j ? i : j), b = (uint64_t)(i < j ? j : i);
    uint64_t h = wl_mix(wl_mix((uint64_t)round + 1, a), b);
    return (int)(h % 100000) + 1;
}

static long prim(vertex **verts, int n) {
    /* vertex 0 starts the tree; the rest form a list */
    vertex *head = NULL;
    for (int i = n - 1; i >= 1; i--) {
        verts[i]->mindist = 0x7fffffff;
        verts[i]->next = head;
        head = verts[i];
    }
    vertex *inserted = verts[0];
    long total = 0;
    while (head) {
        vertex *best = NULL, **best_link = NULL;
        int best_dist = 0x7fffffff;
        for (vertex **link = &head; *link; link = &(*link)->next) {
            vertex *v = *link;
            int d = ht_lookup(v->edges, inserted->index);
            if (d < v->mindist) v->mindist = d;
            if (v->mindist < best_dist || (v->mindist == best_dist && v->index < best->index)) {
                best_dist = v->mindist;
                best = v;
                best_link = link;
            }
        }
        *best_link = best->next;
        total += best_dist;
        inserted = best;
    }
    return total;
}

int main(int argc, char **argv) {
    int n = (int)wl_arg(argc, argv, 1, 300);
    long rounds = wl_arg(argc, argv, 2, 2);
    if (n < 2 || n > 20000) {
        fprintf(stderr, "mst: vertices must be 2..20000\n");
        return 2;
    }
    vertex **verts = (vertex **)malloc(sizeof(vertex *) * (size_t)n);
    if (!verts) wl_oom("verts");
    for (int i = 0; i < n; i++) {
        vertex *v = (vertex *)calloc(1, sizeof *v);
        if (!v) wl_oom("vertex");
        v->index = i;
        v->edges = ht_new(n / 4 + 1);
        verts[i] = v;
    }
    /* edges go into both endpoints' tables, so consecutive entries land in different tables */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int w = edge_weight(i, j, 0);
            ht_insert(verts[i]->edges, j, w);
            ht_insert(verts[j]->edges, i, w);
        }
    uint64_t h = 0;
    long total = 0;
    for (long r = 0; r < rounds; r++) {
        total = prim(verts, n);
        h = wl_mix(h, (uint64_t)total);
        /* re-weight a slice of the edges in place so the next round differs */
        for (int i = (int)(r % 7); i < n; i += 7) {
            htable *t = verts[i]->edges;
            for (int b = 0; b < t->size; b++)
                for (hentry *e = t->buckets[b]; e; e = e->next) {
                    e->weight = edge_weight(i, e->key, (int)r + 1);
                    /* keep the graph symmetric */
                }
        }
        for (int i = 0; i < n; i++) {
            if (i % 7 == (int)(r % 7)) continue;
            htable *t = verts[i]->edges;
            for (int b = 0; b < t->size; b++)
                for (hentry *e = t->buckets[b]; e; e = e->next)
                    if (e->key % 7 == (int)(r % 7)) e->weight = edge_weight(i, e->key, (int)r + 1);
        }
    }
    printf("vertices: %d mst-weight: %ld\n", n, total);
    printf("checksum: %llu\n", (unsigned long long)h);
    for (int i = 0; i < n; i++) {
        htable *t = verts[i]->edges;
        for (int b = 0; b < t->size; b++) {
            hentry *e = t->buckets[b];
            while (e) {
                hentry *nx = e->next;
                free(e);
                e = nx;
            }
        }
        free(t->buckets);
        free(t);
        free(verts[i]);
    }
    free(verts);
    return 0;
}
