/* The plan file's grammar: see plan_parse.h. Every check here has its twin, in the same
 * order and with the same message, in heaplayout/plan_format.py (parse_plan_bytes); the
 * conformance cases in tests/data/plan_conformance/ hold both to it. */
#define _GNU_SOURCE
#include "plan_parse.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "tunables.h"

typedef struct span {
  const char *p;
  size_t n;
} span;

static int span_is(span s, const char *lit) {
  size_t n = strlen(lit);
  return s.n == n && memcmp(s.p, lit, n) == 0;
}

static int fail(hl_plan_error *err, uint32_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(hl_plan_error *err, uint32_t line, const char *fmt, ...) {
  err->line = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->reason, sizeof err->reason, fmt, ap);
  va_end(ap);
  return 0;
}

/* A field as messages quote it: itself when short printable ASCII, else its length, so a
 * message never carries control bytes or cut UTF-8. */
#define SHOW_MAX 40u
typedef struct shown {
  char text[SHOW_MAX + 16];
} shown;
static shown show(span s) {
  shown out;
  int plain = s.n >= 1 && s.n <= SHOW_MAX;
  for (size_t i = 0; plain && i < s.n; i++) plain = (unsigned char)s.p[i] > 0x20 && (unsigned char)s.p[i] < 0x7f;
  if (plain) {
    memcpy(out.text, s.p, s.n);
    out.text[s.n] = '\0';
  } else {
    snprintf(out.text, sizeof out.text, "(%zu bytes)", s.n);
  }
  return out;
}

/* ---- numbers ---- */

enum number { NUM_BAD, NUM_OK, NUM_TOO_BIG };

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Digits of `base` only (at least one); a value past 2^64 - 1 is NUM_TOO_BIG. */
static enum number digits(span s, unsigned base, uint64_t *out) {
  if (s.n == 0) return NUM_BAD;
  uint64_t v = 0;
  int big = 0;
  for (size_t i = 0; i < s.n; i++) {
    int d = hex_digit(s.p[i]);
    if (d < 0 || (unsigned)d >= base) return NUM_BAD;
    /* no division per digit: a plan may hold tens of millions of digits */
    big |= __builtin_mul_overflow(v, (uint64_t)base, &v) | __builtin_add_overflow(v, (uint64_t)d, &v);
  }
  *out = v;
  return big ? NUM_TOO_BIG : NUM_OK;
}

/* A number field: decimal, or hex written 0x... */
static enum number number(span s, uint64_t *out) {
  if (s.n > 2 && s.p[0] == '0' && (s.p[1] == 'x' || s.p[1] == 'X')) return digits((span){s.p + 2, s.n - 2}, 16, out);
  return digits(s, 10, out);
}

/* A frame offset: always hex, 0x optional. */
static enum number hex_offset(span s, uint64_t *out) {
  if (s.n > 2 && s.p[0] == '0' && (s.p[1] == 'x' || s.p[1] == 'X')) s = (span){s.p + 2, s.n - 2};
  return digits(s, 16, out);
}

/* ---- text ---- */

/* Offset of the first byte that does not begin a well-formed UTF-8 sequence (no
 * overlongs, no surrogates, at most U+10FFFF), or len: what Python's strict decoder
 * reports as the error's start. */
static size_t utf8_error(const unsigned char *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    uint64_t eight;
    if (i + 8 <= len && (memcpy(&eight, s + i, 8), (eight & 0x8080808080808080ull) == 0)) {
      i += 8; /* ASCII, eight bytes at a time */
      continue;
    }
    unsigned char b = s[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    unsigned need;
    unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b == 0xe0) need = 2, lo = 0xa0;
    else if (b == 0xed) need = 2, hi = 0x9f;
    else if (b >= 0xe1 && b <= 0xef) need = 2;
    else if (b == 0xf0) need = 3, lo = 0x90;
    else if (b == 0xf4) need = 3, hi = 0x8f;
    else if (b >= 0xf1 && b <= 0xf3) need = 3;
    else return i;
    if (i + 1 >= len || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (unsigned k = 2; k <= need; k++)
      if (i + k >= len || s[i + k] < 0x80 || s[i + k] > 0xbf) return i;
    i += need + 1;
  }
  return len;
}

/* ---- records ---- */

/* The order records come in (docs/plan-format.md); the same list is in plan_format.py. */
enum record { R_MAGIC, R_STRATEGY, R_CHUNK, R_MAX_OBJECT, R_MIN_ALIGN, R_REST, R_RECURSION, R_MODULE, R_SKIP,
              R_GROUP, R_SELECT, R_PREFIX_REGION, R_PREFIX_COUNTER, R_PREFIX_SITE, R_PREFIX_SELECT, R_PREFIX_SLOT,
              R_END, R_COUNT };
static const char *const record_names[R_COUNT] = {
    "heaplayout-plan", "strategy",      "chunk_size",     "max_object_size", "min_align",     "rest",
    "recursion",       "module",        "skip",           "group",           "select",        "prefix_region",
    "prefix_counter",  "prefix_site",   "prefix_select",  "prefix_slot",     "end"};
static const uint8_t record_len[R_COUNT] = {15, 8, 10, 15, 9, 4, 9, 6, 4, 5, 6, 13, 14, 11, 13, 11, 3};
#define ORDER_TEXT                                                                                        \
  "heaplayout-plan, strategy, chunk_size, max_object_size, min_align, rest, recursion, module, skip, group, " \
  "select, prefix_region, prefix_counter, prefix_site, prefix_select, prefix_slot, end"
static int repeatable(int r) {
  return r == R_MODULE || r == R_SKIP || r == R_GROUP || r == R_SELECT || r == R_PREFIX_COUNTER ||
         r == R_PREFIX_SITE || r == R_PREFIX_SELECT || r == R_PREFIX_SLOT;
}
static int may_be_absent(int r) {
  return repeatable(r) || r == R_MIN_ALIGN || r == R_REST || r == R_RECURSION || r == R_PREFIX_REGION;
}
/* Record k may be absent before record r: the PreFix records need their region. */
static int may_be_absent_before(int k, int r) {
  if (k == R_PREFIX_REGION) return r == R_END;
  return may_be_absent(k);
}

typedef struct fields {
  span all[HL_PLAN_MAX_RULE_FRAMES + 2]; /* the first ones; `count` counts them all */
  uint32_t count;
} fields;

/* Fields after the record name (the line has single spaces, none at either end). */
static void split(span rest, fields *f) {
  f->count = 0;
  const char *p = rest.p, *end = rest.p + rest.n;
  while (p < end) {
    const char *sp = memchr(p, ' ', (size_t)(end - p));
    const char *stop = sp ? sp : end;
    if (f->count < sizeof f->all / sizeof f->all[0]) f->all[f->count] = (span){p, (size_t)(stop - p)};
    f->count++;
    p = sp ? sp + 1 : end;
  }
}

static int arity(hl_plan_error *err, uint32_t line, int r, const fields *f, uint32_t n) {
  if (f->count == n) return 1;
  return fail(err, line, "%s takes %u field%s, got %u", record_names[r], n, n == 1 ? "" : "s", f->count);
}

/* A number field that must lie in [lo, hi]; `what` names it in messages, `range` says what
 * is allowed (after the value as written). */
static int bounded(hl_plan_error *err, uint32_t line, const char *what, span s, uint64_t lo, uint64_t hi,
                   const char *range, uint64_t *out) {
  enum number k = number(s, out);
  if (k == NUM_BAD) return fail(err, line, "%s: '%s' is not a number", what, show(s).text);
  if (k == NUM_TOO_BIG || *out < lo || *out > hi) return fail(err, line, "%s %s: %s", what, show(s).text, range);
  return 1;
}

/* bounded() whose message needs the numbers of the moment: formatted only on failure
 * (a plan has up to 2^24 slot records; formatting each one's range cost most of a parse). */
static int bounded_fmt(hl_plan_error *err, uint32_t line, const char *what, span s, uint64_t lo, uint64_t hi,
                       uint64_t *out, const char *fmt, unsigned arg) __attribute__((format(printf, 8, 0)));
static int bounded_fmt(hl_plan_error *err, uint32_t line, const char *what, span s, uint64_t lo, uint64_t hi,
                       uint64_t *out, const char *fmt, unsigned arg) {
  if (number(s, out) == NUM_OK && *out >= lo && *out <= hi) return 1;
  char range[96];
  snprintf(range, sizeof range, fmt, arg);
  return bounded(err, line, what, s, lo, hi, range, out);
}

static int lower_hex_bytes(span s, uint8_t *out, uint32_t *len) {
  if (s.n == 0 || s.n % 2 || s.n / 2 > HL_PLAN_MAX_BUILD_ID) return 0;
  for (size_t i = 0; i < s.n; i++)
    if (!((s.p[i] >= '0' && s.p[i] <= '9') || (s.p[i] >= 'a' && s.p[i] <= 'f'))) return 0;
  for (size_t i = 0; i < s.n; i += 2) out[i / 2] = (uint8_t)(hex_digit(s.p[i]) << 4 | hex_digit(s.p[i + 1]));
  *len = (uint32_t)(s.n / 2);
  return 1;
}

typedef struct parse_state {
  hl_plan_spec *spec;
  hl_plan_rule_spec *rules;
  uint32_t cap;
  hl_plan_rule_spec *prules;
  uint32_t prule_cap;
  hl_plan_slot_spec *slots;
  uint32_t slot_cap;
  hl_plan_error *err;
} parse_state;

/* select, or (prefix) prefix_select, whose label is a PreFix site instead of a group. */
static int parse_select(parse_state *st, uint32_t line, span rest, int prefix) {
  hl_plan_spec *spec = st->spec;
  hl_plan_error *err = st->err;
  const char *p = rest.p, *end = rest.p + rest.n;
  const char *name = prefix ? "prefix_select" : "select";
  uint32_t nfields = 0;
  for (const char *q = p; q < end; q++) nfields += *q == ' ';
  nfields += rest.n > 0;
  if (nfields < 2) return fail(err, line, "%s needs a %s and at least one frame", name, prefix ? "site" : "group");
  const char *sp = memchr(p, ' ', (size_t)(end - p));
  span g = {p, (size_t)(sp - p)};
  uint64_t group;
  enum number k = number(g, &group);
  if (k == NUM_BAD) return fail(err, line, "%s %s: '%s' is not a number", name, prefix ? "site" : "group", show(g).text);
  if (prefix && (k == NUM_TOO_BIG || group > spec->nsites))
    return fail(err, line, "prefix_select %s: no such site (sites are 1..%u, 0 = no site)", show(g).text,
                spec->nsites);
  if (!prefix && (k == NUM_TOO_BIG || group > spec->ngroups))
    return fail(err, line, "select %s: no such group (groups are 1..%u, 0 = ungrouped)", show(g).text,
                spec->ngroups);
  if (nfields - 1 > HL_PLAN_MAX_RULE_FRAMES)
    return fail(err, line, "%s has %u frames, the runtime takes at most %u", name, nfields - 1,
                HL_PLAN_MAX_RULE_FRAMES);
  if ((prefix ? spec->nprules : spec->nrules) == HL_PLAN_MAX_RULES)
    return fail(err, line, "too many %s records (the runtime takes at most %u)", name, HL_PLAN_MAX_RULES);
  hl_plan_rule_spec r;
  r.line = line;
  r.group = (uint16_t)group;
  r.nframes = 0;
  for (p = sp + 1;; p++) {
    const char *stop = memchr(p, ' ', (size_t)(end - p));
    if (stop == NULL) stop = end;
    span frame = {p, (size_t)(stop - p)};
    const char *colon = memchr(frame.p, ':', frame.n);
    if (colon == NULL || colon + 1 == stop)
      return fail(err, line, "frame '%s': expected module:0xOFFSET", show(frame).text);
    span mod = {frame.p, (size_t)(colon - frame.p)}, off = {colon + 1, (size_t)(stop - colon - 1)};
    uint64_t mi, offset;
    k = number(mod, &mi);
    if (k == NUM_BAD) return fail(err, line, "frame module: '%s' is not a number", show(mod).text);
    if (k == NUM_TOO_BIG || mi >= spec->nmodules)
      return fail(err, line, "%s frame %s: no module %s", name, show(frame).text, show(mod).text);
    k = hex_offset(off, &offset);
    if (k == NUM_BAD) return fail(err, line, "frame offset: '%s' is not hex", show(off).text);
    if (k == NUM_TOO_BIG || offset > HL_PLAN_MAX_OFFSET)
      return fail(err, line, "frame offset %s: out of range (at most 0x%llx)", show(off).text,
                  (unsigned long long)HL_PLAN_MAX_OFFSET);
    r.frames[r.nframes++] = hl_plan_frame((uint32_t)mi, offset);
    if (stop == end) break;
    p = stop;
  }
  if (prefix) {
    if (spec->nprules < st->prule_cap) st->prules[spec->nprules] = r;
    spec->nprules++;
  } else {
    if (spec->nrules < st->cap) st->rules[spec->nrules] = r;
    spec->nrules++;
  }
  return 1;
}

/* ---- PreFix records ---- */

#define MAX_VALUE_TEXT "must be 0..4294967295"

/* One space-separated field after another, without a fields array (fixed ranges are many). */
static span next_field(const char **p, const char *end) {
  const char *stop = memchr(*p, ' ', (size_t)(end - *p));
  if (stop == NULL) stop = end;
  span s = {*p, (size_t)(stop - *p)};
  *p = stop < end ? stop + 1 : end;
  return s;
}

static int parse_counter(parse_state *st, uint32_t line, span rest) {
  hl_plan_spec *spec = st->spec;
  hl_plan_error *err = st->err;
  const char *p = rest.p, *end = rest.p + rest.n;
  uint32_t nfields = 0;
  for (const char *q = p; q < end; q++) nfields += *q == ' ';
  nfields += rest.n > 0;
  if (nfields < 2) return fail(err, line, "prefix_counter needs an id and a kind");
  uint64_t v;
  span id = next_field(&p, end), kind = next_field(&p, end);
  if (!bounded(err, line, "prefix_counter id", id, spec->ncounters + 1, spec->ncounters + 1,
               "prefix_counter ids must be 1, 2, 3, ... in order", &v))
    return 0;
  if (spec->ncounters == HL_PLAN_MAX_COUNTERS)
    return fail(err, line, "too many prefix counters (the runtime takes at most %u)", HL_PLAN_MAX_COUNTERS);
  hl_plan_counter_spec *c = &spec->counters[spec->ncounters + 1];
  memset(c, 0, sizeof *c);
  if (span_is(kind, "all") || span_is(kind, "recycle")) {
    int all = span_is(kind, "all");
    if (nfields != 3) return fail(err, line, "prefix_counter %s takes a count", all ? "all" : "recycle");
    if (all && !bounded(err, line, "prefix_counter all", next_field(&p, end), 1, HL_PLAN_MAX_VALUE,
                        "must be 1..4294967295", &v))
      return 0;
    if (!all && !bounded(err, line, "prefix_counter recycle", next_field(&p, end), 1, HL_PLAN_MAX_RECYCLE,
                         "must be 1..16777216", &v))
      return 0;
    c->kind = all ? HL_COUNTER_ALL : HL_COUNTER_RECYCLE;
    c->count = (uint32_t)v;
    c->nvalues = v;
  } else if (span_is(kind, "regular")) {
    if (nfields < 5 || nfields > 5 + HL_PLAN_MAX_EXTRAS)
      return fail(err, line, "prefix_counter regular takes START STRIDE COUNT and at most %u extra values",
                  HL_PLAN_MAX_EXTRAS);
    uint64_t start, stride, count;
    if (!bounded(err, line, "prefix_counter start", next_field(&p, end), 0, HL_PLAN_MAX_VALUE, MAX_VALUE_TEXT,
                 &start) ||
        !bounded(err, line, "prefix_counter stride", next_field(&p, end), 1, HL_PLAN_MAX_VALUE,
                 "must be 1..4294967295", &stride) ||
        !bounded(err, line, "prefix_counter count", next_field(&p, end), 1, HL_PLAN_MAX_VALUE,
                 "must be 1..4294967295", &count))
      return 0;
    if ((count - 1) > (HL_PLAN_MAX_VALUE - start) / stride)
      return fail(err, line, "prefix_counter regular: the progression passes 4294967295");
    c->kind = HL_COUNTER_REGULAR;
    c->start = (uint32_t)start;
    c->stride = (uint32_t)stride;
    c->count = (uint32_t)count;
    for (uint32_t i = 0; i < nfields - 5; i++) {
      span e = next_field(&p, end);
      if (!bounded(err, line, "prefix_counter extra", e, 0, HL_PLAN_MAX_VALUE, MAX_VALUE_TEXT, &v)) return 0;
      if (i > 0 && v <= c->extra[i - 1])
        return fail(err, line, "prefix_counter extra %s: extra values must be ascending", show(e).text);
      if (v >= start && (v - start) % stride == 0 && (v - start) / stride < count)
        return fail(err, line, "prefix_counter extra %s: already in the progression", show(e).text);
      c->extra[i] = (uint32_t)v;
      c->nextra++;
    }
    c->nvalues = count + c->nextra;
  } else if (span_is(kind, "fixed")) {
    if (nfields < 3) return fail(err, line, "prefix_counter fixed needs at least one range");
    c->kind = HL_COUNTER_FIXED;
    c->first_range = spec->nranges;
    for (uint32_t i = 0; i < nfields - 2; i++) {
      span r = next_field(&p, end);
      const char *dash = memchr(r.p, '-', r.n);
      span a = {r.p, dash ? (size_t)(dash - r.p) : r.n}, b = dash ? (span){dash + 1, (size_t)(r.p + r.n - dash - 1)} : a;
      uint64_t lo, hi;
      enum number ka = number(a, &lo), kb = number(b, &hi);
      if (ka == NUM_BAD || kb == NUM_BAD) return fail(err, line, "prefix_counter range: '%s' is not a number or A-B", show(r).text);
      if (ka == NUM_TOO_BIG || kb == NUM_TOO_BIG || lo > HL_PLAN_MAX_VALUE || hi > HL_PLAN_MAX_VALUE)
        return fail(err, line, "prefix_counter range %s: values " MAX_VALUE_TEXT, show(r).text);
      if (lo > hi) return fail(err, line, "prefix_counter range %s: must be A-B with A <= B", show(r).text);
      if (i > 0 && lo <= spec->range_hi[spec->nranges - 1])
        return fail(err, line, "prefix_counter range %s: ranges must be ascending and disjoint", show(r).text);
      if (spec->nranges == HL_PLAN_MAX_RANGES)
        return fail(err, line, "too many fixed ranges (the runtime takes at most %u)", HL_PLAN_MAX_RANGES);
      spec->range_lo[spec->nranges] = (uint32_t)lo;
      spec->range_hi[spec->nranges] = (uint32_t)hi;
      spec->nranges++;
      c->count++;
      c->nvalues += hi - lo + 1;
    }
  } else {
    return fail(err, line, "prefix_counter kind '%s': expected all, regular, fixed or recycle", show(kind).text);
  }
  spec->ncounters++;
  return 1;
}

/* The slots of one counter come as its values in ascending order: the state of that walk. */
static void slots_begin(hl_plan_spec *spec, uint32_t counter) {
  const hl_plan_counter_spec *c = &spec->counters[counter];
  spec->slot_counter = counter;
  spec->slot_index = spec->slot_prog = 0;
  spec->slot_extra = 0;
  spec->slot_range = c->first_range;
  spec->slot_next = c->kind == HL_COUNTER_FIXED ? spec->range_lo[c->first_range] : 0;
}

/* The value the walk expects next (slot_index < nvalues). */
static uint64_t slots_expected(const hl_plan_spec *spec) {
  const hl_plan_counter_spec *c = &spec->counters[spec->slot_counter];
  switch (c->kind) {
    case HL_COUNTER_REGULAR: {
      uint64_t prog = spec->slot_prog < c->count ? c->start + spec->slot_prog * c->stride : UINT64_MAX;
      uint64_t extra = spec->slot_extra < c->nextra ? c->extra[spec->slot_extra] : UINT64_MAX;
      return prog < extra ? prog : extra;
    }
    case HL_COUNTER_FIXED:
      return spec->slot_next;
    default:
      return spec->slot_index;
  }
}

static void slots_advance(hl_plan_spec *spec) {
  const hl_plan_counter_spec *c = &spec->counters[spec->slot_counter];
  if (c->kind == HL_COUNTER_REGULAR) {
    uint64_t prog = spec->slot_prog < c->count ? c->start + spec->slot_prog * c->stride : UINT64_MAX;
    uint64_t extra = spec->slot_extra < c->nextra ? c->extra[spec->slot_extra] : UINT64_MAX;
    if (prog < extra) spec->slot_prog++;
    else spec->slot_extra++;
  } else if (c->kind == HL_COUNTER_FIXED) {
    if (spec->slot_next == spec->range_hi[spec->slot_range] && spec->slot_range + 1 < c->first_range + c->count) {
      spec->slot_range++;
      spec->slot_next = spec->range_lo[spec->slot_range];
    } else {
      spec->slot_next++;
    }
  }
  spec->slot_index++;
}

/* Counters from the current one up to (not including) `upto` must have all their slots. */
static int slots_complete(hl_plan_spec *spec, uint32_t upto, uint32_t line, hl_plan_error *err) {
  if (spec->slot_counter >= 1 && spec->slot_counter < upto &&
      spec->slot_index < spec->counters[spec->slot_counter].nvalues)
    return fail(err, line, "counter %u has no slot for its value %llu", spec->slot_counter,
                (unsigned long long)slots_expected(spec));
  for (uint32_t k = spec->slot_counter + 1; k < upto; k++) {
    slots_begin(spec, k);
    return fail(err, line, "counter %u has no slot for its value %llu", k, (unsigned long long)slots_expected(spec));
  }
  return 1;
}

static int slot_accept(parse_state *st, uint32_t line, uint64_t counter, uint64_t value, uint64_t site,
                       uint64_t offset, uint64_t size);

static int parse_slot(parse_state *st, uint32_t line, const fields *f) {
  hl_plan_spec *spec = st->spec;
  hl_plan_error *err = st->err;
  uint64_t counter, value, site, offset, size;
  if (!arity(err, line, R_PREFIX_SLOT, f, 5)) return 0;
  if (spec->nslots == HL_PLAN_MAX_SLOTS)
    return fail(err, line, "too many prefix_slot records (the runtime takes at most %u)", HL_PLAN_MAX_SLOTS);
  if (!bounded_fmt(err, line, "prefix_slot counter", f->all[0], 1, spec->ncounters, &counter,
                   "no such counter (counters are 1..%u)", spec->ncounters))
    return 0;
  if (!bounded(err, line, "prefix_slot value", f->all[1], 0, HL_PLAN_MAX_VALUE, MAX_VALUE_TEXT, &value)) return 0;
  if (!bounded_fmt(err, line, "prefix_slot site", f->all[2], 1, spec->nsites, &site, "no such site (sites are 1..%u)",
                   spec->nsites))
    return 0;
  if (!bounded_fmt(err, line, "prefix_slot offset", f->all[3], 0, spec->region_bytes - 1, &offset,
                   "outside the region (%u bytes)", spec->region_bytes))
    return 0;
  if (!bounded_fmt(err, line, "prefix_slot size", f->all[4], 1, spec->region_bytes, &size,
                   "must be 1..%u (the region's bytes)", spec->region_bytes))
    return 0;
  return slot_accept(st, line, counter, value, site, offset, size);
}

/* A slot record whose five numbers are in range: the checks against the region, the site's
 * counter and the order of values, then the record. */
static int slot_accept(parse_state *st, uint32_t line, uint64_t counter, uint64_t value, uint64_t site,
                       uint64_t offset, uint64_t size) {
  hl_plan_spec *spec = st->spec;
  hl_plan_error *err = st->err;
  if (offset % spec->region_align || size % spec->region_align)
    return fail(err, line, "prefix_slot offset %llu size %llu: not multiples of the region's alignment %u",
                (unsigned long long)offset, (unsigned long long)size, spec->region_align);
  if (offset + size > spec->region_bytes)
    return fail(err, line, "prefix_slot offset %llu size %llu: past the region's end (%u bytes)",
                (unsigned long long)offset, (unsigned long long)size, spec->region_bytes);
  if (spec->site_counter[site] != counter)
    return fail(err, line, "prefix_slot: site %llu counts on counter %u, not %llu", (unsigned long long)site,
                spec->site_counter[site], (unsigned long long)counter);
  if (counter < spec->slot_counter)
    return fail(err, line, "prefix_slot records must be sorted by counter and value (counter %llu after %u)",
                (unsigned long long)counter, spec->slot_counter);
  if (counter > spec->slot_counter) {
    if (!slots_complete(spec, (uint32_t)counter, line, err)) return 0;
    slots_begin(spec, (uint32_t)counter);
  }
  const hl_plan_counter_spec *c = &spec->counters[counter];
  if (spec->slot_index >= c->nvalues)
    return fail(err, line, "prefix_slot %llu %llu: counter %llu has only %llu values", (unsigned long long)counter,
                (unsigned long long)value, (unsigned long long)counter, (unsigned long long)c->nvalues);
  uint64_t want = slots_expected(spec);
  if (value != want)
    return fail(err, line, "prefix_slot %llu %llu: expected value %llu (counter %llu's values, in ascending order)",
                (unsigned long long)counter, (unsigned long long)value, (unsigned long long)want,
                (unsigned long long)counter);
  slots_advance(spec);
  if (spec->nslots < st->slot_cap)
    st->slots[spec->nslots] = (hl_plan_slot_spec){line, (uint16_t)counter, (uint16_t)site, (uint32_t)value,
                                                  (uint32_t)offset, (uint32_t)size};
  spec->nslots++;
  return 1;
}

static int parse_record(parse_state *st, int r, uint32_t line, span rest, const fields *f) {
  hl_plan_spec *spec = st->spec;
  hl_plan_error *err = st->err;
  uint64_t v;
  switch (r) {
    case R_STRATEGY:
      if (!arity(err, line, r, f, 1)) return 0;
      if (!span_is(f->all[0], "halo") && !span_is(f->all[0], "callsite") && !span_is(f->all[0], "hds") &&
          !span_is(f->all[0], "prefix:hot") && !span_is(f->all[0], "prefix:hds") &&
          !span_is(f->all[0], "prefix:hds+hot"))
        return fail(err, line, "strategy '%s': expected one of halo, callsite, hds, prefix:hot, prefix:hds, prefix:hds+hot",
                    show(f->all[0]).text);
      memcpy(spec->strategy, f->all[0].p, f->all[0].n);
      spec->strategy[f->all[0].n] = '\0';
      return 1;
    case R_CHUNK:
      if (!arity(err, line, r, f, 1)) return 0;
      if (!bounded(err, line, "chunk_size", f->all[0], HL_MIN_CHUNK_SIZE, HL_MAX_CHUNK_SIZE,
                   "must be a power of two from 256K to 64M", &v))
        return 0;
      if (v & (v - 1))
        return fail(err, line, "chunk_size %s: must be a power of two from 256K to 64M", show(f->all[0]).text);
      spec->chunk_size = (uint32_t)v;
      return 1;
    case R_MAX_OBJECT:
      if (!arity(err, line, r, f, 1)) return 0;
      if (!bounded(err, line, "max_object_size", f->all[0], 1, HL_PLAN_MAX_OBJECT_SIZE, "must be 1..32768", &v))
        return 0;
      spec->max_object_size = (uint32_t)v;
      return 1;
    case R_MIN_ALIGN:
      if (!arity(err, line, r, f, 1)) return 0;
      if (!bounded(err, line, "min_align", f->all[0], 8, 16, "must be 8 or 16", &v)) return 0;
      if (v != 8 && v != 16) return fail(err, line, "min_align %s: must be 8 or 16", show(f->all[0]).text);
      spec->min_align = (uint32_t)v;
      return 1;
    case R_REST:
      if (f->count == 1 && span_is(f->all[0], "allocator")) {
        spec->rest_max_size = 0;
        return 1;
      }
      if (f->count != 2 || !span_is(f->all[0], "callsite"))
        return fail(err, line, "rest is 'allocator' or 'callsite MAX_SIZE'");
      if (!bounded(err, line, "rest callsite", f->all[1], 1, HL_PLAN_MAX_OBJECT_SIZE,
                   "the size limit must be 1..32768", &v))
        return 0;
      spec->rest_max_size = (uint32_t)v;
      return 1;
    case R_RECURSION:
      if (!arity(err, line, r, f, 1)) return 0;
      if (!span_is(f->all[0], "function")) return fail(err, line, "recursion '%s': expected function", show(f->all[0]).text);
      spec->recursion_function = 1;
      return 1;
    case R_MODULE: {
      if (f->count < 3) return fail(err, line, "module needs index, build-id and path");
      if (!bounded(err, line, "module index", f->all[0], spec->nmodules, spec->nmodules,
                   "module indexes must be 0, 1, 2, ... in order", &v))
        return 0;
      if (spec->nmodules == HL_PLAN_MAX_MODULES)
        return fail(err, line, "too many modules (the runtime takes at most %u)", HL_PLAN_MAX_MODULES);
      hl_plan_module_spec *m = &spec->modules[spec->nmodules];
      if (span_is(f->all[1], "-")) m->build_id_len = 0;
      else if (!lower_hex_bytes(f->all[1], m->build_id, &m->build_id_len))
        return fail(err, line, "module %u: build-id is not lowercase hex of 1 to %u bytes", spec->nmodules,
                    HL_PLAN_MAX_BUILD_ID);
      /* the path is the rest of the line: it may hold single spaces */
      const char *path = f->all[2].p;
      size_t n = (size_t)(rest.p + rest.n - path);
      if (n > HL_PLAN_MAX_PATH)
        return fail(err, line, "module %u: path longer than %u bytes", spec->nmodules, HL_PLAN_MAX_PATH);
      memcpy(m->path, path, n);
      m->path[n] = '\0';
      spec->nmodules++;
      return 1;
    }
    case R_SKIP:
      if (!arity(err, line, r, f, 1)) return 0;
      if (f->all[0].n > HL_PLAN_MAX_SKIP_NAME)
        return fail(err, line, "skip name longer than %u bytes", HL_PLAN_MAX_SKIP_NAME);
      if (spec->nskips == HL_PLAN_MAX_SKIPS)
        return fail(err, line, "too many skip records (the runtime takes at most %u)", HL_PLAN_MAX_SKIPS);
      memcpy(spec->skips[spec->nskips], f->all[0].p, f->all[0].n);
      spec->skips[spec->nskips][f->all[0].n] = '\0';
      spec->nskips++;
      return 1;
    case R_GROUP: {
      /* optional flags after the weight, each at most once, in this order: packed, spans,
       * line N */
      unsigned flag = 3;
      int packed = flag < f->count && span_is(f->all[flag], "packed");
      flag += (unsigned)packed;
      int spans = flag < f->count && span_is(f->all[flag], "spans");
      flag += (unsigned)spans;
      uint64_t line_off = 0;
      int has_line = flag + 1 < f->count && span_is(f->all[flag], "line");
      if (f->count < 3 || f->count > 7)
        return fail(err, line, "group takes 3 fields (and the optional flags 'packed', 'spans' and 'line N'), got %u",
                    f->count);
      if (has_line) {
        if (!bounded(err, line, "group line", f->all[flag + 1], 16, 48, "must be 16, 32 or 48", &line_off))
          return 0;
        if (line_off % 16) return fail(err, line, "group line %s: must be 16, 32 or 48", show(f->all[flag + 1]).text);
        flag += 2;
      }
      if (flag != f->count)
        return fail(err, line, "group: after the weight only 'packed', then 'spans', then 'line N' may follow");
      if (!bounded(err, line, "group id", f->all[0], spec->ngroups + 1, spec->ngroups + 1,
                   "group ids must be 1, 2, 3, ... in order", &v))
        return 0;
      if (spec->ngroups == HL_PLAN_MAX_GROUPS)
        return fail(err, line, "too many groups (the runtime takes at most %u)", HL_PLAN_MAX_GROUPS);
      if (!bounded(err, line, "group contexts", f->all[1], 0, UINT64_MAX, "out of range", &v) ||
          !bounded(err, line, "group weight", f->all[2], 0, UINT64_MAX, "out of range", &v))
        return 0;
      spec->ngroups++;
      spec->group_packed[spec->ngroups] = (uint8_t)packed;
      spec->group_spans[spec->ngroups] = (uint8_t)spans;
      spec->group_line[spec->ngroups] = (uint8_t)line_off;
      return 1;
    }
    case R_SELECT:
      return parse_select(st, line, rest, 0);
    case R_PREFIX_REGION:
      if (!arity(err, line, r, f, 2)) return 0;
      if (!bounded(err, line, "prefix_region bytes", f->all[0], 1, HL_PLAN_MAX_REGION, "must be 1..1073741824", &v))
        return 0;
      spec->region_bytes = (uint32_t)v;
      if (!bounded(err, line, "prefix_region align", f->all[1], HL_PLAN_MIN_REGION_ALIGN, HL_PLAN_MAX_REGION_ALIGN,
                   "must be a power of two from 16 to 4096", &v))
        return 0;
      if (v & (v - 1))
        return fail(err, line, "prefix_region align %s: must be a power of two from 16 to 4096", show(f->all[1]).text);
      spec->region_align = (uint32_t)v;
      return 1;
    case R_PREFIX_COUNTER:
      return parse_counter(st, line, rest);
    case R_PREFIX_SITE: {
      char range[96];
      if (!arity(err, line, r, f, 2)) return 0;
      if (!bounded(err, line, "prefix_site id", f->all[0], spec->nsites + 1, spec->nsites + 1,
                   "prefix_site ids must be 1, 2, 3, ... in order", &v))
        return 0;
      if (spec->nsites == HL_PLAN_MAX_SITES)
        return fail(err, line, "too many prefix sites (the runtime takes at most %u)", HL_PLAN_MAX_SITES);
      snprintf(range, sizeof range, "no such counter (counters are 1..%u)", spec->ncounters);
      if (!bounded(err, line, "prefix_site counter", f->all[1], 1, spec->ncounters, range, &v)) return 0;
      spec->site_counter[++spec->nsites] = (uint16_t)v;
      return 1;
    }
    case R_PREFIX_SELECT:
      return parse_select(st, line, rest, 1);
    case R_PREFIX_SLOT:
      return parse_slot(st, line, f);
    case R_END:
      if (!arity(err, line, r, f, 0)) return 0;
      return slots_complete(spec, spec->ncounters + 1, line, err);
    default:
      return fail(err, line, "internal: record %d", r);
  }
}

/* ---- a chain given twice ---- */

static int chain_before(const void *pa, const void *pb) {
  const hl_plan_rule_spec *a = pa, *b = pb;
  for (unsigned k = 0; k < a->nframes && k < b->nframes; k++)
    if (a->frames[k] != b->frames[k]) return a->frames[k] < b->frames[k];
  if (a->nframes != b->nframes) return a->nframes < b->nframes;
  return a->line < b->line;
}

_Static_assert(sizeof(hl_plan_rule_spec) <= HL_PLAN_SORT_MAX_ELEMENT, "rule specs fit hl_plan_sort's buffer");

void hl_plan_sort(void *base, uint32_t n, size_t size, int (*before)(const void *, const void *)) {
  static const uint32_t gaps[] = {88573, 29524, 9841, 3280, 1093, 364, 121, 40, 13, 4, 1};
  char tmp[HL_PLAN_SORT_MAX_ELEMENT], *r = base;
  if (size > sizeof tmp) return; /* not reached: both element types fit (plan_parse.h) */
  for (unsigned g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
    uint32_t gap = gaps[g];
    for (uint32_t i = gap; i < n; i++) {
      memcpy(tmp, r + (size_t)i * size, size);
      uint32_t j = i;
      for (; j >= gap && before(tmp, r + (size_t)(j - gap) * size); j -= gap)
        memcpy(r + (size_t)j * size, r + (size_t)(j - gap) * size, size);
      memcpy(r + (size_t)j * size, tmp, size);
    }
  }
}

/* The repeat that comes first in the file: the smallest line that repeats an earlier chain. */
static int check_distinct(hl_plan_rule_spec *rules, uint32_t n, hl_plan_error *err, const char *name) {
  hl_plan_sort(rules, n, sizeof rules[0], chain_before);
  uint32_t line = 0, first = 0;
  for (uint32_t i = 1; i < n; i++) {
    if (rules[i].nframes != rules[i - 1].nframes ||
        memcmp(rules[i].frames, rules[i - 1].frames, rules[i].nframes * sizeof rules[i].frames[0]) != 0)
      continue;
    if (i >= 2 && rules[i - 2].nframes == rules[i].nframes &&
        memcmp(rules[i].frames, rules[i - 2].frames, rules[i].nframes * sizeof rules[i].frames[0]) == 0)
      continue; /* a third copy: the second one repeats first */
    if (line == 0 || rules[i].line < line) line = rules[i].line, first = rules[i - 1].line;
  }
  if (line) return fail(err, line, "%s chain given twice (first on line %u)", name, first);
  return 1;
}

/* Slots that overlap: the first slot in file order that covers a granule an earlier slot
 * covers; the message names that earlier slot. One pass over the granules the slots cover. */
int hl_plan_check_slots(const hl_plan_spec *spec, const hl_plan_slot_spec *slots, uint32_t *owner,
                        hl_plan_error *err) {
  unsigned shift = (unsigned)__builtin_ctz(spec->region_align ? spec->region_align : 16);
  for (uint32_t i = 0; i < spec->nslots; i++)
    for (uint32_t g = slots[i].offset >> shift, end = (slots[i].offset + slots[i].size) >> shift; g < end; g++) {
      if (owner[g]) return fail(err, slots[i].line, "prefix_slot overlaps the slot on line %u", slots[owner[g] - 1].line);
      owner[g] = i + 1;
    }
  return 1;
}

/* ---- the file ---- */

int hl_plan_parse(const char *text, size_t len, hl_plan_spec *spec, hl_plan_rule_spec *rules, uint32_t cap,
                  hl_plan_error *err) {
  return hl_plan_parse_full(text, len, spec, rules, cap, NULL, 0, NULL, 0, err);
}

/* A slot record after the first, written as the planner writes it ("prefix_slot" and five
 * decimal numbers of at most 10 digits, single spaces) with every number in range: parsed
 * here in one pass. The general path cost about 1,840 instructions a slot line at every
 * start (prefix_hot's plan of 38,754 slots: 71M); with this one the whole parse costs 624
 * a slot line (24M), most of it the UTF-8 check of the text and the record checks. 1:
 * accepted, 0: refused (err says why), -1: anything else; the general path then gives the
 * line its verdict and message, so both paths agree on every plan. */
static int fast_slot(parse_state *st, uint32_t line, span ln) {
  const char *p = ln.p + 12, *end = ln.p + ln.n; /* after "prefix_slot " */
  uint64_t v[5];
  for (int i = 0; i < 5; i++) {
    const char *start = p;
    uint64_t x = 0;
    while (p < end && *p >= '0' && *p <= '9' && p - start < 10) x = x * 10 + (uint64_t)(*p++ - '0');
    if (p == start) return -1;
    if (i < 4) {
      if (p >= end || *p != ' ') return -1;
      p++;
    } else if (p != end) {
      return -1;
    }
    v[i] = x;
  }
  const hl_plan_spec *spec = st->spec;
  if (spec->nslots == HL_PLAN_MAX_SLOTS || v[0] < 1 || v[0] > spec->ncounters || v[1] > HL_PLAN_MAX_VALUE ||
      v[2] < 1 || v[2] > spec->nsites || spec->region_bytes == 0 || v[3] > spec->region_bytes - 1 || v[4] < 1 ||
      v[4] > spec->region_bytes)
    return -1;
  return slot_accept(st, line, v[0], v[1], v[2], v[3], v[4]);
}

int hl_plan_parse_full(const char *text, size_t len, hl_plan_spec *spec, hl_plan_rule_spec *rules, uint32_t cap,
                       hl_plan_rule_spec *prules, uint32_t prule_cap, hl_plan_slot_spec *slots, uint32_t slot_cap,
                       hl_plan_error *err) {
  /* the tables after the counts are written before they are read: only the rest is cleared */
  memset(spec, 0, offsetof(hl_plan_spec, site_counter));
  spec->min_align = 16;
  err->line = 0;
  err->reason[0] = '\0';
  parse_state st = {spec, rules, cap, prules, prule_cap, slots, slot_cap, err};
  if (len == 0) return fail(err, 0, "empty file, not a plan");
  size_t bad = utf8_error((const unsigned char *)text, len);
  if (bad < len) return fail(err, 0, "not UTF-8 text (byte %zu)", bad);
  if (text[len - 1] != '\n') return fail(err, 0, "truncated (the last line has no newline)");

  int last = -1, ended = 0;
  uint32_t lineno = 0;
  for (const char *p = text, *end = text + len; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p)); /* there is one: the text ends with it */
    span ln = {p, (size_t)(nl - p)};
    p = nl + 1;
    lineno++;
    if (last == R_PREFIX_SLOT && ln.n > 12 && memcmp(ln.p, "prefix_slot ", 12) == 0) {
      int k = fast_slot(&st, lineno, ln);
      if (k == 0) return 0;
      if (k == 1) continue;
    }
    int two_spaces = 0; /* found here rather than by a memmem per line (plans have 2^24 slot lines) */
    unsigned char prev = 0;
    for (size_t i = 0; i < ln.n; i++) {
      unsigned char c = (unsigned char)ln.p[i];
      if (__builtin_expect(c < 0x20 || c == 0x7f, 0)) {
        if (c == '\r') return fail(err, lineno, "carriage return in the line (the plan must have LF line ends)");
        return fail(err, lineno, "control character 0x%02x in the line", c);
      }
      two_spaces |= (c == ' ') & (prev == ' ');
      prev = c;
    }
    if (lineno == 1) {
      if (span_is(ln, "heaplayout-plan 1")) {
        last = R_MAGIC;
        continue;
      }
      if (ln.n > 16 && memcmp(ln.p, "heaplayout-plan ", 16) == 0)
        return fail(err, 1, "plan version %s: this reader knows version 1", show((span){ln.p + 16, ln.n - 16}).text);
      return fail(err, 1, "not a plan (the first line must be 'heaplayout-plan 1')");
    }
    if (ln.n == 0 || ln.p[0] == '#') continue;
    if (ended) return fail(err, lineno, "text after 'end'");
    if (ln.p[0] == ' ' || ln.p[ln.n - 1] == ' ' || two_spaces)
      return fail(err, lineno, "fields must be separated by single spaces");
    const char *sp = memchr(ln.p, ' ', ln.n);
    span kind = {ln.p, sp ? (size_t)(sp - ln.p) : ln.n};
    span rest = sp ? (span){sp + 1, (size_t)(ln.p + ln.n - sp - 1)} : (span){ln.p + ln.n, 0};
    /* records come in order: look from the last kind on first, then before it */
    int r = last > 0 ? last : 0;
    while (r < R_COUNT && (kind.n != record_len[r] || memcmp(kind.p, record_names[r], kind.n) != 0)) r++;
    if (r == R_COUNT)
      for (r = 0; r < last && (kind.n != record_len[r] || memcmp(kind.p, record_names[r], kind.n) != 0); r++) {
      }
    if (r == last && (kind.n != record_len[r] || memcmp(kind.p, record_names[r], kind.n) != 0)) r = R_COUNT;
    if (r == R_COUNT) return fail(err, lineno, "unknown record '%s'", show(kind).text);
    if (r < last || (r == last && !repeatable(r)))
      return fail(err, lineno, "record '%s' out of order (order: " ORDER_TEXT ")", record_names[r]);
    for (int k = last + 1; k < r; k++)
      if (!may_be_absent_before(k, r))
        return fail(err, lineno, "record '%s' missing before '%s'", record_names[k], record_names[r]);
    last = r;
    fields f;
    if (r != R_SELECT && r != R_PREFIX_SELECT && r != R_PREFIX_COUNTER) split(rest, &f);
    if (!parse_record(&st, r, lineno, rest, &f)) return 0;
    if (r == R_END) ended = 1;
  }
  if (!ended) return fail(err, 0, "truncated (no 'end' record)");
  if (spec->nrules <= cap && !check_distinct(rules, spec->nrules, err, "select")) return 0;
  if (spec->nprules <= prule_cap && !check_distinct(prules, spec->nprules, err, "prefix_select")) return 0;
  return 1;
}
