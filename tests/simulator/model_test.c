/* Native driver for the hlsim model (simulator/model.c): reads an access trace on stdin and
 * prints the model's statistics as JSON. Options: the model's (docs/simulator.md).
 *
 * Trace lines: "R ADDR SIZE [PC]" or "W ADDR SIZE [PC]" (ADDR and PC in hex, SIZE decimal);
 * or a generator "S START COUNT STEP SIZE [PC]" (COUNT reads at START + i*STEP, hex START,
 * decimal rest; STEP may be negative), which keeps long patterns out of the pipe; or
 * "U LO HI" (hex): [LO, HI) was unmapped. For the timing model (--timing=mlp) a read or
 * write may carry its instruction index and the value read: "R ADDR SIZE PC INSTR VALUE"
 * (INSTR decimal, VALUE hex); "S" lines give instruction i*4 to the i-th read, after the
 * last instruction seen; "I N" sets the run's final instruction count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"
#include "options.h"

static void *host_alloc(void *ctx, hs_u64 n) { (void)ctx; return malloc(n); }

/* attribution by address: bucket = (addr >> 20) & 3, to test the bucket plumbing */
static unsigned classify(void *ctx, hs_u64 a) { (void)ctx; return (unsigned)((a >> 20) & 3); }

int main(int argc, char **argv) {
  hs_options o;
  hs_options_init(&o);
  for (int i = 1; i < argc; i++) {
    int r = hs_options_parse(&o, argv[i]);
    if (r <= 0) {
      fprintf(stderr, "model_test: %s option: %s\n", r < 0 ? "bad value in" : "unknown", argv[i]);
      return 2;
    }
  }
  const char *err = hs_options_finish(&o);
  o.cfg.alloc = host_alloc;
  o.cfg.ndims = 1;
  o.cfg.nbuckets[0] = 4;
  o.cfg.classify[0] = classify;
  if (!err) err = hs_check_config(&o.cfg);
  if (err) {
    fprintf(stderr, "model_test: %s\n", err);
    return 2;
  }
  hs_model *m = hs_new(&o.cfg);
  if (!m) { fprintf(stderr, "model_test: cannot build the model\n"); return 2; }
  char line[256];
  unsigned long long instr = 0, end_instr = 0;
  while (fgets(line, sizeof line, stdin)) {
    char kind;
    unsigned long long a, pc = 0;
    long long step;
    unsigned long long count;
    unsigned size;
    if (line[0] == 'S') {
      if (sscanf(line, "S %llx %llu %lld %u %llx", &a, &count, &step, &size, &pc) < 4) goto bad;
      for (unsigned long long i = 0; i < count; i++, instr += 4)
        hs_access_timed(m, a + (unsigned long long)(step * (long long)i), size, 0, pc, instr, 0);
      continue;
    }
    if (line[0] == 'I') {
      if (sscanf(line, "I %llu", &end_instr) != 1) goto bad;
      continue;
    }
    if (line[0] == 'U') {
      unsigned long long hi;
      if (sscanf(line, "U %llx %llx", &a, &hi) != 2) goto bad;
      hs_unmap(m, a, hi);
      continue;
    }
    if (line[0] == '\n' || line[0] == '#') continue;
    unsigned long long value = 0, at = instr;
    int got = sscanf(line, "%c %llx %u %llx %llu %llx", &kind, &a, &size, &pc, &at, &value);
    if (got < 3 || (kind != 'R' && kind != 'W')) goto bad;
    if (got >= 5) instr = at;
    hs_access_timed(m, a, size, kind == 'W', pc, instr, value);
    instr++;
    continue;
  bad:
    fprintf(stderr, "model_test: bad trace line: %s", line);
    return 2;
  }
  hs_finish(m);
  const hs_stats *s = hs_get_stats(m);
  printf("{\"refs\": %llu, \"loads\": %llu, \"stores\": %llu, \"line_accesses\": %llu, \"covered\": %llu, \"cycles\": %llu,\n"
         " \"page_faults\": %llu, \"fault_cycles\": %llu,\n",
         s->refs, s->loads, s->stores, s->line_accesses, s->covered, s->cycles, s->faults, s->fault_cycles);
  if (end_instr < instr) end_instr = instr;
  printf(" \"instructions\": %llu, \"l2pf_issued\": %llu, \"l2pf_useful\": %llu, \"dram_accesses\": %llu, \"dram_row_hits\": %llu,\n"
         " \"walks\": %llu, \"walk_pde_misses\": %llu, \"walk_cycles\": %llu, \"tlb_cycles\": %llu,\n",
         end_instr, s->l2pf_issued, s->l2pf_useful, s->dram_accesses, s->dram_row_hits, s->walks, s->walk_pde_misses,
         s->walk_cycles, s->tlb_cycles);
  hs_timing *t = hs_get_timing(m);
  if (t) {
    unsigned long long cycles = hs_timing_cycles(t, end_instr); /* first: it retires what is left */
    const hs_timing_stats *ts = hs_timing_get_stats(t);
    printf(" \"timing\": {\"cycles\": %llu, \"stall_cycles\": %llu, \"load_misses\": %llu, \"dependent\": %llu, \"mshr_waits\": %llu, \"line_waits\": %llu},\n",
           cycles, ts->stall / 100, ts->load_misses, ts->dependent, ts->mshr_waits, ts->line_waits);
  }
  printf(" \"levels\": [");
  for (unsigned i = 0; i < o.cfg.nlevels; i++) {
    const hs_level_stats *l = &s->level[i];
    printf("%s{\"accesses\": %llu, \"misses\": %llu, \"pf_issued\": %llu, \"pf_useful\": %llu, \"pf_useless\": %llu, \"pf_resident\": %llu, \"served\": %llu}",
           i ? ", " : "", l->accesses, l->misses, l->pf_issued, l->pf_useful, l->pf_useless, l->pf_resident, s->served[i]);
  }
  printf("],\n \"memory_served\": %llu,\n \"tlb\": [", s->served[o.cfg.nlevels]);
  for (unsigned i = 0; i < o.cfg.ntlb; i++)
    printf("%s{\"accesses\": %llu, \"misses\": %llu}", i ? ", " : "", s->tlb_accesses[i], s->tlb_misses[i]);
  printf("],\n \"buckets\": [");
  for (unsigned b = 0; b < 4; b++) {
    const hs_bucket_stats *k = hs_get_bucket(m, 0, b);
    printf("%s{\"misses\": [%llu, %llu, %llu], \"tlb_misses\": [%llu, %llu], \"pf_useful\": %llu, \"pf_useless\": %llu}",
           b ? ", " : "", k->misses[0], k->misses[1], k->misses[2], k->tlb_misses[0], k->tlb_misses[1], k->pf_useful, k->pf_useless);
  }
  printf("]}\n");
  return 0;
}
