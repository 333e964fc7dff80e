/* hlsim model options: one parser for the Valgrind tool and the native test driver.
 * Plain C, no library calls. Option list and defaults: docs/simulator.md. */
#ifndef HLSIM_OPTIONS_H
#define HLSIM_OPTIONS_H
#include "model.h"

typedef struct {
  hs_config cfg;                 /* everything but the level list */
  hs_cache_cfg l1, l2, ll;       /* --L1, --L2, --LL */
  unsigned levels;               /* 2 = L1 + LL, 3 = L1 + L2 + LL */
  unsigned tlb_levels;           /* 0, 1 or 2 */
  hs_tlb_cfg dtlb, stlb;
  unsigned pf_level_user;        /* 1-based */
  unsigned line_all;             /* --line: every level's line size (0 = not given) */
} hs_options;

void hs_options_init(hs_options *o);
/* 1: understood and valid; 0: not a model option; -1: a model option with a bad value. */
int hs_options_parse(hs_options *o, const char *arg);
/* Build o->cfg's level and TLB lists; returns 0 or a static message. */
const char *hs_options_finish(hs_options *o);

#endif
