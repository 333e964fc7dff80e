/* Code unloaded by dlclose: what the runtime cached about its return addresses goes.
 *
 * Unwind rules, DPA's wrapper verdicts and every thread's cached sites and chains are
 * keyed by return address. When a library is unloaded and another one is loaded at the
 * same addresses (dlopen after dlclose usually maps it exactly there), a rule cached for
 * the old code would step the new code's frames by the wrong frame size, off the stack:
 * a crash, where everything else a stale entry can do only misplaces an object. So the
 * program's dlclose goes through here: after the loader unloaded, the modules that went
 * away are found (the loader's count of unloads changed) and their entries forgotten,
 * every thread's caches cleared, and a plan's modules that went away made pending again.
 * A dlclose that only dropped a reference costs one dl_iterate_phdr.
 *
 * Libraries glibc unloads by itself (NSS and iconv modules, through its internal
 * dlclose) are not seen here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#include "dpa.h"
#include "internal.h"

#define GONE_MAX 32

/* The loader's count of unloaded objects, from the first object dl_iterate_phdr reports
 * (the count is the same in each). */
static int read_subs(struct dl_phdr_info *info, size_t size, void *arg) {
  *(unsigned long long *)arg =
      size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs ? info->dlpi_subs : ~0ull;
  return 1;
}
static unsigned long long subs_seen;

void hl_code_unloaded(void) {
  unsigned long long subs = ~0ull;
  dl_iterate_phdr(read_subs, &subs);
  /* an old loader without the count: every dlclose may have unloaded */
  if (subs == __atomic_exchange_n(&subs_seen, subs, __ATOMIC_ACQ_REL) && subs != ~0ull) return;
  hl_code_range gone[GONE_MAX];
  unsigned n = hl_unwind_modules_unloaded(gone, GONE_MAX);
  if (n > GONE_MAX) { /* forget everything */
    n = 1;
    gone[0] = (hl_code_range){4096, UINTPTR_MAX};
  }
  for (unsigned i = 0; i < n; i++) {
    hl_unwind_forget(gone[i].lo, gone[i].hi);
    hl_dpa_verdicts_forget(gone[i].lo, gone[i].hi);
  }
  if (atomic_load_explicit(&hl_state.policy, memory_order_acquire) == HL_POLICY_PLAN) hl_plan_code_unloaded();
  /* site caches hold "not pooled" and walk sites for return addresses into any module,
   * also one the unwinder never saw */
  hl_heaps_forget_code();
  atomic_fetch_add_explicit(&hl_state.code_unloads, 1, memory_order_relaxed);
}

HL_EXPORT int dlclose(void *handle) {
  static int (*next_dlclose)(void *);
  int (*f)(void *) = __atomic_load_n(&next_dlclose, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    if (f == NULL) return -1; /* no loader to unload with: nothing was unloaded */
    __atomic_store_n(&next_dlclose, f, __ATOMIC_RELEASE);
  }
  int rc = f(handle);
  if (rc == 0) hl_code_unloaded();
  return rc;
}
