/* treeadd: Olden's binary tree, built recursively then summed many times.
 * Each tree node is followed in allocation by a cold "annotation" record that the sums never
 * touch, so a general allocator interleaves hot and cold memory along the walk.
 * usage: treeadd <depth> <passes>
 */
#include "wl_common.h"

typedef struct note {
    int depth;
    int pad[7];
} note;

typedef struct tree {
    long val;
    struct tree *left, *right;
    note *annotation;
} tree;

static tree *build(int depth, long *counter) {
    if (depth == 0) return NULL;
    tree *t = (tree *)malloc(sizeof *t);
    if (!t) wl_oom("tree");
    note *n = (note *)malloc(sizeof *n);
    if (!n) wl_oom("note");
    n->depth = depth;
    for (int i = 0; i < 7; i++) n->pad[i] = i;
    t->annotation = n;
    t->val = (*counter)++ % 7 + 1;
    t->left = build(depth - 1, counter);
    t->right = build(depth - 1, counter);
    return t;
}

static long sum(const tree *t) {
    if (!t) return 0;
    return t->val + sum(t->left) + sum(t->right);
}

static void bump(tree *t, long k) {
    while (t) { /* iterative on the right spine, recursive on the left */
        t->val = (t->val * 3 + k) % 1000;
        bump(t->left, k);
        t = t->right;
    }
}

static void destroy(tree *t) {
    if (!t) return;
    destroy(t->left);
    destroy(t->right);
    free(t->annotation);
    free(t);
}

int main(int argc, char **argv) {
    int depth = (int)wl_arg(argc, argv, 1, 16);
    long passes = wl_arg(argc, argv, 2, 10);
    if (depth < 1 || depth > 26) {
        fprintf(stderr, "treeadd: depth must be 1..26\n");
        return 2;
    }
    long counter = 0;
    tree *root = build(depth, &counter);
    uint64_t h = 0;
    for (long i = 0; i < passes; i++) {
        long s = sum(root);
        h = wl_mix(h, (uint64_t)s);
        if (i % 4 == 3) bump(root, i);
    }
    printf("nodes: %ld last-sum: %ld\n", counter, sum(root));
    printf("checksum: %llu\n", (unsigned long long)h);
    destroy(root);
    return 0;
}
