/* threads: a multi-threaded workload. Each worker builds its own binary search tree of keyed
 * records (each with a separately allocated payload) and its own work list, walks and updates
 * them repeatedly, and periodically adds counts to one shared chained hash table protected by
 * a mutex. Workers' allocations interleave in time; the result is combined with order-free
 * sums, so the output does not depend on scheduling.
 * usage: threads <threads> <keys-per-thread> <rounds>
 */
#include <pthread.h>
#include "wl_common.h"

typedef struct payload {
    long count;
    long weight;
    char tag[16];
} payload;

typedef struct tnode {
    long key;
    struct tnode *left, *right;
    payload *data;
} tnode;

typedef struct work {
    long key;
    struct work *next;
} work;

typedef struct sentry {
    long key;
    long count;
    struct sentry *next;
} sentry;

#define SHARED_BUCKETS 4096
static sentry *shared[SHARED_BUCKETS];
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct worker {
    int id;
    long keys;
    long rounds;
    uint64_t result;
    pthread_t thread;
} worker;

static tnode *insert(tnode *root, long key, tnode **made) {
    tnode **link = &root;
    while (*link) {
        if (key == (*link)->key) {
            *made = *link;
            return root;
        }
        link = key < (*link)->key ? &(*link)->left : &(*link)->right;
    }
    tnode *n = (tnode *)malloc(sizeof *n);
    payload *p = (payload *)malloc(sizeof *p);
    if (!n || !p) wl_oom("tnode");
    n->key = key;
    n->left = n->right = NULL;
    p->count = 0;
    p->weight = key % 97;
    for (int i = 0; i < 15; i++) p->tag[i] = (char)('a' + (key + i) % 26);
    p->tag[15] = 0;
    n->data = p;
    *link = n;
    *made = n;
    return root;
}

static tnode *find(tnode *root, long key) {
    while (root && root->key != key) root = key < root->key ? root->left : root->right;
    return root;
}

static long walk(tnode *t, long k) {
    long s = 0;
    while (t) {
        s += walk(t->left, k);
        t->data->count += (t->key ^ k) & 3;
        s += t->data->count * t->data->weight;
        t = t->right;
    }
    return s;
}

static void free_tree(tnode *t) {
    while (t) {
        free_tree(t->left);
        tnode *r = t->right;
        free(t->data);
        free(t);
        t = r;
    }
}

static void shared_add(long key, long count) {
    unsigned b = (unsigned)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 52) % SHARED_BUCKETS;
    pthread_mutex_lock(&shared_lock);
    sentry *e = shared[b];
    while (e && e->key != key) e = e->next;
    if (!e) {
        e = (sentry *)malloc(sizeof *e);
        if (!e) wl_oom("sentry");
        e->key = key;
        e->count = 0;
        e->next = shared[b];
        shared[b] = e;
    }
    e->count += count;
    pthread_mutex_unlock(&shared_lock);
}

static void *work_main(void *arg) {
    worker *w = (worker *)arg;
    wl_rng rng;
    wl_seed(&rng, 1000 + (uint64_t)w->id);
    tnode *root = NULL;
    work *list = NULL;
    long range = w->keys * 4;
    for (long i = 0; i < w->keys; i++) {
        tnode *made;
        long key = (long)wl_below(&rng, (uint32_t)range);
        root = insert(root, key, &made);
        if ((i & 3) == 0) {
            work *x = (work *)malloc(sizeof *x);
            if (!x) wl_oom("work");
            x->key = key;
            x->next = list;
            list = x;
        }
    }
    uint64_t h = 0;
    for (long r = 0; r < w->rounds; r++) {
        long s = walk(root, r);
        long hits = 0;
        for (work *x = list; x; x = x->next) {
            tnode *n = find(root, x->key + (r & 1));
            if (n) {
                hits++;
                n->data->count++;
            }
        }
        h = wl_mix(h, (uint64_t)s + (uint64_t)hits);
        /* report a few counts to the shared table: key space shared by all workers */
        for (work *x = list; x; x = x->next)
            if ((x->key & 63) == (r & 63)) shared_add(x->key % 1000, 1 + (x->key & 1));
    }
    w->result = h;
    while (list) {
        work *n = list->next;
        free(list);
        list = n;
    }
    free_tree(root);
    return NULL;
}

int main(int argc, char **argv) {
    int nthreads = (int)wl_arg(argc, argv, 1, 2);
    long keys = wl_arg(argc, argv, 2, 20000);
    long rounds = wl_arg(argc, argv, 3, 10);
    if (nthreads < 1 || nthreads > 64 || keys < 1) {
        fprintf(stderr, "threads: 1..64 threads, keys >= 1\n");
        return 2;
    }
    worker *ws = (worker *)calloc((size_t)nthreads, sizeof(worker));
    if (!ws) wl_oom("workers");
    for (int i = 0; i < nthreads; i++) {
        ws[i].id = i;
        ws[i].keys = keys;
        ws[i].rounds = rounds;
        if (pthread_create(&ws[i].thread, NULL, work_main, &ws[i]) != 0) {
            fprintf(stderr, "threads: pthread_create failed\n");
            return 1;
        }
    }
    uint64_t h = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(ws[i].thread, NULL);
        h = wl_mix(h, ws[i].result);
    }
    uint64_t sh = 0;
    long entries = 0;
    for (int b = 0; b < SHARED_BUCKETS; b++) {
        sentry *e = shared[b];
        while (e) {
            sh += wl_mix((uint64_t)e->key, (uint64_t)e->count); /* order-free */
            entries++;
            sentry *n = e->next;
            free(e);
            e = n;
        }
    }
    printf("threads: %d shared-entries: %ld\n", nthreads, entries);
    printf("checksum: %llu\n", (unsigned long long)wl_mix(h, sh));
    free(ws);
    return 0;
}
