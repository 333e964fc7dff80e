/* Microbenchmark: malloc/free pairs in the shapes real programs allocate in.
 *
 *   malloc_shapes SHAPE PAIRS
 *
 * SHAPE:
 *   pair     back-to-back malloc(64)/free from one site (the allocator's best case)
 *   sizes    back-to-back pairs from one site whose size cycles through 24, 40 and 64 bytes
 *   grow     one site allocates PAIRS objects of 64 bytes and keeps them, then frees them
 *            all in allocation order (a program building its data, then tearing it down)
 *   ring     a ring of 1024 live objects of 64 bytes from one site, freed in FIFO order
 *   realloc  the ring, its objects allocated with realloc(NULL, 64) (a program allocating
 *            through one realloc call, as lua's allocator function does)
 *   calloc   the ring, its objects allocated with calloc(1, 64)
 *   regrow   the ring, each object allocated at 24 bytes and grown with realloc to 48 and
 *            then 96, its bytes checked after each move (a program growing its strings
 *            and tables, as lua does)
 *   bigcalloc  back-to-back calloc(1, 512)/free pairs from one site (larger than any pool
 *            takes: an array)
 *   freenull free(NULL), once per pair
 *   mixed    4096 live objects from 8 sites, each with its own size (16..256 bytes; one
 *            site asks for a different size every time), a random object replaced per step
 *   sites    mixed's steps from 32 sites (sizes 16..128 bytes by site): a pool, and so a
 *            chunk, per site under callsite, more than an 8-way L1 set holds (32, not
 *            more: their 32-byte functions then span 1 KiB of code, and sites further
 *            apart share entries of the runtime's direct-mapped site cache)
 *   threads  two threads, each per round allocating 512 objects from 4 sites of mixed
 *            sizes, then (after a barrier) freeing half of its own and half of the other
 *            thread's: half of all frees are remote
 *
 * Every object gets a byte written and read so that no pair can be optimised away (built
 * with -fno-builtin-malloc/-free). Prints "ns_per_pair <float> pairs <n> shape <name>".
 * The sequence of sizes and slots is a fixed pseudo-random one, so two runs execute the
 * same requests: instructions per pair are the difference of two runs' counts divided by
 * the difference of their pairs (benchmarks/run_pair_shapes.py).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s) { /* xorshift64: cheap, fixed sequence */
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* Distinct allocation sites: each is its own function whose call to malloc is not a tail
 * call, so each has its own return address (what the callsite policy and plans key on). */
#define SITE(n)                                                  \
  __attribute__((noinline)) static void *site##n(size_t size) { \
    uint8_t *p = malloc(size);                                   \
    if (p) p[0] = (uint8_t)n;                                    \
    return p;                                                    \
  }
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
typedef void *(*site_fn)(size_t);
static site_fn const sites[8] = {site0, site1, site2, site3, site4, site5, site6, site7};
#define SITE8(n) SITE(n##0) SITE(n##1) SITE(n##2) SITE(n##3) SITE(n##4) SITE(n##5) SITE(n##6) SITE(n##7)
SITE8(1) SITE8(2) SITE8(3) SITE8(4)
#define FN8(n) site##n##0, site##n##1, site##n##2, site##n##3, site##n##4, site##n##5, site##n##6, site##n##7
static site_fn const many_sites[32] = {FN8(1), FN8(2), FN8(3), FN8(4)};
static const size_t site_size[8] = {16, 24, 32, 48, 64, 96, 128, 0}; /* 0: 8..256 by the step */

static size_t size_for(unsigned site, uint64_t r) {
  return site_size[site] ? site_size[site] : 8 + (size_t)(r >> 40) % 249;
}

static uint8_t sink_all;

static double shape_pair(unsigned long long pairs) {
  uint8_t sink = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) {
    uint8_t *p = site4(64);
    sink += p[0];
    free(p);
  }
  double t1 = now_ns();
  sink_all += sink;
  return t1 - t0;
}

__attribute__((noinline)) static double shape_sizes(unsigned long long pairs) {
  static const size_t cycle[3] = {24, 40, 64};
  uint8_t sink = 0;
  unsigned k = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) {
    uint8_t *p = site4(cycle[k]);
    sink += p[0];
    free(p);
    k = k == 2 ? 0 : k + 1;
  }
  double t1 = now_ns();
  sink_all += sink;
  return t1 - t0;
}

__attribute__((noinline)) static double shape_grow(unsigned long long pairs) {
  uint8_t **all = malloc(pairs * sizeof *all); /* from a site of its own (main) */
  if (all == NULL) {
    fprintf(stderr, "malloc_shapes: no memory for %llu pointers\n", pairs);
    exit(1);
  }
  uint8_t sink = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) all[i] = site4(64);
  for (unsigned long long i = 0; i < pairs; i++) {
    sink += all[i][0];
    free(all[i]);
  }
  double t1 = now_ns();
  free(all);
  sink_all += sink;
  return t1 - t0;
}

static double shape_ring(unsigned long long pairs) {
  enum { K = 1024 };
  static uint8_t *ring[K];
  for (size_t k = 0; k < K; k++) ring[k] = site4(64);
  uint8_t sink = 0;
  size_t k = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) {
    sink += ring[k][0];
    free(ring[k]);
    ring[k] = site4(64);
    if (++k == K) k = 0;
  }
  double t1 = now_ns();
  for (k = 0; k < K; k++) free(ring[k]);
  sink_all += sink;
  return t1 - t0;
}

__attribute__((noinline)) static void *realloc_site(size_t size) {
  uint8_t *p = realloc(NULL, size);
  if (p) p[0] = 8;
  return p;
}
__attribute__((noinline)) static void *calloc_site(size_t size) {
  uint8_t *p = calloc(1, size);
  if (p) p[0] = 9;
  return p;
}

/* the ring through another allocation function (realloc(NULL, n), calloc) */
__attribute__((noinline)) static double shape_ring_via(unsigned long long pairs, site_fn site) {
  enum { K = 1024 };
  static uint8_t *ring[K];
  for (size_t k = 0; k < K; k++) ring[k] = site(64);
  uint8_t sink = 0;
  size_t k = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) {
    sink += ring[k][0];
    free(ring[k]);
    ring[k] = site(64);
    if (++k == K) k = 0;
  }
  double t1 = now_ns();
  for (k = 0; k < K; k++) free(ring[k]);
  sink_all += sink;
  return t1 - t0;
}

__attribute__((noinline)) static uint8_t *regrow_site(uint8_t *p, size_t size) {
  uint8_t *q = realloc(p, size);
  if (q == NULL) {
    fprintf(stderr, "malloc_shapes: realloc failed\n");
    exit(1);
  }
  return q;
}

/* a 24-byte object filled with its ring index, grown twice; its bytes must move with it */
static uint8_t *regrown(size_t k) {
  uint8_t *p = site5(24);
  memset(p, (int)(k & 0xff), 24);
  p = regrow_site(p, 48);
  memset(p + 24, (int)(k & 0xff), 24);
  p = regrow_site(p, 96);
  for (size_t i = 0; i < 48; i++)
    if (p[i] != (uint8_t)(k & 0xff)) {
      fprintf(stderr, "malloc_shapes: realloc lost byte %zu of object %zu\n", i, k);
      exit(1);
    }
  return p;
}

static double shape_regrow(unsigned long long pairs) {
  enum { K = 1024 };
  static uint8_t *ring[K];
  for (size_t k = 0; k < K; k++) ring[k] = regrown(k);
  uint8_t sink = 0;
  size_t k = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) {
    sink += ring[k][0];
    free(ring[k]);
    ring[k] = regrown(k);
    if (++k == K) k = 0;
  }
  double t1 = now_ns();
  for (k = 0; k < K; k++) free(ring[k]);
  sink_all += sink;
  return t1 - t0;
}

__attribute__((noinline)) static double shape_bigcalloc(unsigned long long pairs) {
  uint8_t sink = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) {
    uint8_t *p = calloc_site(512);
    sink += p[511];
    free(p);
  }
  double t1 = now_ns();
  sink_all += sink;
  return t1 - t0;
}

__attribute__((noinline)) static double shape_freenull(unsigned long long pairs) {
  void *volatile none = NULL; /* read each time: the call stays */
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) free(none);
  return now_ns() - t0;
}

static double shape_mixed(unsigned long long pairs) {
  enum { K = 4096 };
  static uint8_t *live[K];
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t k = 0; k < K; k++) {
    uint64_t r = rng_next(&s);
    live[k] = sites[k & 7](size_for(k & 7, r));
  }
  uint8_t sink = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) {
    uint64_t r = rng_next(&s);
    size_t k = (size_t)(r & (K - 1));
    unsigned site = (unsigned)(r >> 12) & 7;
    sink += live[k][0];
    free(live[k]);
    live[k] = sites[site](size_for(site, r));
  }
  double t1 = now_ns();
  for (size_t k = 0; k < K; k++) free(live[k]);
  sink_all += sink;
  return t1 - t0;
}

/* mixed from 32 sites, each with its own size */
static double shape_sites(unsigned long long pairs) {
  enum { K = 4096, NSITES = 32 };
  static uint8_t *live[K];
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t k = 0; k < K; k++) live[k] = many_sites[k & (NSITES - 1)](16 + 8 * ((k & (NSITES - 1)) % 15));
  uint8_t sink = 0;
  double t0 = now_ns();
  for (unsigned long long i = 0; i < pairs; i++) {
    uint64_t r = rng_next(&s);
    size_t k = (size_t)(r & (K - 1));
    unsigned site = (unsigned)(r >> 12) & (NSITES - 1);
    sink += live[k][0];
    free(live[k]);
    live[k] = many_sites[site](16 + 8 * (site % 15));
  }
  double t1 = now_ns();
  for (size_t k = 0; k < K; k++) free(live[k]);
  sink_all += sink;
  return t1 - t0;
}

enum { BATCH = 512 };
typedef struct worker {
  pthread_t thread;
  unsigned id;
  unsigned long long rounds;
  uint8_t *batch[BATCH];
  struct worker *other;
  uint8_t sink;
} worker;
static pthread_barrier_t barrier;

static void *worker_main(void *arg) {
  worker *w = arg;
  uint64_t s = 0x2545F4914F6CDD1Dull + w->id;
  for (unsigned long long r = 0; r < w->rounds; r++) {
    for (unsigned k = 0; k < BATCH; k++) {
      uint64_t x = rng_next(&s);
      unsigned site = (unsigned)(x >> 12) & 3;
      w->batch[k] = sites[site * 2 + w->id](size_for(site * 2 + w->id, x)); /* 4 sites per thread */
    }
    pthread_barrier_wait(&barrier);
    /* even slots of my batch (local frees), odd slots of the other's (remote frees) */
    for (unsigned k = 0; k < BATCH; k += 2) {
      w->sink += w->batch[k][0];
      free(w->batch[k]);
      w->sink += w->other->batch[k + 1][0];
      free(w->other->batch[k + 1]);
    }
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

static double shape_threads(unsigned long long pairs) {
  static worker w[2];
  unsigned long long rounds = pairs / (2 * BATCH);
  if (rounds == 0) rounds = 1;
  pthread_barrier_init(&barrier, NULL, 2);
  double t0 = now_ns();
  for (unsigned i = 0; i < 2; i++) {
    w[i].id = i;
    w[i].rounds = rounds;
    w[i].other = &w[1 - i];
    if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0) {
      fprintf(stderr, "malloc_shapes: pthread_create failed\n");
      exit(1);
    }
  }
  for (unsigned i = 0; i < 2; i++) pthread_join(w[i].thread, NULL);
  double t1 = now_ns();
  sink_all += w[0].sink + w[1].sink;
  pthread_barrier_destroy(&barrier);
  return (t1 - t0) * (double)pairs / (double)(rounds * 2 * BATCH);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s pair|sizes|grow|ring|realloc|calloc|mixed|sites|threads PAIRS\n", argv[0]);
    return 2;
  }
  unsigned long long pairs = strtoull(argv[2], NULL, 10);
  if (pairs == 0) {
    fprintf(stderr, "malloc_shapes: PAIRS must be a positive number\n");
    return 2;
  }
  /* warm-up from every site (the callsite policy pools a site after its first objects) */
  for (unsigned i = 0; i < 2000; i++) free(sites[i & 7](size_for(i & 7, (uint64_t)i << 40)));
  for (unsigned i = 0; i < 32 * 200; i++) free(many_sites[i & 31](16 + 8 * ((i & 31) % 15)));
  double ns;
  const char *shape = argv[1];
  if (!strcmp(shape, "pair")) ns = shape_pair(pairs);
  else if (!strcmp(shape, "sizes")) ns = shape_sizes(pairs);
  else if (!strcmp(shape, "grow")) ns = shape_grow(pairs);
  else if (!strcmp(shape, "ring")) ns = shape_ring(pairs);
  else if (!strcmp(shape, "realloc")) ns = shape_ring_via(pairs, realloc_site);
  else if (!strcmp(shape, "calloc")) ns = shape_ring_via(pairs, calloc_site);
  else if (!strcmp(shape, "regrow")) ns = shape_regrow(pairs);
  else if (!strcmp(shape, "bigcalloc")) ns = shape_bigcalloc(pairs);
  else if (!strcmp(shape, "freenull")) ns = shape_freenull(pairs);
  else if (!strcmp(shape, "mixed")) ns = shape_mixed(pairs);
  else if (!strcmp(shape, "sites")) ns = shape_sites(pairs);
  else if (!strcmp(shape, "threads")) ns = shape_threads(pairs);
  else {
    fprintf(stderr, "malloc_shapes: unknown shape %s\n", shape);
    return 2;
  }
  printf("ns_per_pair %.2f pairs %llu shape %s\n", ns / (double)pairs, pairs, shape);
  return sink_all == 255 ? 0 : 0; /* read, so that the writes stay */
}
