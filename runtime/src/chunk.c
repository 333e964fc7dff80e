/* The reserved range and its chunks.
 *
 * The whole range is mapped once, readable and writable but MAP_NORESERVE, so the kernel
 * commits a page only when it is first touched; chunks are handed out from its start in
 * order. A released chunk is kept resident as a spare (HEAPLAYOUT_SPARE_CHUNKS of them;
 * HALO keeps one) or its pages after the header page are returned to the OS with
 * MADV_DONTNEED and it waits for reuse. Chunks
 * whose owner thread exited wait, per pool, for another thread of that pool to adopt
 * them. All of this is the slow path: one spinlock guards it. */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

hl_range hl_rng;

static atomic_flag chunk_lock = ATOMIC_FLAG_INIT;
static uintptr_t fresh_next;              /* next never-used chunk */
static hl_chunk *spare_list;              /* resident, ready */
static unsigned spare_count;
static hl_chunk *returned_list;           /* pages returned to the OS */
static hl_chunk *abandoned[HL_MAX_POOLS]; /* per pool, waiting for adoption */

static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&chunk_lock, memory_order_acquire)) sched_yield();
}
static void unlock(void) { atomic_flag_clear_explicit(&chunk_lock, memory_order_release); }

void hl_chunk_lock_all(void) { lock(); }
void hl_chunk_unlock_all(void) { unlock(); }

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

static size_t range_limit; /* the most hl_rng.size may grow to (HEAPLAYOUT_RANGE) */
static int range_huge;     /* HEAPLAYOUT_HUGE_PAGES: ask for transparent huge pages */

/* A mapped part of the range, offered to the kernel for 2 MiB pages: one TLB entry then
 * covers 512 of our 4 KiB pages, which pointer-chasing over a large heap needs (tunables.h,
 * HL_DEFAULT_HUGE_PAGES). Only a request: the kernel's THP mode decides, and an error
 * (a kernel without THP) changes nothing. */
static void offer_huge_pages(uintptr_t at, size_t bytes) {
  if (range_huge) madvise((void *)at, bytes, MADV_HUGEPAGE);
}

/* [at, at + bytes) mapped for pools exactly there, or 0 (something else is there). */
static int map_exactly(uintptr_t at, size_t bytes) {
#ifdef MAP_FIXED_NOREPLACE
  void *p = mmap((void *)at, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == (void *)at) return 1;
  if (p != MAP_FAILED) munmap(p, bytes); /* a kernel that took the flag for a hint */
#else
  (void)at;
  (void)bytes;
#endif
  return 0;
}

/* The chunk table (hl_rng.chunks, hl_chunk_of_ours): an entry per HL_CHUNK_UNIT_SHIFT unit
 * of the mapped range, grown with it. Static at first (512 units: 128 MiB of range, 4 KiB);
 * a larger one is mapped, copied and published before the range it covers, and the old one
 * is kept (a free in another thread may still read it: its entries stay right). */
#define TABLE_STATIC 512u
static hl_chunk *table_static[TABLE_STATIC];
static size_t table_cap = TABLE_STATIC;

/* Entries for [from, to) of the range (hl_rng.base and chunk_mask set); 0: no memory for
 * a larger table. */
static int table_fill(uintptr_t from, uintptr_t to) {
  size_t need = (to - hl_rng.base) >> HL_CHUNK_UNIT_SHIFT;
  hl_chunk **t = (hl_chunk **)hl_rng.chunks;
  if (t == NULL) t = table_static;
  if (need > table_cap) {
    size_t cap = table_cap;
    while (cap < need) cap *= 2;
    hl_chunk **n = mmap(NULL, cap * sizeof *n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED) return 0;
    memcpy(n, t, table_cap * sizeof *n);
    t = n;
    table_cap = cap;
  }
  for (uintptr_t a = from; a < to; a += (uintptr_t)1 << HL_CHUNK_UNIT_SHIFT)
    t[(a - hl_rng.base) >> HL_CHUNK_UNIT_SHIFT] = hl_chunk_at(a & hl_rng.chunk_mask);
  atomic_thread_fence(memory_order_release);
  hl_rng.chunks = t;
  return 1;
}

int hl_range_init(size_t range_size, size_t chunk_size, uint32_t cc_block, int huge_pages) {
  range_size = (range_size + chunk_size - 1) & ~(chunk_size - 1);
  /* aligned past the header colour's bits too, so that a chunk's colour is its number's
   * (hl_chunk_at), the same on every run whatever address the range gets */
  size_t align = (size_t)HL_HEADER_COLORS << HL_HEADER_COLOR_BIT;
  if (align < chunk_size) align = chunk_size;
  size_t first = HL_RANGE_STEP > chunk_size ? HL_RANGE_STEP : chunk_size;
  if (first > range_size) first = range_size;
  uintptr_t base = (HL_RANGE_HINT + align - 1) & ~(uintptr_t)(align - 1);
  size_t mapped = first;
  if (!map_exactly(base, first)) { /* the whole range now, anywhere (tunables.h, HL_RANGE_HINT) */
    size_t span = range_size + align;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return 0;
    base = ((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1);
    size_t head = base - (uintptr_t)raw, tail = span - head - range_size;
    if (head) munmap(raw, head);
    if (tail) munmap((char *)base + range_size, tail);
    mapped = range_size;
  }
  range_limit = range_size;
  range_huge = huge_pages;
  offer_huge_pages(base, mapped);

  size_t ps = page_size();
  /* from the start of the header's page (hl_chunk_at: the header lies up to 15 x 128 bytes
   * into it): the header, the size map, the cc fill */
  size_t meta = (HL_HEADER_COLORS - 1) * (HL_HEADER_COLOR_STEP % 4096) + sizeof(hl_chunk) +
                (chunk_size >> HL_GRANULE_SHIFT) + chunk_size / cc_block;
  hl_rng.meta_bytes = (meta + ps - 1) & ~(ps - 1);
  hl_rng.chunk_size = chunk_size;
  hl_rng.chunk_mask = ~(uintptr_t)(chunk_size - 1);
  hl_rng.cc_block = cc_block;
  fresh_next = base;
  hl_rng.base = base;
  if (!table_fill(base, base + mapped)) {
    munmap((void *)base, mapped);
    return 0;
  }
  atomic_thread_fence(memory_order_release);
  hl_rng.size = mapped; /* last: from now on pointers in the range are "ours" */
  return 1;
}

/* Under the chunk lock, with the range used up: map the next part, as much as is mapped
 * (the range doubles), up to range_limit. 0 when the range cannot grow (its limit, or
 * another mapping above it: then it stops trying). A thread that frees an object of the new
 * part got it after this store, by way of the chunk lock and the program's own ordering,
 * so its test of the range (hl_is_ours) sees the new size. */
static int range_grow(void) {
  size_t size = hl_rng.size;
  if (size >= range_limit) return 0;
  size_t grow = size;
  if (grow > range_limit - size) grow = range_limit - size;
  if (!map_exactly(hl_rng.base + size, grow)) {
    range_limit = size;
    return 0;
  }
  if (!table_fill(hl_rng.base + size, hl_rng.base + size + grow)) {
    munmap((void *)(hl_rng.base + size), grow);
    range_limit = size;
    return 0;
  }
  offer_huge_pages(hl_rng.base + size, grow);
  atomic_thread_fence(memory_order_release);
  hl_rng.size = size + grow;
  return 1;
}

static atomic_uint color_seq;

static void chunk_prepare(hl_chunk *c, uint16_t pool) {
  c->magic = HL_CHUNK_MAGIC;
  c->pool = pool;
  c->in_use = 1;
  c->stays = 0; /* set when a pool makes it current (alloc.c, set_cur) */
  /* no free list (the last owner dropped them), and every free goes onto the chunk's own */
  for (size_t k = 0; k < HL_NCLASSES; k++) c->free[k] = HL_OWN_NONE;
  hl_chunk_push_own(c);
  hl_chunk_set_owner(c, NULL, memory_order_relaxed);
  c->next = c->prev = NULL;
  /* ccmalloc chunks keep cc-blocks aligned to the chunk: no colour */
  uint32_t colors = hl_state.opt.chunk_colors ? hl_state.opt.chunk_colors : 1;
  unsigned color = pool == HL_POOL_CC ? 0 : atomic_fetch_add_explicit(&color_seq, 1, memory_order_relaxed) % colors;
  /* the objects after the metadata, from the header's page: their pages move with the
   * header's colour, their line positions do not (those are the chunk colour's) */
  char *page = (char *)((uintptr_t)c & ~(uintptr_t)4095);
  c->data = page + hl_rng.meta_bytes + (size_t)color * HL_COLOR_STEP + hl_pool_line_off(pool);
  c->end = (char *)hl_chunk_base(c) + hl_rng.chunk_size;
  c->map_base = (uintptr_t)hl_chunk_sizemap(c) - ((uintptr_t)c >> HL_GRANULE_SHIFT);
  c->accounted = 0;
  atomic_store_explicit(&c->remote, NULL, memory_order_relaxed);
  hl_chunk_reset(c);
}

void hl_free_invalid_in(hl_chunk *c, const void *p) { hl_free_invalid(p, *hl_sizemap_entry(c, p), "free"); }

void hl_chunk_reset(hl_chunk *c) {
  if (c->pool == HL_POOL_CC) memset(hl_chunk_ccfill(c), 0, hl_rng.chunk_size / hl_rng.cc_block);
  c->bump = c->data;
  c->live = 0;
  c->cc_open = UINT32_MAX;
}

hl_chunk *hl_chunk_acquire(uint16_t pool) {
  hl_chunk *c = NULL;
  lock();
  if (spare_list) {
    c = spare_list;
    spare_list = c->next;
    spare_count--;
  } else if (returned_list) {
    c = returned_list;
    returned_list = c->next;
  } else if (fresh_next < hl_rng.base + hl_rng.size || range_grow()) {
    c = hl_chunk_at(fresh_next);
    fresh_next += hl_rng.chunk_size;
  }
  unlock();
  if (c) chunk_prepare(c, pool);
  return c;
}

void hl_chunk_release(hl_chunk *c) {
  hl_assert(c->magic == HL_CHUNK_MAGIC && c->in_use);
  /* the next life starts with a clean size map: free-slot scans read it */
  uint8_t *map = hl_chunk_sizemap(c);
  size_t lo = (size_t)(c->data - (char *)c) >> HL_GRANULE_SHIFT, hi = (size_t)(c->bump - (char *)c) >> HL_GRANULE_SHIFT;
  memset(map + lo, 0, hi - lo);
  hl_pool_resident_add(c->pool, -(long)c->accounted);
  c->accounted = 0;
  c->in_use = 0;
  hl_chunk_set_owner(c, NULL, memory_order_relaxed);
  lock();
  int keep = spare_count < hl_state.opt.spare_chunks;
  if (keep) {
    c->next = spare_list;
    spare_list = c;
    spare_count++;
  }
  unlock();
  if (keep) return;
  /* keep the header's page so the chunk can wait in a list (the pages before it were never
   * touched) */
  size_t ps = page_size();
  uintptr_t after = ((uintptr_t)c & ~(uintptr_t)(ps - 1)) + ps;
  madvise((void *)after, hl_chunk_base(c) + hl_rng.chunk_size - after, MADV_DONTNEED);
  lock();
  c->next = returned_list;
  returned_list = c;
  unlock();
}

void hl_chunk_abandon(hl_chunk *c) {
  hl_chunk_set_owner(c, NULL, memory_order_release);
  lock();
  c->prev = NULL;
  c->next = abandoned[c->pool];
  abandoned[c->pool] = c;
  unlock();
}

hl_chunk *hl_chunk_adopt(uint16_t pool) {
  if (__atomic_load_n(&abandoned[pool], __ATOMIC_RELAXED) == NULL) return NULL;
  lock();
  hl_chunk *c = abandoned[pool];
  if (c) abandoned[pool] = c->next;
  unlock();
  if (c) c->next = c->prev = NULL;
  return c;
}

void hl_chunk_for_each(void (*fn)(hl_chunk *c, void *arg), void *arg) {
  for (uintptr_t a = hl_rng.base; a < fresh_next; a += hl_rng.chunk_size) {
    hl_chunk *c = hl_chunk_at(a);
    if (c->magic == HL_CHUNK_MAGIC && c->in_use) fn(c, arg);
  }
}
