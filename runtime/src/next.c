/* The allocator underneath: whatever comes after us in symbol search order (glibc, or a
 * jemalloc/mimalloc/tcmalloc preloaded after us). Everything we do not place goes there.
 *
 * dlsym itself may allocate (glibc's dlerror buffers use calloc); while we resolve, such
 * requests are served from a static buffer that is never freed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Before initialisation the only pointers free can see are NULL and bootstrap ones, which
 * are never freed: a no-op keeps free's fast path free of a "resolved yet?" test. */
static void free_before_init(void *p) { (void)p; }

hl_next hl_next_alloc = {.free = free_before_init};
hl_next_libc hl_next_libc_alloc;

_Alignas(64) char hl_bootstrap_buf[HL_BOOTSTRAP_BYTES];
#define bootstrap_buf hl_bootstrap_buf
static _Atomic(size_t) bootstrap_used;

/* The buffer serves only what is allocated before the allocator underneath is known (dlsym
 * resolving its first entry points; in practice nothing). Once malloc, free, calloc and
 * memalign are resolved, requests made while we initialise go to that allocator, and its
 * free takes them back: glibc's failed dlsyms (libstdc++'s sized deletes, absent from a C
 * program) left their error strings in the buffer, where any later free had to find them.
 * Free's fast path then needs no test for the buffer: hl_next_alloc.free is the allocator's
 * own, and becomes a filter only in a run where the buffer was used (about 5 instructions
 * on every forwarded free, and a third of `off`'s cost per pair: docs/results.md §23). */
static _Atomic(int) core_resolved;  /* malloc, free, calloc, memalign are known */
static _Atomic(int) fully_resolved; /* hl_next_alloc.free is final: a filter may go over it */
static __thread int forwarding __attribute__((tls_model("initial-exec")));
static void (*free_past_filter)(void *);
static _Atomic(int) filter_on;

static void free_filtered(void *p) {
  if (HL_UNLIKELY(hl_is_bootstrap(p))) return;
  free_past_filter(p);
}
/* From now on frees look for the buffer (the sized deletes lose their shortcut: sized_free
 * sends every pointer through free's filter when they are NULL). */
static void bootstrap_filter_install(void) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&filter_on, &expected, 1)) return;
  free_past_filter = hl_next_alloc.free;
  hl_next_alloc.sized_delete = NULL;
  hl_next_alloc.sized_delete_array = NULL;
  atomic_thread_fence(memory_order_seq_cst);
  hl_next_alloc.free = free_filtered;
}

static void *bootstrap_forward(size_t size, size_t align) {
  forwarding = 1; /* the allocator may call malloc again while it serves this: the buffer then */
  void *p = align <= HL_GRANULE ? hl_next_alloc.calloc(1, size) : hl_next_alloc.memalign(align, size);
  forwarding = 0;
  if (p != NULL && align > HL_GRANULE) memset(p, 0, size);
  return p;
}

/* Each buffer object has its size in the 8 bytes before it (realloc needs it). Zeroed
 * memory either way (calloc comes here too). */
void *hl_bootstrap_alloc(size_t size, size_t align) {
  if (align < HL_GRANULE) align = HL_GRANULE;
  if (atomic_load_explicit(&core_resolved, memory_order_acquire) && !forwarding) return bootstrap_forward(size, align);
  size_t old = atomic_load(&bootstrap_used), start;
  do {
    start = (old + sizeof(size_t) + align - 1) & ~(align - 1);
    if (start + size > sizeof bootstrap_buf || start + size < start) return NULL;
  } while (!atomic_compare_exchange_weak(&bootstrap_used, &old, start + size));
  ((size_t *)(bootstrap_buf + start))[-1] = size;
  if (atomic_load_explicit(&fully_resolved, memory_order_acquire)) bootstrap_filter_install();
  return bootstrap_buf + start; /* zero: the buffer is in .bss and never reused */
}

size_t hl_bootstrap_size(const void *p) { return ((const size_t *)p)[-1]; }


/* glibc exports its allocator under these names too: the fallback when dlsym fails. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

/* Stand-ins for entry points the allocator underneath may lack. */
static int fallback_posix_memalign(void **out, size_t align, size_t size) {
  void *p = hl_next_alloc.memalign(align, size);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}
static void *fallback_aligned_alloc(size_t align, size_t size) { return hl_next_alloc.memalign(align, size); }
static void *fallback_valloc(size_t size) { return hl_next_alloc.memalign(page_size(), size); }
static void *fallback_pvalloc(size_t size) {
  size_t ps = page_size();
  return hl_next_alloc.memalign(ps, (size + ps - 1) & ~(ps - 1));
}
static size_t fallback_usable_size(void *p) { (void)p; return 0; }

/* A C++ allocation function of the allocator underneath, or NULL when the next definition
 * is libstdc++'s own (which just calls malloc or free, that is: us again). */
static void *allocator_own(const char *name) {
  void *sym = dlsym(RTLD_NEXT, name);
  Dl_info info;
  if (sym == NULL || !dladdr(sym, &info) || info.dli_fname == NULL) return NULL;
  return strstr(info.dli_fname, "libstdc++") ? NULL : sym;
}

#define RESOLVE(field, fallback)                                        \
  do {                                                                  \
    void *sym = dlsym(RTLD_NEXT, #field);                               \
    hl_next_alloc.field = sym ? (__typeof__(hl_next_alloc.field))sym : (fallback); \
  } while (0)

/* One of glibc's __libc_* names below us, or the plain name's definition below us when no
 * library below exports the __libc_ one. */
static void *libc_name(const char *libc_name, void *plain) {
  void *sym = dlsym(RTLD_NEXT, libc_name);
  return sym != NULL ? sym : plain;
}

void hl_next_resolve(void) {
  /* free stays the no-op until the end: a pointer from the buffer freed meanwhile (dlsym's
   * error strings replace each other) must not reach the allocator */
  void (*next_free)(void *) = dlsym(RTLD_NEXT, "free");
  if (next_free == NULL) next_free = __libc_free; /* nothing below us defines free: libc comes
                                                   * before us, and so does its __libc_free */
  /* first: the allocator underneath may itself call __libc_malloc while it serves our
   * bootstrap requests below (glibc's libc_malloc_debug.so does), and ours forwards there */
  hl_next_libc_alloc.malloc = libc_name("__libc_malloc", dlsym(RTLD_NEXT, "malloc"));
  hl_next_libc_alloc.calloc = libc_name("__libc_calloc", dlsym(RTLD_NEXT, "calloc"));
  hl_next_libc_alloc.realloc = libc_name("__libc_realloc", dlsym(RTLD_NEXT, "realloc"));
  hl_next_libc_alloc.memalign = libc_name("__libc_memalign", dlsym(RTLD_NEXT, "memalign"));
  hl_next_libc_alloc.valloc = libc_name("__libc_valloc", dlsym(RTLD_NEXT, "valloc"));
  hl_next_libc_alloc.pvalloc = libc_name("__libc_pvalloc", dlsym(RTLD_NEXT, "pvalloc"));
  hl_next_libc_alloc.free = libc_name("__libc_free", (void *)next_free);
  RESOLVE(malloc, __libc_malloc);
  RESOLVE(calloc, __libc_calloc);
  RESOLVE(memalign, __libc_memalign);
  atomic_store_explicit(&core_resolved, 1, memory_order_release);
  RESOLVE(realloc, __libc_realloc);
  RESOLVE(posix_memalign, fallback_posix_memalign);
  RESOLVE(aligned_alloc, fallback_aligned_alloc);
  RESOLVE(valloc, fallback_valloc);
  RESOLVE(pvalloc, fallback_pvalloc);
  RESOLVE(malloc_usable_size, fallback_usable_size);
  hl_next_alloc.sized_delete = (void (*)(void *, size_t))allocator_own("_ZdlPvm");
  hl_next_alloc.sized_delete_array = (void (*)(void *, size_t))allocator_own("_ZdaPvm");
  hl_next_alloc.op_new = (void *(*)(size_t))allocator_own("_Znwm");
  hl_next_alloc.op_new_nothrow = (void *(*)(size_t, const void *))allocator_own("_ZnwmRKSt9nothrow_t");
  hl_next_alloc.free = next_free;
  atomic_store_explicit(&fully_resolved, 1, memory_order_release);
  if (atomic_load(&bootstrap_used) != 0) bootstrap_filter_install();
}
