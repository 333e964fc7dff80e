/* Program for the PreFix runtime's tests (tests/test_prefix_runtime.py), run under
 * LD_PRELOAD with hand-written plans whose sites are these functions' malloc calls:
 *   site_a    malloc(n)        the plans give it slots
 *   site_b    malloc(n)        a second site (another site's slot, shared counters)
 *   site_c    calloc(1, n)     calloc of a reused (recycled) slot must be zero
 * Modes (argv[1]), each printing what it saw so that the test compares with a run
 * without the runtime:
 *   seq N SIZE       N objects from site_a of SIZE bytes, filled, checked, freed at the end
 *   alt N            site_a and site_b alternate (values of a shared counter)
 *   live N           N objects from site_a, all live at once (a busy recycled slot)
 *   churn N          site_c one object at a time: calloc, check zero, dirty, free
 *   realloc N        site_a objects of 32 bytes grown to 4000 (moved out), content kept
 *   usable           malloc_usable_size of site_a's first object
 *   badfree          free of a site_a object's second byte (inside the region)
 *   doublefree       the same object freed twice
 *   threads T N      T threads each allocate N objects at site_a, check and free them
 *   owner N          main allocates N objects at site_a (its counter becomes main's), then a
 *                    second thread allocates N there and frees main's N; then main N more
 *   handoff N        main allocates N objects at site_a, one at a time, and hands each to a
 *                    second thread that checks and frees it (frees from another thread while
 *                    the owner takes the slots again)
 * The addresses are printed only with PREFIX_TEST_ADDR=1 (they differ between runs). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void *site_a(size_t n) {
  char *p = malloc(n);
  if (p) p[0] = 'a';
  return p;
}
NOINLINE void *site_b(size_t n) {
  char *p = malloc(n);
  if (p) p[0] = 'b';
  return p;
}
NOINLINE void *site_c(size_t n) {
  char *p = calloc(1, n);
  if (p) __asm__ volatile("" ::"r"(p) : "memory");
  return p;
}

static unsigned long fill_check(char *p, size_t n, unsigned seed) {
  for (size_t i = 1; i < n; i++) p[i] = (char)(seed + i);
  unsigned long sum = 0;
  for (size_t i = 1; i < n; i++) sum += (unsigned char)p[i];
  return sum;
}

static void *worker(void *arg) {
  long n = (long)arg;
  char **objs = malloc(sizeof(char *) * (size_t)n);
  unsigned long sum = 0;
  for (long i = 0; i < n; i++) {
    objs[i] = site_a(48);
    sum += fill_check(objs[i], 48, (unsigned)i);
  }
  for (long i = 0; i < n; i++) /* nothing another thread wrote */
    for (size_t k = 1; k < 48; k++)
      if (objs[i][k] != (char)((unsigned)i + k)) {
        printf("corrupt object %ld\n", i);
        exit(3);
      }
  for (long i = 0; i < n; i++) free(objs[i]);
  free(objs);
  return (void *)sum;
}

static long owner_n;
static char **owner_first;

static void *owner_other(void *arg) {
  int show = arg != NULL;
  char **objs = malloc(sizeof(char *) * (size_t)owner_n);
  unsigned long sum = 0;
  for (long i = 0; i < owner_n; i++) {
    objs[i] = site_a(64);
    sum += fill_check(objs[i], 64, 1000u + (unsigned)i);
    if (show) printf("other %ld %p\n", i, (void *)objs[i]);
  }
  for (long i = 0; i < owner_n; i++) {
    for (size_t k = 1; k < 64; k++)
      if (owner_first[i][k] != (char)((unsigned)i + k)) {
        printf("corrupt object %ld\n", i);
        exit(3);
      }
    free(owner_first[i]); /* a slot freed by a thread that does not own its counter */
  }
  for (long i = 0; i < owner_n; i++) free(objs[i]);
  free(objs);
  return (void *)sum;
}

#define RING 8
static struct {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  char *obj[RING];
  long head, tail; /* pushed, popped */
} ring = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};

static void *handoff_consumer(void *arg) {
  long n = (long)arg;
  unsigned long sum = 0;
  for (long i = 0; i < n; i++) {
    pthread_mutex_lock(&ring.lock);
    while (ring.tail == ring.head) pthread_cond_wait(&ring.changed, &ring.lock);
    char *p = ring.obj[ring.tail++ % RING];
    pthread_cond_broadcast(&ring.changed);
    pthread_mutex_unlock(&ring.lock);
    for (size_t k = 1; k < 64; k++)
      if (p[k] != (char)((unsigned)i * 7 + k)) {
        printf("corrupt object %ld at %zu\n", i, k);
        exit(3);
      }
    sum += (unsigned char)p[63];
    memset(p, 0xee, 64); /* the owner must not see these writes in its next object */
    free(p);
  }
  return (void *)sum;
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  const char *mode = argv[1];
  long n = argc > 2 ? atol(argv[2]) : 0;
  int show = getenv("PREFIX_TEST_ADDR") != NULL;
  unsigned long sum = 0;
  if (strcmp(mode, "seq") == 0 || strcmp(mode, "live") == 0) {
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 64;
    char **objs = malloc(sizeof(char *) * (size_t)n);
    for (long i = 0; i < n; i++) {
      objs[i] = site_a(size);
      sum += fill_check(objs[i], size, (unsigned)i);
      if (show) printf("%ld %p\n", i, (void *)objs[i]);
      if (mode[0] == 's') {
        free(objs[i]);
        objs[i] = NULL;
      }
    }
    for (long i = 0; i < n; i++) free(objs[i]);
    free(objs);
  } else if (strcmp(mode, "alt") == 0) {
    for (long i = 0; i < n; i++) {
      char *p = (i & 1) ? site_b(64) : site_a(64);
      sum += fill_check(p, 64, (unsigned)i) + (unsigned char)p[0];
      if (show) printf("%ld %p\n", i, (void *)p);
      free(p);
    }
  } else if (strcmp(mode, "churn") == 0) {
    for (long i = 0; i < n; i++) {
      char *p = site_c(64);
      for (int k = 0; k < 64; k++)
        if (p[k] != 0) {
          printf("calloc object %ld not zero at %d\n", i, k);
          return 3;
        }
      memset(p, 0x5a, 64);
      if (show) printf("%ld %p\n", i, (void *)p);
      free(p);
    }
  } else if (strcmp(mode, "realloc") == 0) {
    for (long i = 0; i < n; i++) {
      char *p = site_a(32);
      fill_check(p, 32, (unsigned)i);
      char *q = realloc(p, 16); /* shrinks in place */
      q = realloc(q, 4000);
      for (size_t k = 1; k < 16; k++)
        if (q[k] != (char)((unsigned)i + k)) {
          printf("realloc lost byte %zu of object %ld\n", k, i);
          return 3;
        }
      sum += fill_check(q, 4000, (unsigned)i);
      free(q);
    }
  } else if (strcmp(mode, "usable") == 0) {
    char *p = site_a(40);
    printf("usable %d\n", malloc_usable_size(p) >= 40);
    if (show) printf("usable_size %zu\n", malloc_usable_size(p));
    free(p);
  } else if (strcmp(mode, "badfree") == 0) {
    char *p = site_a(64);
    fflush(stdout);
    free(p + 16);
    printf("not reached\n");
  } else if (strcmp(mode, "doublefree") == 0) {
    char *p = site_a(64);
    free(p);
    fflush(stdout);
    free(p);
    printf("not reached\n");
  } else if (strcmp(mode, "threads") == 0) {
    long per = argc > 3 ? atol(argv[3]) : 1000;
    pthread_t t[16];
    if (n > 16) n = 16;
    for (long i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)per);
    for (long i = 0; i < n; i++) {
      void *r;
      pthread_join(t[i], &r);
      sum += (unsigned long)r;
    }
  } else if (strcmp(mode, "owner") == 0) {
    owner_n = n;
    owner_first = malloc(sizeof(char *) * (size_t)n);
    for (long i = 0; i < n; i++) {
      owner_first[i] = site_a(64);
      sum += fill_check(owner_first[i], 64, (unsigned)i);
      if (show) printf("first %ld %p\n", i, (void *)owner_first[i]);
    }
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, owner_other, show ? (void *)1 : NULL);
    pthread_join(t, &r);
    sum += (unsigned long)r;
    for (long i = 0; i < n; i++) {
      char *p = site_a(64);
      sum += fill_check(p, 64, 2000u + (unsigned)i);
      if (show) printf("again %ld %p\n", i, (void *)p);
      free(p);
    }
    free(owner_first);
  } else if (strcmp(mode, "handoff") == 0) {
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, handoff_consumer, (void *)n);
    for (long i = 0; i < n; i++) {
      char *p = site_a(64);
      for (size_t k = 1; k < 64; k++) p[k] = (char)((unsigned)i * 7 + k);
      pthread_mutex_lock(&ring.lock);
      while (ring.head - ring.tail == RING) pthread_cond_wait(&ring.changed, &ring.lock);
      ring.obj[ring.head++ % RING] = p;
      pthread_cond_broadcast(&ring.changed);
      pthread_mutex_unlock(&ring.lock);
    }
    pthread_join(t, &r);
    sum += (unsigned long)r;
  } else {
    return 2;
  }
  printf("%s %ld sum %lu\n", mode, n, sum);
  return 0;
}
