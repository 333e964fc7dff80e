/* Internal types and functions of libheaplayout. Read this first.
 *
 * Memory model
 *   One reserved virtual range [range_base, range_base + range_size) holds every pooled
 *   object, so "is this pointer ours?" is one subtraction and compare. The range is cut
 *   into chunks aligned to their size; a chunk's header is at its start and found from
 *   any object pointer by masking. Objects are bump-allocated inside a chunk with no
 *   per-object header, at least 16 bytes each, so at most one starts in each 16-byte
 *   granule: a byte per granule in the chunk's size map records the size class of the
 *   object that starts there (free, realloc and malloc_usable_size read it). Slots are
 *   16-aligned, or 8-aligned for sizes that are odd multiples of 8 when the minimum
 *   alignment is 8 (size_class.c). Free lists are sharded by chunk (mimalloc's "free list
 *   sharding"): a freed slot goes to the front of its chunk's list for its class, and the
 *   thread-pool allocates from one chunk's list per class at a time (tp->head[cls].free, the
 *   slots of chunk tp->head[cls].from; a free into that chunk goes there directly, so the most
 *   recently freed slot is still reused first, as glibc's and jemalloc's caches do: a list
 *   cell freed and reallocated lands where it was). When it runs dry, the next chunk queued
 *   for the class (tp->head[cls].queue) hands over its list whole; fresh space is bumped only
 *   when no chunk is queued. A chunk whose live count drops to zero is released at once:
 *   it drops its own lists and, where it is the allocating chunk, the pool's, and leaves
 *   the queues, touching no slot (O(classes)).
 *
 * Ownership
 *   A chunk belongs to one thread-pool (a pool id within one thread's heap) or to one
 *   explicit pool of the pool.h API. Only the owner touches the chunk's bump pointer,
 *   free lists and live count, without locks. Other threads push what they free onto the
 *   chunk's atomic remote list and never touch the chunk again; the owner collects remote
 *   frees on its slow path (the current chunk and the chunks it searches every time, all
 *   of its chunks before it takes a new one).
 */
#ifndef HL_INTERNAL_H
#define HL_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tunables.h"

/* Everything declared here is the library's own: hidden, so that GCC addresses globals
 * directly (hl_rng's chunk mask in one load instead of an address and a load: 3
 * instructions per malloc/free pair) and calls without the PLT. */
#pragma GCC visibility push(hidden)

#define HL_EXPORT __attribute__((visibility("default")))
#define HL_LIKELY(x) __builtin_expect(!!(x), 1)
#define HL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HL_NOINLINE __attribute__((noinline))

#ifdef HL_DEBUG
void hl_assert_fail(const char *expr, const char *file, int line);
#define hl_assert(x) ((x) ? (void)0 : hl_assert_fail(#x, __FILE__, __LINE__))
#else
#define hl_assert(x) ((void)0)
#endif

/* ---- size classes (size_class.c) ---- */
#define HL_NCLASSES 60 /* class 0 is "no object"; 1..59 are sizes */
#define HL_SMALL_INDEX 33 /* the class tables cover sizes 0..256 in 8-byte steps */
extern const uint32_t hl_class_size[HL_NCLASSES];
extern const uint8_t hl_classes_16[HL_SMALL_INDEX], hl_classes_even[HL_SMALL_INDEX],
    hl_classes_packed[HL_SMALL_INDEX];
const uint8_t *hl_pool_classes(uint16_t pool); /* the class table of a new thread-pool */
static inline uint8_t hl_size_class_large(size_t size) { /* 256 < size <= HL_MAX_CLASS_SIZE */
  hl_assert(size > 256 && size <= HL_MAX_CLASS_SIZE);
  size_t s = size - 1;
  unsigned msb = 63u - (unsigned)__builtin_clzll(s);        /* >= 8 */
  unsigned quarter = (unsigned)(s >> (msb - 2)) & 3u;
  return (uint8_t)(32u + (msb - 8u) * 4u + quarter);
}

/* Size class of a request of at most HL_MAX_CLASS_SIZE bytes in a pool with class table t. */
/* requests of up to 256 bytes have their class in the 8-byte-step tables: 33 entries */
#define HL_DIRECT_SIZES (256 / 8 + 1)
static inline uint8_t hl_size_class_in(const uint8_t *t, size_t size) {
  if (HL_LIKELY(size <= 256)) return t[(size + 7) >> 3];
  return hl_size_class_large(size);
}
/* ... in a 16-aligned class (ccmalloc's granule-counted blocks) */
static inline uint8_t hl_size_class(size_t size) { return hl_size_class_in(hl_classes_16, size); }
/* A request that must be 16-aligned whatever the pool (memalign(16), pool.h pools): a
 * multiple of 16 has a 16-aligned class in every table. */
static inline size_t hl_size_a16(size_t size) { return (size + 15) & ~(size_t)15; }
/* A slot of class cls may start at p: a class whose size is a multiple of 16 needs 16. */
static inline int hl_slot_aligned(uintptr_t p, uint8_t cls) { return !(p & ~(uintptr_t)hl_class_size[cls] & 8); }

/* ---- options (options.c) ---- */
/* placing policies are >= HL_POLICY_CALLSITE (fastpath.h); dpa takes plan's slow paths (interpose.c) */
enum hl_policy { HL_POLICY_UNINIT = 0, HL_POLICY_OFF, HL_POLICY_CALLSITE, HL_POLICY_PLAN, HL_POLICY_DPA };

typedef struct hl_options {
  enum hl_policy policy;
  uint32_t min_objects;
  uint32_t max_size;      /* no pool takes a larger object (checked first on every malloc) */
  uint32_t site_max_size; /* per-site pools (callsite, and a plan's rest) take up to this */
  size_t chunk_size;
  size_t range_size;
  uint32_t cc_block;
  uint32_t chunk_colors; /* new chunks cycle through this many start offsets (1: none) */
  uint32_t spare_chunks; /* empty chunks kept resident for reuse */
  uint32_t huge_pages;   /* 1: the range asks for transparent huge pages (chunk.c) */
  uint32_t span_bytes;   /* fresh space is carved per size class in spans of this size (alloc.c) */
  uint32_t min_align;    /* 8: slots of odd multiples of 8 may be 8-aligned (size_class.c); 0 unset */
  uint32_t min_align_env; /* min_align came from the environment (it then covers site pools too) */
  int stats;             /* print the per-pool table on stderr at exit */
  char stats_json[512];  /* also write JSON here ("" = no); %p becomes the pid */
  char plan[512];        /* plan file for the plan policy */
} hl_options;

/* Reads and validates the environment. A bad value: one message on stderr and the
 * policy falls back to off. Never allocates. */
void hl_options_load(hl_options *opt);
/* The same from a NAME=value list (NULL-terminated); secure: ignore it (set-uid). */
void hl_options_parse(hl_options *opt, const char *const *env, int secure);
const char *hl_policy_name(int policy);

/* ---- the allocator underneath (next.c) ---- */
typedef struct hl_next {
  void *(*malloc)(size_t);
  void (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void *(*memalign)(size_t, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  size_t (*malloc_usable_size)(void *);
  /* the C++ sized deletes of the allocator underneath, when it has its own (jemalloc,
   * tcmalloc, mimalloc: cheaper than free, the size is known); NULL for glibc, whose are
   * libstdc++'s and only call free */
  void (*sized_delete)(void *, size_t);
  void (*sized_delete_array)(void *, size_t);
  /* its operator new (plain and nothrow), likewise NULL when the next one is libstdc++'s:
   * a forwarded new goes there in one tail call, with the allocator's own new_handler loop */
  void *(*op_new)(size_t);
  void *(*op_new_nothrow)(size_t, const void *);
} hl_next;

extern hl_next hl_next_alloc;
/* The next definitions of glibc's other names for its allocator, __libc_malloc and friends
 * (glibc's own, or those of an allocator underneath that exports them too, as mimalloc and
 * tcmalloc do): interpose.c's __libc_* send there whatever is not ours. */
typedef struct hl_next_libc {
  void *(*malloc)(size_t);
  void (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
} hl_next_libc;
extern hl_next_libc hl_next_libc_alloc;
void hl_next_resolve(void);
void *hl_bootstrap_alloc(size_t size, size_t align);
extern char hl_bootstrap_buf[HL_BOOTSTRAP_BYTES];
static inline int hl_is_bootstrap(const void *p) {
  return (uintptr_t)p - (uintptr_t)hl_bootstrap_buf < HL_BOOTSTRAP_BYTES;
}
size_t hl_bootstrap_size(const void *p);

/* ---- chunks (chunk.c) ---- */
#define HL_CHUNK_MAGIC 0x484c434bu /* "HLCK" */

struct hl_tpool;

/* A free slot, linked into its chunk's list for its class, or into the thread-pool's
 * allocation list for the class when the chunk is the one the pool allocates from. Singly
 * linked: a chunk's slots never have to be found on a list shared with other chunks (an
 * emptied chunk drops its lists whole), so no back link is needed (the doubly linked lists
 * of issue 21 existed only to unlink an emptied chunk's slots one by one: 3 instructions on
 * every free onto a non-empty list, and a write to each neighbour's line at the release).
 * A slot freed by free() is also marked HL_SIZEMAP_FREE in the size map, which free reads
 * anyway and checks (a double free); the mark goes when the slot is allocated again. A
 * sized delete does not touch the size map (a cache line on a random delete); its slot
 * carries no mark, and clearing an absent bit changes nothing, so taking it again needs
 * no test. While a chunk waits for adoption, all its free slots are marked. */
typedef struct hl_free_slot {
  struct hl_free_slot *next;
  /* the byte the site-direct pop clears the double-free mark in (hl_slot_unmark_linked):
   * the slot's size-map entry, which a plain free has at hand when it pushes the slot, or
   * for a sized delete's slot (no mark) the slot's own first byte, which the program gets
   * back anyway. Computed in the pop from the slot's address and its chunk it took 2
   * instructions more on every allocation. Slots are 16 bytes at least. */
  uint8_t *entry;
} hl_free_slot;
/* A chunk's own list (hl_chunk.free) with no slot. Not NULL, which an empty allocation list
 * holds: free pushes onto either through one pointer (hl_chunk.push), and only a first slot
 * on an own list has more to do (queue the chunk), so that is the one value it tests for;
 * with NULL for both, every free onto an emptied allocation list (a back-to-back pair's, a
 * ring's: the pop took the one slot the last free put there) took the longer way. Never a
 * slot (slots are 8-aligned), never on an allocation list (own lists end in NULL). */
#define HL_OWN_NONE ((hl_free_slot *)1)
#define HL_SIZEMAP_FREE 0x80u
static inline hl_free_slot *hl_slot_next(const hl_free_slot *s) { return s->next; }

typedef struct hl_chunk {
  /* the first line: what free and the fast paths read (free: owner_thread, map_base, live,
   * and owner on its rarer ways; the bump: bump, end, map_base, live) */
  uint32_t magic;
  uint16_t pool;                      /* pool id, for stats */
  uint8_t in_use;
  /* the chunk is its pool's current one in a pool that never had another (c == tp->cur
   * && !tp->multi: alloc.c keeps it so): its free of the last object has nothing to do.
   * A pool that allocates and frees one object at a time empties its chunk on every free
   * (gawk: 659k of 1.09M frees), and reading the pool for that cost 4 instructions more. */
  uint8_t stays;
  _Atomic(struct hl_tpool *) owner;   /* NULL while abandoned */
  /* the owner thread (hl_thread_self), the one thing free compares with the calling thread;
   * 0 while abandoned, while the owner counts statistics, and for pool.h pools (their free
   * takes the full path, hl_free_other). Written only with owner (hl_chunk_set_owner). */
  _Atomic(uintptr_t) owner_thread;
  char *bump, *end;                   /* bump region of fresh space */
  /* the size map less this chunk's granule number: p's entry is at map_base + (p >> 4), one
   * instruction fewer on free than from the chunk's address (set while the chunk is in use) */
  uintptr_t map_base;
  uint32_t live;                      /* live objects; owner only */
  uint32_t cc_open;                   /* ccmalloc: index of the block filled last */
  _Atomic(void *) remote;             /* objects freed by other threads */
  /* from the second line: per class, the list a free of the class in this chunk goes onto
   * (hl_slot_push): the owner's allocation list (&tp->head[cls].free) while this chunk is its
   * allocating chunk for the class (tp->head[cls].from), else this chunk's own (&free[cls]).
   * Set with `from` (hl_chunk_set_allocating). A byte per class saying which (before) took
   * free a compare, the thread-pool's address and the 32-byte record's index besides: 2
   * instructions more. Next to the first line: comparing the chunk with tp->head[cls].from
   * read another line of the thread-pool on every free (gawk: 214K of its 9.5M D1 read
   * misses). */
  _Alignas(64) struct hl_free_slot **push[HL_NCLASSES];
  struct hl_chunk *next, *prev;       /* in the owner's list of non-current chunks */
  char *data;                         /* first object address */
  size_t accounted;                   /* extent counted into the pool's resident total */
  /* per class (free list sharding, alloc.c): the owner's frees into this chunk, newest
   * first, ending in NULL; HL_OWN_NONE while it has none (the owner's allocating chunk for a
   * class keeps it so: its frees go to tp->head[cls].free), and while the list is not empty, its
   * place in the owner's queue for the class. Apart, so that free indexes its list by the
   * class directly (a 24-byte struct per class cost 3 instructions on every free into a
   * chunk other than the allocating one) */
  hl_free_slot *free[HL_NCLASSES];
  struct { struct hl_chunk *next, *prev; } q[HL_NCLASSES];
} hl_chunk;
/* a released chunk keeps its header's page only (chunk.c): the header must lie in one page */
_Static_assert((HL_HEADER_COLORS - 1) * (HL_HEADER_COLOR_STEP % 4096) + sizeof(hl_chunk) <= 4096,
               "a coloured chunk header stays in one page");


typedef struct hl_range {
  uintptr_t base;
  size_t size;
  /* the header of the chunk holding each HL_CHUNK_UNIT of the mapped range (hl_chunk_of_ours):
   * one shift and one load from the offset free's range test computed, where the header's
   * colour took 7 instructions (hl_chunk_at); written for a part of the range before that
   * part is mapped for pools (chunk.c), never changed after */
  struct hl_chunk *const *chunks;
  size_t chunk_size;
  uintptr_t chunk_mask;               /* ~(chunk_size - 1) */
  size_t meta_bytes;                  /* header + size map + cc fill, rounded to a page */
  uint32_t cc_block;
} hl_range;

extern hl_range hl_rng; /* read on every free: keep it small and together */

static inline int hl_is_ours(const void *p) {
  return (uintptr_t)p - hl_rng.base < hl_rng.size;
}
/* The header of the chunk at chunk-aligned address base: its colour's offset in (tunables.h,
 * HL_HEADER_COLORS). The size map follows the header, so it moves with it. */
static inline hl_chunk *hl_chunk_at(uintptr_t base) {
  uintptr_t color = (base >> HL_HEADER_COLOR_BIT) & (HL_HEADER_COLORS - 1);
#if defined(__x86_64__)
  /* one multiply: GCC made it four shifts and adds (free and malloc paid 3 more each) */
  __asm__("imulq %1, %0, %0" : "+r"(color) : "i"(HL_HEADER_COLOR_STEP));
#else
  color *= HL_HEADER_COLOR_STEP;
#endif
  return (hl_chunk *)(base + color);
}
static inline hl_chunk *hl_chunk_of(const void *p) {
  return hl_chunk_at((uintptr_t)p & hl_rng.chunk_mask);
}
/* The same for p in the range (hl_is_ours(p)), by the table: after hl_is_ours(p), GCC keeps
 * the offset it computed, so this is a shift and a load (free: 4 instructions fewer than
 * hl_chunk_of). The unit is the smallest chunk size, so every unit lies in one chunk. */
#define HL_CHUNK_UNIT_SHIFT 18
_Static_assert(HL_MIN_CHUNK_SIZE == 1u << HL_CHUNK_UNIT_SHIFT, "a table unit lies in one chunk");
static inline hl_chunk *hl_chunk_of_ours(const void *p) {
  return (hl_chunk *)hl_rng.chunks[((uintptr_t)p - hl_rng.base) >> HL_CHUNK_UNIT_SHIFT];
}
/* the chunk's first byte (its header may start later: hl_chunk_at) */
static inline uintptr_t hl_chunk_base(const hl_chunk *c) {
  return (uintptr_t)c & hl_rng.chunk_mask;
}
static inline uint8_t *hl_chunk_sizemap(hl_chunk *c) {
  return (uint8_t *)c + sizeof(hl_chunk);
}
static inline uint8_t *hl_chunk_ccfill(hl_chunk *c) {
  return hl_chunk_sizemap(c) + (hl_rng.chunk_size >> HL_GRANULE_SHIFT);
}
static inline uint8_t *hl_sizemap_entry(hl_chunk *c, const void *p) {
  return &hl_chunk_sizemap(c)[((uintptr_t)p - (uintptr_t)c) >> HL_GRANULE_SHIFT];
}
/* the same for a chunk known to be in use (map_base is set) */
static inline uint8_t *hl_sizemap_entry_used(const hl_chunk *c, const void *p) {
  return (uint8_t *)(c->map_base + ((uintptr_t)p >> HL_GRANULE_SHIFT));
}
static inline uint8_t hl_class_at(hl_chunk *c, const void *p) {
  return *hl_sizemap_entry(c, p) & ~HL_SIZEMAP_FREE;
}

int hl_range_init(size_t range_size, size_t chunk_size, uint32_t cc_block, int huge_pages);
hl_chunk *hl_chunk_acquire(uint16_t pool);   /* NULL when the range is exhausted */
void hl_chunk_release(hl_chunk *c);
void hl_chunk_reset(hl_chunk *c);            /* forget every object: fresh bump space */
void hl_chunk_abandon(hl_chunk *c);          /* owner thread exited: park for adoption */
hl_chunk *hl_chunk_adopt(uint16_t pool);
void hl_chunk_for_each(void (*fn)(hl_chunk *c, void *arg), void *arg); /* chunks in use */
void hl_chunk_lock_all(void);                /* fork: prepare */
void hl_chunk_unlock_all(void);              /* fork: parent and child */

/* ---- pools and heaps (heap.c) ---- */
struct hl_heap;

/* A thread-pool's state for one size class, in one 32-byte record, so that the site-direct
 * pop (which holds &free) finds the chunk in the same line as the list, and the bump its
 * chunk and queue there too. As four arrays, the pop computed the chunk from the slot's
 * address (7 instructions with the header's colour) or read another line of the pool for
 * it (gawk's training run: +390K D1 misses). */
typedef struct hl_class_head {
  /* the allocation list: free slots of chunk `from` only, most recently freed first.
   * from's own list for the class stays empty; its frees come here. */
  struct hl_free_slot *free;
  struct hl_chunk *from;
  /* the chunks (not from) whose own list for the class is not empty, most recently queued
   * first: the allocation list takes the next one's list whole when it runs dry, before any
   * fresh space is bumped (else their slots would never be reused) */
  struct hl_chunk *queue;
  /* the chunk fresh space is bumped in: cur while no chunk is queued for the class, else
   * NULL. The bump then tests one pointer, as it tested cur before sharding (a separate test
   * of the queue cost 3 instructions on every bump: treeadd +2%) */
  struct hl_chunk *bump_in;
} hl_class_head;

/* The state of one pool in one thread (or of one explicit pool.h pool). */
typedef struct hl_tpool {
  hl_class_head head[HL_NCLASSES]; /* per class: the lists and chunks above */
  /* Fresh space of each class but in a plan's group: a span carved from a chunk's bump
   * region (alloc.c, span_carve), bumped one slot at a time while no chunk is queued for
   * the class (bump_in); empty (NULL, NULL) until the class's first slot and after the
   * span's chunk leaves the pool. */
  char *span_bump[HL_NCLASSES], *span_end[HL_NCLASSES];
  /* the span's chunk (NULL with no span): the bump found it by the range's table, 4
   * instructions more on each fresh slot (half of jq's allocations through its wrapper) */
  hl_chunk *span_chunk[HL_NCLASSES];
  const uint8_t *classes;   /* small-size class table (size_class.c) */
  hl_chunk *cur;            /* fresh space is bumped here */
  hl_chunk *others;         /* the pool's other chunks */
  uint32_t n_others;        /* chunks on others */
  struct hl_heap *heap;     /* HL_HEAP_EXPLICIT for an explicit pool */
  uint16_t pool;
  uint8_t no_reuse;         /* bump-pointer pool: freed slots are not reused */
  /* the pool had another chunk since it was last wholly empty: when its current chunk
   * empties too, it goes (alloc.c, chunk_emptied), so that what is built next is bumped in
   * order into fresh space. 0 for a one-chunk pool, whose free of its last object stays
   * on the fast path. */
  uint8_t multi;
  uint8_t counting;         /* statistics are on: frees take the counting path (hl_free_slot_counted) */
  /* a plan's group: fresh slots of every class are bumped in allocation order in the
   * current chunk, as HALO's group allocator places them, not in per-class spans */
  uint8_t interleave;
  /* where in a cache line the pool's fresh space starts (a plan's `group ... line N`):
   * chunks' data and spans start N bytes into a line, so that objects of 64-byte-multiple
   * classes all sit N bytes into theirs (Olden tsp: docs/results.md section 21) */
  uint8_t line_off;
  uint32_t max_size;        /* larger requests leave the pool (realloc growth) */
  /* the largest request the site-direct pop may serve from this pool by its class table
   * (fastpath.h): max_size, the global limit and the table's 256 bytes; 0 with statistics */
  uint32_t direct_max;
  /* the site-direct pop's list for a request of n <= 256 bytes: direct[(n + 7) >> 3] is
   * &head[classes[(n + 7) >> 3]].free. A site of varying sizes (an allocation wrapper:
   * lua's, gawk's) found its list through the class table in 6 instructions, 3 this way. */
  struct hl_free_slot **direct[HL_DIRECT_SIZES];
  /* statistics, owner only; kept exact only while statistics are on (the site-direct
   * allocation and the local free skip them otherwise: nothing reads them then).
   * Interleaved so that no two counters one path updates are adjacent: GCC merged
   * adjacent ones into SSE load/add/store sequences, 7 instructions where two scalar adds
   * do (malloc_pair: about 9 instructions per pair). */
  uint64_t allocs, frees, bytes_requested, freed_slot_bytes, slot_bytes;
  struct hl_tpool *next_in_heap; /* the heap's thread-pools, for thread exit */
} hl_tpool;
/* the site-direct pop and bump find a class's record from &head[cls].free (fastpath.h) */
_Static_assert(offsetof(hl_class_head, free) == 0 && sizeof(hl_class_head) == 32, "a class's record starts with its list");

/* A thread's heap: its thread-pools and its caches (defined with the cache types below). */
typedef struct hl_heap hl_heap;

#define HL_HEAP_EXPLICIT ((hl_heap *)2) /* owner of explicit pools: never a thread's heap */

/* The calling thread's heap; never NULL. Until the thread's first allocation under a
 * placing policy it is hl_heap_empty, whose caches never match, so the fast path misses
 * and the slow path makes (or reuses) a heap; an exiting thread's is hl_heap_dead, whose
 * caches never match either and which gets no pool, so everything is forwarded. Neither
 * is ever written. */
extern __thread hl_heap *hl_tl_heap __attribute__((tls_model("initial-exec")));

hl_heap *hl_heap_get(void);          /* this thread's heap, made if needed; NULL if it cannot have one */
hl_tpool *hl_tpool_create(hl_heap *heap, uint16_t pool);
/* tp->direct from tp->classes (set once: a pool's class table never changes) */
static inline void hl_tpool_direct_init(hl_tpool *tp) {
  for (size_t i = 0; i < HL_DIRECT_SIZES; i++) tp->direct[i] = &tp->head[tp->classes[i]].free;
}
void hl_heap_init(void);
hl_heap *hl_heap_list(void);
void *hl_meta_alloc(size_t size);    /* internal metadata, never freed */
void hl_heap_fork_prepare(void);
void hl_heap_fork_done(void);

/* ---- the allocation paths (alloc.c) ---- */
void *hl_tpool_alloc_slow(hl_tpool *tp, uint8_t cls, size_t size);
void *hl_tpool_alloc_aligned(hl_tpool *tp, size_t size, size_t align);
void hl_free_ours(void *p);
void hl_free_local(hl_tpool *tp, hl_chunk *c, void *p);
void hl_tpool_collect_all(hl_tpool *tp);
void hl_tpool_make_current(hl_tpool *tp, hl_chunk *c);
void hl_tpool_retire(hl_tpool *tp);  /* owner thread exits */
size_t hl_usable_size_ours(const void *p);
void *hl_realloc_ours(void *p, size_t size);
void hl_tpool_destroy(hl_tpool *tp);

/* The calling thread, as free compares it with a chunk's owner_thread: on x86-64 the thread
 * pointer (the TCB's self pointer at %fs:0, unique among live threads), which free reads
 * in the compare itself; the thread's heap took a GOT load more (one instruction per free).
 * A thread's chunks lose their owner when it exits (hl_tpool_retire), before another thread
 * can be given its TCB. */
static inline uintptr_t hl_thread_self(void) {
#if defined(__x86_64__) && defined(__SEG_FS)
  return *(const uintptr_t __seg_fs *)0;
#else
  return (uintptr_t)hl_tl_heap;
#endif
}

/* Sets c's owner (NULL: none) and with it owner_thread; called by the owner thread itself
 * (it takes a chunk), or with NULL. */
static inline void hl_chunk_set_owner(hl_chunk *c, hl_tpool *tp, memory_order order) {
  hl_assert(tp == NULL || tp->heap == HL_HEAP_EXPLICIT || tp->heap == hl_tl_heap);
  uintptr_t t = tp != NULL && !tp->counting && tp->heap != HL_HEAP_EXPLICIT ? hl_thread_self() : 0;
  atomic_store_explicit(&c->owner_thread, t, memory_order_relaxed);
  atomic_store_explicit(&c->owner, tp, order);
}

/* Drops the double-free mark of s (in chunk c), taken off a list: its class stays in the
 * size map. A sized delete's slot has no mark; clearing it anyway spares a test. */
static inline __attribute__((always_inline)) void hl_slot_unmark(hl_chunk *c, const hl_free_slot *s) {
  uint8_t *entry = hl_sizemap_entry(c, s);
  hl_assert((*entry & ~HL_SIZEMAP_FREE) > 0 && (*entry & ~HL_SIZEMAP_FREE) < HL_NCLASSES);
#if defined(__x86_64__)
  /* one read-modify-write: in C, GCC loads, masks and stores (two more) */
  __asm__("andb %1, %0" : "+m"(*entry) : "i"(~HL_SIZEMAP_FREE & 0xff));
#else
  *entry &= ~HL_SIZEMAP_FREE;
#endif
}

/* The same through the entry pointer the push left in s (hl_free_slot.entry). */
static inline __attribute__((always_inline)) void hl_slot_unmark_linked(const hl_free_slot *s) {
  uint8_t *entry = s->entry;
#if defined(__x86_64__)
  __asm__("andb %1, %0" : "+m"(*entry) : "i"(~HL_SIZEMAP_FREE & 0xff));
#else
  *entry &= ~HL_SIZEMAP_FREE;
#endif
}

/* Takes s, the head of tp's list for cls (in chunk c), off the list: it is live again. */
static inline __attribute__((always_inline)) void hl_slot_take(hl_tpool *tp, uint8_t cls, hl_free_slot *s, hl_chunk *c) {
  hl_assert((*hl_sizemap_entry(c, s) & ~HL_SIZEMAP_FREE) == cls);
  hl_assert(c == tp->head[cls].from && c->in_use && c->free[cls] == HL_OWN_NONE);
  hl_assert(s->entry == hl_sizemap_entry(c, s) || s->entry == (const uint8_t *)s);
  tp->head[cls].free = s->next;
  hl_slot_unmark(c, s);
}

/* c (not NULL, its own list for cls empty) becomes the allocating chunk for cls. */
static inline void hl_chunk_set_allocating(hl_tpool *tp, size_t cls, hl_chunk *c) {
  hl_chunk *old = tp->head[cls].from;
  hl_assert(c->free[cls] == HL_OWN_NONE && tp->head[cls].free == NULL);
  if (old) old->push[cls] = &old->free[cls];
  c->push[cls] = &tp->head[cls].free;
  tp->head[cls].from = c;
}
/* c's frees of every class go onto its own lists (c allocates for no class). */
static inline void hl_chunk_push_own(hl_chunk *c) {
  for (size_t k = 0; k < HL_NCLASSES; k++) c->push[k] = &c->free[k];
}

/* c's list for cls became non-empty: c joins the class's queue (at the front). */
static inline __attribute__((always_inline)) void hl_chunk_enqueue(hl_tpool *tp, hl_chunk *c, size_t cls) {
  hl_assert(c != tp->head[cls].from && c->free[cls] != HL_OWN_NONE);
  hl_chunk *q = tp->head[cls].queue;
  c->q[cls].next = q;
  c->q[cls].prev = NULL;
  if (q) q->q[cls].prev = c;
  else tp->head[cls].bump_in = NULL;
  tp->head[cls].queue = c;
}

static inline void hl_chunk_dequeue(hl_tpool *tp, hl_chunk *c, size_t cls) {
  hl_chunk *n = c->q[cls].next, *p = c->q[cls].prev;
  if (p) p->q[cls].next = n;
  else if ((tp->head[cls].queue = n) == NULL) tp->head[cls].bump_in = tp->cur;
  if (n) n->q[cls].prev = p;
}

/* The allocation list for cls ran dry and a chunk is queued: the first one's list becomes
 * the allocation list, and that chunk the allocating one. */
static inline __attribute__((always_inline)) void hl_tpool_refill(hl_tpool *tp, size_t cls) {
  hl_chunk *q = tp->head[cls].queue, *n = q->q[cls].next;
  hl_assert(tp->head[cls].free == NULL && q->free[cls] != HL_OWN_NONE && q->q[cls].prev == NULL);
  hl_assert(atomic_load_explicit(&q->owner, memory_order_relaxed) == tp && q->in_use);
  tp->head[cls].queue = n;
  if (n) n->q[cls].prev = NULL;
  else tp->head[cls].bump_in = tp->cur;
  hl_free_slot *list = q->free[cls];
  q->free[cls] = HL_OWN_NONE;
  hl_chunk_set_allocating(tp, cls, q);
  tp->head[cls].free = list;
}

/* c's owner, read by the owner thread itself where it is needed (nobody else writes it
 * while the thread owns c): the free fast path needs the pool only on its rarer ways (an
 * emptied chunk, a first slot on an empty list), and a plain read GCC hoisted onto every
 * free. */
static inline __attribute__((always_inline)) hl_tpool *hl_chunk_owner_late(const hl_chunk *c) {
  hl_tpool *tp;
#if defined(__x86_64__)
  __asm__ volatile("movq %1, %0" : "=r"(tp) : "m"(c->owner));
#else
  tp = atomic_load_explicit(&c->owner, memory_order_relaxed);
#endif
  return tp;
}
/* tp, or with late (a constant at each caller) c's owner read only where used */
#define HL_TP_OF(tp, c, late) ((late) ? hl_chunk_owner_late(c) : (tp))

/* Pushes the free slot p (in chunk c, of class cls) onto the list it belongs to: the
 * allocation list when c is the allocating chunk, else c's own (queueing c if that was
 * empty). sized: check for a slot freed twice in a row (the head of that list), which a
 * sized delete, reading no size map, otherwise would not catch. Returns 0 on that, -1 for
 * class 0 (no object there: only free's fast path passes it), else 1. entry: what the slot
 * keeps for the pop (hl_free_slot.entry). */
static inline __attribute__((always_inline)) int hl_slot_push_l(hl_tpool *tp, hl_chunk *c, size_t cls, void *p,
                                                               int sized, int late, uint8_t *entry) {
  hl_free_slot *s = p;
  hl_assert(entry == (sized ? (uint8_t *)p : hl_sizemap_entry(c, p)));
  hl_assert((c->push[cls] == &HL_TP_OF(tp, c, late)->head[cls].free) == (c == HL_TP_OF(tp, c, late)->head[cls].from));
  hl_assert(c->push[cls] == &HL_TP_OF(tp, c, late)->head[cls].free || c->push[cls] == &c->free[cls]);
  hl_free_slot **list = c->push[cls];
#if defined(__x86_64__)
  /* one load with the array's offset as displacement, where GCC added cls + 8 in an lea
   * first; the array is named as the asm's memory input, so that GCC orders it after
   * hl_chunk_set_allocating's stores (adopt's loop pushes many) */
  __asm__("movq %c2(%1,%3,8), %0"
          : "=r"(list)
          : "r"(c), "i"(offsetof(hl_chunk, push)), "r"(cls), "m"(*(struct hl_free_slot **const(*)[HL_NCLASSES])c->push));
#endif
  hl_free_slot *head = *list;
  if (sized && HL_UNLIKELY(head == s)) return 0;
  /* before the test: stored next to s->next, GCC merged the two into one SSE store (4
   * instructions for 2). An invalid free (class 0, below) writes it too, then aborts. */
  s->entry = entry;
  if (HL_LIKELY(head != HL_OWN_NONE)) {
    /* the allocation list (empty or not), or c's own list with slots on it */
    s->next = head;
    *list = s;
  } else {
    /* c's own list gets its first slot: c becomes the allocating chunk when the allocation
     * list is dry, so that the next allocation takes this slot without a queue and a
     * refill (this is also how a chunk that bumped becomes the allocating one: a
     * back-to-back pair's free; after the first, every pair stays on the fast paths, and
     * the bump does not write from[cls], one store on every bump); else c is queued. tp is
     * read only here. */
    hl_assert(list == &c->free[cls]);
    /* class 0, no object starts in the granule: free's fast path leaves that test to this
     * way (every chunk's push[0] is its own list 0, which stays HL_OWN_NONE) */
    if (HL_UNLIKELY(cls == 0)) return -1;
    tp = HL_TP_OF(tp, c, late);
    s->next = NULL;
    if (tp->head[cls].free == NULL) {
      hl_chunk_set_allocating(tp, cls, c);
      /* apart: GCC merged this store with set_allocating's of `from` into one SSE store and
       * built the pair on the sized delete's fast path (3 instructions) */
      __asm__ volatile("" ::: "memory");
      tp->head[cls].free = s;
    } else {
      c->free[cls] = s;
      hl_chunk_enqueue(tp, c, cls);
    }
  }
  return 1;
}
static inline __attribute__((always_inline)) int hl_slot_push(hl_tpool *tp, hl_chunk *c, size_t cls, void *p,
                                                             int sized) {
  return hl_slot_push_l(tp, c, cls, p, sized, 0, sized ? (uint8_t *)p : hl_sizemap_entry(c, p));
}

/* Fresh space of a plan's group (tp->interleave) in chunk c (bump_in: the current one):
 * its bump pointer, whatever the class, so that objects allocated together lie together,
 * as HALO's group allocator places them. NULL: the chunk is full. */
static inline __attribute__((always_inline)) void *hl_tpool_bump_interleaved(hl_tpool *tp, hl_chunk *c, uint8_t cls,
                                                                            size_t size) {
  char *b = c->bump;
  if (b == NULL) __builtin_unreachable(); /* a chunk's bump pointer: the caller need not test */
  /* a 16-multiple class after an odd-multiple one: 8 bytes of padding (as alloc.c's
   * has_room; through the slow path it cost about 200 instructions) */
  if (HL_UNLIKELY((uintptr_t)b & 8) && !hl_slot_aligned((uintptr_t)b, cls)) b += 8;
  if (HL_UNLIKELY((size_t)(c->end - b) < hl_class_size[cls])) return NULL;
  if ((uintptr_t)b <= 1) __builtin_unreachable(); /* no HL_FORWARD (fastpath.h): callers' tests fold */
  c->bump = b + hl_class_size[cls];
  hl_chunk_sizemap(c)[((uintptr_t)b - (uintptr_t)c) >> HL_GRANULE_SHIFT] = cls;
  c->live++;
  if (HL_UNLIKELY(tp->counting)) {
    tp->allocs++;
    tp->bytes_requested += size;
    tp->slot_bytes += hl_class_size[cls];
  }
  return b;
}

/* The allocation fast path: the most recently freed slot of the class, else (no chunk
 * queued for it) the next slot of the class's span, or in a plan's group the current
 * chunk's bump pointer; NULL when none is there (then hl_tpool_alloc_slow). It
 * calls nothing, so the entry points that inline it need no saved registers. */
static inline __attribute__((always_inline)) void *hl_tpool_try_alloc(hl_tpool *tp, size_t size) {
  uint8_t cls = hl_size_class_in(tp->classes, size);
  hl_free_slot *obj = tp->head[cls].free;
  if (obj != NULL) {
    hl_chunk *oc = hl_chunk_of(obj);
    hl_slot_take(tp, cls, obj, oc);
    oc->live++;
    if (HL_UNLIKELY(tp->counting)) { /* nothing reads the counters otherwise (hl_tpool) */
      tp->allocs++;
      tp->bytes_requested += size;
      tp->slot_bytes += hl_class_size[cls];
    }
    return obj;
  }
  /* cur, unless a chunk is queued for cls: its slots first (the slow path takes its list) */
  hl_chunk *c = tp->head[cls].bump_in;
  hl_assert(c == (tp->head[cls].queue ? NULL : tp->cur));
  if (HL_UNLIKELY(c == NULL)) return NULL;
  if (HL_UNLIKELY(tp->interleave)) return hl_tpool_bump_interleaved(tp, c, cls, size);
  /* the class's span (an empty one, NULL to NULL, has no room) */
  char *b = tp->span_bump[cls];
  if (HL_LIKELY((size_t)(tp->span_end[cls] - b) >= hl_class_size[cls])) {
    hl_chunk *sc = tp->span_chunk[cls];
    hl_assert(sc == hl_chunk_of(b));
    hl_assert(sc->magic == HL_CHUNK_MAGIC && sc->in_use && sc->pool == tp->pool);
    tp->span_bump[cls] = b + hl_class_size[cls];
    hl_chunk_sizemap(sc)[((uintptr_t)b - (uintptr_t)sc) >> HL_GRANULE_SHIFT] = cls;
    sc->live++;
    if (HL_UNLIKELY(tp->counting)) {
      tp->allocs++;
      tp->bytes_requested += size;
      tp->slot_bytes += hl_class_size[cls];
    }
    return b;
  }
  return NULL;
}

static inline void *hl_tpool_alloc(hl_tpool *tp, size_t size) {
  void *p = hl_tpool_try_alloc(tp, size);
  return HL_LIKELY(p != NULL) ? p : hl_tpool_alloc_slow(tp, hl_size_class_in(tp->classes, size), size);
}

/* ---- stack walking (unwind.c) ---- */
/* A frame as seen from its callee: the return address into it and the stack and frame
 * pointers it will have when the call returns. */
typedef struct hl_frame {
  uintptr_t pc, sp, bp;
} hl_frame;

/* The frame of the caller of an exported entry point, from that entry point's own frame
 * pointer (entry points are compiled with frame pointers). */
static inline hl_frame hl_caller_frame(void *const *fp) {
  hl_frame f = {(uintptr_t)fp[1], (uintptr_t)(fp + 2), (uintptr_t)fp[0]};
  return f;
}
/* How to find the caller's frame from a frame at some pc: the CFA is rsp or rbp plus
 * cfa_off, the return address is at CFA-8, rbp was saved at CFA+rbp_off (if rbp_saved). */
typedef struct hl_step_rule {
  int32_t cfa_off, rbp_off;
  int8_t cfa_reg;  /* 7 rsp, 6 rbp, -1: unknown (the walk stops) */
  int8_t rbp_saved;
} hl_step_rule;

/* A recorded stack walk: the rule of each step and the return address it reached. Which
 * frames a walk collects is a function of the return addresses it meets (rules, skipped
 * modules and repeats are all per pc), so a walk that reaches the same return addresses
 * again collects the same frames: replaying the steps and comparing the addresses
 * replaces the rule lookups. Not replayable: a walk that ended on a failed stack check,
 * used an uncached rule, or went on past the walk's own limit (HL_WALK_MAX_STEPS).
 * A trace holds as many steps as a walk may take: with room for 12, walks through a
 * recursion to the frame beyond it were never recorded, and 11% of sqlite3's allocations
 * under its halo plan walked in full (1% with 64; docs/results.md section 20). 1.5 KiB per
 * recorded walk, 64 of them per thread (HL_PLAN_CHAIN_SETS x HL_PLAN_CHAIN_WAYS). */
#define HL_WALK_MAX_STEPS 64
#define HL_TRACE_STEPS HL_WALK_MAX_STEPS
typedef struct hl_trace_step {
  hl_step_rule rule;
  uintptr_t pc;
} hl_trace_step;
typedef struct hl_trace {
  uint8_t nsteps, replayable;
  hl_trace_step step[HL_TRACE_STEPS];
} hl_trace;

unsigned hl_unwind_collect(hl_frame *f, uintptr_t *out, unsigned want, hl_trace *tr);
/* The same walk taken one collected frame at a time, for a caller that can stop as soon as
 * the frames so far decide (PreFix: prefix.c). hl_unwind_collect is this walk run until it
 * has `want` frames, so both collect the same frames in the same steps. */
#define HL_WALK_MAX_FRAMES 16u /* frames one walk collects at most (a plan rule has up to 16) */
typedef struct hl_walk {
  hl_frame f;            /* the frame the walk stands at */
  const void *rule;      /* the unwinder's cached rule at f.pc, once f was looked at */
  uintptr_t *out;        /* the frames collected: out[0..n) */
  hl_trace *tr;          /* NULL, or the steps appended as hl_unwind_collect records them */
  unsigned n, steps;
  uint8_t looked, ended;
  uintptr_t fns[HL_WALK_MAX_FRAMES]; /* the collected frames' functions (`recursion function`) */
} hl_walk;
void hl_walk_start(hl_walk *w, hl_frame f, uintptr_t *out, hl_trace *tr);
int hl_walk_next(hl_walk *w); /* 1: out[n - 1] is a new frame; 0: the walk ended */

/* A rule naming a chain of return addresses, innermost first: the plan's select rules
 * (plan.c) and PreFix's prefix_select rules (prefix.c). Sorted by hl_frame_rule_before (in
 * the order of their frames, a rule before the longer ones it begins), the rules that share
 * a chain's first k frames are one run, which hl_frame_rules_narrow narrows by frame k. */
typedef struct hl_frame_rule {
  union {
    uint16_t group; /* plan.c: 0 ungrouped (a longer chain that must not be grouped) */
    uint16_t site;  /* prefix.c: 0 not a PreFix site */
  };
  uint8_t nframes;
  uintptr_t frames[HL_WALK_MAX_FRAMES]; /* absolute return addresses */
} hl_frame_rule;
int hl_frame_rule_before(const void *a, const void *b); /* plan.c */
/* The rules in [*lo, *hi) share frames 0..k-1 and are longer than k: keeps those whose
 * frame k is pc (two binary searches). */
static inline void hl_frame_rules_narrow(const hl_frame_rule *r, unsigned k, uintptr_t pc, uint32_t *lo,
                                         uint32_t *hi) {
  uint32_t a = *lo, b = *hi;
  while (a < b) { /* the first rule with frames[k] >= pc */
    uint32_t m = a + (b - a) / 2;
    if (r[m].frames[k] < pc) a = m + 1;
    else b = m;
  }
  uint32_t c = a, d = *hi;
  while (c < d) { /* the first rule with frames[k] > pc */
    uint32_t m = c + (d - c) / 2;
    if (r[m].frames[k] <= pc) c = m + 1;
    else d = m;
  }
  *lo = a;
  *hi = c;
}
void hl_unwind_rule(uintptr_t pc, hl_step_rule *out); /* the cached rule at pc */
int hl_unwind_function_bounds(uintptr_t pc, uintptr_t *lo, uintptr_t *hi); /* dpa: pc's function's code */

#define HL_REG_RBP 6
#define HL_REG_RSP 7

/* One step from *f by rule r (the rule at f->pc): *f becomes the caller's frame. 0 when the
 * walk cannot go on: no rule, a CFA that is not above sp on the same stack, or no pc. */
static inline int hl_unwind_step_by(hl_frame *f, const hl_step_rule *r) {
  if (r->cfa_reg < 0) return 0;
  uintptr_t cfa = (r->cfa_reg == HL_REG_RSP ? f->sp : f->bp) + (uintptr_t)(intptr_t)r->cfa_off;
  if (cfa - f->sp - 1 >= (1u << 20) || (cfa & 7)) return 0;
  if (r->rbp_saved) f->bp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r->rbp_off);
  f->pc = *(const uintptr_t *)(cfa - 8);
  f->sp = cfa;
  return f->pc >= 4096;
}

/* One step by a rule that stepped from the same return address before (a recorded
 * walk's, or one the chain cache took from it): an rsp-based CFA passed the stack check
 * then with the same offset; only an rbp-based one depends on data and is checked again. */
static inline __attribute__((always_inline)) int hl_unwind_step_recorded(hl_frame *f, const hl_step_rule *r) {
  uintptr_t cfa;
  if (r->cfa_reg == HL_REG_RSP) {
    cfa = f->sp + (uintptr_t)(intptr_t)r->cfa_off;
  } else {
    cfa = f->bp + (uintptr_t)(intptr_t)r->cfa_off;
    if (cfa - f->sp - 1 >= (1u << 20) || (cfa & 7)) return 0;
  }
  if (r->rbp_saved) f->bp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r->rbp_off);
  f->pc = *(const uintptr_t *)(cfa - 8);
  f->sp = cfa;
  return 1;
}

/* Replays tr's steps from `from` on frame *f: 1 when every step reaches the return address
 * it reached when tr was recorded, so a walk from here would collect the same frames. */
static inline int hl_unwind_replay(hl_frame *f, const hl_trace *tr, unsigned from) {
  hl_frame g = *f;
  for (unsigned k = from; k < tr->nsteps; k++)
    if (!hl_unwind_step_recorded(&g, &tr->step[k].rule) || g.pc != tr->step[k].pc) return 0;
  return 1;
}
void hl_unwind_set_skip(int (*is_skip)(uintptr_t pc));
void hl_unwind_set_collapse_functions(int on); /* the plan's `recursion function` record */
void hl_unwind_refresh_modules(void);
/* Code unloaded (unload.c): the modules that went away, and forgetting their rules. */
typedef struct hl_code_range { uintptr_t lo, hi; } hl_code_range;
unsigned hl_unwind_modules_unloaded(hl_code_range *gone, unsigned max);
void hl_unwind_forget(uintptr_t lo, uintptr_t hi);
void hl_unwind_fork(int take);
void hl_heaps_forget_code(void); /* every thread's caches of sites and chains (heap.c) */
void hl_code_unloaded(void);     /* after a dlclose (unload.c) */
void hl_plan_code_unloaded(void); /* plan modules that went away are pending again (plan.c) */

/* ---- per-thread state (heap.c) ----
 * A thread's caches and thread-pools live in its heap, memory the runtime maps (or takes
 * from an exited thread) on the thread's first allocation under a placing policy; static
 * TLS is the heap pointer and two flags. Static TLS is carved out of every thread's
 * stack: 36.5 KiB of caches there made pthread_create fail for 16 and 32 KiB stacks. */

/* Per-thread cache of allocation sites, direct-mapped by return address (fastpath.h).
 * 1024 slots: programs with hundreds of allocation sites (cppcheck 390, yosys 661, gcc
 * 1,226) evicted each other's entries from 256 (a slot per KiB of code), and every
 * eviction costs a slow-path visit: under dpa, cppcheck's measuring run took 129k of them
 * with 256 slots, 34k with 1024 (docs/results.md section 26). 32 KiB per thread heap. */
#define HL_SITE_CACHE_SLOTS 1024u
typedef struct hl_site_cache_entry {
  uintptr_t ra;     /* 0: empty (no return address is 0) */
  hl_tpool *tp;     /* NULL: not pooled; HL_TP_WALK: the plan needs a stack walk here */
  /* The site-direct fast path (fastpath.h, hl_site_direct_pop): a request of exactly
   * `size` bytes pops the head of *list, tp's free list for the class of that size (the
   * size the site asked for last). Entries that walk or count statistics point list at
   * hl_no_slot, an always-empty list, so the pop misses without a test; a site not pooled, while nothing is counted, at hl_forward_slot
   * (another) with size SIZE_MAX, so that its requests forward from the pop's first miss. */
  size_t size;
  struct hl_free_slot **list;
} hl_site_cache_entry;
/* The two always-empty lists (never written: the pop writes a list only after it found a
 * slot on it). Each is a class record as a pool's are (free, from, queue, bump_in), all
 * NULL, so that the site-direct bump finds no chunk to bump in without testing which list
 * it has (6 instructions on every bump). */
extern struct hl_class_head hl_empty_lists[2];
#define hl_no_slot (hl_empty_lists[0].free)
#define hl_forward_slot (hl_empty_lists[1].free)
#define HL_TP_WALK ((hl_tpool *)1)

/* Per-thread cache of the plan's decided call chains (fastpath.h, hl_chain_try): 64 KiB
 * per thread, a node per decided prefix of a chain (see HL_CHAIN_FAST_STEPS). */
#define HL_CHAIN_NODE_BITS 11u
#define HL_CHAIN_NODES (1u << HL_CHAIN_NODE_BITS)
typedef struct hl_chain_node {
  uint64_t key;       /* the chain's key (hl_chain_next); 0: empty (a key is 0 by chance only) */
  hl_tpool *tp;       /* the answer (NULL: not pooled), or HL_TP_WALK: one frame more */
  union {
    hl_step_rule rule; /* with HL_TP_WALK: how to step from this chain's outermost frame */
    /* with an answer: the chain-direct pop (fastpath.h, hl_chain_pop), as a site entry's
     * size and list: a request of exactly `size` bytes pops the head of *list, tp's free
     * list for its class (size UINT32_MAX and hl_no_slot: never; hl_chain_node_answer) */
    struct {
      uint32_t size;
      struct hl_free_slot **list;
    } direct;
  };
} hl_chain_node;
_Static_assert(sizeof(hl_chain_node) == 32, "chain nodes stay 32 bytes");

/* Per-thread recorded walks of the plan policy (plan.c, hl_plan_pool_walk). */
#define HL_PLAN_CHAIN_SETS 16u
#define HL_PLAN_CHAIN_WAYS 4u
typedef struct hl_plan_chain_entry {
  uintptr_t ra; /* frame 0; 0 empty. trace.step[0].pc is the rest of the key */
  uint16_t pool;
  uint8_t deciding_steps; /* the first steps of trace that decide (0: not known) */
  hl_trace trace;
} hl_plan_chain_entry;
/* A walk's stable answer (plan.c, "speculation"): for one (return address, caller) key,
 * the answer its last walks agreed on, given without walking `budget` more times. */
typedef struct hl_plan_speculation {
  uintptr_t ra, caller;   /* the key; ra 0: none */
  uint16_t pool;          /* the answer the walks agreed on */
  uint16_t budget;        /* decisions left before the next walk checks it */
  uint16_t next_budget;   /* budget after the next agreeing walk (doubles, HL_SPEC_MAX_BUDGET) */
  uint8_t agreed;         /* consecutive agreeing walks, up to HL_SPEC_MIN_AGREED */
  uint8_t unstable;       /* the answer changed too often: never speculate on this key */
  uint16_t changes;       /* walks that disagreed */
} hl_plan_speculation;
typedef struct hl_plan_chain_set {
  hl_plan_chain_entry way[HL_PLAN_CHAIN_WAYS];
  unsigned next; /* round-robin victim */
} hl_plan_chain_set;
/* Speculation slots, direct-mapped by key: a program has hundreds of walk sites. With one
 * slot per chain set (16), keys evicted each other, and an evicted key forgot that its
 * answer was unstable, so it speculated again where it should not (cppcheck: 858k
 * speculated decisions with 16 slots, 583k with 256, placement 12.4% vs 12.2%). */
#define HL_PLAN_SPEC_SLOTS 256u

/* Per-thread cache of PreFix's identified chains (prefix.c, site_of), as the plan's chain
 * cache (hl_chain_node) with a PreFix site for the answer: a node per return address met
 * on the way to the step that decided, keyed by the hash of the return addresses up to it
 * (hl_chain_key), two ways per slot. A PreFix plan names every profiled context, so its
 * chains are many more than a HALO plan's walk sites: on yosys's training input (5,922
 * rules) the runtime executed 2,249M instructions with 2,048 nodes, 2,093M with 8,192 and
 * 2,024M with 32,768 (mimalloc alone 1,165M; docs/results.md section 29). 8,192 nodes
 * are 192 KiB per heap, touched only under a PreFix plan. */
#define HL_PREFIX_NODE_BITS 13u
#define HL_PREFIX_NODES (1u << HL_PREFIX_NODE_BITS)
typedef struct hl_prefix_node {
  uint64_t key;      /* 0: empty */
  hl_step_rule rule; /* not decided: how to step from this node's return address */
  uint16_t site;     /* decided: the site (0: not a PreFix site) */
  uint8_t decided;
} hl_prefix_node;

/* A heap outlives its thread: when the thread exits, its chunks are released or abandoned
 * (owner NULL), its caches are cleared, and the heap with its thread-pools (and their
 * statistics) goes to a free list; the next thread that needs a heap takes it, so memory
 * is bounded by the peak number of live threads. Heaps are never unmapped: another thread
 * may still read tp->heap of a chunk owner it loaded before the owner exited; that heap is
 * not the reader's own, so the reader takes the remote path. */
struct hl_heap {
  hl_site_cache_entry sites[HL_SITE_CACHE_SLOTS];
  hl_step_rule site_rules[HL_SITE_CACHE_SLOTS]; /* of sites[i] with HL_TP_WALK: the unwind rule at its ra, the walk's first step */
  hl_chain_node chain_nodes[HL_CHAIN_NODES];
  hl_plan_chain_set plan_chains[HL_PLAN_CHAIN_SETS];
  hl_plan_speculation plan_spec[HL_PLAN_SPEC_SLOTS];
  hl_trace walk_trace;            /* the walk in progress (plan.c): 1.5 KiB, off the program's stack */
  hl_prefix_node prefix_nodes[HL_PREFIX_NODES];
  uint64_t plan_speculated;       /* decisions given by plan_spec without a walk (statistics) */
  struct hl_heap *next_heap;      /* registry of every heap made, for statistics */
  struct hl_heap *next_free;      /* free list of heaps whose thread exited */
  hl_tpool *tpool_list;           /* every thread-pool of tpools[], linked by next_in_heap */
  hl_tpool *tpools[HL_MAX_POOLS]; /* by pool id, created on first use; kept when recycled */
};

/* Return address bits 2..9, computed as the entry's byte offset: a multiply by 8 (one lea,
 * which also copies the address) and a mask. Bits 1..8 took a copy, a shift and a mask (one
 * instruction more on every malloc); only two calls 2 bytes apart tell apart by bit 1
 * alone, and calls are usually 5 bytes (hashing in the higher bits as well cost two
 * instructions more on every malloc). */
_Static_assert(sizeof(hl_site_cache_entry) == 32, "hl_site_entry computes offsets of 32-byte entries");
static inline hl_site_cache_entry *hl_site_entry(hl_heap *h, uintptr_t ra) {
  uintptr_t off = (ra * 8) & ((uintptr_t)(HL_SITE_CACHE_SLOTS - 1) << 5);
  return (hl_site_cache_entry *)((char *)h->sites + off);
}
static inline hl_step_rule *hl_site_rule(hl_heap *h, const hl_site_cache_entry *e) {
  return &h->site_rules[e - h->sites];
}

/* The free path for our objects: the owner thread pushes the slot on its chunk's list for
 * the class, or on the allocation list when the chunk is the one the pool allocates from
 * (hl_slot_push: the most recently freed is reused first); other threads use the chunk's
 * remote list. Statistics count frees here; an emptied chunk goes out of line.
 *
 * A plain free checks the slot's size-map entry, which it reads for the class anyway: 0
 * means no object starts in that granule (a pointer into an object or into free space),
 * HL_SIZEMAP_FREE a slot already freed (set here, cleared when the slot is allocated
 * again); either aborts as glibc does (hl_free_invalid). A sized delete does not read the
 * size map (a cache line on a random delete), so it only catches a slot deleted twice in
 * a row, which is then the head of the list it went to. Remote frees are checked in hl_free_remote
 * and again when the owner collects them. */
void hl_chunk_emptied(hl_tpool *tp, hl_chunk *c);
void hl_free_remote(hl_chunk *c, void *p);
/* hl_free_slot_local with statistics on: counts the free, then does what it does */
void hl_free_slot_counted(hl_tpool *tp, hl_chunk *c, void *p, size_t cls, int sized);
/* entry: the slot's size-map entry (0: not an object, HL_SIZEMAP_FREE set: freed already).
 * It does not return; it is not declared noreturn, so that callers reach it by a jump. */
__attribute__((cold)) void hl_free_invalid(const void *p, uint8_t entry, const char *func);
/* hl_free_invalid for free(p) in c, reading the entry again (chunk.c): free's fast path
 * then keeps no copy of the entry for the call (one instruction) */
__attribute__((cold)) void hl_free_invalid_in(hl_chunk *c, const void *p);
/* the entry is 0 or has HL_SIZEMAP_FREE (classes are below it: the sign bit): no live
 * object starts in the granule */
static inline int hl_sizemap_not_live(uint8_t entry) { return (int8_t)entry <= 0; }
/* One read-modify-write of the byte: in C, GCC keeps the loaded byte, ors it and stores it
 * (two instructions more on every free). */
static inline void hl_sizemap_mark_free(uint8_t *entry) {
#if defined(__x86_64__)
  __asm__("orb %1, %0" : "+m"(*entry) : "i"(HL_SIZEMAP_FREE));
#else
  *entry |= HL_SIZEMAP_FREE;
#endif
}
/* Flips the entry's double-free mark in one read-modify-write: 1 when the mark was set
 * (the slot was free: a double free), the answer from the flags of the xor (the sign of
 * the new byte). */
static inline __attribute__((always_inline)) int hl_sizemap_toggle_free(uint8_t *entry) {
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  int was_free;
  __asm__("xorb %2, %0" : "+m"(*entry), "=@ccns"(was_free) : "i"(HL_SIZEMAP_FREE));
  return was_free;
#else
  *entry ^= HL_SIZEMAP_FREE;
  return !(*entry & HL_SIZEMAP_FREE);
#endif
}
/* The owner's free of slot p of class cls in chunk c (sized: a sized delete, see
 * hl_slot_push). */
static inline __attribute__((always_inline)) void hl_free_slot_local(hl_tpool *tp, hl_chunk *c, void *p, size_t cls,
                                                                   int may_count, int sized, int late,
                                                                   uint8_t *entry) {
  hl_assert(cls < HL_NCLASSES && c->live > 0);
  if (may_count && HL_UNLIKELY(tp->counting)) { /* statistics: counted out of line, by a tail call */
    hl_free_slot_counted(tp, c, p, cls, sized);
    return;
  }
  int pushed = hl_slot_push_l(tp, c, cls, p, sized, late, entry);
  if (HL_UNLIKELY(pushed <= 0)) {
    if (!sized && pushed < 0) { /* no object starts there (free's fast path marked it) */
      hl_sizemap_toggle_free(entry);
      hl_free_invalid_in(c, p);
    } else {
      hl_free_invalid(p, HL_SIZEMAP_FREE, "free");
    }
    return;
  }
  /* the current chunk of a one-chunk pool stays as it is: nothing to do out of line */
  if (HL_UNLIKELY(--c->live == 0)) {
    hl_assert(c->stays == (c == HL_TP_OF(tp, c, late)->cur && !HL_TP_OF(tp, c, late)->multi));
    if (!c->stays) hl_chunk_emptied(HL_TP_OF(tp, c, late), c);
  }
}

/* The owner's free of p in c, of size bytes (0: not known; see hl_free_ours_sized).
 * may_count 0: the caller knows tp does not count statistics (owner_thread was set). */
static inline __attribute__((always_inline)) void hl_free_owned(hl_tpool *tp, hl_chunk *c, void *p, size_t size,
                                                              int may_count) {
  /* late: tp is read where needed (hl_chunk_owner_late); only a sized free needs it at once */
  int late = tp == NULL;
  hl_assert(c->magic == HL_CHUNK_MAGIC && c->in_use);
  /* cls is a size_t: as a uint8_t GCC sign-extends it for every index (one more instruction) */
  if (size - 1 < HL_MAX_CLASS_SIZE) {
    if (late) tp = hl_chunk_owner_late(c);
    size_t cls = hl_size_class_in(tp->classes, size);
    hl_assert(cls == hl_class_at(c, p));
    hl_free_slot_local(tp, c, p, cls, may_count, 1, 0, (uint8_t *)p);
  } else {
    uint8_t *entry = hl_sizemap_entry_used(c, p);
    size_t cls = *entry;
    if (late && !may_count) {
      /* free's own way: the mark toggled, a double free seen in its flags (one test where
       * a test of the entry and a mark took two more instructions); an entry of 0 (no
       * object there) is found by the push (its class 0's list, hl_slot_push_l) */
      if (HL_UNLIKELY(hl_sizemap_toggle_free(entry))) {
        hl_sizemap_toggle_free(entry); /* as it was, for the message */
        hl_free_invalid_in(c, p);
        return;
      }
    } else {
      if (HL_UNLIKELY(hl_sizemap_not_live((uint8_t)cls))) {
        hl_free_invalid_in(c, p);
        return;
      }
      hl_sizemap_mark_free(entry);
    }
    hl_free_slot_local(tp, c, p, cls, may_count, 0, late, entry);
  }
}
/* A free whose chunk's owner_thread is not the calling thread: another thread's chunk
 * (remote), an abandoned one, or the thread's own while statistics are counted. */
void hl_free_other(hl_chunk *c, void *p, size_t size);
/* size: the object's size when the caller knows it (a sized delete), else 0; the class is
 * then computed, not read from the chunk's size map (for a random free, one more cache
 * line). Each way has its own copy of the rest, and a bad free leaves by a tail call, so
 * that the entry points stay leaf functions without a frame. Only the owner thread ever
 * finds itself in owner_thread (it wrote it), so a relaxed load decides. */
static inline __attribute__((always_inline)) void hl_free_ours_sized(void *p, size_t size) {
  hl_chunk *c = hl_chunk_of_ours(p);
  hl_assert(c == hl_chunk_of(p));
  uintptr_t ot = atomic_load_explicit(&c->owner_thread, memory_order_relaxed);
  if (HL_UNLIKELY(ot != hl_thread_self())) {
    /* another live thread's chunk (this thread would have found itself there): straight
     * to the remote list, without hl_free_other's second look at the owner (about 10
     * instructions per remote free) */
    if (ot != 0) hl_free_remote(c, p);
    else hl_free_other(c, p, size);
    return;
  }
  /* NULL: c->owner (written by this thread only, while it owns c) is read on the ways that
   * need the pool, not on every free (hl_chunk_owner_late) */
  hl_free_owned(NULL, c, p, size, 0);
}
static inline __attribute__((always_inline)) void hl_free_ours_inline(void *p) { hl_free_ours_sized(p, 0); }

/* ---- placement policies (policy.c) ---- */
/* Pool id for an allocation of `size` bytes made from return address `ra`; 0: forward. */
uint16_t hl_callsite_pool(uintptr_t ra, size_t size);
uint16_t hl_pool_id_new(void);       /* 0 when ids are exhausted */
uint32_t hl_pool_count(void);
uintptr_t hl_pool_site(uint16_t pool);
void hl_pool_set_site(uint16_t pool, uintptr_t site);
uint16_t hl_pool_group(uint16_t pool);              /* plan group of a pool, 0 if none */
void hl_pool_set_group(uint16_t pool, uint16_t group);

/* plan (plan.c) */
int hl_plan_load(const char *path);                 /* 0: refused (and said why) */
/* The pool of the group an allocation whose caller frame is f belongs to, or 0.
 * *needs_walk 0: the return address alone decided (cache the answer per return address);
 * 1: this return address needs a stack walk every time (call hl_plan_pool_walk). */
uint16_t hl_plan_pool(hl_frame f, int *needs_walk);
/* r0: the rule at f.pc. *steps > 0: the first *steps steps of *decided (a recorded walk,
 * valid until the thread's next walk) decide, so every chain through the same return
 * addresses gets the same answer. */
uint16_t hl_plan_pool_walk(hl_frame f, const hl_step_rule *r0, const hl_trace **decided, unsigned *steps);
uint32_t hl_plan_groups(void);
uint32_t hl_plan_group_max_size(void);
int hl_plan_group_packed(uint16_t group); /* the plan packs the group (size_class.c) */
int hl_plan_group_spans(uint16_t group);  /* the group carves spans per size class (heap.c) */
unsigned hl_plan_group_line(uint16_t group); /* bytes into a cache line the group's fresh space starts */
unsigned hl_pool_line_off(uint16_t pool);   /* the same for a pool (0 but for a plan's groups; size_class.c) */
int hl_plan_pc_skipped(uintptr_t pc);     /* pc lies in a module the plan's walks skip */

/* PreFix (prefix.c, docs/prefix.md): the plan's preallocated region and its slots */
struct hl_plan_spec;
struct hl_plan_rule_spec;
struct hl_plan_slot_spec;
extern int hl_prefix_on; /* a region exists: set once, at plan load */
int hl_prefix_load(const struct hl_plan_spec *spec, const struct hl_plan_rule_spec *prules,
                   const struct hl_plan_slot_spec *slots, uint32_t *owner, const uintptr_t *bias,
                   const uint8_t *loaded);
void *hl_prefix_alloc(size_t size, void *const *fp);  /* the slot of this allocation, or NULL */
void *hl_prefix_try(size_t size, uintptr_t ra);      /* malloc's path for a cached one-frame site */
void hl_prefix_count_realloc(void *const *fp);        /* a moving realloc counts at its site */
int hl_prefix_first_frame(uintptr_t pc);  /* a rule of a site whose counter may still place starts at pc */
int hl_prefix_live(void);                 /* some counter may still place */
int hl_prefix_owns(const void *p);        /* p lies in the region (0 without one) */
typedef struct hl_prefix_stats_t {
  uint64_t region_bytes, slots, taken, refused_site, refused_size, refused_busy, refused_thread, cut, freed, moved,
      reallocs, walks;
} hl_prefix_stats_t;
void hl_prefix_stats(hl_prefix_stats_t *out);

/* reserved pool ids */
#define HL_POOL_NONE 0
#define HL_POOL_CC 1      /* ccmalloc */
#define HL_POOL_API 2     /* explicit pools of pool.h (stats only) */
#define HL_POOL_FIRST_DYNAMIC 3

/* ---- state (init.c) ---- */
typedef struct hl_state {
  _Atomic(int) passthrough; /* policy off and nothing to count: malloc goes straight below */
  _Atomic(int) policy;      /* enum hl_policy; UNINIT until hl_init finished */
  int counting;             /* statistics on (text or JSON): forwarded requests are counted */
  /* malloc_walk pops the chain cache for requests below this: opt.max_size + 1, or 0 with
   * a PreFix region (whose own cache comes first). One compare for the two (init.c): 3
   * instructions on every allocation through a wrapper under dpa. 0 until started. */
  size_t walk_limit;
  hl_options opt;
  _Atomic(uint64_t) forwarded_objects, forwarded_bytes; /* only counted with stats */
  _Atomic(uint64_t) plan_walks;   /* plan decisions that walked the stack (not replayed) */
  _Atomic(uint64_t) plan_replays; /* plan decisions that replayed a recorded walk (not in the chain cache) */
  _Atomic(uint64_t) code_unloads; /* dlcloses that unloaded code whose cached entries were forgotten (unload.c) */
} hl_state_t;

extern hl_state_t hl_state;
extern __thread int hl_in_init;
void hl_init(void);
void hl_ensure_init(void);
static inline int hl_policy(void) {
  int p = atomic_load_explicit(&hl_state.policy, memory_order_relaxed);
  if (HL_UNLIKELY(p == HL_POLICY_UNINIT)) {
    hl_init();
    p = atomic_load_explicit(&hl_state.policy, memory_order_acquire);
  }
  return p;
}

/* ---- entry points shared by interpose.c, new_delete.c, pool_api.c, ccmalloc.c ---- */
/* fp: the exported entry point's frame pointer (fp[1] is the caller's return address) */
void *hl_malloc_from(size_t size, void *const *fp);
#define HL_FRAME ((void *const *)__builtin_frame_address(0))
void hl_free(void *p);
void *hl_memalign_from(size_t align, size_t size, void *const *fp);

/* ---- statistics (stats.c) ---- */
void hl_stats_report(void);
void hl_pool_resident_add(uint16_t pool, long delta); /* sampled at chunk events for the peak */
void hl_stats_add_explicit(const hl_tpool *tp);       /* a pool.h pool is being destroyed */

/* ---- small helpers (util.c) ---- */
void hl_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int hl_format(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#pragma GCC visibility pop

#endif
