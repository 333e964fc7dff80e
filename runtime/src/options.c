/* Settings from the environment (set by `heaplayout run`), validated once at start.
 * A bad value gives one message and the run continues unoptimized (policy off): the
 * program must run correctly whatever we are told. Set-uid programs ignore it all.
 * The parsing reads a list of NAME=value strings, not the process's environment itself,
 * so fuzz/ can feed it any environment (hl_options_parse). */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

static const char *const known_variables[] = {
    "HEAPLAYOUT_POLICY",     "HEAPLAYOUT_MIN_OBJECTS", "HEAPLAYOUT_MAX_SIZE",
    "HEAPLAYOUT_CHUNK_SIZE", "HEAPLAYOUT_RANGE",       "HEAPLAYOUT_CC_BLOCK",
    "HEAPLAYOUT_STATS",      "HEAPLAYOUT_STATS_JSON",  "HEAPLAYOUT_PLAN",        "HEAPLAYOUT_PROGRAM",
    "HEAPLAYOUT_CHUNK_COLORS",
    "HEAPLAYOUT_SPARE_CHUNKS", "HEAPLAYOUT_MIN_ALIGN", "HEAPLAYOUT_SPAN_BYTES", "HEAPLAYOUT_HUGE_PAGES",
    NULL,
};

/* The value of NAME in a NAME=value list, or NULL (what getenv does for environ). */
static const char *env_get(const char *const *env, const char *name) {
  size_t len = strlen(name);
  for (; env && *env; env++)
    if (strncmp(*env, name, len) == 0 && (*env)[len] == '=') return *env + len + 1;
  return NULL;
}

/* "123", "64K", "1M", "16G", "1T" (binary multiples; "64KiB", "64KB" and "100B" too).
 * 0 on error, a value past 2^64 - 1 included. */
static int parse_size(const char *s, unsigned long long *out) {
  if (s == NULL || *s < '0' || *s > '9') return 0;
  unsigned long long v = 0;
  while (*s >= '0' && *s <= '9') {
    if (v > (~0ull - 9) / 10) return 0;
    v = v * 10 + (unsigned long long)(*s++ - '0');
  }
  unsigned shift = 0;
  switch (*s) {
    case 'k': case 'K': shift = 10; s++; break;
    case 'm': case 'M': shift = 20; s++; break;
    case 'g': case 'G': shift = 30; s++; break;
    case 't': case 'T': shift = 40; s++; break;
    default: break;
  }
  if (shift && s[0] == 'i' && s[1] == 'B') s += 2; /* 64KiB */
  else if (*s == 'B') s++;                          /* 64KB, 100B */
  if (*s != '\0') return 0;
  if (shift && v > (~0ull >> shift)) return 0;
  *out = v << shift;
  return 1;
}

const char *hl_policy_name(int policy) {
  switch (policy) {
    case HL_POLICY_OFF: return "off";
    case HL_POLICY_CALLSITE: return "callsite";
    case HL_POLICY_PLAN: return "plan";
    case HL_POLICY_DPA: return "dpa";
    default: return "uninitialised";
  }
}

static int is_pow2(unsigned long long v) { return v && !(v & (v - 1)); }

/* One numeric setting: returns 0 (and says why) when present but invalid. */
static int size_setting(const char *const *env, const char *name, unsigned long long lo, unsigned long long hi,
                        int need_pow2, unsigned long long *value) {
  const char *s = env_get(env, name);
  if (s == NULL) return 1;
  unsigned long long v;
  if (!parse_size(s, &v)) {
    hl_message("%s='%s' is not a number or size (examples: 100, 4K, 1M, 1T); running unoptimized", name, s);
    return 0;
  }
  if (v < lo || v > hi || (need_pow2 && !is_pow2(v))) {
    hl_message("%s=%s is out of range: expected %s%llu..%llu; running unoptimized", name, s,
               need_pow2 ? "a power of two in " : "", lo, hi);
    return 0;
  }
  *value = v;
  return 1;
}

static void warn_unknown_variables(const char *const *env) {
  for (const char *const *e = env; e && *e; e++) {
    if (strncmp(*e, "HEAPLAYOUT_", 11) != 0) continue;
    size_t len = strcspn(*e, "=");
    int known = 0;
    for (const char *const *k = known_variables; *k; k++)
      if (strlen(*k) == len && strncmp(*e, *k, len) == 0) known = 1;
    /* HEAPLAYOUT_BUILD_DIR is the tools' and HEAPLAYOUT_CC_* the compiler plugin's: a build
     * that exports them runs the programs it builds (code generators, configure tests) with
     * them, and a word on their stderr would change what those builds see. */
    if (!known && strncmp(*e, "HEAPLAYOUT_BUILD_DIR", len) != 0 && strncmp(*e, "HEAPLAYOUT_CC_", 14) != 0)
      hl_message("ignoring unknown setting %.*s", (int)len, *e);
  }
}

/* HEAPLAYOUT_PROGRAM names the one executable the settings are for (the CLI sets it to the
 * program it launches). Every other process that inherits the environment on the way -
 * valgrind's launcher script and binary, a timing wrapper - or is started by the program
 * runs unoptimized and silently: it is not the program a plan or statistics are meant for.
 * When the named program does not exist (or this process cannot tell what it is), no
 * process is the program: each says so once and runs unoptimized. */
static int is_other_program(const char *const *env) {
  const char *want = env_get(env, "HEAPLAYOUT_PROGRAM");
  if (want == NULL || *want == '\0') return 0;
  struct stat a, b;
  if (stat(want, &a) != 0) {
    hl_message("HEAPLAYOUT_PROGRAM=%s does not exist, so no process is that program; running unoptimized", want);
    return 1;
  }
  /* readlink, then stat of its answer: valgrind answers readlink of /proc/self/exe with its
   * client's path, while the link itself leads to the tool */
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) exe[n] = '\0';
  if (n <= 0 || stat(exe, &b) != 0) {
    hl_message("HEAPLAYOUT_PROGRAM is set but this process cannot read /proc/self/exe to tell whether it is that "
               "program; running unoptimized");
    return 1;
  }
  return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

void hl_options_load(hl_options *opt) { hl_options_parse(opt, (const char *const *)environ, getauxval(AT_SECURE) != 0); }

void hl_options_parse(hl_options *opt, const char *const *env, int secure) {
  memset(opt, 0, sizeof *opt);
  opt->policy = HL_POLICY_OFF;
  opt->min_objects = HL_DEFAULT_MIN_OBJECTS;
  opt->max_size = HL_DEFAULT_MAX_SIZE;
  opt->site_max_size = HL_DEFAULT_MAX_SIZE;
  opt->chunk_size = HL_DEFAULT_CHUNK_SIZE;
  opt->range_size = HL_DEFAULT_RANGE;
  opt->cc_block = HL_DEFAULT_CC_BLOCK;
  opt->chunk_colors = HL_CHUNK_COLORS;
  opt->spare_chunks = HL_SPARE_CHUNKS;
  opt->span_bytes = HL_SPAN_BYTES;
  opt->huge_pages = HL_DEFAULT_HUGE_PAGES;
  opt->min_align = 0; /* unset: the plan's min_align record decides, else 16 (tunables.h) */
  if (secure) return; /* set-uid/set-gid: the environment is not trusted */
  if (is_other_program(env)) return;

  warn_unknown_variables(env);
  int ok = 1;
  enum hl_policy policy = HL_POLICY_OFF;
  const char *p = env_get(env, "HEAPLAYOUT_POLICY");
  if (p != NULL) {
    if (strcmp(p, "off") == 0) policy = HL_POLICY_OFF;
    else if (strcmp(p, "callsite") == 0) policy = HL_POLICY_CALLSITE;
    else if (strcmp(p, "plan") == 0) policy = HL_POLICY_PLAN;
    else if (strcmp(p, "dpa") == 0) policy = HL_POLICY_DPA;
    else {
      hl_message("HEAPLAYOUT_POLICY='%s' is not a policy (off, callsite, plan, dpa); running unoptimized", p);
      ok = 0;
    }
  }
  const char *plan = env_get(env, "HEAPLAYOUT_PLAN");
  if (plan != NULL && *plan) {
    if (p == NULL) policy = HL_POLICY_PLAN; /* a plan alone means: use it */
    if (ok && policy != HL_POLICY_PLAN)
      hl_message("HEAPLAYOUT_PLAN is ignored: HEAPLAYOUT_POLICY=%s does not read a plan (policy plan does)",
                 hl_policy_name(policy));
    else if (strlen(plan) >= sizeof opt->plan) {
      hl_message("HEAPLAYOUT_PLAN is too long a path; running unoptimized");
      ok = 0;
    } else {
      strcpy(opt->plan, plan);
    }
  } else if (policy == HL_POLICY_PLAN) {
    hl_message("HEAPLAYOUT_POLICY=plan needs HEAPLAYOUT_PLAN=<plan file>; running unoptimized");
    ok = 0;
  }
  unsigned long long v;
  v = opt->min_objects;
  ok &= size_setting(env, "HEAPLAYOUT_MIN_OBJECTS", 0, 1000000000ull, 0, &v);
  opt->min_objects = (uint32_t)v;
  v = opt->max_size;
  ok &= size_setting(env, "HEAPLAYOUT_MAX_SIZE", 1, HL_MAX_CLASS_SIZE, 0, &v);
  opt->max_size = (uint32_t)v;
  opt->site_max_size = opt->max_size;
  v = opt->chunk_size;
  ok &= size_setting(env, "HEAPLAYOUT_CHUNK_SIZE", HL_MIN_CHUNK_SIZE, HL_MAX_CHUNK_SIZE, 1, &v);
  opt->chunk_size = (size_t)v;
  v = opt->range_size;
  ok &= size_setting(env, "HEAPLAYOUT_RANGE", 64ull << 20, 1ull << 40, 0, &v);
  opt->range_size = (size_t)v;
  v = opt->cc_block;
  ok &= size_setting(env, "HEAPLAYOUT_CC_BLOCK", HL_MIN_CC_BLOCK, HL_MAX_CC_BLOCK, 1, &v);
  opt->cc_block = (uint32_t)v;
  v = opt->chunk_colors;
  ok &= size_setting(env, "HEAPLAYOUT_CHUNK_COLORS", 1, HL_CHUNK_COLORS, 0, &v);
  opt->chunk_colors = (uint32_t)v;
  v = opt->spare_chunks;
  ok &= size_setting(env, "HEAPLAYOUT_SPARE_CHUNKS", 0, HL_MAX_SPARE_CHUNKS, 0, &v);
  opt->spare_chunks = (uint32_t)v;
  v = opt->span_bytes;
  ok &= size_setting(env, "HEAPLAYOUT_SPAN_BYTES", HL_MIN_SPAN_BYTES, HL_MAX_SPAN_BYTES, 0, &v);
  opt->span_bytes = (uint32_t)v;
  v = opt->huge_pages;
  ok &= size_setting(env, "HEAPLAYOUT_HUGE_PAGES", 0, 1, 0, &v);
  opt->huge_pages = (uint32_t)v;
  v = 0;
  ok &= size_setting(env, "HEAPLAYOUT_MIN_ALIGN", 8, 16, 1, &v);
  opt->min_align = (uint32_t)v;
  opt->min_align_env = v != 0;
  if (ok && opt->range_size < 16 * opt->chunk_size) {
    hl_message("HEAPLAYOUT_RANGE must hold at least 16 chunks of HEAPLAYOUT_CHUNK_SIZE; running unoptimized");
    opt->range_size = HL_DEFAULT_RANGE;
    opt->chunk_size = HL_DEFAULT_CHUNK_SIZE;
    ok = 0;
  }

  const char *s = env_get(env, "HEAPLAYOUT_STATS");
  if (s != NULL) {
    if (strcmp(s, "1") == 0) opt->stats = 1;
    else if (strcmp(s, "0") != 0) {
      hl_message("HEAPLAYOUT_STATS='%s' must be 0 or 1; statistics stay off", s);
    }
  }
  const char *j = env_get(env, "HEAPLAYOUT_STATS_JSON");
  if (j != NULL && *j) {
    if (strlen(j) >= sizeof opt->stats_json)
      hl_message("HEAPLAYOUT_STATS_JSON is too long a path; no JSON statistics");
    else
      strcpy(opt->stats_json, j);
  }
  opt->policy = ok ? policy : HL_POLICY_OFF;
}
