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
/* PreFix records (docs/plan-format.md, docs/prefix.md) */
#define HL_PLAN_MAX_REGION (1u << 30)         /* region bytes */
#define HL_PLAN_MIN_REGION_ALIGN 16u          /* what malloc guarantees on x86-64 */
#define HL_PLAN_MAX_REGION_ALIGN 4096u
#define HL_PLAN_MAX_COUNTERS 4096u            /* contexts with slots: lua5.4 has 187 */
#define HL_PLAN_MAX_SITES 4096u
#define HL_PLAN_MAX_RANGES 65536u             /* `fixed` ranges over all counters */
#define HL_PLAN_MAX_EXTRAS 8u                 /* a `regular` counter's listed values */
#define HL_PLAN_MAX_SLOTS (1u << 24)
#define HL_PLAN_MAX_RECYCLE (1u << 24)
#define HL_PLAN_MAX_VALUE 0xffffffffull       /* counter values are 32 bits */

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

enum hl_plan_counter_kind { HL_COUNTER_ALL = 1, HL_COUNTER_REGULAR, HL_COUNTER_FIXED, HL_COUNTER_RECYCLE };

/* A prefix_counter: which values of it have a slot. all: 0..count-1; regular: start +
 * k*stride for k < count, and extra[]; fixed: ranges [first_range, first_range + count) of
 * the spec's range table; recycle: count slots, value mod count. */
typedef struct hl_plan_counter_spec {
  uint8_t kind;
  uint8_t nextra;
  uint32_t start, stride, count, first_range;
  uint32_t extra[HL_PLAN_MAX_EXTRAS];
  uint64_t nvalues; /* the slots it must have */
} hl_plan_counter_spec;

/* A prefix_slot, in file order (sorted by counter and value). */
typedef struct hl_plan_slot_spec {
  uint32_t line;
  uint16_t counter, site;
  uint32_t value; /* recycle: the slot number */
  uint32_t offset, size;
} hl_plan_slot_spec;

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
  uint8_t group_spans[HL_PLAN_MAX_GROUPS + 1];  /* by group id: fresh space per size class */
  uint8_t group_line[HL_PLAN_MAX_GROUPS + 1];   /* by group id: bytes into a cache line its fresh space starts (0, 16, 32, 48) */
  /* PreFix: region_bytes 0 when the plan has none */
  uint32_t region_bytes, region_align;
  uint32_t ncounters, nsites, nranges, nslots, nprules;
  /* parse state of the slots (the counter whose values come now, and where in them) */
  uint32_t slot_counter, slot_extra, slot_range;
  uint64_t slot_index, slot_prog, slot_next;
  uint16_t site_counter[HL_PLAN_MAX_SITES + 1]; /* by site id */
  hl_plan_counter_spec counters[HL_PLAN_MAX_COUNTERS + 1]; /* by counter id */
  uint32_t range_lo[HL_PLAN_MAX_RANGES], range_hi[HL_PLAN_MAX_RANGES];
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

/* The same, with room for the PreFix records too: prefix_select rules (group = site) in
 * prules[0, prule_cap), slots in slots[0, slot_cap), stored as rules are. With room for all
 * of them, the end also checks that no prefix_select chain repeats (hl_plan_parse leaves
 * that out, as it leaves out the rules' when cap is short). A valid plan with slots must then
 * pass hl_plan_check_slots, the last check of all. */
int hl_plan_parse_full(const char *text, size_t len, hl_plan_spec *spec, hl_plan_rule_spec *rules, uint32_t cap,
                       hl_plan_rule_spec *prules, uint32_t prule_cap, hl_plan_slot_spec *slots, uint32_t slot_cap,
                       hl_plan_error *err);

/* No two slots overlap. owner: region_bytes / region_align entries, zero; on success each
 * granule a slot covers holds 1 + the slot's index (prefix.c finds a freed slot by it). */
int hl_plan_check_slots(const hl_plan_spec *spec, const hl_plan_slot_spec *slots, uint32_t *owner,
                        hl_plan_error *err);

#endif
