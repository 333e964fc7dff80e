/* The storage shape graph (DPA 3.2), learned online, and object group merging.
 *
 * DPA builds its graph from a points-to analysis of the binary. We learn it from the heap
 * instead, cheaply: when a group allocates on the slow path (while it is counted towards
 * the pool threshold, and for HL_DPA_LEARN_OBJECTS allocations after), the words of its
 * previous object are read; a word that points into an object of a known group is an edge
 * (group, offset, target group). By then the previous object is normally initialised.
 * Targets are named by the pool the address lies in, or, for objects the allocator
 * underneath holds (groups not pooled yet), by the table of recently allocated objects
 * (dpa_policy.c). The previous object may have been freed meanwhile: objects of our
 * pools are always mapped, and the allocator underneath's are read with
 * process_vm_readv, which fails instead of faulting on memory that is gone (where the
 * call is not allowed, or a seccomp filter may forbid it: sandbox.c, those objects are
 * simply not sampled).
 *
 * Merging, with "objects of the same size are of the same type":
 *   type I:  an edge (a, off, b) between two groups of one type: a linked structure built
 *            from several contexts (a list whose nodes come from two call sites);
 *   type II: edges (a, off, b) and (a', off, c) from one group (or two merged by type I)
 *            at the same offset to groups b and c of one type: the objects a structure's
 *            field points to (each list node's data).
 * The paper's figure 3 merges h1 with h3 by type I, then h2 with h4 by type II. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dpa.h"

typedef struct shape_edge {
  uint32_t from, to; /* groups as recorded (their roots are looked up when compared) */
  uint32_t offset;
} shape_edge;

static shape_edge edges[HL_DPA_MAX_EDGES];
static uint32_t nedges;
/* The edges of each field offset, newest first (both merge rules compare edges of one
 * offset only): a new edge scanned every edge before (gcc-cc1's training run under dpa,
 * 1,161 groups: hl_dpa_shape_edge 8.4M instructions, 5.1M so; docs/results.md §25).
 * Offsets are below HL_DEFAULT_MAX_SIZE (hl_dpa_shape_learn reads no more of an object). */
#define OFFSET_LISTS (HL_DEFAULT_MAX_SIZE / 8)
#define NO_EDGE UINT32_MAX
static uint32_t first_at[OFFSET_LISTS] = {[0 ... OFFSET_LISTS - 1] = NO_EDGE};
static uint32_t next_at[HL_DPA_MAX_EDGES];
/* (from, offset, to) of every edge seen, as recorded: a sample that finds a known edge
 * costs one probe here, not a pass over the edges (cppcheck's training input: the passes
 * made the slow path 1.4x its allocator's instructions) */
#define SEEN_SLOTS (4u * HL_DPA_MAX_EDGES)
static uint64_t seen_edges[SEEN_SLOTS];

static int edge_seen(uint32_t from, uint32_t offset, uint32_t to) {
  uint64_t key = ((uint64_t)from << 40 | (uint64_t)to << 16 | (offset & 0xffff)) + 1;
  uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & (SEEN_SLOTS - 1);
  for (unsigned probe = 0; probe < SEEN_SLOTS; probe++, i = (i + 1) & (SEEN_SLOTS - 1)) {
    if (seen_edges[i] == key) return 1;
    if (seen_edges[i] == 0) {
      seen_edges[i] = key;
      return 0;
    }
  }
  return 1; /* full: treated as known */
}
static dpa_shape_stats counts;
static int remote_read_refused; /* read and written under hl_dpa_lock (but at start-up) */

void hl_dpa_remote_reads_off(void) { remote_read_refused = 1; }

static int same_type(uint32_t a, uint32_t b) {
  uint32_t sa = hl_dpa_group_size(a);
  return sa != DPA_SIZE_MIXED && sa == hl_dpa_group_size(b);
}

void hl_dpa_shape_edge(uint32_t from, uint32_t offset, uint32_t to) {
  if (offset / 8 >= OFFSET_LISTS || edge_seen(from, offset, to)) return;
  uint32_t rf = hl_dpa_group_root(from), rt = hl_dpa_group_root(to);
  uint32_t *list = &first_at[offset / 8];
  for (uint32_t i = *list; i != NO_EDGE; i = next_at[i])
    if (hl_dpa_group_root(edges[i].from) == rf && hl_dpa_group_root(edges[i].to) == rt) return; /* known */
  if (nedges == HL_DPA_MAX_EDGES) return;
  edges[nedges] = (shape_edge){from, to, offset};
  next_at[nedges] = *list;
  *list = nedges++;
  counts.edges++;
  if (rf != rt && same_type(rf, rt)) { /* type I */
    hl_dpa_group_merge(rf, rt, 0);
    counts.type1++;
    rf = hl_dpa_group_root(from);
    rt = hl_dpa_group_root(to);
  }
  for (uint32_t i = *list; i != NO_EDGE; i = next_at[i]) { /* type II: the same field of the same structure */
    if (hl_dpa_group_root(edges[i].from) != rf) continue;
    uint32_t other = hl_dpa_group_root(edges[i].to);
    rt = hl_dpa_group_root(to);
    if (other != rt && same_type(other, rt)) {
      hl_dpa_group_merge(other, rt, 1);
      counts.type2++;
    }
  }
}

/* Copies size bytes at p into buf; 0 when they cannot be read. */
static int read_object(uintptr_t p, uint64_t *buf, uint32_t size) {
  if (hl_is_ours((const void *)p)) {
    for (uint32_t i = 0; i < size / 8; i++) buf[i] = __atomic_load_n((const uint64_t *)p + i, __ATOMIC_RELAXED);
    return 1;
  }
  if (remote_read_refused) return 0;
  int saved = errno; /* the program's malloc must not change errno */
  struct iovec local = {buf, size}, remote = {(void *)p, size};
  ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (n < 0 && (errno == EPERM || errno == ENOSYS || errno == EACCES)) remote_read_refused = 1; /* seccomp, old kernels */
  errno = saved;
  return n == (ssize_t)size;
}

void hl_dpa_shape_learn(uint32_t g, uintptr_t prev, uint32_t size) {
  if (prev == 0 || (prev & 7)) return;
  if (size > HL_DEFAULT_MAX_SIZE) size = HL_DEFAULT_MAX_SIZE;
  size &= ~7u;
  if (size == 0) return;
  uint64_t words[HL_DEFAULT_MAX_SIZE / 8];
  if (!read_object(prev, words, size)) return;
  counts.samples++;
  for (uint32_t i = 0; i < size / 8; i++) {
    uintptr_t w = (uintptr_t)words[i];
    if (w < 4096 || (w & 7)) continue;
    uint32_t t = hl_dpa_group_of_object(w);
    if (t != 0) hl_dpa_shape_edge(g, i * 8, t);
  }
}

void hl_dpa_shape_stats(dpa_shape_stats *out) { *out = counts; }
