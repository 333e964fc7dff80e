/* vgpreload_hlsimwrap: preloaded into the client (LD_PRELOAD, added by `heaplayout simulate`
 * when objects are tracked; the tool has no preload of its own). It replaces nothing:
 * the simulated layout must be the one the client's own allocator (glibc, jemalloc, mimalloc,
 * tcmalloc or heaplayout's runtime) produces. It *wraps* the malloc family in every object (soname
 * pattern "*"), calls the real function, and tells the tool each object's range and the
 * return address of the outermost allocation call (a client request), so that the tool can
 * attribute misses to allocation contexts and build the oracle layout.
 *
 * It is a separate library because the wrappers shift the stack of every allocation call,
 * which moves cachegrind-validation counts by up to 2% on malloc-heavy programs; the tool
 * does not simulate the wrappers' own instructions.
 *
 * Nesting (our runtime's malloc calling the allocator underneath, operator new calling
 * malloc) is reported once, by the outermost wrapper, through a per-thread depth counter. */
#include <stddef.h>
#include "valgrind.h"
#include "hs_requests.h"

static __thread int depth __attribute__((tls_model("initial-exec")));

#define RA() ((unsigned long)__builtin_return_address(0))

static void report_alloc(void *p, size_t n, unsigned long ra) {
  if (p) VALGRIND_DO_CLIENT_REQUEST_STMT(HS_REQ_ALLOC, p, n, ra, 0, 0);
}
static void report_free(void *p) {
  if (p) VALGRIND_DO_CLIENT_REQUEST_STMT(HS_REQ_FREE, p, 0, 0, 0, 0);
}

/* soname "*" (Z-encoded Za): every object that defines the function */
#define W1(ret, name, T1)                                                                  \
  ret I_WRAP_SONAME_FNNAME_ZU(Za, name)(T1 a1);                                            \
  ret I_WRAP_SONAME_FNNAME_ZU(Za, name)(T1 a1)
#define W2(ret, name, T1, T2)                                                              \
  ret I_WRAP_SONAME_FNNAME_ZU(Za, name)(T1 a1, T2 a2);                                     \
  ret I_WRAP_SONAME_FNNAME_ZU(Za, name)(T1 a1, T2 a2)
#define W3(ret, name, T1, T2, T3)                                                          \
  ret I_WRAP_SONAME_FNNAME_ZU(Za, name)(T1 a1, T2 a2, T3 a3);                              \
  ret I_WRAP_SONAME_FNNAME_ZU(Za, name)(T1 a1, T2 a2, T3 a3)

/* an allocation function of one size argument */
#define ALLOC1(name)                                                                       \
  W1(void *, name, size_t) {                                                               \
    OrigFn fn;                                                                             \
    void *r;                                                                               \
    unsigned long ra = RA();                                                               \
    VALGRIND_GET_ORIG_FN(fn);                                                              \
    depth++;                                                                               \
    CALL_FN_W_W(r, fn, a1);                                                                \
    if (--depth == 0) report_alloc(r, a1, ra);                                             \
    return r;                                                                              \
  }
/* a free function of one pointer argument (any further arguments ignored) */
#define FREE1(name)                                                                        \
  W1(void, name, void *) {                                                                 \
    OrigFn fn;                                                                             \
    unsigned long dummy;                                                                   \
    VALGRIND_GET_ORIG_FN(fn);                                                              \
    if (depth == 0) report_free(a1);                                                       \
    depth++;                                                                               \
    CALL_FN_W_W(dummy, fn, a1);                                                            \
    depth--;                                                                               \
    (void)dummy;                                                                           \
  }
#define FREE2(name)                                                                        \
  W2(void, name, void *, size_t) {                                                         \
    OrigFn fn;                                                                             \
    unsigned long dummy;                                                                   \
    VALGRIND_GET_ORIG_FN(fn);                                                              \
    if (depth == 0) report_free(a1);                                                       \
    depth++;                                                                               \
    CALL_FN_W_WW(dummy, fn, a1, a2);                                                       \
    depth--;                                                                               \
    (void)dummy;                                                                           \
  }

ALLOC1(malloc)
ALLOC1(_Znwm)
ALLOC1(_Znam)
ALLOC1(valloc)
FREE1(free)
FREE1(cfree)
FREE1(_ZdlPv)
FREE1(_ZdaPv)
FREE2(_ZdlPvm)
FREE2(_ZdaPvm)

W2(void *, calloc, size_t, size_t) {
  OrigFn fn;
  void *r;
  unsigned long ra = RA();
  VALGRIND_GET_ORIG_FN(fn);
  depth++;
  CALL_FN_W_WW(r, fn, a1, a2);
  if (--depth == 0) report_alloc(r, a1 * a2, ra);
  return r;
}

W2(void *, realloc, void *, size_t) {
  OrigFn fn;
  void *r;
  unsigned long ra = RA();
  VALGRIND_GET_ORIG_FN(fn);
  depth++;
  CALL_FN_W_WW(r, fn, a1, a2);
  if (--depth == 0 && (r || a2 == 0)) {
    report_free(a1);
    report_alloc(r, a2, ra);
  }
  return r;
}

W2(void *, memalign, size_t, size_t) {
  OrigFn fn;
  void *r;
  unsigned long ra = RA();
  VALGRIND_GET_ORIG_FN(fn);
  depth++;
  CALL_FN_W_WW(r, fn, a1, a2);
  if (--depth == 0) report_alloc(r, a2, ra);
  return r;
}

W2(void *, aligned_alloc, size_t, size_t) {
  OrigFn fn;
  void *r;
  unsigned long ra = RA();
  VALGRIND_GET_ORIG_FN(fn);
  depth++;
  CALL_FN_W_WW(r, fn, a1, a2);
  if (--depth == 0) report_alloc(r, a2, ra);
  return r;
}

W3(int, posix_memalign, void **, size_t, size_t) {
  OrigFn fn;
  int r;
  unsigned long ra = RA();
  VALGRIND_GET_ORIG_FN(fn);
  depth++;
  CALL_FN_W_WWW(r, fn, a1, a2, a3);
  if (--depth == 0 && r == 0) report_alloc(*a1, a3, ra);
  return r;
}
