/* The `plan` policy: groups from a profile-guided plan file (docs/plan-format.md).
 *
 * At start the plan is read (without malloc: the file is mapped and parsed in place into
 * internal metadata), its modules are matched to the loaded ones by GNU build-id, and its
 * identification rules are turned into a table keyed by the absolute address of each
 * rule's first frame. Identifying an allocation costs one table probe when its return
 * address decides the group (most sites); otherwise as many further frames are walked as
 * the longest rule for that address needs, with the cached CFI unwinder. Any problem with
 * the plan refuses it as a whole: one message, and the program runs unoptimized. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define MAX_PLAN_MODULES 64
#define MAX_SKIP 32
#define MAX_RULE_FRAMES 16

typedef struct plan_rule {
  uint16_t group;  /* 0: ungrouped (a longer chain that must not be grouped) */
  uint8_t nframes;
  uintptr_t frames[MAX_RULE_FRAMES];
} plan_rule;

typedef struct site_entry {
  uintptr_t pc;         /* first frame; 0 empty */
  uint32_t first, count; /* rules with this first frame, longest first */
  uint8_t depth;        /* frames the longest of them needs */
  uint16_t group;       /* when depth == 1: the group */
} site_entry;

typedef struct loaded_module {
  uintptr_t bias, lo, hi;
  char path[512];
  uint8_t build_id[64];
  uint32_t build_id_len;
} loaded_module;

static struct {
  uint32_t ngroups;
  uint16_t group_pool[HL_MAX_POOLS]; /* group id -> pool id */
  uint8_t group_packed[HL_MAX_POOLS]; /* group id -> packed (size_class.c) */
  uint32_t min_align;                 /* 8 or 16 */
  plan_rule *rules;
  uint32_t nrules;
  site_entry *sites;
  uint32_t site_mask;
  uintptr_t skip_lo[MAX_SKIP + 1], skip_hi[MAX_SKIP + 1];
  int nskip;
  size_t max_object_size, chunk_size;
  uint32_t rest_max_size; /* rest callsite: ungrouped objects up to this size get site pools */
  char strategy[32];
} plan;

/* ---- the loaded modules ---- */

typedef struct module_scan {
  loaded_module *mods;
  int n, cap;
} module_scan;

static void read_build_id(const struct dl_phdr_info *info, loaded_module *m) {
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
      const uint8_t *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
          nh->n_descsz <= sizeof m->build_id) {
        memcpy(m->build_id, desc, nh->n_descsz);
        m->build_id_len = nh->n_descsz;
        return;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
}

static int scan_module(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  module_scan *s = arg;
  if (s->n >= s->cap) return 1;
  loaded_module *m = &s->mods[s->n];
  memset(m, 0, sizeof *m);
  m->bias = info->dlpi_addr;
  m->lo = UINTPTR_MAX;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < m->lo) m->lo = a;
    if (a + ph->p_memsz > m->hi) m->hi = a + ph->p_memsz;
  }
  if (m->hi <= m->lo) return 0;
  const char *name = info->dlpi_name;
  if (name == NULL || name[0] == '\0') { /* the main program */
    ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
    m->path[n > 0 ? n : 0] = '\0';
  } else {
    size_t len = strlen(name);
    if (len >= sizeof m->path) len = sizeof m->path - 1;
    memcpy(m->path, name, len);
    m->path[len] = '\0';
  }
  read_build_id(info, m);
  s->n++;
  return 0;
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static int is_skip_pc(uintptr_t pc);

/* ---- parsing ---- */

typedef struct cursor {
  const char *p, *end;
  int line;
} cursor;

/* Next line (without its newline) into [*s, *e); skips blanks and # comments. */
static int next_line(cursor *c, const char **s, const char **e) {
  while (c->p < c->end) {
    const char *start = c->p, *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    const char *stop = nl ? nl : c->end;
    c->p = nl ? nl + 1 : c->end;
    c->line++;
    if (stop == start || start[0] == '#') continue;
    *s = start;
    *e = stop;
    return 1;
  }
  return 0;
}

/* Next space-separated field of [*s, e) into buf. */
static int field(const char **s, const char *e, char *buf, size_t cap) {
  while (*s < e && **s == ' ') (*s)++;
  size_t n = 0;
  while (*s < e && **s != ' ') {
    if (n + 1 >= cap) return 0;
    buf[n++] = *(*s)++;
  }
  buf[n] = '\0';
  return n > 0;
}

static int parse_u64(const char *s, uint64_t *out) {
  int base = 10;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
  }
  if (!*s) return 0;
  uint64_t v = 0;
  for (; *s; s++) {
    int d;
    if (*s >= '0' && *s <= '9') d = *s - '0';
    else if (base == 16 && *s >= 'a' && *s <= 'f') d = *s - 'a' + 10;
    else if (base == 16 && *s >= 'A' && *s <= 'F') d = *s - 'A' + 10;
    else return 0;
    v = v * (uint64_t)base + (uint64_t)d;
  }
  *out = v;
  return 1;
}

static int parse_hex_bytes(const char *s, uint8_t *out, uint32_t cap, uint32_t *len) {
  size_t n = strlen(s);
  if (n % 2 || n / 2 > cap) return 0;
  for (size_t i = 0; i < n; i += 2) {
    uint64_t v;
    char two[5] = {'0', 'x', s[i], s[i + 1], 0};
    if (!parse_u64(two, &v)) return 0;
    out[i / 2] = (uint8_t)v;
  }
  *len = (uint32_t)(n / 2);
  return 1;
}

typedef struct plan_module {
  uint8_t build_id[64];
  uint32_t build_id_len;
  char path[512];
  uintptr_t bias; /* resolved */
} plan_module;

static int refuse(const char *path, int line, const char *why) {
  if (line > 0) hl_message("plan %s line %d: %s; running unoptimized", path, line, why);
  else hl_message("plan %s: %s; running unoptimized", path, why);
  return 0;
}

/* Shell sort of rules by (first frame, length descending): no malloc, no recursion. */
static int rule_before(const plan_rule *a, const plan_rule *b) {
  if (a->frames[0] != b->frames[0]) return a->frames[0] < b->frames[0];
  return a->nframes > b->nframes;
}
static void sort_rules(plan_rule *r, uint32_t n) {
  static const uint32_t gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
  for (unsigned g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
    uint32_t gap = gaps[g];
    for (uint32_t i = gap; i < n; i++) {
      plan_rule tmp = r[i];
      uint32_t j = i;
      for (; j >= gap && rule_before(&tmp, &r[j - gap]); j -= gap) r[j] = r[j - gap];
      r[j] = tmp;
    }
  }
}

static uint32_t site_hash(uintptr_t pc) { return (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 32); }

static int build_index(void) {
  uint32_t distinct = 0;
  for (uint32_t i = 0; i < plan.nrules; i++) distinct += i == 0 || plan.rules[i].frames[0] != plan.rules[i - 1].frames[0];
  uint32_t slots = 16;
  while (slots < distinct * 2) slots <<= 1;
  plan.sites = hl_meta_alloc(sizeof(site_entry) * slots);
  if (plan.sites == NULL) return 0;
  plan.site_mask = slots - 1;
  for (uint32_t i = 0; i < plan.nrules;) {
    uint32_t j = i;
    while (j < plan.nrules && plan.rules[j].frames[0] == plan.rules[i].frames[0]) j++;
    uint32_t h = site_hash(plan.rules[i].frames[0]) & plan.site_mask;
    while (plan.sites[h].pc) h = (h + 1) & plan.site_mask;
    site_entry *e = &plan.sites[h];
    e->pc = plan.rules[i].frames[0];
    e->first = i;
    e->count = j - i;
    e->depth = plan.rules[i].nframes; /* longest first */
    e->group = plan.rules[j - 1].nframes == 1 ? plan.rules[j - 1].group : 0;
    i = j;
  }
  return 1;
}

int hl_plan_load(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return refuse(path, 0, "cannot open the file");
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size == 0) {
    close(fd);
    return refuse(path, 0, "the file is empty");
  }
  const char *text = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (text == MAP_FAILED) return refuse(path, 0, "cannot read the file");

  int ok = 0;
  cursor c = {text, text + st.st_size, 0};
  const char *s, *e;
  char f[600];
  plan_module *mods = hl_meta_alloc(sizeof(plan_module) * MAX_PLAN_MODULES);
  char(*skips)[128] = hl_meta_alloc(128 * MAX_SKIP);
  int nmods = 0, nskips = 0, ended = 0;
  uint32_t cap_rules = 0;
  plan.max_object_size = 4096;
  plan.min_align = 16;
  plan.rest_max_size = 0;
  plan.chunk_size = hl_state.opt.chunk_size;

  /* the rule count bounds the allocation: count select lines first */
  for (const char *q = text; q < c.end; q++)
    if ((q == text || q[-1] == '\n') && c.end - q > 7 && memcmp(q, "select ", 7) == 0) cap_rules++;
  plan.rules = hl_meta_alloc(sizeof(plan_rule) * (cap_rules ? cap_rules : 1));
  if (!mods || !skips || !plan.rules) goto out;

  if (!next_line(&c, &s, &e) || !field(&s, e, f, sizeof f) || strcmp(f, "heaplayout-plan") != 0 ||
      !field(&s, e, f, sizeof f) || strcmp(f, "1") != 0) {
    refuse(path, c.line, "not a heaplayout plan of version 1");
    goto out;
  }
  while (next_line(&c, &s, &e)) {
    if (ended) {
      refuse(path, c.line, "text after 'end'");
      goto out;
    }
    if (!field(&s, e, f, sizeof f)) continue;
    uint64_t v;
    if (strcmp(f, "strategy") == 0) {
      if (!field(&s, e, plan.strategy, sizeof plan.strategy)) goto malformed;
    } else if (strcmp(f, "chunk_size") == 0) {
      if (!field(&s, e, f, sizeof f) || !parse_u64(f, &v) || v < HL_MIN_CHUNK_SIZE || v > HL_MAX_CHUNK_SIZE ||
          (v & (v - 1)))
        goto malformed;
      plan.chunk_size = v;
    } else if (strcmp(f, "max_object_size") == 0) {
      if (!field(&s, e, f, sizeof f) || !parse_u64(f, &v) || v == 0 || v > HL_MAX_CLASS_SIZE) goto malformed;
      plan.max_object_size = v;
    } else if (strcmp(f, "min_align") == 0) {
      if (!field(&s, e, f, sizeof f) || !parse_u64(f, &v) || (v != 8 && v != 16)) goto malformed;
      plan.min_align = (uint32_t)v;
    } else if (strcmp(f, "rest") == 0) {
      if (!field(&s, e, f, sizeof f)) goto malformed;
      if (strcmp(f, "allocator") == 0) {
        plan.rest_max_size = 0;
      } else if (strcmp(f, "callsite") == 0) {
        if (!field(&s, e, f, sizeof f) || !parse_u64(f, &v) || v == 0 || v > HL_MAX_CLASS_SIZE) goto malformed;
        plan.rest_max_size = (uint32_t)v;
      } else {
        goto malformed;
      }
      if (field(&s, e, f, sizeof f)) goto malformed; /* nothing after it */
    } else if (strcmp(f, "module") == 0) {
      if (nmods == MAX_PLAN_MODULES) {
        refuse(path, c.line, "too many modules");
        goto out;
      }
      plan_module *m = &mods[nmods];
      if (!field(&s, e, f, sizeof f) || !parse_u64(f, &v) || v != (uint64_t)nmods) goto malformed;
      if (!field(&s, e, f, sizeof f)) goto malformed;
      if (strcmp(f, "-") != 0 && !parse_hex_bytes(f, m->build_id, sizeof m->build_id, &m->build_id_len)) goto malformed;
      while (s < e && *s == ' ') s++;
      if (s >= e || (size_t)(e - s) >= sizeof m->path) goto malformed;
      memcpy(m->path, s, (size_t)(e - s)); /* the path is the rest of the line */
      m->path[e - s] = '\0';
      nmods++;
    } else if (strcmp(f, "skip") == 0) {
      if (nskips == MAX_SKIP || !field(&s, e, skips[nskips], 128)) goto malformed;
      nskips++;
    } else if (strcmp(f, "group") == 0) {
      if (!field(&s, e, f, sizeof f) || !parse_u64(f, &v) || v != plan.ngroups + 1 || v >= HL_MAX_POOLS) goto malformed;
      plan.ngroups++;
      /* contexts and weight are for reports; an optional last field packs the group */
      if (field(&s, e, f, sizeof f) && field(&s, e, f, sizeof f) && field(&s, e, f, sizeof f)) {
        if (strcmp(f, "packed") != 0) goto malformed;
        plan.group_packed[v] = 1;
      }
    } else if (strcmp(f, "select") == 0) {
      plan_rule *r = &plan.rules[plan.nrules];
      if (!field(&s, e, f, sizeof f) || !parse_u64(f, &v) || v > plan.ngroups) goto malformed;
      r->group = (uint16_t)v;
      r->nframes = 0;
      while (field(&s, e, f, sizeof f)) {
        char *colon = strchr(f, ':');
        uint64_t mi, off;
        if (colon == NULL || r->nframes == MAX_RULE_FRAMES) goto malformed;
        *colon = '\0';
        if (!parse_u64(f, &mi) || mi >= (uint64_t)nmods) goto malformed;
        char hex[40];
        if (strlen(colon + 1) > 32) goto malformed;
        hl_format(hex, sizeof hex, "0x%s", colon[1] == '0' && (colon[2] == 'x' || colon[2] == 'X') ? colon + 3 : colon + 1);
        if (!parse_u64(hex, &off)) goto malformed;
        r->frames[r->nframes++] = (uintptr_t)(mi << 48) | (uintptr_t)off; /* resolved below */
      }
      if (r->nframes == 0) goto malformed;
      plan.nrules++;
    } else if (strcmp(f, "end") == 0) {
      ended = 1;
    } else {
      refuse(path, c.line, "unknown record");
      goto out;
    }
    continue;
  malformed:
    refuse(path, c.line, "malformed record");
    goto out;
  }
  if (!ended) {
    refuse(path, 0, "no 'end' line: the plan is truncated");
    goto out;
  }

  /* match the plan's modules to the loaded ones */
  enum { MAX_LOADED = 512 };
  loaded_module *loaded = hl_meta_alloc(sizeof(loaded_module) * MAX_LOADED);
  if (loaded == NULL) goto out;
  module_scan scan = {loaded, 0, MAX_LOADED};
  dl_iterate_phdr(scan_module, &scan);
  for (int i = 0; i < nmods; i++) {
    plan_module *m = &mods[i];
    int found = -1, same_path = -1;
    for (int j = 0; j < scan.n; j++) {
      if (m->build_id_len && loaded[j].build_id_len == m->build_id_len &&
          memcmp(loaded[j].build_id, m->build_id, m->build_id_len) == 0)
        found = j;
      if (strcmp(base_name(loaded[j].path), base_name(m->path)) == 0) same_path = j;
    }
    if (found < 0 && !m->build_id_len) found = same_path;
    if (found < 0) {
      char why[700];
      hl_format(why, sizeof why,
                same_path >= 0 ? "it was made for another build of %s (build-ids differ)"
                               : "module %s is not loaded in this program",
                m->path);
      refuse(path, 0, why);
      goto out;
    }
    m->bias = loaded[found].bias;
  }
  for (int i = 0; i < nskips; i++)
    for (int j = 0; j < scan.n && plan.nskip < MAX_SKIP; j++)
      if (strcmp(base_name(loaded[j].path), skips[i]) == 0) {
        plan.skip_lo[plan.nskip] = loaded[j].lo;
        plan.skip_hi[plan.nskip++] = loaded[j].hi;
      }
  /* our own library is always skipped */
  for (int j = 0; j < scan.n; j++)
    if ((uintptr_t)hl_plan_load - loaded[j].lo < loaded[j].hi - loaded[j].lo) {
      plan.skip_lo[plan.nskip] = loaded[j].lo;
      plan.skip_hi[plan.nskip++] = loaded[j].hi;
    }
  for (uint32_t i = 0; i < plan.nrules; i++)
    for (unsigned k = 0; k < plan.rules[i].nframes; k++) {
      uintptr_t fr = plan.rules[i].frames[k];
      plan.rules[i].frames[k] = mods[fr >> 48].bias + (fr & (((uintptr_t)1 << 48) - 1));
    }
  sort_rules(plan.rules, plan.nrules);
  if (!build_index()) goto out;
  for (uint32_t g = 1; g <= plan.ngroups; g++) {
    uint16_t id = hl_pool_id_new();
    if (id == 0) {
      refuse(path, 0, "too many groups");
      goto out;
    }
    plan.group_pool[g] = id;
    hl_pool_set_group(id, (uint16_t)g);
  }
  for (uint32_t i = 0; i < plan.nrules; i++) /* name each pool by a site of its group */
    if (plan.rules[i].group && hl_pool_site(plan.group_pool[plan.rules[i].group]) == 0)
      hl_pool_set_site(plan.group_pool[plan.rules[i].group], plan.rules[i].frames[0]);
  hl_unwind_refresh_modules();
  hl_unwind_set_skip(is_skip_pc);
  /* opt.max_size bounds every pool (checked first on malloc); site pools of the rest keep
   * their own limit in opt.site_max_size */
  hl_state.opt.site_max_size = plan.rest_max_size;
  hl_state.opt.max_size = (uint32_t)(plan.max_object_size > plan.rest_max_size ? plan.max_object_size
                                                                                 : plan.rest_max_size);
  hl_state.opt.chunk_size = plan.chunk_size;
  if (hl_state.opt.min_align == 0) hl_state.opt.min_align = plan.min_align; /* the environment wins */
  ok = 1;
out:
  munmap((void *)text, (size_t)st.st_size);
  return ok;
}

/* ---- identification ---- */

static inline int in_skip(uintptr_t pc) {
  for (int i = 0; i < plan.nskip; i++)
    if (pc - plan.skip_lo[i] < plan.skip_hi[i] - plan.skip_lo[i]) return 1;
  return 0;
}

static inline const site_entry *site_of(uintptr_t pc) {
  uint32_t h = site_hash(pc) & plan.site_mask;
  for (;;) {
    const site_entry *e = &plan.sites[h];
    if (e->pc == pc) return e;
    if (e->pc == 0) return NULL;
    h = (h + 1) & plan.site_mask;
  }
}

static int is_skip_pc(uintptr_t pc) { return in_skip(pc); }

/* Decisions that need a walk are cached per thread as recorded walks (hl_trace), keyed by
 * the return address and the caller's return address (one unwind step): a repeat replays
 * the recorded steps, comparing return addresses, instead of looking up a rule per frame.
 * Several walks share a key when a wrapper is called from a wrapper (dpa_place: pins and
 * terms both come through safe_calloc -> safe_malloc and differ in the third frame), and
 * such allocations often alternate; with one entry per key each would evict the other and
 * every allocation would walk (measured: 500 instructions per allocation instead of ~60),
 * so a key's set has CHAIN_WAYS entries, replaced round-robin. */
#define CHAIN_SETS 16u
#define CHAIN_WAYS 4u
typedef struct chain_entry {
  uintptr_t ra; /* frame 0; 0 empty. trace.step[0].pc is the rest of the key */
  uint16_t pool;
  uint8_t deciding_steps; /* the first steps of trace that decide (0: not known) */
  hl_trace trace;
} chain_entry;
typedef struct chain_set {
  chain_entry way[CHAIN_WAYS];
  unsigned next; /* round-robin victim */
} chain_set;
static __thread chain_set tl_chains[CHAIN_SETS] __attribute__((tls_model("initial-exec")));

static inline chain_set *chain_set_of(uintptr_t ra, uintptr_t caller) {
  return &tl_chains[((ra * 0x9E3779B97F4A7C15ull) ^ (caller * 0xC2B2AE3D27D4EB4Full)) >> 58 & (CHAIN_SETS - 1)];
}

/* The full decision: collect as many frames as the rules for the first program frame need
 * (walking out of skipped modules first), then take the longest rule that matches.
 * *deciding: how many of the walk's steps decided, when the walk was plain (each step
 * reached a new program frame) and its frames suffice; 0 otherwise. A rule's answer is
 * known once a frame differs from it or all its frames matched, so the deciding frames
 * are the most any rule up to the matching one needed. */
static uint16_t decide(hl_frame f, hl_trace *tr, unsigned *deciding) {
  const site_entry *e = site_of(f.pc);
  uintptr_t chain[MAX_RULE_FRAMES];
  int plain = tr != NULL;
  *deciding = 0;
  if (e == NULL) { /* called from a skipped module: find the program's frame */
    if (!in_skip(f.pc)) return 0;
    if (hl_unwind_collect(&f, chain, 1, tr) == 0 || (e = site_of(chain[0])) == NULL) return 0;
    if (e->depth == 1) return plan.group_pool[e->group];
    plain = 0; /* the steps so far left a skipped module */
  }
  unsigned n = hl_unwind_collect(&f, chain, e->depth, tr);
  uint16_t pool = 0;
  unsigned need = 1;
  for (uint32_t i = e->first; i < e->first + e->count; i++) { /* longest first */
    const plan_rule *r = &plan.rules[i];
    unsigned k = 1;
    while (k < r->nframes && k < n && r->frames[k] == chain[k]) k++;
    unsigned rule_need = k < r->nframes ? k + 1 : r->nframes;
    need = rule_need > need ? rule_need : need;
    if (k == r->nframes) {
      pool = plan.group_pool[r->group];
      break;
    }
  }
  if (plain && tr->replayable && (unsigned)tr->nsteps + 1 == n && need <= n) *deciding = need - 1;
  return pool;
}

uint16_t hl_plan_pool_walk(hl_frame f, const hl_step_rule *r0, const hl_trace **decided, unsigned *steps) {
  hl_frame g = f;
  *steps = 0;
  if (!hl_unwind_step_by(&g, r0)) return decide(f, NULL, steps);
  chain_set *set = chain_set_of(f.pc, g.pc);
  for (unsigned w = 0; w < CHAIN_WAYS; w++) {
    const chain_entry *c = &set->way[w];
    hl_frame h = g;
    if (c->ra == f.pc && c->trace.step[0].pc == g.pc && hl_unwind_replay(&h, &c->trace, 1)) {
      atomic_fetch_add_explicit(&hl_state.plan_replays, 1, memory_order_relaxed);
      *decided = &c->trace;
      *steps = c->deciding_steps;
      return c->pool;
    }
  }
  hl_trace tr;
  tr.nsteps = 0;
  tr.replayable = 1;
  atomic_fetch_add_explicit(&hl_state.plan_walks, 1, memory_order_relaxed); /* rare: not on the fast path */
  unsigned deciding;
  uint16_t pool = decide(f, &tr, &deciding);
  if (tr.replayable && tr.nsteps > 0) {
    chain_entry *c = &set->way[set->next];
    set->next = (set->next + 1) % CHAIN_WAYS;
    c->ra = f.pc;
    c->pool = pool;
    c->deciding_steps = (uint8_t)deciding;
    c->trace.nsteps = tr.nsteps;
    memcpy(c->trace.step, tr.step, tr.nsteps * sizeof tr.step[0]);
    *decided = &c->trace;
    *steps = deciding;
  }
  return pool;
}

uint16_t hl_plan_pool(hl_frame f, int *needs_walk) {
  const site_entry *e = site_of(f.pc);
  *needs_walk = 0;
  if (HL_LIKELY(e != NULL && e->depth == 1)) return plan.group_pool[e->group];
  if (e == NULL && !in_skip(f.pc)) return 0; /* not a rule's first frame: not grouped */
  *needs_walk = 1;
  hl_step_rule r0;
  const hl_trace *decided;
  unsigned steps;
  hl_unwind_rule(f.pc, &r0);
  return hl_plan_pool_walk(f, &r0, &decided, &steps);
}

uint32_t hl_plan_groups(void) { return plan.ngroups; }

uint32_t hl_plan_group_max_size(void) { return (uint32_t)plan.max_object_size; }
int hl_plan_group_packed(uint16_t group) { return group <= plan.ngroups && plan.group_packed[group]; }
