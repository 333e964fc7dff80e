/* introspect.h: read-only questions about placement. */
#pragma GCC visibility push(default)
#include "heaplayout/introspect.h"
#pragma GCC visibility pop
#include "internal.h"

int heaplayout_pool_of(const void *p) {
  hl_ensure_init();
  return hl_is_ours(p) ? hl_chunk_of(p)->pool : 0;
}

size_t heaplayout_chunk_size(void) {
  hl_ensure_init();
  return hl_rng.chunk_size;
}

const char *heaplayout_policy(void) { return hl_policy_name(hl_policy()); }
