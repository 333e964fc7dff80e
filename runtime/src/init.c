/* Start-up, fork and exit: the runtime's whole contract with the process.
 *
 * Initialisation happens on the first call into the library (usually the first malloc,
 * often before main and before our constructor would run). It resolves the allocator
 * underneath, reads the settings, reserves the range and registers fork handlers.
 * Allocations made while it runs come from the allocator underneath once dlsym has found
 * it, before that from the bootstrap buffer (next.c). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "dpa.h"
#include "internal.h"

hl_state_t hl_state;
__thread int hl_in_init __attribute__((tls_model("initial-exec")));
static _Atomic(int) init_stage; /* 0 not started, 1 running, 2 done */

static void fork_prepare(void) {
  hl_dpa_fork_prepare(); /* its verdict lock is held while the unwinder's are taken */
  hl_unwind_fork(1);
  hl_heap_fork_prepare();
  hl_chunk_lock_all();
}
static void fork_done(void) {
  hl_chunk_unlock_all();
  hl_heap_fork_done();
  hl_unwind_fork(0);
  hl_dpa_fork_done();
}

void hl_init(void) {
  if (hl_in_init) return; /* re-entered from dlsym: the caller uses the bootstrap buffer */
  int expected = 0;
  if (!atomic_compare_exchange_strong(&init_stage, &expected, 1)) {
    while (atomic_load_explicit(&init_stage, memory_order_acquire) != 2) sched_yield();
    return;
  }
  hl_in_init = 1;
  hl_next_resolve();
  hl_sandbox_resolve();
  hl_options_load(&hl_state.opt);
  enum hl_policy policy = hl_state.opt.policy;
  if (policy == HL_POLICY_PLAN && !hl_plan_load(hl_state.opt.plan)) policy = HL_POLICY_OFF;
  if (policy == HL_POLICY_DPA) hl_sandbox_check_inherited();
  if (!hl_range_init(hl_state.opt.range_size, hl_state.opt.chunk_size, hl_state.opt.cc_block,
                     (int)hl_state.opt.huge_pages)) {
    hl_message("could not reserve %zu bytes of address space for pools; running unoptimized",
               hl_state.opt.range_size);
    policy = HL_POLICY_OFF;
  }
  hl_state.counting = hl_state.opt.stats || hl_state.opt.stats_json[0];
  if (hl_state.counting) { /* forwarded news must pass new_forward, which counts them */
    hl_next_alloc.op_new = NULL;
    hl_next_alloc.op_new_nothrow = NULL;
  }
  hl_state.walk_limit = hl_prefix_on ? 0 : (size_t)hl_state.opt.max_size + 1; /* the plan is loaded */
  hl_heap_init();
  pthread_atfork(fork_prepare, fork_done, fork_done);
  hl_in_init = 0;
  atomic_store_explicit(&init_stage, 2, memory_order_release);
  atomic_store_explicit(&hl_state.policy, policy, memory_order_release);
  atomic_store_explicit(&hl_state.passthrough, policy == HL_POLICY_OFF && !hl_state.counting, memory_order_release);
}

/* For entry points that need the range but not a policy (pool.h, ccmalloc.h). */
void hl_ensure_init(void) { (void)hl_policy(); }

__attribute__((destructor)) static void hl_fini(void) {
  if (atomic_load(&init_stage) != 2) return;
  if (hl_state.counting) hl_stats_report();
}
