/* The C side of the plan conformance cases (tests/test_plan_conformance.py): parses each
 * file with the runtime's parser (runtime/src/plan_parse.c) and prints one line per file,
 *   PATH<TAB>ok<TAB>RULES
 *   PATH<TAB>error<TAB>LINE<TAB>REASON
 * so the test can compare verdict, line and reason with heaplayout/plan_format.py. */
#include <stdio.h>
#include <stdlib.h>

#include "plan_parse.h"

static char *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  *len = n;
  return buf;
}

int main(int argc, char **argv) {
  static hl_plan_spec spec;
  hl_plan_error err;
  int status = 0;
  for (int i = 1; i < argc; i++) {
    size_t len;
    char *text = read_all(argv[i], &len);
    if (text == NULL) {
      printf("%s\tunreadable\n", argv[i]);
      status = 2;
      continue;
    }
    hl_plan_rule_spec *rules = NULL, *prules = NULL;
    hl_plan_slot_spec *slots = NULL;
    int ok = hl_plan_parse(text, len, &spec, NULL, 0, &err); /* count, then parse with room */
    if (ok && (spec.nrules > 0 || spec.nprules > 0 || spec.nslots > 0)) {
      uint32_t n = spec.nrules, np = spec.nprules, ns = spec.nslots;
      rules = malloc(sizeof *rules * (n ? n : 1));
      prules = malloc(sizeof *prules * (np ? np : 1));
      slots = malloc(sizeof *slots * (ns ? ns : 1));
      ok = hl_plan_parse_full(text, len, &spec, rules, n, prules, np, slots, ns, &err);
      if (ok && spec.region_bytes) {
        uint32_t *owner = calloc(spec.region_bytes / spec.region_align + 1, sizeof *owner);
        ok = hl_plan_check_slots(&spec, slots, owner, &err);
        free(owner);
      }
    }
    if (ok) printf("%s\tok\t%u\n", argv[i], spec.nrules);
    else printf("%s\terror\t%u\t%s\n", argv[i], err.line, err.reason);
    free(rules);
    free(prules);
    free(slots);
    free(text);
  }
  return status;
}
