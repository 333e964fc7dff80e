/* The dpa policy's statistics (HEAPLAYOUT_STATS, HEAPLAYOUT_STATS_JSON): the APCC length
 * distribution (distinct chains, and allocations decided on the slow path, by length),
 * groups, pools, merges by type, groups returned to the allocator underneath, and the
 * wrapper analysis's verdicts (text: the wrappers found; JSON: every return address). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "dpa.h"

typedef struct emitter {
  void (*emit)(void *ctx, const char *s);
  void *ctx;
  int json;
  unsigned n, wrappers;
} emitter;

static void where_of(uintptr_t pc, char *where, size_t cap, const char **sym) {
  Dl_info info;
  *sym = NULL;
  if (dladdr((void *)pc, &info) && info.dli_fname) {
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    hl_format(where, cap, "%s+0x%lx", base[0] ? base : "main", (unsigned long)(pc - (uintptr_t)info.dli_fbase));
    *sym = info.dli_sname;
  } else {
    hl_format(where, cap, "0x%lx", (unsigned long)pc);
  }
}

static void count_wrapper(uintptr_t ra, int verdict, void *arg) {
  (void)ra;
  emitter *e = arg;
  e->n++;
  e->wrappers += verdict == DPA_V_WRAPPER;
}

static void emit_verdict(uintptr_t ra, int verdict, void *arg) {
  emitter *e = arg;
  char where[300], line[700];
  const char *sym;
  if (!e->json && verdict != DPA_V_WRAPPER) return;
  where_of(ra, where, sizeof where, &sym);
  if (e->json) {
    char name[256] = "";
    for (size_t i = 0, j = 0; sym && sym[i] && j + 2 < sizeof name; i++) /* symbols need no more escaping than this */
      if (sym[i] != '"' && sym[i] != '\\' && (unsigned char)sym[i] >= 0x20) name[j++] = sym[i], name[j] = '\0';
    hl_format(line, sizeof line, "%s{\"return_address\":\"%s\",\"function\":\"%s\",\"verdict\":\"%s\"}",
              e->n++ ? "," : "", where, name, hl_dpa_verdict_name(verdict));
  } else {
    hl_format(line, sizeof line, "heaplayout: dpa: wrapper %s (call returning to %s)\n", sym ? sym : "?", where);
  }
  e->emit(e->ctx, line);
}

void hl_dpa_stats_write(void (*emit)(void *ctx, const char *s), void *ctx, int json) {
  dpa_stats st;
  dpa_shape_stats sh;
  uint64_t chains[HL_DPA_MAX_CHAIN + 1];
  hl_dpa_stats(&st);
  hl_dpa_shape_stats(&sh);
  hl_dpa_chain_lengths(chains);
  emitter e = {emit, ctx, json, 0, 0};
  hl_dpa_verdicts_each(count_wrapper, &e);
  char line[1024];
  if (json) {
    int n = hl_format(line, sizeof line, "\"dpa\":{\"chains_by_length\":[");
    for (unsigned i = 1; i <= HL_DPA_MAX_CHAIN; i++)
      n += hl_format(line + n, sizeof line - (size_t)n, "%s%llu", i > 1 ? "," : "", (unsigned long long)chains[i]);
    n += hl_format(line + n, sizeof line - (size_t)n, "],\"slow_allocations_by_length\":[");
    for (unsigned i = 1; i <= HL_DPA_MAX_CHAIN; i++)
      n += hl_format(line + n, sizeof line - (size_t)n, "%s%llu", i > 1 ? "," : "",
                     (unsigned long long)st.by_len_objects[i]);
    hl_format(line + n, sizeof line - (size_t)n,
              "],\"groups\":%llu,\"pooled\":%llu,\"merged\":%llu,\"merged_type1\":%llu,\"merged_type2\":%llu,"
              "\"edges\":%llu,\"samples\":%llu,\"returned\":%llu,\"slow_allocations\":%llu,\"functions_analysed\":%u,"
              "\"wrappers\":%u,\"verdicts\":[",
              (unsigned long long)st.groups, (unsigned long long)st.pooled, (unsigned long long)st.merged,
              (unsigned long long)sh.type1, (unsigned long long)sh.type2, (unsigned long long)sh.edges,
              (unsigned long long)sh.samples, (unsigned long long)st.returned, (unsigned long long)st.slow_allocs,
              e.n, e.wrappers);
    emit(ctx, line);
    e.n = 0;
    hl_dpa_verdicts_each(emit_verdict, &e);
    emit(ctx, "]}");
    return;
  }
  int n = hl_format(line, sizeof line, "heaplayout: dpa: call chains by length (APCC)");
  for (unsigned i = 1; i <= HL_DPA_MAX_CHAIN; i++)
    n += hl_format(line + n, sizeof line - (size_t)n, " %u:%llu", i, (unsigned long long)chains[i]);
  n += hl_format(line + n, sizeof line - (size_t)n, "; allocations decided on the slow path by length");
  for (unsigned i = 1; i <= HL_DPA_MAX_CHAIN; i++)
    n += hl_format(line + n, sizeof line - (size_t)n, " %u:%llu", i, (unsigned long long)st.by_len_objects[i]);
  hl_format(line + n, sizeof line - (size_t)n,
            "\nheaplayout: dpa: %llu groups, %llu pooled, %llu merges (type I %llu, type II %llu; %llu shape edges "
            "from %llu sampled objects), %llu returned to the allocator; %u of %u return addresses are in wrappers\n",
            (unsigned long long)st.groups, (unsigned long long)st.pooled, (unsigned long long)st.merged,
            (unsigned long long)sh.type1, (unsigned long long)sh.type2, (unsigned long long)sh.edges,
            (unsigned long long)sh.samples, (unsigned long long)st.returned, e.wrappers, e.n);
  emit(ctx, line);
  hl_dpa_verdicts_each(emit_verdict, &e);
}
