/* libFuzzer harness for the runtime's plan reader (runtime/src/plan_parse.c): any bytes
 * must either parse into a plan within the runtime's limits or be refused with a line and
 * a reason, without a crash, a leak or undefined behaviour (built with ASan and UBSan).
 * What it accepts is checked against the grammar's promises below: a violated promise
 * aborts, so it counts as a crash. See fuzz/README.md. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan_parse.h"
#include "tunables.h"

#define PROMISE(x) ((x) ? (void)0 : abort())

static void check_plan(const hl_plan_spec *s, const hl_plan_rule_spec *r, uint32_t n, uint32_t lines) {
  PROMISE(s->chunk_size >= HL_MIN_CHUNK_SIZE && s->chunk_size <= HL_MAX_CHUNK_SIZE);
  PROMISE((s->chunk_size & (s->chunk_size - 1)) == 0);
  PROMISE(s->max_object_size >= 1 && s->max_object_size <= HL_PLAN_MAX_OBJECT_SIZE);
  PROMISE(s->min_align == 8 || s->min_align == 16);
  PROMISE(s->rest_max_size <= HL_PLAN_MAX_OBJECT_SIZE);
  PROMISE(s->nmodules <= HL_PLAN_MAX_MODULES && s->nskips <= HL_PLAN_MAX_SKIPS && s->ngroups <= HL_PLAN_MAX_GROUPS);
  PROMISE(s->nrules <= HL_PLAN_MAX_RULES);
  PROMISE(!strcmp(s->strategy, "halo") || !strcmp(s->strategy, "callsite") || !strcmp(s->strategy, "hds") ||
          !strcmp(s->strategy, "prefix:hot") || !strcmp(s->strategy, "prefix:hds") ||
          !strcmp(s->strategy, "prefix:hds+hot"));
  for (uint32_t i = 0; i < s->nmodules; i++) {
    PROMISE(strlen(s->modules[i].path) >= 1 && strlen(s->modules[i].path) <= HL_PLAN_MAX_PATH);
    PROMISE(s->modules[i].build_id_len <= HL_PLAN_MAX_BUILD_ID);
  }
  for (uint32_t i = 0; i < s->nskips; i++) PROMISE(strlen(s->skips[i]) >= 1 && strlen(s->skips[i]) <= HL_PLAN_MAX_SKIP_NAME);
  for (uint32_t i = 0; i < n; i++) {
    PROMISE(r[i].group <= s->ngroups && r[i].nframes >= 1 && r[i].nframes <= HL_PLAN_MAX_RULE_FRAMES);
    PROMISE(r[i].line >= 2 && r[i].line <= lines);
    for (unsigned k = 0; k < r[i].nframes; k++) {
      PROMISE(hl_plan_frame_module(r[i].frames[k]) < s->nmodules);
      PROMISE(hl_plan_frame_offset(r[i].frames[k]) <= HL_PLAN_MAX_OFFSET);
    }
    if (i > 0) /* sorted by chain, no chain twice */
      PROMISE(r[i].nframes != r[i - 1].nframes ||
              memcmp(r[i].frames, r[i - 1].frames, r[i].nframes * sizeof r[i].frames[0]) != 0);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static hl_plan_spec spec;
  static hl_plan_rule_spec room[256];
  hl_plan_error err;
  /* the runtime's text is a private mapping of exactly the file: copy to an exact-size
   * buffer so reading one byte past it is caught */
  char *text = malloc(size ? size : 1);
  memcpy(text, data, size);
  uint32_t lines = 0;
  for (size_t i = 0; i < size; i++) lines += text[i] == '\n';
  hl_plan_rule_spec *rules = room;
  uint32_t cap = sizeof room / sizeof room[0];
  int ok = hl_plan_parse(text, size, &spec, rules, cap, &err);
  if (ok && spec.nrules > cap) { /* as the runtime does: parse again with room for every rule */
    cap = spec.nrules;
    rules = malloc(sizeof *rules * cap);
    ok = hl_plan_parse(text, size, &spec, rules, cap, &err);
    PROMISE(ok && spec.nrules == cap);
  }
  if (ok) {
    check_plan(&spec, rules, spec.nrules, lines);
  } else {
    PROMISE(memchr(err.reason, '\0', sizeof err.reason) != NULL && err.reason[0] != '\0');
    PROMISE(err.line <= lines);
    for (const char *c = err.reason; *c; c++) PROMISE(*c >= 0x20 && *c < 0x7f); /* printable in a message */
  }
  if (rules != room) free(rules);
  free(text);
  return 0;
}
