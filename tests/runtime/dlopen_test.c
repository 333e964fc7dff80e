/* A program that loads a library with dlopen after the runtime started (a plugin, a Python
 * extension): tests/test_runtime_plan.py gives it a plan that names the library, whose
 * rules must take effect when it appears. Usage: dlopen_test N THREADS PLUGIN.so
 * Before dlopen it builds a list through host_alloc from its own code (which the plan's
 * group 2 must not take: that rule's second frame is in the plugin); then THREADS threads
 * each build a list of N cells in the plugin directly (group 1) and through host_alloc
 * (group 2), at the same time, so the rules wake while other threads allocate. It prints
 * the lists' checksums: the same output with and without the runtime. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void *host_alloc(size_t size) {
  long *p = malloc(size);
  p[0] = 0; /* a write after the call: a real call, not a tail jump */
  return p;
}

typedef long (*list_fn)(int n);
static list_fn direct, via_host;
static int n;

static long host_list_sum(int count) {
  long sum = 0;
  for (int i = 0; i < count; i++) {
    long *c = host_alloc(32);
    c[1] = i;
    sum = sum * 31 + c[1];
    free(c);
  }
  return sum;
}

static void *worker(void *arg) {
  long *out = arg;
  out[0] = direct(n);
  out[1] = via_host(n);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s N THREADS PLUGIN.so\n", argv[0]);
    return 2;
  }
  n = atoi(argv[1]);
  int threads = atoi(argv[2]);
  printf("host %ld\n", host_list_sum(n));
  void *lib = dlopen(argv[3], RTLD_NOW);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  direct = (list_fn)dlsym(lib, "plugin_list_sum");
  via_host = (list_fn)dlsym(lib, "plugin_list_sum_via_host");
  if (direct == NULL || via_host == NULL) return 2;
  pthread_t tid[64];
  long sums[64][2];
  if (threads < 1 || threads > 64) return 2;
  for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, worker, sums[t]);
  for (int t = 0; t < threads; t++) {
    pthread_join(tid[t], NULL);
    printf("thread %d: plugin %ld via host %ld\n", t, sums[t][0], sums[t][1]);
  }
  return 0;
}
