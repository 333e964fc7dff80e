/* Many short-lived threads (issue 19, finding 8): the runtime's per-thread state must be
 * recycled when a thread exits, so memory stays bounded by the live threads.
 *
 *   thread_churn_test THREADS [OBJECTS]
 *
 * Starts THREADS threads one after another (each joined before the next starts); each
 * allocates OBJECTS (default 64) 48-byte objects at one call site (pooled under callsite once
 * the site has had its first 100), writes them, frees them and returns their checksum.
 * Prints the total checksum, then the peak resident set (VmHWM, kB) and the wall time on a
 * second line that the tests read and compare. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static long objects = 64;

__attribute__((noinline)) static long *make_object(long value) {
  long *p = malloc(48);
  if (p == NULL) abort();
  p[0] = value;
  p[5] = value ^ 0x55;
  return p;
}

static void *worker(void *arg) {
  long seed = (long)(size_t)arg, sum = 0;
  long *held[256];
  for (long i = 0; i < objects; i++) held[i] = make_object(seed + i);
  for (long i = 0; i < objects; i++) {
    sum += held[i][0] + (held[i][5] ^ 0x55);
    free(held[i]);
  }
  return (void *)(size_t)sum;
}

static long vm_hwm_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
  if (f) fclose(f);
  return kb;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s THREADS [OBJECTS]\n", argv[0]);
    return 2;
  }
  long threads = strtol(argv[1], NULL, 10);
  if (argc > 2) objects = strtol(argv[2], NULL, 10);
  if (objects < 1 || objects > 256) objects = 64;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  unsigned long total = 0;
  for (long t = 0; t < threads; t++) {
    pthread_t th;
    if (pthread_create(&th, NULL, worker, (void *)(size_t)t) != 0) {
      printf("pthread_create failed at thread %ld\n", t);
      return 1;
    }
    void *ret;
    pthread_join(th, &ret);
    total += (unsigned long)(size_t)ret;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("threads %ld objects %ld checksum %lu\n", threads, objects, total);
  printf("vm_hwm_kb %ld seconds %.3f\n", vm_hwm_kb(),
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  return 0;
}
