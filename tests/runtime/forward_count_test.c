/* Requests the allocator underneath refuses (issue 19): statistics count as forwarded only
 * what it served.
 *
 *   forward_count_test
 *
 * Asks for 2^62 bytes through every forwarding entry point (all fail), then for three
 * objects of 1000 bytes, and prints what it got. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  volatile size_t huge = (size_t)1 << 62;
  int refused = 0;
  refused += malloc(huge) == NULL;
  refused += calloc(huge / 4, 2) == NULL;
  void *p = NULL;
  refused += posix_memalign(&p, 64, huge) != 0;
  refused += aligned_alloc(64, huge) == NULL;
  refused += memalign(64, huge) == NULL;
  refused += valloc(huge) == NULL;
  void *a = malloc(1000), *b = malloc(1000), *c = calloc(10, 100);
  printf("refused %d of 6, served %d of 3\n", refused, (a != NULL) + (b != NULL) + (c != NULL));
  free(a);
  free(b);
  free(c);
  return 0;
}
