/* Every C++ operator new and delete, defined here under their mangled names so that C++
 * allocation sites are seen directly (the return address is the program's call site, not
 * a frame inside libstdc++) and without making this library depend on libstdc++.
 *
 * On failure, new behaves as the standard says: call the installed new_handler until it
 * gives up, then throw std::bad_alloc (nothrow forms return NULL). Both the handler
 * getter and the throw helper are looked up in libstdc++ only when needed; a C++
 * program always has it loaded. This file is compiled with -fexceptions so that the
 * exception can unwind through these frames. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "fastpath.h"

typedef void (*new_handler_fn)(void);

static void *retry_or_throw(size_t size, size_t align, void *const *ra, int nothrow) {
  for (;;) {
    new_handler_fn (*get_handler)(void) = (new_handler_fn(*)(void))dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv");
    new_handler_fn handler = get_handler ? get_handler() : NULL;
    if (handler == NULL) {
      if (nothrow) return NULL;
      void (*throw_bad_alloc)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv");
      if (throw_bad_alloc) throw_bad_alloc();
      abort();
    }
    handler();
    void *p = align ? hl_memalign_from(align, size, ra) : hl_malloc_from(size, ra);
    if (p) return p;
  }
}

static HL_NOINLINE void *new_slow(size_t size, void *const *ra, int nothrow) {
  void *p = atomic_load_explicit(&hl_state.passthrough, memory_order_relaxed) ? hl_next_alloc.malloc(size)
                                                                               : hl_malloc_from(size, ra);
  if (HL_LIKELY(p != NULL)) return p;
  return retry_or_throw(size, 0, ra, nothrow);
}

static HL_NOINLINE void *new_forward(size_t size, void *const *ra, int nothrow) {
  void *p = hl_next_alloc.malloc(size);
  if (hl_counting()) hl_counted(p, size);
  return HL_LIKELY(p != NULL) ? p : retry_or_throw(size, 0, ra, nothrow);
}

/* A request the allocator underneath serves: its own operator new when it has one, in a
 * tail call (jemalloc, mimalloc and tcmalloc run the new_handler loop themselves, as they
 * would alone), else its malloc with the loop here. */
static const char nothrow_tag; /* std::nothrow_t is empty: any address stands for it */
static inline __attribute__((always_inline)) void *new_below(size_t size, void *const *ra, int nothrow) {
  /* both NULL while statistics are on (init.c): new_forward counts */
  if (!nothrow && hl_next_alloc.op_new != NULL) return hl_next_alloc.op_new(size);
  if (nothrow && hl_next_alloc.op_new_nothrow != NULL) return hl_next_alloc.op_new_nothrow(size, &nothrow_tag);
  return new_forward(size, ra, nothrow);
}

/* The fast path inline (no calls, no saved registers), everything else out of line. */
static inline __attribute__((always_inline)) void *new_impl(size_t size, void *const *ra, int nothrow) {
  size = size ? size : 1;
  void *p = hl_alloc_try(size, ra);
  if (HL_LIKELY(p > HL_FORWARD)) return p;
  return p == HL_FORWARD ? new_below(size, ra, nothrow) : new_slow(size, ra, nothrow);
}

static void *new_aligned_impl(size_t size, size_t align, void *const *ra, int nothrow) {
  void *p = hl_memalign_from(align, size ? size : 1, ra);
  if (HL_LIKELY(p != NULL)) return p;
  return retry_or_throw(size ? size : 1, align, ra, nothrow);
}

#define RA HL_FRAME

/* new: the site-direct pop (fastpath.h) with no frame, else a jump to the full path, whose
 * frame then starts the stack walk with the program's call site as its return address. */
static HL_NOINLINE __attribute__((noclone)) void *new_full(size_t size) { return new_impl(size, RA, 0); }
static HL_NOINLINE __attribute__((noclone)) void *new_full_nothrow(size_t size) { return new_impl(size, RA, 1); }
/* then, under policy off, a request for the allocator underneath's own new when it has
 * one: a tail call to it (a site cached as not pooled: the pop's HL_FORWARD, below) */
static inline __attribute__((always_inline)) int new_forwards(void) {
  return atomic_load_explicit(&hl_state.passthrough, memory_order_relaxed);
}
#define HL_FRAMELESS __attribute__((optimize("omit-frame-pointer")))
/* After a missed pop, reached by a jump (so its return address is still the program's call
 * site): the forward or the full path. Out of the entry point, so that the pop keeps to
 * the registers it needs: with the forward inline, GCC saved a register and kept the
 * entry's offset for it (4 instructions on every pooled new). */
#define HL_NEW_MISSED(full, prefix, below, ...)                                     \
  if (hl_next_alloc.below != NULL && new_forwards()) return hl_next_alloc.below(__VA_ARGS__); \
  if (HL_UNLIKELY(hl_prefix_on)) return prefix(size);                               \
  return full(size)
/* With a PreFix region, also reached by a jump: a return address the thread has identified
 * as a one-frame PreFix site is counted and placed here, as malloc_missed does (out of
 * new_missed, whose common path then saves no register). */
#define HL_NEW_PREFIX(full)                                                         \
  void *p = hl_prefix_try(size ? size : 1, (uintptr_t)__builtin_return_address(0)); \
  return p != NULL ? p : full(size)
static HL_NOINLINE __attribute__((noclone)) HL_FRAMELESS void *new_prefix(size_t size) { HL_NEW_PREFIX(new_full); }
static HL_NOINLINE __attribute__((noclone)) HL_FRAMELESS void *new_prefix_nothrow(size_t size) {
  HL_NEW_PREFIX(new_full_nothrow);
}
static HL_NOINLINE __attribute__((noclone)) HL_FRAMELESS void *new_missed(size_t size) {
  HL_NEW_MISSED(new_full, new_prefix, op_new, size);
}
static HL_NOINLINE __attribute__((noclone)) HL_FRAMELESS void *new_missed_nothrow(size_t size, const void *nt) {
  HL_NEW_MISSED(new_full_nothrow, new_prefix_nothrow, op_new_nothrow, size, nt);
}
/* HL_FORWARD: the allocator's own new when it has one, else missed's way */
#define HL_NEW_DIRECT(missed, below, ...)                                           \
  void *p = hl_site_direct_pop(size, (uintptr_t)__builtin_return_address(0));      \
  if (HL_LIKELY(p > HL_FORWARD)) return p;                                          \
  if (p == HL_FORWARD && hl_next_alloc.below != NULL) return hl_next_alloc.below(__VA_ARGS__); \
  return missed(__VA_ARGS__)
HL_EXPORT HL_FRAMELESS void *_Znwm(size_t size) { HL_NEW_DIRECT(new_missed, op_new, size); }
HL_EXPORT HL_FRAMELESS void *_Znam(size_t size) { HL_NEW_DIRECT(new_missed, op_new, size); }
HL_EXPORT HL_FRAMELESS void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt) {
  HL_NEW_DIRECT(new_missed_nothrow, op_new_nothrow, size, nt);
}
HL_EXPORT HL_FRAMELESS void *_ZnamRKSt9nothrow_t(size_t size, const void *nt) {
  HL_NEW_DIRECT(new_missed_nothrow, op_new_nothrow, size, nt);
}
HL_EXPORT void *_ZnwmSt11align_val_t(size_t size, size_t align) { return new_aligned_impl(size, align, RA, 0); }
HL_EXPORT void *_ZnamSt11align_val_t(size_t size, size_t align) { return new_aligned_impl(size, align, RA, 0); }
HL_EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
  (void)nt;
  return new_aligned_impl(size, align, RA, 1);
}
HL_EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
  (void)nt;
  return new_aligned_impl(size, align, RA, 1);
}

/* delete: every form frees; the size and alignment arguments are not needed because the
 * pointer alone says whose it is and how large its slot is. */
HL_EXPORT void _ZdlPv(void *p) { hl_free_fast(p); }
HL_EXPORT void _ZdaPv(void *p) { hl_free_fast(p); }
/* sized deletes: ours by the size, the allocator underneath by its own sized delete when
 * it has one (each is told the size it would otherwise look up). Our new placed the object
 * in the class of its size, so the class comes from the size and the free skips the size
 * map, a cache miss on a random free. Like tcmalloc and jemalloc, this trusts the size: a
 * wrong one (a delete through a base class without a virtual destructor, undefined
 * behaviour) would put the slot on another class's list; libheaplayout_debug.so asserts. */
static inline __attribute__((always_inline)) void sized_free(void *p, size_t size, void (*below)(void *, size_t)) {
  if (hl_is_ours(p)) {
    hl_free_ours_sized(p, size);
    return;
  }
  if (below == NULL) { /* also while bootstrap objects exist: free's filter (next.c) */
    hl_free_fast(p);
    return;
  }
  below(p, size);
}
HL_EXPORT void _ZdlPvm(void *p, size_t size) { sized_free(p, size, hl_next_alloc.sized_delete); }
HL_EXPORT void _ZdaPvm(void *p, size_t size) { sized_free(p, size, hl_next_alloc.sized_delete_array); }
HL_EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; hl_free_fast(p); }
HL_EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; hl_free_fast(p); }
HL_EXPORT void _ZdlPvSt11align_val_t(void *p, size_t align) { (void)align; hl_free_fast(p); }
HL_EXPORT void _ZdaPvSt11align_val_t(void *p, size_t align) { (void)align; hl_free_fast(p); }
HL_EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align) { (void)size; (void)align; hl_free_fast(p); }
HL_EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align) { (void)size; (void)align; hl_free_fast(p); }
HL_EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt) {
  (void)align;
  (void)nt;
  hl_free_fast(p);
}
HL_EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt) {
  (void)align;
  (void)nt;
  hl_free_fast(p);
}
