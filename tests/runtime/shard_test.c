/* Free list sharding (runtime/src/alloc.c): the invariants a pool's lists must keep, run
 * under the debug library (its asserts check every pop's slot against the allocating chunk
 * and every release against the queues). HEAPLAYOUT_POLICY=callsite HEAPLAYOUT_MIN_OBJECTS=0.
 *
 *   shard_test reuse    slots freed in chunks other than the allocating one are all
 *                       reused before any fresh space is bumped
 *   shard_test release  chunks emptied in random order are released (their pages go back:
 *                       HEAPLAYOUT_SPARE_CHUNKS=0) and none of their slots is handed out
 *                       again; every object keeps its contents
 *   shard_test churn    random replacement in a live set spread over many chunks, from
 *                       four sites of mixed sizes: the resident size stays flat
 * Prints "ok" and exits 0, or names the failed check and exits 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MASK (~(uintptr_t)((1u << 20) - 1)) /* 1 MiB chunks, the default */

static int failed;
#define CHECK(x) ((x) ? (void)0 : (void)(failed = 1, fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #x)))

__attribute__((noinline)) static void *site_a(size_t n) { void *p = malloc(n); if (!p) abort(); return p; }
__attribute__((noinline)) static void *site_b(size_t n) { void *p = malloc(n); if (!p) abort(); return p; }
__attribute__((noinline)) static void *site_c(size_t n) { void *p = malloc(n); if (!p) abort(); return p; }
__attribute__((noinline)) static void *site_d(size_t n) { void *p = malloc(n); if (!p) abort(); return p; }

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static long resident_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
    fclose(f);
  }
  return res * 4;
}

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
  return x < y ? -1 : x > y;
}

static void reuse(void) {
  enum { N = 40000 }; /* 64-byte objects: 2.5 chunks */
  static char *obj[N];
  static uintptr_t freed[N], got[N];
  for (int i = 0; i < N; i++) obj[i] = site_a(64);
  uintptr_t first = (uintptr_t)obj[0] & MASK, second = (uintptr_t)obj[N / 2] & MASK;
  uintptr_t last = (uintptr_t)obj[N - 1] & MASK;
  CHECK(first != last && second != last && first != second);
  /* frees in the two older chunks (neither is the one allocating: the current chunk
   * bumped last), and a few in the current one, interleaved */
  int nf = 0;
  for (int i = 0; i < N; i += 7) {
    uintptr_t c = (uintptr_t)obj[i] & MASK;
    if (c == last && i % 21 != 0) continue;
    freed[nf++] = (uintptr_t)obj[i];
    free(obj[i]);
    obj[i] = NULL;
  }
  for (int k = 0; k < nf; k++) got[k] = (uintptr_t)site_a(64);
  /* every freed slot came back, and only those: no fresh space was bumped meanwhile */
  qsort(freed, (size_t)nf, sizeof *freed, cmp_ptr);
  qsort(got, (size_t)nf, sizeof *got, cmp_ptr);
  int same = 0;
  for (int k = 0; k < nf; k++) same += freed[k] == got[k];
  printf("reuse: %d slots freed in three chunks, %d of them handed out again first\n", nf, same);
  CHECK(same == nf);
  /* the next one is fresh space, right after the last object bumped */
  char *fresh = site_a(64);
  CHECK(fresh == obj[N - 1] + 64);
  free(fresh);
  for (int k = 0; k < nf; k++) free((void *)got[k]);
  for (int i = 0; i < N; i++) free(obj[i]);
}

static void release(void) {
  enum { N = 1 << 17, M = 6 }; /* 2 x 128K objects of 40 and 96 bytes: 17 MiB, ~17 chunks */
  static char *a[N], *b[N];
  static char **all[2 * N];
  memset(a, 0, sizeof a), memset(b, 0, sizeof b), memset(all, 0, sizeof all); /* resident before the count */
  long before = resident_kib();
  for (int i = 0; i < N; i++) {
    memset(a[i] = site_b(40), (int)(i & 0x7f), 40);
    memset(b[i] = site_b(96), (int)(i & 0x7f) + 1, 96);
  }
  long full = resident_kib() - before;
  /* keep one object in every fourth chunk; free the rest in random order, so that chunks
   * empty while their slots of both classes sit on the queues and on allocation lists */
  int n = 0;
  for (int i = 0; i < N; i++) all[n++] = &a[i], all[n++] = &b[i];
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(next_rand() % (uint64_t)(i + 1));
    char **t = all[i];
    all[i] = all[j], all[j] = t;
  }
  uintptr_t kept_chunk[64];
  int kept = 0;
  for (int k = 0; k < n; k++) {
    char *p = *all[k];
    uintptr_t c = (uintptr_t)p & MASK;
    int seen = 0;
    for (int j = 0; j < kept; j++) seen |= kept_chunk[j] == c;
    if (!seen && (c >> 20) % 4 == 0 && kept < 64) {
      kept_chunk[kept++] = c; /* the first object met in such a chunk stays */
      continue;
    }
    free(p);
    *all[k] = NULL;
  }
  long emptied = resident_kib() - before;
  printf("release: resident KiB over the start: full %ld, after the frees %ld (%d chunks kept)\n", full, emptied, kept);
  /* every chunk without a kept object went back to the OS but the current one */
  CHECK(full > 14 * 1024);
  CHECK(emptied < (kept + 2) * 1024 + 512);
  /* allocate and free again: the pops' asserts check that no slot of a released chunk is
   * on any list; contents of the kept objects survive */
  for (int round = 0; round < M; round++) {
    for (int i = 0; i < N; i += 2) {
      if (a[i] == NULL) memset(a[i] = site_b(40), 0x55, 40);
      if (b[i] == NULL) memset(b[i] = site_b(96), 0x66, 96);
    }
    for (int i = 0; i < N; i += 2) {
      if (a[i] && a[i][0] == 0x55) free(a[i]), a[i] = NULL;
      if (b[i] && b[i][0] == 0x66) free(b[i]), b[i] = NULL;
    }
  }
  for (int i = 0; i < N; i++) {
    if (a[i]) CHECK(a[i][39] == (char)(i & 0x7f)), free(a[i]);
    if (b[i]) CHECK(b[i][95] == (char)((i & 0x7f) + 1)), free(b[i]);
  }
  CHECK(resident_kib() - before < 4 * 1024);
}

static void churn(void) {
  enum { LIVE = 1 << 17, STEPS = 3000000 };
  static uint32_t *live[LIVE];
  static uint32_t tag[LIVE];
  void *(*site[4])(size_t) = {site_a, site_b, site_c, site_d};
  long warm = 0;
  for (uint32_t i = 0; i < LIVE; i++) {
    size_t size = 16 + (next_rand() % 8) * 16;
    live[i] = site[i & 3](size);
    live[i][0] = tag[i] = (uint32_t)next_rand();
  }
  for (long s = 0; s < STEPS; s++) {
    uint32_t k = (uint32_t)(next_rand() % LIVE);
    if (live[k][0] != tag[k]) {
      CHECK(!"an object's contents changed");
      break;
    }
    free(live[k]);
    size_t size = 16 + (next_rand() % 8) * 16;
    live[k] = site[next_rand() & 3](size);
    live[k][0] = tag[k] = (uint32_t)next_rand();
    if (s == STEPS / 3) warm = resident_kib();
  }
  long end = resident_kib();
  printf("churn: resident KiB after a third of the steps %ld, at the end %ld\n", warm, end);
  /* freed slots are reused before fresh space: the resident size does not grow */
  CHECK(end - warm < 2048);
  for (uint32_t i = 0; i < LIVE; i++) free(live[i]);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "reuse")) reuse();
  else if (!strcmp(mode, "release")) release();
  else if (!strcmp(mode, "churn")) churn();
  else {
    fprintf(stderr, "usage: shard_test reuse|release|churn\n");
    return 2;
  }
  if (failed) return 1;
  puts("ok");
  return 0;
}
