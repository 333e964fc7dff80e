/* libhlperturb.so: a layout-perturbation allocator, preloaded to give a program's heap objects a
 * known placement, so that the native run time of the same program under two placements gives
 * differences of known cause to validate the simulator against (issue 26).
 *
 *   HLPERTURB_MODE    order      one bump arena: objects in allocation order (the default)
 *                     sizeclass  one bump arena per size class (16-byte classes up to 1 KiB, then
 *                                powers of two): objects of one size together, apart from others
 *                     random     HLPERTURB_ARENAS bump arenas (default 4), each allocation to one
 *                                of them at random: neighbours in time land in different arenas
 *                     shuffle    allocation order at page granularity, random offsets within a
 *                                4 KiB page (objects up to 1 KiB; larger ones as in order)
 *   HLPERTURB_LINE_OFFSET  0, 16, 32 or 48: where in its 64-byte line each arena's first
 *                     object starts (default 16, where the first object of a fresh glibc heap
 *                     page would); objects of slots that are multiples of 64 bytes all keep it
 *   HLPERTURB_FREE    none       free does nothing (pure bump; the default)
 *                     reuse      freed blocks go on a per-arena, per-class LIFO list for reuse
 *   HLPERTURB_SEED    seed of the random choices (default 1)
 *   HLPERTURB_RESERVE virtual bytes reserved for all arenas, split evenly (default 64G;
 *                     MAP_NORESERVE: only touched pages cost memory)
 *
 * Every block has an 8-byte header just before it (its slot class and arena), as glibc's
 * chunks do, so objects sit at glibc-like density: a request of n bytes takes
 * round16(n + 8) bytes. Pointers that are not ours (the loader's early allocations, or any
 * request when an arena is full) go to the next allocator (dlsym RTLD_NEXT); dlsym's own calloc
 * is served from a static buffer. The program's behaviour is unchanged apart from addresses.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "perturb_tunables.h"

enum mode { MODE_ORDER, MODE_SIZECLASS, MODE_RANDOM, MODE_SHUFFLE };

typedef struct {
  uintptr_t lo, hi; /* reserved range */
  uintptr_t bump;   /* next header address: always 8 mod 16, so the object is 16-aligned */
  void *free_list[PT_CLASSES];
} arena;

/* shuffle mode: the page being filled and which 16-byte granules of it are taken */
typedef struct {
  uintptr_t page; /* 0: none */
  uint64_t used[PT_PAGE / 16 / 64];
} shuffle_page;

static int mode = MODE_ORDER;
static int reuse;
static unsigned narenas = 1;
static arena arenas[PT_MAX_ARENAS];
static uintptr_t range_lo, range_hi; /* all arenas: one reservation */
static uint64_t rng_state = 1;
static shuffle_page spage;
static volatile int inited; /* 0 none, 1 in progress, 2 done, 3 failed (everything goes to the next allocator) */
static volatile int lock_word;

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_realloc)(void *, size_t);
static void *(*next_memalign)(size_t, size_t);
static size_t (*next_usable)(void *);

/* dlsym may call calloc before next_malloc is known: served from here, never freed */
static char boot_buf[PT_BOOT_BYTES] __attribute__((aligned(16)));
static size_t boot_used;
static __thread int in_dlsym __attribute__((tls_model("initial-exec")));

static void lock(void) {
  while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&lock_word, __ATOMIC_RELAXED)) __builtin_ia32_pause();
}
static void unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

static uint64_t rnd(void) { /* xorshift64*: enough to scatter, deterministic per seed */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static uint64_t env_num(const char *name, uint64_t dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end;
  uint64_t v = strtoull(s, &end, 0);
  if (end == s) return dflt;
  if (*end == 'K' || *end == 'k') v <<= 10;
  else if (*end == 'M' || *end == 'm') v <<= 20;
  else if (*end == 'G' || *end == 'g') v <<= 30;
  return v;
}

static void resolve_next(void) {
  in_dlsym = 1;
  next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
  next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  next_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
  next_usable = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
  in_dlsym = 0;
}

static void init(void) {
  /* getenv is safe here: it allocates nothing */
  const char *m = getenv("HLPERTURB_MODE");
  if (!m || !*m || !strcmp(m, "order")) mode = MODE_ORDER;
  else if (!strcmp(m, "sizeclass")) mode = MODE_SIZECLASS;
  else if (!strcmp(m, "random")) mode = MODE_RANDOM;
  else if (!strcmp(m, "shuffle")) mode = MODE_SHUFFLE;
  else {
    static const char msg[] = "libhlperturb: unknown HLPERTURB_MODE (order, sizeclass, random, shuffle); using order\n";
    if (write(2, msg, sizeof msg - 1) < 0) {}
    mode = MODE_ORDER;
  }
  const char *f = getenv("HLPERTURB_FREE");
  reuse = f && !strcmp(f, "reuse");
  rng_state = env_num("HLPERTURB_SEED", 1) * 0x9E3779B97F4A7C15ULL + 1;
  if (!rng_state) rng_state = 1;
  narenas = mode == MODE_RANDOM ? (unsigned)env_num("HLPERTURB_ARENAS", PT_DEFAULT_ARENAS)
            : mode == MODE_SIZECLASS ? PT_CLASSES : 1;
  if (narenas < 1) narenas = 1;
  if (narenas > PT_MAX_ARENAS) narenas = PT_MAX_ARENAS;
  uint64_t per = env_num("HLPERTURB_RESERVE", PT_DEFAULT_RESERVE) / narenas;
  per = (per + PT_PAGE - 1) & ~(uint64_t)(PT_PAGE - 1);
  if (per < PT_PAGE * 16) per = PT_PAGE * 16;
  void *base = MAP_FAILED;
  /* Valgrind's address-space manager refuses very large mappings (64 GiB fails, 32 GiB
   * works): halve until one is granted */
  for (; base == MAP_FAILED && per >= PT_MIN_ARENA; per /= 2)
    base = mmap(0, per * narenas, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  per *= 2; /* undo the loop's last halving */
  if (base == MAP_FAILED) {
    static const char msg[] = "libhlperturb: cannot reserve the arenas; the next allocator serves everything\n";
    if (write(2, msg, sizeof msg - 1) < 0) {}
    inited = 3;
    return;
  }
  range_lo = (uintptr_t)base;
  range_hi = range_lo + per * narenas;
  /* where in its 64-byte cache line each arena's first object starts (16-aligned, as malloc
   * promises); objects whose slots are a multiple of 64 bytes all keep that offset */
  uint64_t line_off = env_num("HLPERTURB_LINE_OFFSET", PT_DEFAULT_LINE_OFFSET);
  if (line_off > 48 || line_off % 16) {
    static const char msg[] = "libhlperturb: HLPERTURB_LINE_OFFSET must be 0, 16, 32 or 48; using 16\n";
    if (write(2, msg, sizeof msg - 1) < 0) {}
    line_off = PT_DEFAULT_LINE_OFFSET;
  }
  for (unsigned i = 0; i < narenas; i++) {
    arenas[i].lo = range_lo + per * i;
    arenas[i].hi = arenas[i].lo + per;
    arenas[i].bump = arenas[i].lo + (line_off ? line_off : 64) - 8;
  }
  inited = 2;
}

/* slot class: 16-byte steps up to PT_SMALL_MAX, then powers of two */
static unsigned class_of(size_t slot) {
  if (slot <= PT_SMALL_MAX) return (unsigned)(slot / 16) - 1;
  unsigned c = PT_SMALL_MAX / 16 - 1, s = PT_SMALL_MAX;
  while (s < slot && c < PT_CLASSES - 1) s <<= 1, c++;
  return c;
}
static size_t class_size(unsigned c) {
  if (c < PT_SMALL_MAX / 16) return (size_t)(c + 1) * 16;
  return (size_t)PT_SMALL_MAX << (c - (PT_SMALL_MAX / 16 - 1));
}

/* header: class in bits 0..7, arena in 8..15, the magic above */
static inline uint64_t make_header(unsigned cls, unsigned a) { return PT_MAGIC << 16 | (uint64_t)a << 8 | cls; }
static inline int ours(const void *p) {
  uintptr_t u = (uintptr_t)p;
  return u - range_lo < range_hi - range_lo;
}
static inline uint64_t header_of(const void *p) { return ((const uint64_t *)p)[-1]; }

/* shuffle mode: a free run of `g` granules at a random offset of the current page, or 0 */
static uintptr_t shuffle_take(unsigned g) {
  const unsigned n = PT_PAGE / 16;
  for (int attempt = 0; attempt < 2; attempt++) {
    if (spage.page) {
      unsigned start = (unsigned)(rnd() % n);
      for (unsigned k = 0; k < n; k++) {
        unsigned s = (start + k) % n;
        if (s + g > n - 1) continue; /* a block ends 8 bytes into the granule after its last */
        unsigned j = 0;
        while (j < g && !(spage.used[(s + j) / 64] >> ((s + j) % 64) & 1)) j++;
        if (j < g) continue;
        for (j = 0; j < g; j++) spage.used[(s + j) / 64] |= 1ULL << ((s + j) % 64);
        return spage.page + (uintptr_t)s * 16 + 8; /* header address */
      }
    }
    /* a fresh page from the arena's bump; the granules start 8 bytes before the objects */
    arena *a = &arenas[0];
    uintptr_t page = (a->bump - 8 + PT_PAGE - 1) & ~(uintptr_t)(PT_PAGE - 1);
    if (page + PT_PAGE > a->hi) return 0;
    a->bump = page + PT_PAGE + 8;
    spage.page = page;
    memset(spage.used, 0, sizeof spage.used);
  }
  return 0;
}

/* a block of at least `size` bytes aligned to `align` (16 or more), or 0 */
static void *take(size_t size, size_t align, int *fresh) {
  if (size > PT_MAX_SIZE) return 0;
  size_t slot = (size + 8 + 15) & ~(size_t)15;
  if (slot < 16) slot = 16;
  unsigned cls = class_of(slot);
  if (slot > PT_SMALL_MAX) slot = class_size(cls); /* large: the class's size, so that it can be reused */
  unsigned ai = 0;
  if (mode == MODE_RANDOM) ai = (unsigned)(rnd() % narenas);
  else if (mode == MODE_SIZECLASS) ai = cls;
  arena *a = &arenas[ai];
  *fresh = 0;
  if (reuse && align <= 16 && a->free_list[cls]) {
    void *p = a->free_list[cls];
    a->free_list[cls] = *(void **)p;
    return p;
  }
  *fresh = 1;
  uintptr_t h;
  if (mode == MODE_SHUFFLE && align <= 16 && slot <= PT_SHUFFLE_MAX) {
    h = shuffle_take((unsigned)(slot / 16));
    if (!h) return 0;
  } else {
    h = a->bump;
    uintptr_t obj = h + 8;
    if (obj & (align - 1)) obj = (obj + align - 1) & ~(uintptr_t)(align - 1);
    h = obj - 8;
    if (obj + slot - 8 > a->hi || obj + slot < obj) return 0;
    a->bump = obj + slot - 8; /* the next header: 8 mod 16 */
  }
  *(uint64_t *)h = make_header(cls, ai);
  return (void *)(h + 8);
}

static size_t usable(const void *p) { return class_size((unsigned)(header_of(p) & 0xff)) - 8; }

static void *alloc(size_t size, size_t align, int zero) {
  if (inited != 2) {
    if (inited == 0) {
      lock();
      if (inited == 0) {
        inited = 1;
        init();
      }
      unlock();
    }
    if (inited != 2) goto next;
  }
  lock();
  int fresh;
  void *p = take(size, align, &fresh);
  unlock();
  if (p) {
    if (zero && !fresh) memset(p, 0, size);
    return p;
  }
next:
  if (!next_malloc) resolve_next();
  if (align > 16) return next_memalign ? next_memalign(align, size) : 0;
  void *q = next_malloc ? next_malloc(size) : 0;
  if (q && zero) memset(q, 0, size);
  return q;
}

void *malloc(size_t size) {
  if (in_dlsym) {
    size_t n = (size + 15) & ~(size_t)15;
    if (boot_used + n > sizeof boot_buf) return 0;
    void *p = boot_buf + boot_used;
    boot_used += n;
    return p;
  }
  void *p = alloc(size, 16, 0);
  if (!p) errno = ENOMEM;
  return p;
}

void *calloc(size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return 0;
  }
  if (in_dlsym) return malloc(total); /* the static buffer is zero and never reused */
  void *p = alloc(total, 16, 1);
  if (!p) errno = ENOMEM;
  return p;
}

static int in_boot(const void *p) { return (const char *)p >= boot_buf && (const char *)p < boot_buf + sizeof boot_buf; }

void free(void *p) {
  if (!p || in_boot(p)) return;
  if (inited == 2 && ours(p)) {
    if (!reuse) return;
    uint64_t h = header_of(p);
    unsigned cls = (unsigned)(h & 0xff), ai = (unsigned)(h >> 8 & 0xff);
    if (cls >= PT_CLASSES || ai >= narenas) return;
    lock();
    *(void **)p = arenas[ai].free_list[cls];
    arenas[ai].free_list[cls] = p;
    unlock();
    return;
  }
  if (!next_free) resolve_next();
  if (next_free) next_free(p);
}

void *realloc(void *p, size_t size) {
  if (!p) return malloc(size);
  if (in_boot(p) || (inited == 2 && ours(p))) {
    size_t old;
    if (in_boot(p)) old = (size_t)(boot_buf + sizeof boot_buf - (char *)p);
    else old = usable(p);
    if (size == 0) size = 1;
    if (!in_boot(p) && size <= old) return p;
    void *q = malloc(size);
    if (!q) return 0;
    memcpy(q, p, old < size ? old : size);
    free(p);
    return q;
  }
  if (!next_realloc) resolve_next();
  return next_realloc ? next_realloc(p, size) : 0;
}

void *memalign(size_t align, size_t size) {
  if (align < 16) align = 16;
  if (align & (align - 1)) {
    errno = EINVAL;
    return 0;
  }
  void *p = alloc(size, align, 0);
  if (!p) errno = ENOMEM;
  return p;
}

int posix_memalign(void **out, size_t align, size_t size) {
  if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
  void *p = alloc(size, align < 16 ? 16 : align, 0);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

void *aligned_alloc(size_t align, size_t size) { return memalign(align, size); }
void *valloc(size_t size) { return memalign(PT_PAGE, size); }
void *pvalloc(size_t size) { return memalign(PT_PAGE, (size + PT_PAGE - 1) & ~(size_t)(PT_PAGE - 1)); }

size_t malloc_usable_size(void *p) {
  if (!p) return 0;
  if (in_boot(p)) return 0;
  if (inited == 2 && ours(p)) return usable(p);
  if (!next_usable) resolve_next();
  return next_usable ? next_usable(p) : 0;
}
