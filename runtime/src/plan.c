/* The `plan` policy: groups from a profile-guided plan file (docs/plan-format.md).
 *
 * At start the plan file is mapped and parsed without malloc (plan_parse.c, the grammar),
 * its modules are matched to the loaded ones by GNU build-id, and its identification rules
 * are turned into a table keyed by the absolute address of each rule's first frame.
 * Identifying an allocation costs one table probe when its return address decides the
 * group (most sites); otherwise as many further frames are walked as the longest rule for
 * that address needs, with the cached CFI unwinder. A problem with the plan itself refuses
 * it as a whole: one message, and the program runs unoptimized.
 *
 * A module of the plan that is not loaded at start (a plugin, a Python extension: dlopen)
 * is pending. Its rules wait until a return address shows up that lies in no module
 * known at the last scan of the loaded objects, on a slow path only (the per-thread caches
 * answer repeats); the objects are then scanned again if their count changed, and a new
 * rule table with the module's rules is published with one atomic store. Readers on other
 * threads keep using the table they loaded: tables are never freed (at most one per plan
 * module). Rules whose first frame is in a loaded module but that name a pending module
 * further out are in the table from the start with those frames dormant (matching nothing),
 * so the first frame's site is walked and the walk wakes them (site_awake). */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "plan_parse.h"

#define MAX_RULE_FRAMES HL_PLAN_MAX_RULE_FRAMES
#define MAX_SKIP_RANGES 64     /* loaded objects whose frames walks pass over */
#define MAX_KNOWN_MODULES 512  /* loaded objects remembered by the last scan */
#define DORMANT_FRAME ((uintptr_t)0) /* a frame in a module not loaded: no return address is 0 */

_Static_assert(HL_PLAN_MAX_GROUPS == HL_MAX_POOLS - HL_POOL_FIRST_DYNAMIC, "a pool id for every group");

typedef hl_frame_rule plan_rule; /* frames: absolute return addresses, or DORMANT_FRAME */
_Static_assert(MAX_RULE_FRAMES <= HL_WALK_MAX_FRAMES, "a walk holds a rule's frames");

typedef struct site_entry {
  uintptr_t pc;            /* first frame; 0 empty */
  const plan_rule *rules;  /* the rules with this first frame, longest first */
  uint32_t count;
  uint8_t depth;           /* frames the longest of them needs */
  uint8_t pending;         /* some of them have dormant frames (of a pending module) */
  uint16_t group;          /* when depth == 1: the group */
} site_entry;

/* The active rules: replaced whole (never changed in place) when a pending module appears. */
typedef struct rule_table {
  const site_entry *sites;
  uint32_t site_mask;
  uint32_t nrules;
  const plan_rule *rules;
} rule_table;

static struct {
  uint32_t ngroups;
  uint16_t group_pool[HL_MAX_POOLS]; /* group id -> pool id */
  uint8_t group_packed[HL_MAX_POOLS]; /* group id -> packed (size_class.c) */
  uint8_t group_spans[HL_MAX_POOLS];  /* group id -> fresh space per size class (heap.c) */
  uint8_t group_line[HL_MAX_POOLS];   /* group id -> where in a line its fresh space starts (chunk.c, alloc.c) */
  uint32_t min_align;                 /* 8 or 16 */
  _Atomic(const rule_table *) table;
  _Atomic(uint32_t) npending;         /* plan modules not loaded yet */
  uintptr_t skip_lo[MAX_SKIP_RANGES], skip_hi[MAX_SKIP_RANGES];
  _Atomic(int) nskip;                 /* appended to when a skipped module appears */
  size_t max_object_size, chunk_size;
  uint32_t rest_max_size; /* rest callsite: ungrouped objects up to this size get site pools */
  char strategy[32];
} plan;

/* ---- the plan's modules ---- */

enum module_state { MOD_PENDING, MOD_LOADED, MOD_REFUSED };

static struct {
  hl_plan_spec spec;                      /* as parsed; kept for pending modules */
  const hl_plan_rule_spec *rules;         /* every rule, unresolved */
  uintptr_t bias[HL_PLAN_MAX_MODULES];    /* load address, once loaded */
  uint8_t state[HL_PLAN_MAX_MODULES];
  const char *path;                       /* the plan file, for messages; NULL: no plan loaded */
  int loaded_at_start;                    /* some module matched at start */
  int seen;                               /* some module was ever found (loaded or refused) */
  unsigned long long adds;                /* dlpi_adds at the last scan */
  _Atomic(pid_t) scanning;                /* pid of the process whose thread scans; 0 idle */
  /* [lo, hi) of every object at the last scan, under a sequence count (odd: being written) */
  _Atomic(unsigned) known_seq;
  _Atomic(int) nknown;
  _Atomic(uintptr_t) known_lo[MAX_KNOWN_MODULES], known_hi[MAX_KNOWN_MODULES];
} mods;

static void read_build_id(const struct dl_phdr_info *info, uint8_t *id, uint32_t cap, uint32_t *len) {
  *len = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
      const uint8_t *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
          nh->n_descsz <= cap) {
        memcpy(id, desc, nh->n_descsz);
        *len = nh->n_descsz;
        return;
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static int is_skip_pc(uintptr_t pc);
static const uint8_t *loaded_now(uint32_t n);

static int refuse(const char *path, unsigned line, const char *why) {
  if (line > 0) hl_message("plan %s line %u: %s; running unoptimized", path, line, why);
  else hl_message("plan %s: %s; running unoptimized", path, why);
  return 0;
}

/* What one scan of the loaded objects found for the plan's modules. */
typedef struct scan_result {
  uintptr_t by_id[HL_PLAN_MAX_MODULES];   /* bias of the object with the module's build-id */
  uintptr_t by_name[HL_PLAN_MAX_MODULES]; /* bias of an object of the module's file name */
  uint8_t has_id[HL_PLAN_MAX_MODULES], has_name[HL_PLAN_MAX_MODULES];
  int nknown;
} scan_result;

static void add_skip_range(uintptr_t lo, uintptr_t hi) {
  int n = atomic_load_explicit(&plan.nskip, memory_order_relaxed);
  for (int i = 0; i < n; i++)
    if (plan.skip_lo[i] == lo) return;
  if (n == MAX_SKIP_RANGES) return;
  plan.skip_lo[n] = lo;
  plan.skip_hi[n] = hi;
  atomic_store_explicit(&plan.nskip, n + 1, memory_order_release); /* readers see the range first */
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg) {
  scan_result *s = arg;
  if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) mods.adds = info->dlpi_adds;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t a = info->dlpi_addr + ph->p_vaddr;
    if (a < lo) lo = a;
    if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
  }
  if (hi <= lo) return 0;
  if (s->nknown < MAX_KNOWN_MODULES) {
    atomic_store_explicit(&mods.known_lo[s->nknown], lo, memory_order_relaxed);
    atomic_store_explicit(&mods.known_hi[s->nknown], hi, memory_order_relaxed);
    s->nknown++;
  }
  char exe[512];
  const char *name = info->dlpi_name;
  if (name == NULL || name[0] == '\0') { /* the main program */
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    name = exe;
  }
  const char *file = base_name(name);
  uint8_t id[HL_PLAN_MAX_BUILD_ID];
  uint32_t id_len;
  read_build_id(info, id, sizeof id, &id_len);
  for (uint32_t i = 0; i < mods.spec.nmodules; i++) {
    const hl_plan_module_spec *m = &mods.spec.modules[i];
    if (m->build_id_len && id_len == m->build_id_len && memcmp(id, m->build_id, id_len) == 0) {
      s->by_id[i] = info->dlpi_addr;
      s->has_id[i] = 1;
    }
    if (strcmp(file, base_name(m->path)) == 0) {
      s->by_name[i] = info->dlpi_addr;
      s->has_name[i] = 1;
    }
  }
  for (uint32_t i = 0; i < mods.spec.nskips; i++)
    if (strcmp(file, mods.spec.skips[i]) == 0) add_skip_range(lo, hi);
  if ((uintptr_t)hl_plan_load - lo < hi - lo) add_skip_range(lo, hi); /* our own library */
  return 0;
}

/* Scan the loaded objects (the caller holds the scan lock, or is hl_plan_load). The known
 * set stays "being rewritten" (pc_known: not known, ask the loader) until scan_done: a
 * thread told "known" must find the table that has the rules the scan woke, else it would
 * take its site for ungrouped and cache that for good. */
static void scan_objects(scan_result *s) {
  memset(s, 0, sizeof *s);
  unsigned seq = atomic_load_explicit(&mods.known_seq, memory_order_relaxed) | 1u;
  atomic_store_explicit(&mods.known_seq, seq, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  dl_iterate_phdr(scan_object, s);
  atomic_store_explicit(&mods.nknown, s->nknown, memory_order_relaxed);
}
/* After the table the scan woke is published. */
static void scan_done(void) {
  unsigned seq = atomic_load_explicit(&mods.known_seq, memory_order_relaxed);
  atomic_store_explicit(&mods.known_seq, seq + 1, memory_order_release);
}

/* ---- the rule table ---- */

/* Rules in the order of their frames, a rule before the longer ones it is a prefix of
 * (sorted with hl_plan_sort, plan_parse.c): the rules that share a chain's first k frames
 * are then one run, and match_rules narrows it frame by frame. */
int hl_frame_rule_before(const void *pa, const void *pb) {
  const hl_frame_rule *a = pa, *b = pb;
  unsigned n = a->nframes < b->nframes ? a->nframes : b->nframes;
  for (unsigned k = 0; k < n; k++)
    if (a->frames[k] != b->frames[k]) return a->frames[k] < b->frames[k];
  return a->nframes < b->nframes;
}
_Static_assert(sizeof(plan_rule) <= HL_PLAN_SORT_MAX_ELEMENT, "plan rules fit hl_plan_sort's buffer");

static uint32_t site_hash(uintptr_t pc) { return (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 32); }

static inline const site_entry *site_lookup(const rule_table *t, uintptr_t pc) {
  uint32_t h = site_hash(pc) & t->site_mask;
  for (;;) {
    const site_entry *e = &t->sites[h];
    if (e->pc == pc) return e;
    if (e->pc == 0) return NULL;
    h = (h + 1) & t->site_mask;
  }
}

/* A table of the rules whose first frame is in a loaded module; frames in pending (or
 * refused) modules are dormant. NULL when metadata cannot be had. */
static const rule_table *build_table(void) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < mods.spec.nrules; i++) n += mods.state[hl_plan_frame_module(mods.rules[i].frames[0])] == MOD_LOADED;
  rule_table *t = hl_meta_alloc(sizeof *t);
  plan_rule *rules = hl_meta_alloc(sizeof(plan_rule) * (n ? n : 1));
  uint32_t slots = 16;
  while (slots < n * 2) slots <<= 1;
  site_entry *sites = hl_meta_alloc(sizeof(site_entry) * slots);
  if (t == NULL || rules == NULL || sites == NULL) return NULL;
  uint8_t *pending = hl_meta_alloc(n ? n : 1);
  if (pending == NULL) return NULL;
  uint32_t k = 0;
  for (uint32_t i = 0; i < mods.spec.nrules; i++) {
    const hl_plan_rule_spec *s = &mods.rules[i];
    if (mods.state[hl_plan_frame_module(s->frames[0])] != MOD_LOADED) continue;
    plan_rule *r = &rules[k++];
    r->group = s->group;
    r->nframes = s->nframes;
    for (unsigned f = 0; f < s->nframes; f++) {
      uint32_t m = hl_plan_frame_module(s->frames[f]);
      r->frames[f] = mods.state[m] == MOD_LOADED ? mods.bias[m] + (uintptr_t)hl_plan_frame_offset(s->frames[f])
                                                  : DORMANT_FRAME;
    }
  }
  hl_plan_sort(rules, n, sizeof rules[0], hl_frame_rule_before);
  for (uint32_t i = 0; i < n; i++) { /* which rules wait for a pending module */
    pending[i] = 0;
    for (uint32_t f = 1; f < rules[i].nframes; f++) pending[i] |= rules[i].frames[f] == DORMANT_FRAME;
  }
  uint32_t mask = slots - 1;
  for (uint32_t i = 0; i < n;) {
    uint32_t j = i;
    uint8_t waits = 0;
    while (j < n && rules[j].frames[0] == rules[i].frames[0]) waits |= pending[j++];
    uint32_t h = site_hash(rules[i].frames[0]) & mask;
    while (sites[h].pc) h = (h + 1) & mask;
    site_entry *e = &sites[h];
    e->pc = rules[i].frames[0];
    e->rules = &rules[i];
    e->count = j - i;
    e->depth = 0;
    for (uint32_t q = i; q < j; q++) e->depth = rules[q].nframes > e->depth ? rules[q].nframes : e->depth;
    e->pending = waits && atomic_load_explicit(&plan.npending, memory_order_relaxed) > 0;
    e->group = rules[i].nframes == 1 ? rules[i].group : 0; /* a one-frame rule sorts first */
    i = j;
  }
  for (uint32_t i = 0; i < n; i++) /* name each pool by a site of its group */
    if (rules[i].group && hl_pool_site(plan.group_pool[rules[i].group]) == 0)
      hl_pool_set_site(plan.group_pool[rules[i].group], rules[i].frames[0]);
  t->sites = sites;
  t->site_mask = mask;
  t->rules = rules;
  t->nrules = n;
  return t;
}

/* ---- pending modules ---- */

static int pc_known(uintptr_t pc) {
  for (;;) {
    unsigned seq = atomic_load_explicit(&mods.known_seq, memory_order_acquire);
    if (seq & 1) return 0; /* being rewritten: ask the loader */
    int n = atomic_load_explicit(&mods.nknown, memory_order_relaxed), known = 0;
    for (int i = 0; i < n && !known; i++) {
      uintptr_t lo = atomic_load_explicit(&mods.known_lo[i], memory_order_relaxed);
      known = pc - lo < atomic_load_explicit(&mods.known_hi[i], memory_order_relaxed) - lo;
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&mods.known_seq, memory_order_relaxed) == seq) return known;
  }
}

/* The scan lock holds its holder's pid: a child forked while a thread of its parent
 * scanned takes it over (that thread does not exist in the child). */
static void scan_lock(void) {
  pid_t me = getpid();
  for (;;) {
    pid_t holder = 0;
    if (atomic_compare_exchange_weak(&mods.scanning, &holder, me)) return;
    if (holder != me && holder != 0 && atomic_compare_exchange_strong(&mods.scanning, &holder, me)) return;
    sched_yield();
  }
}
static void scan_unlock(void) { atomic_store_explicit(&mods.scanning, 0, memory_order_release); }

static int read_adds(struct dl_phdr_info *info, size_t size, void *arg) {
  *(unsigned long long *)arg =
      size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs ? info->dlpi_adds : ~0ull;
  return 1; /* the first object tells: the count is the same in every one */
}

/* pc lies in no object known at the last scan: if objects were loaded since, scan again
 * and activate the pending modules that appeared (a new table). */
static void scan_for_pending(uintptr_t pc) {
  if (pc_known(pc)) return;
  scan_lock();
  unsigned long long adds = ~0ull;
  dl_iterate_phdr(read_adds, &adds);
  if (atomic_load_explicit(&plan.npending, memory_order_relaxed) == 0 || (adds == mods.adds && adds != ~0ull)) {
    scan_unlock();
    return;
  }
  static scan_result s; /* under the lock */
  scan_objects(&s);
  int woke = 0;
  uint32_t left = 0;
  for (uint32_t i = 0; i < mods.spec.nmodules; i++) {
    if (mods.state[i] != MOD_PENDING) continue;
    const hl_plan_module_spec *m = &mods.spec.modules[i];
    if (s.has_id[i] || (!m->build_id_len && s.has_name[i])) {
      mods.bias[i] = s.has_id[i] ? s.by_id[i] : s.by_name[i];
      mods.state[i] = MOD_LOADED;
      mods.seen = woke = 1;
    } else if (s.has_name[i]) { /* another build of it: its rules cannot be trusted */
      mods.state[i] = MOD_REFUSED;
      mods.seen = 1;
      hl_message("plan %s: module %s was loaded but is another build (build-ids differ); its rules are not used",
                 mods.path, m->path);
    } else {
      left++;
    }
  }
  if (woke) {
    const rule_table *t = build_table();
    if (t != NULL) atomic_store_explicit(&plan.table, t, memory_order_release);
  }
  /* only now: site_of asks again while modules are pending or the table changed, so a
   * thread must not see none pending before it can see the new table */
  atomic_store_explicit(&plan.npending, left, memory_order_release);
  scan_done();
  scan_unlock();
}

/* Code was unloaded (unload.c): a plan module that went away is pending again, so that its
 * rules no longer match code loaded where it was, and follow it if it is loaded again, at
 * whatever address. (PreFix's rules keep the addresses they were loaded with.) */
void hl_plan_code_unloaded(void) {
  if (mods.path == NULL) return; /* no plan in force */
  scan_lock();
  static scan_result s; /* under the lock */
  scan_objects(&s);
  uint32_t went = 0;
  for (uint32_t i = 0; i < mods.spec.nmodules; i++) {
    const hl_plan_module_spec *m = &mods.spec.modules[i];
    if (mods.state[i] != MOD_LOADED || s.has_id[i] || (!m->build_id_len && s.has_name[i])) continue;
    mods.state[i] = MOD_PENDING;
    went++;
  }
  if (went) {
    /* pending first: a thread that misses in the new table must go on to ask the loader */
    atomic_fetch_add_explicit(&plan.npending, went, memory_order_release);
    const rule_table *t = build_table();
    if (t != NULL) atomic_store_explicit(&plan.table, t, memory_order_release);
  }
  scan_done();
  scan_unlock();
}

/* site_of's slow half: pc is the first frame of no rule in table t while modules are
 * pending (or since t, another thread published a table that may have it). */
static HL_NOINLINE const site_entry *site_after_scan(const rule_table *t, uintptr_t pc) {
  scan_for_pending(pc);
  const rule_table *now = atomic_load_explicit(&plan.table, memory_order_acquire);
  return now != t ? site_lookup(now, pc) : NULL;
}

/* A walked site whose rules wait for a pending module, with the frames the walk found:
 * when one of them lies in a module not known yet, that module may be the one; the entry
 * of the same site in the table after the scan (same rules, frames resolved), else e. */
static HL_NOINLINE const site_entry *site_awake(const site_entry *e, const uintptr_t *chain, unsigned n) {
  if (atomic_load_explicit(&plan.npending, memory_order_relaxed))
    for (unsigned k = 1; k < n; k++)
      if (!pc_known(chain[k])) {
        scan_for_pending(chain[k]);
        break;
      }
  /* e may be of an older table than the one now published (by this scan or another's) */
  const site_entry *w = site_lookup(atomic_load_explicit(&plan.table, memory_order_acquire), e->pc);
  return w ? w : e;
}

/* ---- loading ---- */

int hl_plan_load(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block the program */
  if (fd < 0) {
    char why[160];
    const char *desc = strerrordesc_np(errno);
    hl_format(why, sizeof why, "cannot read the file: cannot open it: %s", desc ? desc : "error");
    return refuse(path, 0, why);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int dir = S_ISDIR(st.st_mode), fifo = S_ISFIFO(st.st_mode);
    close(fd);
    return refuse(path, 0, dir ? "is a directory, not a plan file"
                           : fifo ? "is a pipe or FIFO, not a regular file (process substitution <(...) gives a "
                                    "pipe): give the plan as a file"
                                  : "is not a regular file");
  }
  size_t len = (size_t)st.st_size;
  const char *text = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : "";
  close(fd);
  if (text == MAP_FAILED) return refuse(path, 0, "cannot read the file");

  int ok = 0;
  hl_plan_spec *spec = &mods.spec;
  hl_plan_error err;
  hl_plan_rule_spec *rules = NULL, *prules = NULL;
  hl_plan_slot_spec *slots = NULL;
  /* one parse, with room for a record of each kind per line (metadata is mapped without
   * reserve: what is not written costs nothing); a PreFix plan may have 2^24 slot lines */
  size_t lines = 1;
  for (const char *q = text, *e = text + len; (q = memchr(q, '\n', (size_t)(e - q))) != NULL; q++) lines++;
  uint32_t nrules = lines < HL_PLAN_MAX_RULES ? (uint32_t)lines : HL_PLAN_MAX_RULES;
  uint32_t nprules = nrules, nslots = lines < HL_PLAN_MAX_SLOTS ? (uint32_t)lines : HL_PLAN_MAX_SLOTS;
  rules = hl_meta_alloc(sizeof(hl_plan_rule_spec) * nrules);
  prules = hl_meta_alloc(sizeof(hl_plan_rule_spec) * nprules);
  slots = hl_meta_alloc(sizeof(hl_plan_slot_spec) * nslots);
  if (rules == NULL || prules == NULL || slots == NULL ||
      !hl_plan_parse_full(text, len, spec, rules, nrules, prules, nprules, slots, nslots, &err)) {
    refuse(path, err.line, rules && prules && slots ? err.reason : "no memory for its rules");
    goto out;
  }
  mods.rules = rules;
  plan.ngroups = spec->ngroups;
  memcpy(plan.group_packed, spec->group_packed, spec->ngroups + 1);
  memcpy(plan.group_spans, spec->group_spans, spec->ngroups + 1);
  memcpy(plan.group_line, spec->group_line, spec->ngroups + 1);
  plan.max_object_size = spec->max_object_size;
  plan.chunk_size = spec->chunk_size;
  plan.min_align = spec->min_align;
  plan.rest_max_size = spec->rest_max_size;
  memcpy(plan.strategy, spec->strategy, sizeof spec->strategy);

  /* match the plan's modules to the loaded ones */
  static scan_result s; /* hl_plan_load runs once, at start */
  scan_objects(&s);
  scan_done(); /* no other thread asks before the policy is published */
  uint32_t pending = 0;
  for (uint32_t i = 0; i < spec->nmodules; i++) {
    const hl_plan_module_spec *m = &spec->modules[i];
    if (s.has_id[i] || (!m->build_id_len && s.has_name[i])) {
      mods.bias[i] = s.has_id[i] ? s.by_id[i] : s.by_name[i];
      mods.state[i] = MOD_LOADED;
      mods.loaded_at_start = mods.seen = 1;
    } else if (s.has_name[i]) {
      char why[700];
      hl_format(why, sizeof why, "it was made for another build of %s (build-ids differ)", m->path);
      refuse(path, 0, why);
      goto out;
    } else {
      mods.state[i] = MOD_PENDING; /* may be loaded later (dlopen) */
      pending++;
    }
  }
  atomic_store_explicit(&plan.npending, pending, memory_order_relaxed);
  for (uint32_t g = 1; g <= plan.ngroups; g++) {
    uint16_t id = hl_pool_id_new();
    if (id == 0) {
      refuse(path, 0, "too many groups");
      goto out;
    }
    plan.group_pool[g] = id;
    hl_pool_set_group(id, (uint16_t)g);
  }
  const rule_table *t = build_table();
  if (t == NULL) {
    refuse(path, 0, "no memory for its rules");
    goto out;
  }
  atomic_store_explicit(&plan.table, t, memory_order_release);
  hl_unwind_refresh_modules();
  hl_unwind_set_skip(is_skip_pc);
  /* the rules were written over chains with one frame per function (heaplayout/planning/recursion.py):
   * walks must collapse recursion the same way, set before any rule is used */
  hl_unwind_set_collapse_functions(spec->recursion_function);
  /* opt.max_size bounds every pool (checked first on malloc); site pools of the rest keep
   * their own limit in opt.site_max_size */
  hl_state.opt.site_max_size = plan.rest_max_size;
  hl_state.opt.max_size = (uint32_t)(plan.max_object_size > plan.rest_max_size ? plan.max_object_size
                                                                                 : plan.rest_max_size);
  hl_state.opt.chunk_size = plan.chunk_size;
  if (hl_state.opt.min_align == 0) hl_state.opt.min_align = plan.min_align; /* the environment wins */
  uint32_t *owner = NULL; /* the slots' granules, checked apart (plan_parse.h), then prefix.c's */
  if (spec->region_bytes) {
    owner = hl_meta_alloc(sizeof(uint32_t) * (spec->region_bytes / spec->region_align + 1));
    if (owner == NULL || !hl_plan_check_slots(spec, slots, owner, &err)) {
      refuse(path, owner ? err.line : 0, owner ? err.reason : "no memory for its PreFix slots");
      goto out;
    }
  }
  if (!hl_prefix_load(spec, prules, slots, owner, mods.bias, loaded_now(spec->nmodules))) {
    refuse(path, 0, "cannot map its PreFix region");
    goto out;
  }
  mods.path = path;
  ok = 1;
out:
  if (len) munmap((void *)text, len);
  return ok;
}

/* Which plan modules are loaded (for prefix.c's rules). */
static const uint8_t *loaded_now(uint32_t n) {
  static uint8_t loaded[HL_PLAN_MAX_MODULES];
  for (uint32_t i = 0; i < n; i++) loaded[i] = mods.state[i] == MOD_LOADED;
  return loaded;
}

/* A plan none of whose modules was ever loaded is for another program: said at exit,
 * since a module loaded later (dlopen) would have made it this program's. */
__attribute__((destructor)) static void report_unmatched(void) {
  if (mods.path == NULL || mods.spec.nmodules == 0 || mods.seen) return;
  hl_message("plan %s: none of its modules was loaded (module 0, %s, is not loaded in this program); "
             "the program ran unoptimized", mods.path, mods.spec.modules[0].path);
}

/* ---- identification ---- */

static inline int in_skip(uintptr_t pc) {
  for (int i = 0; i < plan.nskip; i++)
    if (pc - plan.skip_lo[i] < plan.skip_hi[i] - plan.skip_lo[i]) return 1;
  return 0;
}

static inline const site_entry *site_of(uintptr_t pc) {
  const rule_table *t = atomic_load_explicit(&plan.table, memory_order_acquire);
  const site_entry *e = site_lookup(t, pc);
  if (HL_UNLIKELY(e == NULL) && (atomic_load_explicit(&plan.npending, memory_order_acquire) ||
                                 atomic_load_explicit(&plan.table, memory_order_relaxed) != t))
    e = site_after_scan(t, pc);
  return e;
}

static int is_skip_pc(uintptr_t pc) { return in_skip(pc); }
int hl_plan_pc_skipped(uintptr_t pc) { return in_skip(pc); }

/* Decisions that need a walk are cached per thread as recorded walks (hl_trace), keyed by
 * the return address and the caller's return address (one unwind step): a repeat replays
 * the recorded steps, comparing return addresses, instead of looking up a rule per frame.
 * Several walks share a key when a wrapper is called from a wrapper (dpa_place: pins and
 * terms both come through safe_calloc -> safe_malloc and differ in the third frame), and
 * such allocations often alternate; with one entry per key each would evict the other and
 * every allocation would walk (measured: 500 instructions per allocation instead of ~60),
 * so a key's set has CHAIN_WAYS entries, replaced round-robin. */
#define CHAIN_WAYS HL_PLAN_CHAIN_WAYS
typedef hl_plan_chain_entry chain_entry;
typedef hl_plan_chain_set chain_set;

/* The sets are the calling thread's, in its heap (internal.h; interpose.c calls in here
 * only once the thread has one). */
static inline chain_set *chain_set_of(uintptr_t ra, uintptr_t caller) {
  return &hl_tl_heap->plan_chains[((ra * 0x9E3779B97F4A7C15ull) ^ (caller * 0xC2B2AE3D27D4EB4Full)) >> 58 &
                                  (HL_PLAN_CHAIN_SETS - 1)];
}

/* The full decision: collect as many frames as the rules for the first program frame need
 * (walking out of skipped modules first), then take the longest rule that matches.
 * *deciding: how many of the walk's steps decided, when the walk was plain (each step
 * reached a new program frame) and its frames suffice; 0 otherwise. A rule's answer is
 * known once a frame differs from it or all its frames matched, so the deciding frames
 * are the most any rule up to the matching one needed. */
/* The longest of e's rules that is a prefix of chain[0..n) (NULL: none), and in *need how
 * many of the chain's frames that took: the frames compared, plus one when the chain ended
 * while longer rules still matched (a deeper stack could have met one of them). Rules in
 * [lo, hi) share the chain's first k frames; a one-frame-longer rule equal to that prefix
 * sorts first in the run (hl_frame_rule_before); each further frame narrows the run by binary search
 * on frames[k], so a site with hundreds of rules costs a few compares per frame. */
static const plan_rule *match_rules(const site_entry *e, const uintptr_t *chain, unsigned n, unsigned *need) {
  const plan_rule *r = e->rules, *best = NULL;
  uint32_t lo = 0, hi = e->count;
  *need = 1;
  for (unsigned k = 1;; k++) {
    if (lo < hi && r[lo].nframes == k) best = &r[lo++]; /* exactly chain[0..k) */
    if (lo == hi) break;
    if (k >= n) { /* the stack ended: longer rules might have matched a deeper one */
      *need = k + 1;
      break;
    }
    hl_frame_rules_narrow(r, k, chain[k], &lo, &hi);
    *need = k + 1;
  }
  return best;
}

static uint16_t decide(hl_frame f, hl_trace *tr, unsigned *deciding) {
  const site_entry *e = site_of(f.pc);
  uintptr_t chain[MAX_RULE_FRAMES];
  int plain = tr != NULL;
  *deciding = 0;
  unsigned skipped = 0; /* steps through skipped modules to the program's frame */
  if (e == NULL) { /* called from a skipped module: find the program's frame */
    if (!in_skip(f.pc)) return 0;
    if (hl_unwind_collect(&f, chain, 1, tr) == 0) return 0;
    /* Whether a frame is skipped depends on its return address alone, so the steps to the
     * program's frame are as fixed as the steps that follow it, and a walk through them
     * goes to the chain cache like any other (before: every allocation that a library
     * makes for the program, as libstdc++'s strings do, replayed its walk, about 300
     * instructions each: 7.7% of yosys's instructions under its walk-free plan). */
    if (plain && tr->replayable) skipped = tr->nsteps; else plain = 0;
    e = site_of(chain[0]);
    if (e == NULL || e->depth == 1) {
      if (plain && skipped > 0) *deciding = skipped;
      return e == NULL ? 0 : plan.group_pool[e->group];
    }
  }
  unsigned n = hl_unwind_collect(&f, chain, e->depth, tr);
  if (HL_UNLIKELY(e->pending)) e = site_awake(e, chain, n); /* a dormant frame's module may have appeared */
  unsigned need;
  const plan_rule *r = match_rules(e, chain, n, &need);
  uint16_t pool = r != NULL ? plan.group_pool[r->group] : 0;
  if (plain && tr->replayable && (unsigned)tr->nsteps - skipped + 1 == n && need <= n) *deciding = skipped + need - 1;
  return pool;
}

/* After a full walk of the key (ra, caller) answered pool: keep or reset its speculation
 * (tunables.h, HL_SPEC_*). */
static void speculation_learn(hl_plan_speculation *s, uintptr_t ra, uintptr_t caller, uint16_t pool) {
  if (s->ra != ra || s->caller != caller) { /* a new key takes the slot */
    *s = (hl_plan_speculation){.ra = ra, .caller = caller, .pool = pool, .agreed = 1, .next_budget = 1};
    return;
  }
  if (s->unstable) return;
  if (s->pool != pool) {
    s->pool = pool;
    s->agreed = 1;
    s->budget = 0;
    s->next_budget = 1;
    if (++s->changes > HL_SPEC_MAX_CHANGES) s->unstable = 1;
    return;
  }
  if (s->agreed < HL_SPEC_MIN_AGREED) {
    s->agreed++;
    return;
  }
  s->budget = s->next_budget;
  if (s->next_budget < HL_SPEC_MAX_BUDGET) s->next_budget = (uint16_t)(2 * s->next_budget);
}

uint16_t hl_plan_pool_walk(hl_frame f, const hl_step_rule *r0, const hl_trace **decided, unsigned *steps) {
  hl_frame g = f;
  *steps = 0;
  if (!hl_unwind_step_by(&g, r0)) return decide(f, NULL, steps);
  chain_set *set = chain_set_of(f.pc, g.pc);
  hl_plan_speculation *spec = &hl_tl_heap->plan_spec[((f.pc * 0x9E3779B97F4A7C15ull) ^ (g.pc * 0xC2B2AE3D27D4EB4Full)) >> 56 &
                                                    (HL_PLAN_SPEC_SLOTS - 1)];
  if (spec->budget != 0 && spec->ra == f.pc && spec->caller == g.pc) {
    spec->budget--;
    hl_tl_heap->plan_speculated++;
    return spec->pool;
  }
  for (unsigned w = 0; w < CHAIN_WAYS; w++) {
    const chain_entry *c = &set->way[w];
    hl_frame h = g;
    if (c->ra == f.pc && c->trace.step[0].pc == g.pc && hl_unwind_replay(&h, &c->trace, 1)) {
      atomic_fetch_add_explicit(&hl_state.plan_replays, 1, memory_order_relaxed);
      if (HL_SPEC_MAX_BUDGET != 0) speculation_learn(spec, f.pc, g.pc, c->pool);
      *decided = &c->trace;
      *steps = c->deciding_steps;
      return c->pool;
    }
  }
  /* the thread's scratch trace, not a local: a program's thread may have a 16 KiB stack
   * (a trace holds HL_TRACE_STEPS steps); a walk allocates nothing, so nothing reenters */
  hl_trace *tr = &hl_tl_heap->walk_trace;
  tr->nsteps = 0;
  tr->replayable = 1;
  atomic_fetch_add_explicit(&hl_state.plan_walks, 1, memory_order_relaxed); /* rare: not on the fast path */
  unsigned deciding;
  uint16_t pool = decide(f, tr, &deciding);
  if (HL_SPEC_MAX_BUDGET != 0) speculation_learn(spec, f.pc, g.pc, pool);
  if (tr->replayable && tr->nsteps > 0) {
    chain_entry *c = &set->way[set->next];
    set->next = (set->next + 1) % CHAIN_WAYS;
    c->ra = f.pc;
    c->pool = pool;
    c->deciding_steps = (uint8_t)deciding;
    c->trace.nsteps = tr->nsteps;
    memcpy(c->trace.step, tr->step, tr->nsteps * sizeof tr->step[0]);
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
int hl_plan_group_spans(uint16_t group) { return group <= plan.ngroups && plan.group_spans[group]; }
unsigned hl_plan_group_line(uint16_t group) { return group <= plan.ngroups ? plan.group_line[group] : 0; }
