/* The plan file's grammar (docs/plan-format.md, version 1), parsed into plain structs.
 *
 * Pure: no malloc, no I/O, no global state, so the runtime (plan.c), the conformance
 * driver (tests/runtime/plan_parse_check.c) and the fuzzer (fuzz/) run the same code.
 * heaplayout/plan_format.py implements the same grammar, check for check and message for
 * message; tests/data/plan_conformance/ holds the cases both must agree on. */
#ifndef HL_PLAN_PARSE_H
#define HL_PLAN_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Limits of the runtime's tables; a plan beyond them is refused, not cut. */
#define HL_PLAN_MAX_MODULES 64u
#define HL_PLAN_MAX_SKIPS 32u
#define HL_PLAN_MAX_RULE_FRAMES 16u
#define HL_PLAN_MAX_GROUPS 4093u /* pool ids 3..4095: HL_MAX_POOLS less the reserved 0, 1, 2 (plan.c checks) */
#define HL_PLAN_MAX_RULES (1u << 20)
#define HL_PLAN_MAX_PATH 511u
#define HL_PLAN_MAX_SKIP_NAME 127u
#define HL_PLAN_MAX_BUILD_ID 64u            /* bytes */
#define HL_PLAN_MAX_OFFSET ((1ull << 47) - 1) /* x86-64 user addresses have 47 bits */
#define HL_PLAN_MAX_OBJECT_SIZE 32768u      /* HL_MAX_CLASS_SIZE */

/* A frame as parsed: module index << 48 | offset (the offset fits: at most 2^47 - 1). */
#define HL_PLAN_FRAME_SHIFT 48
static inline uint64_t hl_plan_frame(uint32_t module, uint64_t offset) {
  return (uint64_t)module << HL_PLAN_FRAME_SHIFT | offset;
}
static inline uint32_t hl_plan_frame_module(uint64_t frame) { return (uint32_t)(frame >> HL_PLAN_FRAME_SHIFT); }
static inline uint64_t hl_plan_frame_offset(uint64_t frame) {
  return frame & ((1ull << HL_PLAN_FRAME_SHIFT) - 1);
}

typedef struct hl_plan_rule_spec {
  uint32_t line;    /* where it was written */
  uint16_t group;   /* 0: ungrouped */
  uint8_t nframes;  /* 1..HL_PLAN_MAX_RULE_FRAMES */
  uint64_t frames[HL_PLAN_MAX_RULE_FRAMES]; /* innermost first */
} hl_plan_rule_spec;

/* Shell sort of n elements of `size` bytes (at most HL_PLAN_SORT_MAX_ELEMENT) by `before`
 * (a strict "a goes before b"): no malloc, no recursion; the parser's and plan.c's rules. */
#define HL_PLAN_SORT_MAX_ELEMENT 256
void hl_plan_sort(void *base, uint32_t n, size_t size, int (*before)(const void *a, const void *b));

typedef struct hl_plan_module_spec {
  uint32_t build_id_len; /* 0: the plan gives none ("-"): match by file name */
  uint8_t build_id[HL_PLAN_MAX_BUILD_ID];
  char path[HL_PLAN_MAX_PATH + 1];
} hl_plan_module_spec;

typedef struct hl_plan_spec {
  char strategy[16];
  uint32_t chunk_size, max_object_size;
  uint32_t min_align;          /* 8 or 16 (16 when absent) */
  uint32_t rest_max_size;      /* `rest callsite N`: N; 0: rest allocator */
  uint8_t recursion_function;  /* `recursion function`: walks keep one frame per function */
  uint32_t nmodules, nskips, ngroups, nrules;
  hl_plan_module_spec modules[HL_PLAN_MAX_MODULES];
  char skips[HL_PLAN_MAX_SKIPS][HL_PLAN_MAX_SKIP_NAME + 1];
  uint8_t group_packed[HL_PLAN_MAX_GROUPS + 1]; /* by group id */
} hl_plan_spec;

typedef struct hl_plan_error {
  uint32_t line; /* 1-based; 0: the file as a whole */
  char reason[256];
} hl_plan_error;

/* Parses text[0, len). Rule i is stored in rules[i] while i < cap; spec->nrules counts
 * them all. Returns 1 for a valid plan; when cap >= spec->nrules the rules are then stored
 * sorted by chain and known to be distinct (a chain given twice is an error), otherwise
 * parse again with room for spec->nrules. Returns 0 with err filled for anything else:
 * the first problem in file order, as heaplayout/plan_format.py reports it. */
int hl_plan_parse(const char *text, size_t len, hl_plan_spec *spec, hl_plan_rule_spec *rules, uint32_t cap,
                  hl_plan_error *err);

#endif
