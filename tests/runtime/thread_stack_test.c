/* Threads with small stacks under the runtime (issue 19, finding 3): the runtime's static
 * thread-local storage is carved out of every thread's stack, so it must stay small.
 *
 *   thread_stack_test
 *
 * Starts a thread with a 16 KiB stack (PTHREAD_STACK_MIN), one with 32 KiB, and one with
 * 64 KiB that uses 24 KiB of it; each builds, sums and frees a list of nodes allocated at
 * one call site (make_node: pooled under callsite, and grouped by the tests' plans). Prints
 * one line per thread; the output is the same with or without the runtime. Exits 1 when a
 * thread cannot be created. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct node {
  struct node *next;
  long value;
  char pad[32];
} node;

__attribute__((noinline)) static node *make_node(long value) {
  node *n = malloc(sizeof *n);
  if (n == NULL) abort();
  n->value = value;
  return n;
}

/* A list of 400 nodes (more than the callsite policy's default 100 before it pools). */
static long list_sum(long seed) {
  node *head = NULL;
  for (long i = 0; i < 400; i++) {
    node *n = make_node(seed * 1000 + i);
    n->next = head;
    head = n;
  }
  long sum = 0;
  while (head) {
    node *next = head->next;
    sum += head->value;
    free(head);
    head = next;
  }
  return sum;
}

/* 24 KiB of this frame is written and read before the list is built below it. */
__attribute__((noinline)) static long deep(long seed) {
  volatile char buf[24 << 10];
  for (size_t i = 0; i < sizeof buf; i += 64) buf[i] = (char)(i + (size_t)seed);
  long sum = 0;
  for (size_t i = 0; i < sizeof buf; i += 64) sum += buf[i];
  return sum + list_sum(seed);
}

typedef struct job {
  long seed;
  int use_stack;
  long result;
} job;

static void *worker(void *arg) {
  job *j = arg;
  j->result = j->use_stack ? deep(j->seed) : list_sum(j->seed);
  return NULL;
}

static int run(size_t stack, int use_stack, long seed) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int rc = pthread_attr_setstacksize(&attr, stack);
  if (rc != 0) {
    printf("stack %zu: pthread_attr_setstacksize failed: %s\n", stack, strerror(rc));
    return 1;
  }
  job j = {seed, use_stack, 0};
  pthread_t t;
  rc = pthread_create(&t, &attr, worker, &j);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    printf("stack %zu: pthread_create failed: %s\n", stack, strerror(rc));
    return 1;
  }
  pthread_join(t, NULL);
  printf("stack %zu%s: sum %ld\n", stack, use_stack ? " using 24 KiB" : "", j.result);
  return 0;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* what was printed stays printed if a thread crashes */
  int failed = 0;
  failed |= run(16 << 10, 0, 1);
  failed |= run(32 << 10, 0, 2);
  failed |= run(64 << 10, 1, 3);
  printf("main: sum %ld\n", list_sum(4));
  return failed;
}
