/* bisort: Olden's bitonic sort on a binary tree.
 * A complete tree of random values is sorted forward then backward by bitonic merges that
 * swap values and whole subtrees, so the pointer structure drifts away from allocation order.
 * usage: bisort <log2-nodes> <rounds>
 */
#include "wl_common.h"

typedef struct node {
    int value;
    struct node *left, *right;
} node;

static wl_rng rng;
static int serial; /* values are made distinct: the adaptive merge assumes no ties */

static int fresh_value(void) {
    return (int)((wl_next(&rng) % 511u) << 22) | serial++;
}

static node *rand_tree(int depth) {
    if (depth == 0) return NULL;
    node *n = (node *)malloc(sizeof *n);
    if (!n) wl_oom("node");
    n->value = fresh_value();
    n->left = rand_tree(depth - 1);
    n->right = rand_tree(depth - 1);
    return n;
}

static void swap_int(int *a, int *b) {
    int t = *a;
    *a = *b;
    *b = t;
}

/* merge a bitonic tree (plus the spare value) into order dir (0 ascending) */
static int bimerge(node *root, int spr, int dir) {
    int rv = root->value;
    int right_ex = (rv > spr) ^ dir;
    if (right_ex) {
        root->value = spr;
        spr = rv;
    }
    node *pl = root->left, *pr = root->right;
    while (pl) {
        node *pll = pl->left, *plr = pl->right;
        node *prl = pr->left, *prr = pr->right;
        int elem_ex = (pl->value > pr->value) ^ dir;
        if (right_ex) {
            if (elem_ex) {
                swap_int(&pl->value, &pr->value);
                pl->right = prr;
                pr->right = plr;
                pl = pll;
                pr = prl;
            } else {
                pl = plr;
                pr = prr;
            }
        } else {
            if (elem_ex) {
                swap_int(&pl->value, &pr->value);
                pl->left = prl;
                pr->left = pll;
                pl = plr;
                pr = prr;
            } else {
                pl = pll;
                pr = prl;
            }
        }
    }
    if (root->left) {
        root->value = bimerge(root->left, root->value, dir);
        spr = bimerge(root->right, spr, dir);
    }
    return spr;
}

static int bisort(node *root, int spr, int dir) {
    if (!root->left) {
        if ((root->value > spr) ^ dir) swap_int(&root->value, &spr);
    } else {
        root->value = bisort(root->left, root->value, dir);
        spr = bisort(root->right, spr, !dir);
        spr = bimerge(root, spr, dir);
    }
    return spr;
}

/* in-order walk: checks order and hashes the sequence */
typedef struct { uint64_t h; long n; long inversions; int prev; int dir; } walk_state;

static void visit(walk_state *w, int v) {
    if (w->n > 0 && ((w->dir == 0 && v < w->prev) || (w->dir == 1 && v > w->prev))) w->inversions++;
    w->prev = v;
    w->n++;
    w->h = wl_mix(w->h, (uint64_t)(unsigned)v);
}

static void inorder(node *t, walk_state *w) {
    while (t) {
        inorder(t->left, w);
        visit(w, t->value);
        t = t->right;
    }
}

static void perturb(node *t, int k) {
    while (t) {
        unsigned hi = (unsigned)t->value >> 22, lo = (unsigned)t->value & ((1u << 22) - 1);
        t->value = (int)((((hi * 7919u + (unsigned)k) % 511u) << 22) | lo);
        perturb(t->left, k);
        t = t->right;
    }
}

static void destroy(node *t) {
    if (!t) return;
    destroy(t->left);
    destroy(t->right);
    free(t);
}

int main(int argc, char **argv) {
    int logn = (int)wl_arg(argc, argv, 1, 15);
    long rounds = wl_arg(argc, argv, 2, 2);
    if (logn < 1 || logn > 21) {
        fprintf(stderr, "bisort: log2-nodes must be 1..21\n");
        return 2;
    }
    wl_seed(&rng, 12345);
    node *root = rand_tree(logn);
    int spr = fresh_value();
    uint64_t h = 0;
    long bad = 0;
    for (long r = 0; r < rounds; r++) {
        spr = bisort(root, spr, 0);
        walk_state w = {0, 0, 0, 0, 0};
        inorder(root, &w);
        visit(&w, spr);
        bad += w.inversions;
        h = wl_mix(h, w.h);
        spr = bisort(root, spr, 1);
        walk_state w2 = {0, 0, 0, 0, 1};
        inorder(root, &w2);
        visit(&w2, spr);
        bad += w2.inversions;
        h = wl_mix(h, w2.h);
        perturb(root, (int)r);
        unsigned shi = (unsigned)spr >> 22, slo = (unsigned)spr & ((1u << 22) - 1);
        spr = (int)((((shi * 7919u + (unsigned)r) % 511u) << 22) | slo);
    }
    printf("nodes: %ld unsorted-pairs: %ld\n", (1L << logn) - 1, bad);
    printf("checksum: %llu\n", (unsigned long long)h);
    destroy(root);
    return 0;
}
