/* Statistics at exit (HEAPLAYOUT_STATS=1 and/or HEAPLAYOUT_STATS_JSON=FILE).
 *
 * Per pool: objects allocated, bytes requested, bytes resident (the touched extent of the
 * pool's chunks at exit, metadata included), peak resident (the same extent sampled at
 * every chunk event), live objects, and fragmentation = 1 - live slot bytes / data extent.
 * Counts come from the owner threads' counters; frees by other threads that the owner has
 * not yet collected still count as live. Pools of pool.h are counted when destroyed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "dpa.h"
#include <pthread.h>

#include "internal.h"

static _Atomic(long) resident_now[HL_MAX_POOLS];
static _Atomic(long) resident_peak[HL_MAX_POOLS];

void hl_pool_resident_add(uint16_t pool, long delta) {
  long now = atomic_fetch_add_explicit(&resident_now[pool], delta, memory_order_relaxed) + delta;
  long peak = atomic_load_explicit(&resident_peak[pool], memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak(&resident_peak[pool], &peak, now)) {
  }
  /* a pool takes another chunk: the dpa policy's do-no-harm check (dpa_policy.c) */
  if (delta > 0 && atomic_load_explicit(&hl_state.policy, memory_order_relaxed) == HL_POLICY_DPA) hl_dpa_pool_grew(pool);
}

typedef struct pool_totals {
  uint64_t allocs, bytes_requested, slot_bytes, frees, freed_slot_bytes;
  uint64_t resident, data_extent, chunks;
} pool_totals;

static _Atomic(uint64_t) explicit_totals[5];

void hl_stats_add_explicit(const hl_tpool *tp) {
  atomic_fetch_add(&explicit_totals[0], tp->allocs);
  atomic_fetch_add(&explicit_totals[1], tp->bytes_requested);
  atomic_fetch_add(&explicit_totals[2], tp->slot_bytes);
  atomic_fetch_add(&explicit_totals[3], tp->frees);
  atomic_fetch_add(&explicit_totals[4], tp->freed_slot_bytes);
}

static void add_chunk(hl_chunk *c, void *arg) {
  pool_totals *t = (pool_totals *)arg + c->pool;
  t->resident += (uint64_t)((uintptr_t)c->bump - hl_chunk_base(c));
  t->data_extent += (uint64_t)(c->bump - c->data);
  t->chunks++;
}

/* A small buffered writer: no stdio, no malloc, at exit. */
typedef struct out {
  int fd;
  size_t n;
  char buf[8192];
} out;

static void out_flush(out *o) {
  size_t off = 0;
  while (off < o->n) {
    ssize_t w = write(o->fd, o->buf + off, o->n - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  o->n = 0;
}

__attribute__((format(printf, 2, 3))) static void out_printf(out *o, const char *fmt, ...) {
  if (sizeof o->buf - o->n < 1024) out_flush(o);
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(o->buf + o->n, sizeof o->buf - o->n, fmt, ap);
  va_end(ap);
  if (w > 0) o->n += (size_t)w < sizeof o->buf - o->n ? (size_t)w : sizeof o->buf - o->n - 1;
}


static void emit_out(void *ctx, const char *s) { out_printf(ctx, "%s", s); }

/* "module+0xoffset" and the symbol, for a pool's allocation site. */
static void describe_site(uintptr_t site, char *where, size_t cap, const char **sym) {
  Dl_info info;
  *sym = NULL;
  if (site && dladdr((void *)site, &info) && info.dli_fname) {
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    hl_format(where, cap, "%s+0x%lx", base[0] ? base : "main", (unsigned long)(site - (uintptr_t)info.dli_fbase));
    *sym = info.dli_sname;
  } else {
    hl_format(where, cap, "0x%lx", (unsigned long)site);
  }
}

static const char *pool_kind(unsigned id) {
  if (hl_pool_group((uint16_t)id)) return "group";
  return id == HL_POOL_CC ? "ccmalloc" : id == HL_POOL_API ? "pool.h" : "site";
}

static double fragmentation(const pool_totals *t) {
  uint64_t live = t->slot_bytes - t->freed_slot_bytes;
  if (t->data_extent == 0) return 0.0;
  double f = 1.0 - (double)live / (double)t->data_extent;
  return f < 0 ? 0.0 : f;
}

static void json_escape(out *o, const char *s) {
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') out_printf(o, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) out_printf(o, "\\u%04x", (unsigned)*s);
    else out_printf(o, "%c", *s);
  }
}

/* Plan decisions given by a walk's stable answer without walking (plan.c), over every
 * heap: the counts live in the threads' own chain sets, not in a shared counter. */
static uint64_t plan_speculated(void) {
  uint64_t n = 0;
  for (hl_heap *h = hl_heap_list(); h; h = h->next_heap) n += h->plan_speculated;
  return n;
}


static double process_cpu_s(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
         ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* CPU time the process had used when the program was loaded: exec keeps it, so a program
 * that `heaplayout run` exec'd would count Python's start-up (0.47 s against 2 ms). A forked
 * child starts from 0. */
static double cpu_before_program;
static void cpu_child_starts_at_zero(void) { cpu_before_program = 0.0; }
__attribute__((constructor)) static void cpu_at_load(void) {
  cpu_before_program = process_cpu_s();
  pthread_atfork(NULL, NULL, cpu_child_starts_at_zero);
}

static void write_json(const pool_totals *t, unsigned npools, const char *path_template) {
  char path[600], tmp[640];
  /* %p in the path becomes the pid, so that processes a run spawns do not collide */
  size_t j = 0;
  for (const char *s = path_template; *s && j < sizeof path - 24; s++) {
    if (s[0] == '%' && s[1] == 'p') {
      j += (size_t)hl_format(path + j, sizeof path - j, "%d", (int)getpid());
      s++;
    } else {
      path[j++] = *s;
    }
  }
  path[j] = '\0';
  /* A fresh temporary file, never one that exists: a name planted in a shared directory
   * (a symlink to a file the user may write) must not be followed or truncated. The
   * rename then replaces the path itself, a symlink there included, not its target. */
  out o = {.fd = -1};
  for (int attempt = 0; attempt < 16 && o.fd < 0; attempt++) {
    hl_format(tmp, sizeof tmp, "%s.tmp%d.%d", path, (int)getpid(), attempt);
    o.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (o.fd < 0 && errno != EEXIST) break;
  }
  if (o.fd < 0) {
    hl_message("cannot write statistics to %s", path);
    return;
  }
  /* which executable this process ran and the CPU time it took: the census that finds the
   * process of a command tree that does the work (heaplayout/target.py) reads these */
  char exe[512];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  double cpu = process_cpu_s() - cpu_before_program;
  out_printf(&o, "{\"version\":1,\"policy\":\"%s\",\"pid\":%d,\"exe\":\"",
             hl_policy_name(atomic_load(&hl_state.policy)), (int)getpid());
  json_escape(&o, exe);
  out_printf(&o, "\",\"cpu_s\":%.4f,\"chunk_size\":%zu,\"pools\":[", cpu, hl_rng.chunk_size);
  int first = 1;
  for (unsigned id = 1; id < npools; id++) {
    const pool_totals *p = &t[id];
    if (p->allocs == 0 && p->chunks == 0) continue;
    char where[300];
    const char *sym;
    describe_site(hl_pool_site((uint16_t)id), where, sizeof where, &sym);
    long peak = atomic_load(&resident_peak[id]);
    if ((uint64_t)peak < p->resident) peak = (long)p->resident;
    out_printf(&o,
               "%s{\"id\":%u,\"kind\":\"%s\",\"group\":%u,\"site\":\"%s\",\"symbol\":\"", first ? "" : ",", id,
               pool_kind(id), hl_pool_group((uint16_t)id), where);
    json_escape(&o, sym);
    out_printf(&o,
               "\",\"objects\":%llu,\"bytes_requested\":%llu,\"slot_bytes\":%llu,\"bytes_resident\":%llu,"
               "\"peak_resident\":%ld,\"chunks\":%llu,\"live_objects\":%llu,\"fragmentation\":%.4f}",
               (unsigned long long)p->allocs, (unsigned long long)p->bytes_requested,
               (unsigned long long)p->slot_bytes, (unsigned long long)p->resident, peak,
               (unsigned long long)p->chunks, (unsigned long long)(p->allocs - p->frees), fragmentation(p));
    first = 0;
  }
  hl_prefix_stats_t px;
  hl_prefix_stats(&px);
  out_printf(&o, "],\"prefix\":{\"region_bytes\":%llu,\"slots\":%llu,\"taken\":%llu,\"refused_site\":%llu,"
             "\"refused_size\":%llu,\"refused_busy\":%llu,\"refused_thread\":%llu,\"counters_cut\":%llu,"
             "\"freed\":%llu,\"moved_by_realloc\":%llu,\"reallocs_counted\":%llu,\"identification_walks\":%llu",
             (unsigned long long)px.region_bytes, (unsigned long long)px.slots, (unsigned long long)px.taken,
             (unsigned long long)px.refused_site, (unsigned long long)px.refused_size,
             (unsigned long long)px.refused_busy, (unsigned long long)px.refused_thread, (unsigned long long)px.cut,
             (unsigned long long)px.freed, (unsigned long long)px.moved, (unsigned long long)px.reallocs,
             (unsigned long long)px.walks);
  out_printf(&o, "},\"forwarded\":{\"objects\":%llu,\"bytes_requested\":%llu},\"plan_walks\":%llu,\"plan_replays\":%llu,"
             "\"plan_speculated\":%llu,\"code_unloads\":%llu",
             (unsigned long long)atomic_load(&hl_state.forwarded_objects),
             (unsigned long long)atomic_load(&hl_state.forwarded_bytes),
             (unsigned long long)atomic_load(&hl_state.plan_walks),
             (unsigned long long)atomic_load(&hl_state.plan_replays), (unsigned long long)plan_speculated(),
             (unsigned long long)atomic_load(&hl_state.code_unloads));
  if (atomic_load(&hl_state.policy) == HL_POLICY_DPA) {
    out_printf(&o, ",");
    hl_dpa_stats_write(emit_out, &o, 1);
  }
  out_printf(&o, "}\n");
  out_flush(&o);
  close(o.fd);
  if (rename(tmp, path) != 0) { /* a directory there, say: no orphan next to it */
    unlink(tmp);
    hl_message("cannot write statistics to %s (it is a directory, or cannot be replaced)", path);
  }
}

static void write_table(const pool_totals *t, unsigned npools) {
  out o = {.fd = 2};
  unsigned used = 0;
  for (unsigned id = 1; id < npools; id++) used += t[id].allocs != 0;
  out_printf(&o, "heaplayout: pid %d, policy %s, %u pools; %llu objects (%llu bytes) forwarded to the allocator underneath\n",
             (int)getpid(), hl_policy_name(atomic_load(&hl_state.policy)), used,
             (unsigned long long)atomic_load(&hl_state.forwarded_objects),
             (unsigned long long)atomic_load(&hl_state.forwarded_bytes));
  if (atomic_load(&hl_state.policy) == HL_POLICY_PLAN) {
    /* how well the plan met this run: a plan that generalizes places about the share it
     * placed on its training input, with few full walks (heaplayout/planning/placement.py) */
    uint64_t all = atomic_load(&hl_state.forwarded_objects), all_bytes = atomic_load(&hl_state.forwarded_bytes);
    uint64_t grouped = 0, grouped_bytes = 0;
    for (unsigned id = 1; id < npools; id++) {
      all += t[id].allocs;
      all_bytes += t[id].bytes_requested;
      if (hl_pool_group((uint16_t)id)) {
        grouped += t[id].allocs;
        grouped_bytes += t[id].bytes_requested;
      }
    }
    uint64_t walks = atomic_load(&hl_state.plan_walks);
    out_printf(&o, "heaplayout: plan placed %.1f%% of %llu allocations (%.1f%% of bytes) in its groups; "
               "full stack walks for %.2f%% of allocations (%llu), %llu replayed walks, %llu given a walk's stable "
               "answer (the rest were cached)\n",
               all ? 100.0 * (double)grouped / (double)all : 0.0, (unsigned long long)all,
               all_bytes ? 100.0 * (double)grouped_bytes / (double)all_bytes : 0.0,
               all ? 100.0 * (double)walks / (double)all : 0.0, (unsigned long long)walks,
               (unsigned long long)atomic_load(&hl_state.plan_replays), (unsigned long long)plan_speculated());
  }
  hl_prefix_stats_t px;
  hl_prefix_stats(&px);
  if (px.region_bytes)
    out_printf(&o, "heaplayout: prefix region %llu bytes, %llu slots: %llu objects took a slot; refused %llu "
               "(another site's slot), %llu (too large), %llu (slot busy), %llu (not the counter's thread); %llu "
               "counters cut off; %llu slots freed, %llu moved out by realloc; %llu identifications walked the "
               "stack\n",
               (unsigned long long)px.region_bytes, (unsigned long long)px.slots, (unsigned long long)px.taken,
               (unsigned long long)px.refused_site, (unsigned long long)px.refused_size,
               (unsigned long long)px.refused_busy, (unsigned long long)px.refused_thread, (unsigned long long)px.cut,
               (unsigned long long)px.freed, (unsigned long long)px.moved, (unsigned long long)px.walks);
  if (atomic_load(&hl_state.policy) == HL_POLICY_DPA) hl_dpa_stats_write(emit_out, &o, 0);
  if (used == 0) {
    out_flush(&o);
    return;
  }
  out_printf(&o, "heaplayout: %5s %-34s %10s %12s %11s %11s %9s %6s\n", "pool", "site", "objects", "requested",
             "resident", "peak", "live", "frag");
  for (unsigned id = 1; id < npools; id++) {
    const pool_totals *p = &t[id];
    if (p->allocs == 0) continue;
    char where[300], label[64];
    const char *sym;
    describe_site(hl_pool_site((uint16_t)id), where, sizeof where, &sym);
    if (id < HL_POOL_FIRST_DYNAMIC) hl_format(where, sizeof where, "(%s)", pool_kind(id));
    if (hl_pool_group((uint16_t)id)) hl_format(label, sizeof label, "group %u (%.24s)", hl_pool_group((uint16_t)id), sym ? sym : where);
    else hl_format(label, sizeof label, "%.34s", sym ? sym : where);
    long peak = atomic_load(&resident_peak[id]);
    if ((uint64_t)peak < p->resident) peak = (long)p->resident;
    out_printf(&o, "heaplayout: %5u %-34s %10llu %12llu %11llu %11ld %9llu %5.1f%%\n", id, label,
               (unsigned long long)p->allocs, (unsigned long long)p->bytes_requested,
               (unsigned long long)p->resident, peak, (unsigned long long)(p->allocs - p->frees),
               100.0 * fragmentation(p));
  }
  out_flush(&o);
}

void hl_stats_report(void) {
  unsigned npools = hl_pool_count();
  size_t bytes = sizeof(pool_totals) * HL_MAX_POOLS;
  pool_totals *t = hl_meta_alloc(bytes);
  if (t == NULL) return;
  for (hl_heap *h = hl_heap_list(); h; h = h->next_heap)
    for (unsigned id = 1; id < npools; id++) {
      hl_tpool *tp = __atomic_load_n(&h->tpools[id], __ATOMIC_ACQUIRE);
      if (!tp) continue;
      t[id].allocs += tp->allocs;
      t[id].bytes_requested += tp->bytes_requested;
      t[id].slot_bytes += tp->slot_bytes;
      t[id].frees += tp->frees;
      t[id].freed_slot_bytes += tp->freed_slot_bytes;
    }
  t[HL_POOL_API].allocs += atomic_load(&explicit_totals[0]);
  t[HL_POOL_API].bytes_requested += atomic_load(&explicit_totals[1]);
  t[HL_POOL_API].slot_bytes += atomic_load(&explicit_totals[2]);
  t[HL_POOL_API].frees += atomic_load(&explicit_totals[3]);
  t[HL_POOL_API].freed_slot_bytes += atomic_load(&explicit_totals[4]);
  if (hl_rng.size) hl_chunk_for_each(add_chunk, t);
  if (hl_state.opt.stats) write_table(t, npools);
  if (hl_state.opt.stats_json[0]) write_json(t, npools, hl_state.opt.stats_json);
}
