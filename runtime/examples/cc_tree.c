/* ccmalloc.h example: a binary tree whose children are co-allocated with their parent.
 * With 16-byte nodes and 256-byte cc-blocks, a parent and its descendants a few levels
 * down share a block, so a depth-first walk touches fewer cache lines.
 *
 *   build/runtime/examples/cc_tree 18
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "heaplayout/ccmalloc.h"

typedef struct tree {
  struct tree *left, *right;
  long value;
} tree;

static tree *build(int depth, const tree *parent, long *next) {
  if (depth == 0) return NULL;
  tree *t = ccmalloc(sizeof *t, parent); /* near its parent */
  t->value = (*next)++;
  t->left = build(depth - 1, t, next);
  t->right = build(depth - 1, t, next);
  return t;
}

static long walk(const tree *t, long *same_block, size_t block) {
  if (t == NULL) return 0;
  if (t->left && (uintptr_t)t->left / block == (uintptr_t)t / block) (*same_block)++;
  return t->value + walk(t->left, same_block, block) + walk(t->right, same_block, block);
}

static void release(tree *t) {
  if (t == NULL) return;
  release(t->left);
  release(t->right);
  ccfree(t);
}

int main(int argc, char **argv) {
  int depth = argc > 1 ? atoi(argv[1]) : 18;
  long next = 0, same_block = 0;
  tree *root = build(depth, NULL, &next);
  long total = walk(root, &same_block, ccmalloc_block_size());
  printf("sum %ld over %ld nodes\n", total, next);
  printf("cc-block %zu bytes: %ld of %ld left children share their parent's block\n", ccmalloc_block_size(),
         same_block, next / 2);
  release(root);
  return 0;
}
