/* Unit tests of the chunk/pool engine, through the public interfaces.
 * Usage: engine_test CASE. Linked against libheaplayout_debug.so (internal asserts on),
 * whose malloc interposes because it comes before libc. The pytest driver
 * (tests/test_runtime_engine.py) sets the environment each case needs. Every check that
 * fails prints the line and makes the exit status non-zero. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heaplayout/ccmalloc.h"
#include "heaplayout/introspect.h"
#include "heaplayout/pool.h"

static int failures;
#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                           \
    }                                                                       \
  } while (0)

/* Allocation sites are named by return address: each helper is one site. */
__attribute__((noinline)) static void *site_a(size_t n) { return malloc(n); }
__attribute__((noinline)) static void *site_b(size_t n) { return malloc(n); }

static long resident_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
    fclose(f);
  }
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static void fill(void *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) ((unsigned char *)p)[i] = (unsigned char)(seed + i * 7);
}
static int intact(const void *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (((const unsigned char *)p)[i] != (unsigned char)(seed + i * 7)) return 0;
  return 1;
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=10 */
static void test_pooling_threshold(void) {
  void *p[20];
  for (int i = 0; i < 20; i++) p[i] = site_a(48);
  for (int i = 0; i < 10; i++) CHECK(heaplayout_pool_of(p[i]) == 0);  /* the first ten */
  for (int i = 10; i < 20; i++) CHECK(heaplayout_pool_of(p[i]) >= 3); /* after it: pooled */
  CHECK(heaplayout_pool_of(p[19]) == heaplayout_pool_of(p[10]));
  /* consecutive objects of one site are adjacent: bump allocation, no headers */
  for (int i = 11; i < 20; i++) CHECK((char *)p[i] == (char *)p[i - 1] + 48);
  void *big = site_a(4096); /* above HEAPLAYOUT_MAX_SIZE: forwarded */
  CHECK(heaplayout_pool_of(big) == 0);
  void *q[20];
  for (int i = 0; i < 20; i++) q[i] = site_b(48);
  CHECK(heaplayout_pool_of(q[19]) >= 3 && heaplayout_pool_of(q[19]) != heaplayout_pool_of(p[19]));
  for (int i = 0; i < 20; i++) {
    free(p[i]);
    free(q[i]);
  }
  free(big);
}

static void test_alignment(void) {
  for (size_t align = 1; align <= 8192; align <<= 1) {
    for (int i = 0; i < 50; i++) {
      void *p = memalign(align, 24 + (size_t)i);
      CHECK(p && ((uintptr_t)p % align) == 0);
      fill(p, 24 + (size_t)i, 3);
      void *q = NULL;
      if (align >= sizeof(void *)) {
        CHECK(posix_memalign(&q, align, 40) == 0 && ((uintptr_t)q % align) == 0);
      }
      void *r = aligned_alloc(align, align * 2);
      CHECK(r && ((uintptr_t)r % align) == 0);
      CHECK(intact(p, 24 + (size_t)i, 3));
      free(p);
      free(q);
      free(r);
    }
  }
  void *bad = (void *)1;
  CHECK(posix_memalign(&bad, 24, 10) != 0 && bad == (void *)1);
  for (int i = 0; i < 1000; i++) { /* pooled objects honour malloc's 16-byte alignment */
    void *p = site_a((size_t)(i % 200) + 1);
    CHECK(((uintptr_t)p & 15) == 0);
  }
  Pool pool;
  poolcreate(&pool, 0, 64);
  for (int i = 0; i < 100; i++) {
    void *p = poolalloc(&pool, 40);
    CHECK(((uintptr_t)p & 63) == 0 && heaplayout_pool_of(p) == 2);
  }
  for (size_t align = 16; align <= 4096; align <<= 1) {
    void *p = poolmemalign(&pool, align, 100);
    CHECK(p && ((uintptr_t)p % align) == 0);
  }
  pooldestroy(&pool);
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0 */
static void test_reuse(void) {
  void *a = site_a(64);
  CHECK(heaplayout_pool_of(a) >= 3);
  free(a);
  void *b = site_a(64);
  CHECK(b == a); /* the freed slot of the same class is reused first */
  void *c = site_a(60); /* 60 rounds to the same 64-byte class */
  void *d = site_a(64);
  free(c);
  void *e = site_a(64);
  CHECK(e == c);
  /* many frees then as many allocations: no growth */
  enum { N = 100000 };
  static void *v[N];
  for (int i = 0; i < N; i++) v[i] = site_a(32);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < N; i++) {
    if ((uintptr_t)v[i] < lo) lo = (uintptr_t)v[i];
    if ((uintptr_t)v[i] > hi) hi = (uintptr_t)v[i];
  }
  for (int i = 0; i < N; i += 2) free(v[i]);
  for (int i = 0; i < N; i += 2) {
    v[i] = site_a(32);
    CHECK((uintptr_t)v[i] >= lo && (uintptr_t)v[i] <= hi + heaplayout_chunk_size());
  }
  for (int i = 0; i < N; i++) free(v[i]);
  free(b);
  free(d);
  free(e);
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0 HEAPLAYOUT_SPARE_CHUNKS=1 */
static void test_chunk_return(void) {
  enum { N = 1 << 20 }; /* 1M objects of 64 bytes: 64 MiB over many chunks */
  void **v = malloc(sizeof(void *) * N);
  memset(v, 0, sizeof(void *) * N);
  long before = resident_kib();
  for (int i = 0; i < N; i++) {
    v[i] = site_a(64);
    memset(v[i], 1, 64);
  }
  long during = resident_kib();
  CHECK(during - before > 50 * 1024);
  for (int i = 0; i < N; i++) free(v[i]);
  long after = resident_kib();
  /* all but the current chunk and one spare go back to the OS */
  CHECK(after - before < 8 * 1024);
  printf("resident KiB: before %ld, full %ld, after free %ld\n", before, during, after);
  /* a new burst reuses the returned chunks */
  for (int i = 0; i < N; i++) v[i] = site_a(64);
  CHECK(resident_kib() - before < 80 * 1024);
  for (int i = 0; i < N; i++) free(v[i]);
  free(v);

  Pool pool;
  poolcreate(&pool, 64, 0);
  long p0 = resident_kib();
  for (int i = 0; i < 500000; i++) memset(poolalloc(&pool, 64), 2, 64);
  long p1 = resident_kib();
  pooldestroy(&pool);
  long p2 = resident_kib();
  CHECK(p1 - p0 > 25 * 1024);
  CHECK(p2 - p0 < 4 * 1024);
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0 HEAPLAYOUT_SPARE_CHUNKS=0 */
static void test_emptied_chunks(void) {
  enum { N = 1 << 19 }; /* 512K objects of 64 bytes: 32 MiB, 33 chunks of 1 MiB */
  void **v = malloc(sizeof(void *) * N);
  memset(v, 0, sizeof(void *) * N);
  long before = resident_kib();
  char *keep = site_a(64); /* holds the pool's first chunk */
  memset(keep, 7, 64);
  for (int i = 0; i < N; i++) memset(v[i] = site_a(64), 1, 64);
  long full = resident_kib() - before;
  for (int i = 0; i < N; i++) free(v[i]);
  long emptied = resident_kib() - before;
  /* the pool still holds `keep` (in its first chunk) and its current chunk; every other
   * chunk went back to the OS as it emptied (free list sharding: a release touches no
   * slot, so none is kept) */
  printf("resident KiB over the start: full %ld, emptied %ld\n", full, emptied);
  CHECK(full > 30 * 1024);
  CHECK(emptied < 4 * 1024);
  /* a rebuild of a quarter takes the two chunks' slots and fresh space for the rest: no
   * more than its own size */
  for (int i = 0; i < N / 4; i++) memset(v[i] = site_a(64), 2, 64);
  CHECK(resident_kib() - before <= emptied + (long)N / 4 * 64 / 1024 + 1024);
  for (int i = 0; i < N / 4; i++) free(v[i]);
  CHECK(keep[63] == 7);
  /* frees in random order: chunks empty at random points and drop their lists whole while
   * other chunks' slots sit on the pool's queues; every slot handed out again must be
   * distinct (tags survive) */
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < N; i++) v[i] = site_a(64);
  for (int i = N - 1; i > 0; i--) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int j = (int)(x % (uint64_t)(i + 1));
    void *t = v[i];
    v[i] = v[j], v[j] = t;
  }
  for (int i = 0; i < N; i++) free(v[i]);
  /* a rebuild releases the emptied chunks first and is bumped in order into fresh space,
   * not scattered over their slots in the random order they were freed; only the slots of
   * the first chunk (which holds `keep`) and of the current one are reused scattered */
  for (int i = 0; i < N; i++) *(int *)(v[i] = site_a(64)) = i;
  int in_order = 0;
  for (int i = 1; i < N; i++) in_order += (char *)v[i] - (char *)v[i - 1] == 64;
  printf("rebuilt after random frees: %d of %d objects 64 bytes after the previous one\n", in_order, N);
  CHECK(in_order > N / 2);
  for (int i = 0; i < N; i++) CHECK(*(int *)v[i] == i);
  for (int i = 0; i < N; i++) free(v[i]);
  /* the last object goes: every chunk is empty, the lists are dropped whole, all chunks go */
  free(keep);
  CHECK(resident_kib() - before < 4 * 1024);
  /* and the pool starts again from fresh chunks */
  for (int i = 0; i < 1000; i++) memset(v[i] = site_a(64), 3, 64);
  for (int i = 0; i < 1000; i++) free(v[i]);
  free(v);
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0, HEAPLAYOUT_SPARE_CHUNKS set by the
 * test: a structure built and freed whole every round; test_runtime_engine.py counts the
 * page faults (spare chunks are reused resident, others fault in again). */
static void test_rebuild_rounds(void) {
  enum { N = 100000, ROUNDS = 6 }; /* 6.4 MB of 64-byte objects a round */
  static void *v[N];
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < N; i++) memset(v[i] = site_a(64), r, 64);
    for (int i = 0; i < N; i++) free(v[i]);
  }
}

/* C++'s new and sized delete, called by their mangled names from C. */
void *_Znwm(size_t size);
void _ZdlPvm(void *p, size_t size);
__attribute__((noinline)) static void *new_site(size_t n) { return _Znwm(n); }

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0: a sized delete takes the class from
 * the size (no size-map read); the slot is reused by the next new of that class. */
static void test_sized_delete(void) {
  static const size_t sizes[] = {1, 16, 17, 48, 100, 256, 257, 1000, 4096, 5000};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    char *p = new_site(n);
    CHECK(p != NULL && (heaplayout_pool_of(p) >= 3) == (n <= 128)); /* HEAPLAYOUT_MAX_SIZE 128 */
    memset(p, 5, n);
    _ZdlPvm(p, n);
    char *q = new_site(n);
    CHECK(q == p);
    _ZdlPvm(q, n);
  }
}

/* The debug library checks the size of a sized delete against the size map: a wrong one
 * (undefined behaviour) stops with an assertion instead of corrupting the lists. */
static void test_sized_delete_mismatch(void) {
  void *p = new_site(48);
  _ZdlPvm(p, 16);
  printf("not reached\n");
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0 HEAPLAYOUT_MAX_SIZE=1024 */
static void test_realloc_in_place(void) {
  char *p = site_a(40);
  CHECK(heaplayout_pool_of(p) >= 3);
  fill(p, 40, 9);
  char *q = realloc(p, 48); /* same 48-byte class */
  CHECK(q == p && intact(q, 40, 9));
  char *r = realloc(q, 200); /* last object of the chunk: grows into fresh space */
  CHECK(r == p && intact(r, 40, 9));
  CHECK(malloc_usable_size(r) >= 200);
  char *s = realloc(r, 16); /* shrinking stays */
  CHECK(s == p && intact(s, 16, 9));
  char *blocker = site_a(40); /* now p is no longer last */
  char *t = realloc(s, 500);
  CHECK(t != NULL && t != s && intact(t, 16, 9) && heaplayout_pool_of(t) >= 3);
  char *u = realloc(t, 5000); /* above the pooled size: moves to the allocator underneath */
  CHECK(u != NULL && heaplayout_pool_of(u) == 0 && intact(u, 16, 9));
  free(u);
  free(blocker);
  CHECK(realloc(site_a(10), 0) == NULL); /* glibc: realloc(p, 0) frees */
  volatile size_t huge = (size_t)1 << 40;
  void *z = reallocarray(NULL, huge, huge);
  CHECK(z == NULL);
  char *w = calloc(10, 10);
  for (int i = 0; i < 100; i++) CHECK(w[i] == 0);
  free(w);
}

static void *remote_freer(void *arg) {
  void **v = arg;
  for (int i = 0; i < 50000; i++) {
    CHECK(intact(v[i], 32, (unsigned)i));
    free(v[i]);
  }
  return NULL;
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0 */
static void test_cross_thread_free(void) {
  static void *v[50000];
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < 50000; i++) {
      v[i] = site_a(32);
      fill(v[i], 32, (unsigned)i);
    }
    pthread_t t;
    pthread_create(&t, NULL, remote_freer, v);
    pthread_join(t, NULL);
  }
  /* the owner collected what the other thread freed: 20 rounds fit in far less than 20x */
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < 50000; i++) {
    v[i] = site_a(32);
    if ((uintptr_t)v[i] < lo) lo = (uintptr_t)v[i];
    if ((uintptr_t)v[i] > hi) hi = (uintptr_t)v[i];
  }
  CHECK(hi - lo < 8 * heaplayout_chunk_size());
  for (int i = 0; i < 50000; i++) free(v[i]);
}

/* any policy */
static void test_foreign_pointers(void) {
  /* this binary links the runtime, so RTLD_NEXT from here finds our own malloc; glibc's
   * is the allocator underneath */
  void *(*next_malloc)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_malloc");
  CHECK(next_malloc != NULL);
  char *f = next_malloc(100); /* memory of the allocator underneath */
  CHECK(heaplayout_pool_of(f) == 0);
  fill(f, 100, 5);
  CHECK(malloc_usable_size(f) >= 100);
  f = realloc(f, 300);
  CHECK(intact(f, 100, 5));
  free(f);
  char *g = next_malloc(50);
  free(g);
  free(NULL);
  CHECK(malloc_usable_size(NULL) == 0);
}

/* HEAPLAYOUT_CC_BLOCK=256 */
static void test_ccmalloc(void) {
  CHECK(ccmalloc_block_size() == 256);
  char *root = ccmalloc(32, NULL);
  CHECK(heaplayout_pool_of(root) == 1);
  char *kids[7];
  for (int i = 0; i < 7; i++) {
    kids[i] = ccmalloc(32, root); /* 8 x 32 bytes fill the root's 256-byte block */
    CHECK((uintptr_t)kids[i] / 256 == (uintptr_t)root / 256);
  }
  char *other = ccmalloc(32, NULL);
  char *more = ccmalloc(32, root); /* block full: same page */
  CHECK((uintptr_t)more / 256 != (uintptr_t)root / 256);
  CHECK((uintptr_t)more / 4096 == (uintptr_t)root / 4096);
  CHECK(malloc_usable_size(more) == 32);
  fill(more, 32, 1);
  char *grown = realloc(more, 100);
  CHECK(intact(grown, 32, 1));
  free(grown);
  for (int i = 0; i < 7; i++) ccfree(kids[i]);
  free(root);
  free(other);
  char *big = ccmalloc(1000, NULL); /* larger than a block: an ordinary allocation */
  CHECK(big != NULL);
  free(big);
}

static void test_pool_api(void) {
  Pool p;
  poolcreate(&p, 24, 0);
  char *a = poolalloc(&p, 24), *b = poolalloc(&p, 24);
  CHECK(heaplayout_pool_of(a) == 2 && b == a + 32); /* 24 rounds to 32; contiguous */
  poolfree(&p, a);
  CHECK(poolalloc(&p, 24) == a);
  char *big = poolalloc(&p, 100000); /* kept by the pool in the allocator underneath */
  CHECK(big && heaplayout_pool_of(big) == 0);
  memset(big, 3, 100000);
  big = poolrealloc(&p, big, 200000);
  CHECK(big && big[99999] == 3);
  char *c = poolrealloc(&p, b, 64);
  CHECK(c && heaplayout_pool_of(c) == 2);
  free(c); /* plain free works on pool objects */
  pooldestroy(&p); /* releases the large object too */

  Pool bp;
  poolinit_bp(&bp, 0);
  char *x = poolalloc_bp(&bp, 16), *y = poolalloc_bp(&bp, 16);
  CHECK(y == x + 16);
  poolfree(&bp, x);
  CHECK(poolalloc_bp(&bp, 16) == y + 16); /* bump pools never reuse */
  pooldestroy_bp(&bp);
}

/* poolcreate/poolinit_bp with align 8 (APA 5.4): odd multiples of 8 pack at their own
 * size, 8-aligned; multiples of 16 and an explicit 16 stay 16-aligned; align 0 and 16
 * keep the 16 pool of test_pool_api whatever HEAPLAYOUT_MIN_ALIGN says. */
static void test_pool_align8(void) {
  Pool p;
  poolcreate(&p, 24, 8);
  char *a = poolalloc(&p, 24), *b = poolalloc(&p, 24), *c = poolalloc(&p, 24);
  CHECK(heaplayout_pool_of(a) == 2 && b == a + 24 && c == b + 24); /* 24-byte slots */
  CHECK(((uintptr_t)a & 7) == 0 && ((uintptr_t)b & 15) != ((uintptr_t)c & 15));
  char *d = poolalloc(&p, 40), *e = poolalloc(&p, 40);
  CHECK(e == d + 40);
  for (int i = 0; i < 1000; i++) { /* sizes that are multiples of 16 keep 16-aligned slots */
    char *q = poolalloc(&p, 16 * (size_t)(1 + i % 16));
    CHECK(q && ((uintptr_t)q & 15) == 0);
  }
  char *m = poolmemalign(&p, 16, 24); /* an explicit 16 is honoured in an 8 pool */
  CHECK(m && ((uintptr_t)m & 15) == 0);
  memset(a, 1, 24);
  memset(b, 2, 24);
  poolfree(&p, b);
  CHECK(poolalloc(&p, 24) == b && a[23] == 1 && c[0] != 2);
  char *r = poolrealloc(&p, a, 200); /* moves to the 200 class, contents kept */
  CHECK(r && r[0] == 1 && r[23] == 1 && heaplayout_pool_of(r) == 2);
  pooldestroy(&p);

  Pool bp;
  poolinit_bp(&bp, 8);
  char *x = poolalloc_bp(&bp, 24), *y = poolalloc_bp(&bp, 24);
  CHECK(y == x + 24);
  pooldestroy_bp(&bp);

  Pool s;
  poolcreate(&s, 24, 16);
  char *u = poolalloc(&s, 24), *v = poolalloc(&s, 24);
  CHECK(v == u + 32 && ((uintptr_t)u & 15) == 0);
  pooldestroy(&s);
  poolcreate(&s, 24, 0);
  u = poolalloc(&s, 24), v = poolalloc(&s, 24);
  CHECK(v == u + 32 && ((uintptr_t)u & 15) == 0);
  pooldestroy(&s);
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0 */
static void test_fork(void) {
  void *v[1000];
  for (int i = 0; i < 1000; i++) {
    v[i] = site_a(64);
    fill(v[i], 64, (unsigned)i);
  }
  pid_t pid = fork();
  if (pid == 0) {
    int ok = 1;
    for (int i = 0; i < 1000; i++) {
      ok &= intact(v[i], 64, (unsigned)i);
      free(v[i]);
    }
    for (int i = 0; i < 1000; i++) {
      v[i] = site_a(64);
      fill(v[i], 64, 1);
    }
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int i = 0; i < 1000; i++) {
    CHECK(intact(v[i], 64, (unsigned)i));
    free(v[i]);
  }
}

static void *exiting_worker(void *arg) {
  void **v = arg;
  for (int i = 0; i < 20000; i++) {
    v[i] = site_b(48);
    fill(v[i], 48, (unsigned)i);
  }
  for (int i = 0; i < 20000; i += 2) free(v[i]); /* half freed before the thread exits */
  return NULL;
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0: a thread's chunks outlive it and
 * another thread of the same pool adopts them, reusing the slots the dead thread freed. */
static void test_adopt(void) {
  static void *v[20000];
  pthread_t t;
  pthread_create(&t, NULL, exiting_worker, v);
  pthread_join(t, NULL);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 1; i < 20000; i += 2) {
    CHECK(intact(v[i], 48, (unsigned)i));
    if ((uintptr_t)v[i] < lo) lo = (uintptr_t)v[i];
    if ((uintptr_t)v[i] > hi) hi = (uintptr_t)v[i];
  }
  int reused = 0;
  void *w[10000];
  for (int i = 0; i < 10000; i++) {
    w[i] = site_b(48); /* same site: the dead thread's pool */
    reused += (uintptr_t)w[i] >= lo && (uintptr_t)w[i] <= hi;
    fill(w[i], 48, 77);
  }
  /* every slot the dead thread freed came back (v[0] lies just below the live range) */
  if (reused < 9999) fprintf(stderr, "reused %d\n", reused);
  CHECK(reused >= 9999);
  for (int i = 1; i < 20000; i += 2) {
    CHECK(intact(v[i], 48, (unsigned)i));
    free(v[i]);
  }
  for (int i = 0; i < 10000; i++) {
    CHECK(intact(w[i], 48, 77));
    free(w[i]);
  }
}

/* HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0 HEAPLAYOUT_CHUNK_SIZE=256K: one site
 * asking for two sizes in turn gets each size's objects side by side in its own span, not
 * interleaved; spans end with their chunk (the debug library asserts that no slot is
 * carved in an emptied chunk), and a pool rebuilt after it emptied carves anew. */
static void test_spans(void) {
  enum { N = 100 };
  char *small[N], *large[N];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < N; i++) {
      small[i] = site_a(32);
      large[i] = site_a(96);
      fill(small[i], 32, (unsigned)i);
      fill(large[i], 96, (unsigned)i + 1);
    }
    int adjacent_small = 0, adjacent_large = 0, interleaved = 0;
    for (int i = 1; i < N; i++) {
      adjacent_small += small[i] == small[i - 1] + 32;
      adjacent_large += large[i] == large[i - 1] + 96;
      interleaved += large[i - 1] == small[i - 1] + 32 || small[i] == large[i - 1] + 96;
    }
    /* a span boundary may fall inside the run once per size */
    CHECK(adjacent_small >= N - 2 && adjacent_large >= N - 2);
    CHECK(interleaved == 0);
    for (int i = 0; i < N; i++) CHECK(intact(small[i], 32, (unsigned)i) && intact(large[i], 96, (unsigned)i + 1));
    /* many more than a chunk holds, then all freed: the chunks empty and go */
    enum { M = 20000 };
    static char *many[M];
    for (int i = 0; i < M; i++) many[i] = site_a(i % 2 ? 48 : 64);
    for (int i = 0; i < M; i++) free(many[i]);
    for (int i = 0; i < N; i++) {
      free(small[i]);
      free(large[i]);
    }
  }
}

static void test_policy_name(void) { printf("policy %s\n", heaplayout_policy()); }

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {
      {"pooling_threshold", test_pooling_threshold}, {"alignment", test_alignment},
      {"reuse", test_reuse},                         {"chunk_return", test_chunk_return},
      {"realloc_in_place", test_realloc_in_place},   {"cross_thread_free", test_cross_thread_free},
      {"foreign_pointers", test_foreign_pointers},   {"ccmalloc", test_ccmalloc},
      {"pool_api", test_pool_api},                   {"fork", test_fork},
      {"adopt", test_adopt},                         {"policy_name", test_policy_name},
      {"emptied_chunks", test_emptied_chunks},       {"rebuild_rounds", test_rebuild_rounds},
      {"sized_delete", test_sized_delete},           {"sized_delete_mismatch", test_sized_delete_mismatch},
      {"spans", test_spans},                         {"pool_align8", test_pool_align8},
  };
  if (argc != 2) {
    fprintf(stderr, "usage: %s CASE\n", argv[0]);
    return 2;
  }
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    if (strcmp(argv[1], cases[i].name) == 0) {
      cases[i].fn();
      if (failures) fprintf(stderr, "%s: %d checks failed\n", argv[1], failures);
      return failures ? 1 : 0;
    }
  fprintf(stderr, "unknown case %s\n", argv[1]);
  return 2;
}
