/* Walking the caller's stack for plan identification, without libgcc or libunwind.
 *
 * For a return address pc, the unwind rule says where the caller's frame is: the CFA
 * (canonical frame address) is rsp or rbp plus an offset, the next return address is at
 * CFA-8, and rbp was either left alone or saved at CFA+k. The rule comes from the
 * module's .eh_frame (found through .eh_frame_hdr's binary-search table) by running the
 * FDE's CFA program up to pc; it is computed once per pc and cached, so walking a frame
 * costs a table probe and two loads. For a function that keeps a frame pointer the rule
 * is "CFA = rbp + 16", and the walk is a frame-pointer walk.
 *
 * Only what compilers emit for ordinary x86-64 code is understood; anything else
 * (expressions, signal frames) makes the rule unknown and the walk stops: the allocation
 * is then simply not identified, which changes placement, never correctness. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

enum { REG_RBP = HL_REG_RBP, REG_RSP = HL_REG_RSP, REG_RA = 16 };

/* ---- modules: address ranges and their .eh_frame_hdr ---- */

#define MAX_MODULES 256
typedef struct module_range {
  uintptr_t lo, hi;          /* executable and data segments, for "which module is pc in" */
  const uint8_t *eh_hdr;     /* PT_GNU_EH_FRAME, or NULL */
} module_range;

/* The loaded modules as one list, published whole: a refresh builds a new list and swaps
 * the pointer, so a walk in another thread never sees a half-built or empty list (it
 * would cache "no rule" for a pc for good). Old lists are never freed: a walk may still
 * read one. A refresh happens only when the loader's count of loaded and unloaded objects
 * changed, so pcs outside every module (JIT code) cost a dl_iterate_phdr each, not a list. */
typedef struct module_list {
  int n;
  module_range m[MAX_MODULES];
} module_list;
static _Atomic(const module_list *) loaded;
static unsigned long long loaded_generation = ~0ull; /* dlpi_adds + dlpi_subs of the list */
static atomic_flag modules_lock = ATOMIC_FLAG_INIT;
static atomic_flag fill_lock = ATOMIC_FLAG_INIT; /* the rule cache's fills and forgetting, one at a time */

static int collect_module(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  module_list *l = arg;
  if (l->n >= MAX_MODULES) return 1;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  const uint8_t *eh = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD) {
      uintptr_t a = info->dlpi_addr + ph->p_vaddr;
      if (a < lo) lo = a;
      if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    }
  }
  if (hi > lo) l->m[l->n++] = (module_range){lo, hi, eh};
  return 0;
}

static int loader_generation(struct dl_phdr_info *info, size_t size, void *arg) {
  *(unsigned long long *)arg = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs
                                   ? info->dlpi_adds + info->dlpi_subs
                                   : ~0ull - 1; /* an old loader: always refresh */
  return 1;
}

/* Re-read the list of loaded modules (at start, and when a pc is in none we know). */
void hl_unwind_refresh_modules(void) {
  while (atomic_flag_test_and_set_explicit(&modules_lock, memory_order_acquire)) {
  }
  unsigned long long gen = 0;
  dl_iterate_phdr(loader_generation, &gen);
  if (gen != loaded_generation || gen == ~0ull - 1) {
    module_list *l = hl_meta_alloc(sizeof *l);
    if (l != NULL) {
      l->n = 0;
      dl_iterate_phdr(collect_module, l);
      atomic_store_explicit(&loaded, l, memory_order_release);
      loaded_generation = gen;
    }
  }
  atomic_flag_clear_explicit(&modules_lock, memory_order_release);
}

/* Code was unloaded (dlclose, unload.c): re-reads the list and returns in gone[] the
 * ranges of modules the old list had and the new one lacks (at most max; more than max:
 * max + 1, and the caller forgets everything). */
unsigned hl_unwind_modules_unloaded(hl_code_range *gone, unsigned max) {
  const module_list *old = atomic_load_explicit(&loaded, memory_order_acquire);
  if (old == NULL) return 0; /* nothing walked yet: nothing cached */
  hl_unwind_refresh_modules();
  const module_list *now = atomic_load_explicit(&loaded, memory_order_acquire);
  if (now == old) return 0;
  unsigned n = 0;
  for (int i = 0; i < old->n; i++) {
    int kept = 0;
    for (int j = 0; j < now->n && !kept; j++)
      kept = now->m[j].lo == old->m[i].lo && now->m[j].hi == old->m[i].hi && now->m[j].eh_hdr == old->m[i].eh_hdr;
    if (kept) continue;
    if (n == max) return max + 1;
    gone[n++] = (hl_code_range){old->m[i].lo, old->m[i].hi};
  }
  return n;
}

/* fork: no lock of the unwinder may be held in the child (init.c) */
void hl_unwind_fork(int take) {
  if (take) {
    while (atomic_flag_test_and_set_explicit(&modules_lock, memory_order_acquire)) {
    }
    while (atomic_flag_test_and_set_explicit(&fill_lock, memory_order_acquire)) {
    }
  } else {
    atomic_flag_clear_explicit(&fill_lock, memory_order_release);
    atomic_flag_clear_explicit(&modules_lock, memory_order_release);
  }
}

static const module_range *module_of(uintptr_t pc) {
  const module_list *l = atomic_load_explicit(&loaded, memory_order_acquire);
  if (l == NULL) return NULL;
  for (int i = 0; i < l->n; i++)
    if (pc - l->m[i].lo < l->m[i].hi - l->m[i].lo) return &l->m[i];
  return NULL;
}

/* ---- DWARF encodings ---- */

static uint64_t read_uleb(const uint8_t **p, const uint8_t *end) {
  uint64_t v = 0;
  unsigned shift = 0;
  while (*p < end) {
    uint8_t b = *(*p)++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) break;
  }
  return v;
}

static int64_t read_sleb(const uint8_t **p, const uint8_t *end) {
  int64_t v = 0;
  unsigned shift = 0;
  uint8_t b = 0;
  while (*p < end) {
    b = *(*p)++;
    if (shift < 64) v |= (int64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) break;
  }
  if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
  return v;
}

/* A pointer in DW_EH_PE encoding `enc`; `data` is the base for datarel. 0 on failure. */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uintptr_t data, uintptr_t *out) {
  if (enc == 0xff) return 0; /* omit */
  const uint8_t *start = *p;
  uint64_t v;
  switch (enc & 0x0f) {
    case 0x00: if (end - *p < 8) return 0; memcpy(&v, *p, 8); *p += 8; break;
    case 0x01: v = read_uleb(p, end); break;
    case 0x02: { uint16_t x; if (end - *p < 2) return 0; memcpy(&x, *p, 2); *p += 2; v = x; break; }
    case 0x03: { uint32_t x; if (end - *p < 4) return 0; memcpy(&x, *p, 4); *p += 4; v = x; break; }
    case 0x04: if (end - *p < 8) return 0; memcpy(&v, *p, 8); *p += 8; break;
    case 0x09: v = (uint64_t)read_sleb(p, end); break;
    case 0x0a: { int16_t x; if (end - *p < 2) return 0; memcpy(&x, *p, 2); *p += 2; v = (uint64_t)(int64_t)x; break; }
    case 0x0b: { int32_t x; if (end - *p < 4) return 0; memcpy(&x, *p, 4); *p += 4; v = (uint64_t)(int64_t)x; break; }
    case 0x0c: if (end - *p < 8) return 0; memcpy(&v, *p, 8); *p += 8; break;
    default: return 0;
  }
  switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += (uintptr_t)start; break; /* pcrel */
    case 0x30: v += data; break;             /* datarel */
    default: return 0;
  }
  if (enc & 0x80) return 0; /* indirect: not used in .eh_frame_hdr or FDE ranges here */
  *out = (uintptr_t)v;
  return 1;
}

/* ---- finding the FDE for pc ---- */

static const uint8_t *find_fde(const module_range *m, uintptr_t pc) {
  const uint8_t *h = m->eh_hdr;
  if (h == NULL || h[0] != 1) return NULL;
  uint8_t ptr_enc = h[1], count_enc = h[2], table_enc = h[3];
  const uint8_t *p = h + 4, *lim = h + 4 + 16;
  uintptr_t eh_frame, count;
  if (!read_encoded(&p, lim, ptr_enc, (uintptr_t)h, &eh_frame)) return NULL;
  if (!read_encoded(&p, lim, count_enc, (uintptr_t)h, &count) || count == 0) return NULL;
  if (table_enc != 0x3b) return NULL; /* datarel|sdata4: what every linker writes */
  const int32_t *table = (const int32_t *)p;
  size_t lo = 0, hi = count;
  while (hi - lo > 1) { /* last entry whose initial location <= pc */
    size_t mid = (lo + hi) / 2;
    if ((uintptr_t)h + (intptr_t)table[2 * mid] <= pc) lo = mid;
    else hi = mid;
  }
  if ((uintptr_t)h + (intptr_t)table[2 * lo] > pc) return NULL;
  return h + (intptr_t)table[2 * lo + 1];
}

/* ---- running the CFA program ---- */

typedef struct cfa_state {
  int cfa_reg;      /* REG_RSP or REG_RBP; -1 unknown */
  int64_t cfa_off;
  int rbp_saved;    /* rbp saved at CFA + rbp_off */
  int64_t rbp_off;
} cfa_state;

static int run_cfa(const uint8_t *p, const uint8_t *end, uint64_t code_align, int64_t data_align,
                   uintptr_t loc, uintptr_t pc, cfa_state *st, const cfa_state *initial) {
  cfa_state stack[8];
  int depth = 0;
  while (p < end) {
    uint8_t op = *p++;
    uint8_t hi = op & 0xc0, low = op & 0x3f;
    uint64_t reg, off;
    if (hi == 0x40) { /* advance_loc */
      loc += low * code_align;
      if (loc > pc) return 1;
      continue;
    }
    if (hi == 0x80) { /* offset */
      off = read_uleb(&p, end);
      if (low == REG_RBP) { st->rbp_saved = 1; st->rbp_off = (int64_t)off * data_align; }
      continue;
    }
    if (hi == 0xc0) { /* restore */
      if (low == REG_RBP) { st->rbp_saved = initial->rbp_saved; st->rbp_off = initial->rbp_off; }
      continue;
    }
    switch (op) {
      case 0x00: break; /* nop */
      case 0x01: { uintptr_t to; if (!read_encoded(&p, end, 0x00, 0, &to)) return 0; loc = to; if (loc > pc) return 1; break; }
      case 0x02: loc += (uint64_t)*p++ * code_align; if (loc > pc) return 1; break;
      case 0x03: { uint16_t d; memcpy(&d, p, 2); p += 2; loc += d * code_align; if (loc > pc) return 1; break; }
      case 0x04: { uint32_t d; memcpy(&d, p, 4); p += 4; loc += d * code_align; if (loc > pc) return 1; break; }
      case 0x05: reg = read_uleb(&p, end); off = read_uleb(&p, end);
        if (reg == REG_RBP) { st->rbp_saved = 1; st->rbp_off = (int64_t)off * data_align; }
        break;
      case 0x06: reg = read_uleb(&p, end);
        if (reg == REG_RBP) { st->rbp_saved = initial->rbp_saved; st->rbp_off = initial->rbp_off; }
        break;
      case 0x07: case 0x08: reg = read_uleb(&p, end);
        if (reg == REG_RBP) st->rbp_saved = 0;
        break;
      case 0x09: reg = read_uleb(&p, end); (void)read_uleb(&p, end);
        if (reg == REG_RBP) return 0; /* rbp kept in another register: not followed */
        break;
      case 0x0a: if (depth == 8) return 0; stack[depth++] = *st; break;
      case 0x0b: if (depth == 0) return 0; *st = stack[--depth]; break;
      case 0x0c: st->cfa_reg = (int)read_uleb(&p, end); st->cfa_off = (int64_t)read_uleb(&p, end); break;
      case 0x0d: st->cfa_reg = (int)read_uleb(&p, end); break;
      case 0x0e: st->cfa_off = (int64_t)read_uleb(&p, end); break;
      case 0x0f: st->cfa_reg = -1; return 0; /* def_cfa_expression */
      case 0x10: reg = read_uleb(&p, end); off = read_uleb(&p, end); p += off;
        if (reg == REG_RBP) return 0;
        break;
      case 0x11: reg = read_uleb(&p, end);
        { int64_t o = read_sleb(&p, end); if (reg == REG_RBP) { st->rbp_saved = 1; st->rbp_off = o * data_align; } }
        break;
      case 0x12: st->cfa_reg = (int)read_uleb(&p, end); st->cfa_off = read_sleb(&p, end) * data_align; break;
      case 0x13: st->cfa_off = read_sleb(&p, end) * data_align; break;
      case 0x14: case 0x15: reg = read_uleb(&p, end); (void)read_uleb(&p, end);
        if (reg == REG_RBP) return 0;
        break;
      case 0x16: reg = read_uleb(&p, end); off = read_uleb(&p, end); p += off;
        if (reg == REG_RBP) return 0;
        break;
      case 0x2e: (void)read_uleb(&p, end); break; /* GNU_args_size */
      case 0x2f: reg = read_uleb(&p, end); off = read_uleb(&p, end);
        if (reg == REG_RBP) { st->rbp_saved = 1; st->rbp_off = -(int64_t)off * data_align; }
        break;
      default: return 0;
    }
  }
  return 1;
}

/* The unwind rule at pc (a return address: the call is at pc-1), or 0 if unknown.
 * *fn, *fn_end: the bounds of the function (FDE) holding pc-1, or 0 if none was found. */
static int compute_rule(uintptr_t pc, cfa_state *out, uintptr_t *fn, uintptr_t *fn_end) {
  *fn = *fn_end = 0;
  const module_range *m = module_of(pc);
  if (m == NULL) {
    hl_unwind_refresh_modules();
    if ((m = module_of(pc)) == NULL) return 0;
  }
  uintptr_t at = pc - 1;
  const uint8_t *fde = find_fde(m, at);
  if (fde == NULL) return 0;
  uint32_t len;
  memcpy(&len, fde, 4);
  if (len == 0 || len == 0xffffffffu) return 0;
  const uint8_t *fde_end = fde + 4 + len, *p = fde + 4;
  int32_t cie_delta;
  memcpy(&cie_delta, p, 4);
  const uint8_t *cie = p - cie_delta;
  p += 4;

  /* the CIE */
  uint32_t cie_len;
  memcpy(&cie_len, cie, 4);
  if (cie_len == 0 || cie_len == 0xffffffffu) return 0;
  const uint8_t *cie_end = cie + 4 + cie_len, *c = cie + 8;
  uint8_t version = *c++;
  const char *aug = (const char *)c;
  c += strlen(aug) + 1;
  uint64_t code_align = read_uleb(&c, cie_end);
  int64_t data_align = read_sleb(&c, cie_end);
  if (version == 1) c++;
  else (void)read_uleb(&c, cie_end);
  uint8_t fde_enc = 0x00;
  const uint8_t *cie_insns = c;
  if (aug[0] == 'z') {
    uint64_t alen = read_uleb(&c, cie_end);
    const uint8_t *a = c;
    cie_insns = c + alen;
    for (const char *s = aug + 1; *s; s++) {
      if (*s == 'R') fde_enc = *a++;
      else if (*s == 'L') a++;
      else if (*s == 'P') {
        uint8_t penc = *a++;
        uintptr_t ignored;
        if (!read_encoded(&a, cie_insns, penc & 0x7f, 0, &ignored)) return 0;
      } else if (*s == 'S') return 0; /* signal frame */
      else return 0;
    }
  } else if (aug[0] != '\0') {
    return 0;
  }

  uintptr_t pc_begin, pc_range;
  if (!read_encoded(&p, fde_end, fde_enc, 0, &pc_begin)) return 0;
  if (!read_encoded(&p, fde_end, fde_enc & 0x0f, 0, &pc_range)) return 0;
  if (at < pc_begin || at >= pc_begin + pc_range) return 0;
  *fn = pc_begin;
  *fn_end = pc_begin + pc_range;
  if (aug[0] == 'z') {
    uint64_t alen = read_uleb(&p, fde_end);
    p += alen;
  }

  cfa_state st = {.cfa_reg = -1}, initial;
  if (!run_cfa(cie_insns, cie_end, code_align, data_align, 0, UINTPTR_MAX, &st, &st)) return 0;
  initial = st;
  if (!run_cfa(p, fde_end, code_align, data_align, pc_begin, at, &st, &initial)) return 0;
  if (st.cfa_reg != REG_RSP && st.cfa_reg != REG_RBP) return 0;
  *out = st;
  return 1;
}

/* ---- the rule cache: pc -> rule, lock-free, filled once per pc ---- */

#define RULE_SLOTS 8192u
#define RULE_FORGOTTEN ((uintptr_t)1) /* a pc of unloaded code: probes go on past it, fills reuse it */
typedef struct cached_rule {
  _Atomic(uintptr_t) pc;       /* 0 empty; RULE_FORGOTTEN */
  hl_step_rule step;           /* step.cfa_reg < 0: no rule (a walk stops here) */
  uintptr_t fn;                 /* start of pc's function (its FDE), 0 unknown */
  uintptr_t fn_end;             /* and its end (hl_unwind_function_bounds) */
  uint8_t skip;                /* pc is in a module the walk passes over */
  uint8_t stable;              /* in the table for good (not the overflow answer) */
} cached_rule;
static cached_rule rules[RULE_SLOTS];
static int (*skip_module)(uintptr_t pc);
static int collapse_functions; /* walks keep one frame per function (recursion modulo paths) */
/* the answer when the table is crowded, computed per call: one per thread, since another
 * thread's half-written rule could step a walk off its stack */
static __thread cached_rule overflow_rule __attribute__((tls_model("initial-exec")));

void hl_unwind_set_skip(int (*is_skip)(uintptr_t pc)) { skip_module = is_skip; }
void hl_unwind_set_collapse_functions(int on) { collapse_functions = on; }

static HL_NOINLINE const cached_rule *rule_fill(uintptr_t pc, uint32_t i) {
  cfa_state st;
  uintptr_t fn, fn_end;
  int ok = compute_rule(pc, &st, &fn, &fn_end);
  hl_step_rule step = {.cfa_off = ok ? (int32_t)st.cfa_off : 0,
                       .rbp_off = ok ? (int32_t)st.rbp_off : 0,
                       .cfa_reg = (int8_t)(ok ? st.cfa_reg : -1),
                       .rbp_saved = (int8_t)(ok && st.rbp_saved)};
  uint8_t skip = (uint8_t)(skip_module && skip_module(pc));
  while (atomic_flag_test_and_set_explicit(&fill_lock, memory_order_acquire)) {
  }
  const cached_rule *out = NULL;
  for (unsigned probe = 0; probe < 16; probe++, i = (i + 1) & (RULE_SLOTS - 1)) {
    uintptr_t k = atomic_load_explicit(&rules[i].pc, memory_order_relaxed);
    if (k == pc) { out = &rules[i]; break; } /* another thread filled it meanwhile */
    if (k != 0 && k != RULE_FORGOTTEN) continue;
    rules[i].step = step;
    rules[i].fn = fn;
    rules[i].fn_end = fn_end;
    rules[i].skip = skip;
    rules[i].stable = 1;
    atomic_store_explicit(&rules[i].pc, pc, memory_order_release); /* publish last */
    out = &rules[i];
    break;
  }
  atomic_flag_clear_explicit(&fill_lock, memory_order_release);
  if (out) return out;
  overflow_rule.step = step; /* crowded: rare, and a racy answer only changes placement */
  overflow_rule.fn = fn;
  overflow_rule.fn_end = fn_end;
  overflow_rule.skip = skip;
  overflow_rule.stable = 0;
  return &overflow_rule;
}

static HL_NOINLINE const cached_rule *rule_probe(uintptr_t pc, uint32_t i) {
  for (unsigned probe = 1; probe < 16; probe++) {
    const cached_rule *r = &rules[(i + probe) & (RULE_SLOTS - 1)];
    uintptr_t k = atomic_load_explicit(&r->pc, memory_order_acquire);
    if (k == pc) return r;
    if (k == 0) break;
  }
  return rule_fill(pc, i);
}

static inline const cached_rule *rule_of(uintptr_t pc) {
  uint32_t i = (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 51) & (RULE_SLOTS - 1);
  const cached_rule *r = &rules[i];
  if (HL_LIKELY(atomic_load_explicit(&r->pc, memory_order_acquire) == pc)) return r;
  return rule_probe(pc, i);
}

void hl_unwind_rule(uintptr_t pc, hl_step_rule *out) { *out = rule_of(pc)->step; }

/* Forgets the rules of pcs in [lo, hi): code there was unloaded, and other code may be
 * loaded at the same addresses, whose frames the old rules would step off the stack. A
 * forgotten slot is reused by a later fill: no walk can still be reading it, as no thread
 * runs code of a library that was unloaded. */
void hl_unwind_forget(uintptr_t lo, uintptr_t hi) {
  while (atomic_flag_test_and_set_explicit(&fill_lock, memory_order_acquire)) {
  }
  for (uint32_t i = 0; i < RULE_SLOTS; i++) {
    uintptr_t k = atomic_load_explicit(&rules[i].pc, memory_order_relaxed);
    if (k > RULE_FORGOTTEN && k - lo < hi - lo) atomic_store_explicit(&rules[i].pc, RULE_FORGOTTEN, memory_order_release);
  }
  atomic_flag_clear_explicit(&fill_lock, memory_order_release);
}

/* The code range of the function (its FDE) holding the call that returns to pc: the DPA
 * policy's wrapper analysis decodes it (dpa_wrapper.c). From pc's cached rule, which the
 * chain has just asked for: computing the FDE again cost each new return address about
 * 1,700 instructions (gawk: 86 of them). */
int hl_unwind_function_bounds(uintptr_t pc, uintptr_t *lo, uintptr_t *hi) {
  const cached_rule *r = rule_of(pc);
  *lo = r->fn;
  *hi = r->fn_end;
  return *lo != 0 && *hi > *lo && pc > *lo && pc <= *hi;
}

/* A walk outward from f, collecting frames but those in skipped modules and repeats
 * (recursion reduced to its innermost occurrence, as the profiler does; with the plan's
 * `recursion function` record, to the innermost frame of each function, as the planner
 * collapsed the profile: heaplayout/planning/recursion.py). With tr, every step is appended
 * to it; tr->replayable is cleared when the walk's course depended on more than the return
 * addresses it met (see hl_trace). */
void hl_walk_start(hl_walk *w, hl_frame f, uintptr_t *out, hl_trace *tr) {
  w->f = f;
  w->rule = NULL;
  w->out = out;
  w->tr = tr;
  w->n = w->steps = 0;
  w->looked = w->ended = 0;
}

static inline __attribute__((always_inline)) int walk_next(hl_walk *w) {
  if (w->ended) return 0;
  for (;;) {
    if (w->looked) { /* step from the frame looked at last */
      const cached_rule *r = w->rule;
      hl_frame next = w->f;
      if (!hl_unwind_step_by(&next, &r->step)) {
        /* "no rule here" depends on the pc alone; a failed stack check does not */
        if (w->tr && r->step.cfa_reg >= 0) w->tr->replayable = 0;
        w->ended = 1;
        return 0;
      }
      if (w->tr) {
        if (w->tr->nsteps == HL_TRACE_STEPS || !r->stable) w->tr->replayable = 0;
        else w->tr->step[w->tr->nsteps++] = (hl_trace_step){r->step, next.pc};
      }
      w->f = next;
      if (++w->steps == HL_WALK_MAX_STEPS) {
        if (w->tr) w->tr->replayable = 0;
        w->ended = 1;
        return 0;
      }
    }
    const cached_rule *r = rule_of(w->f.pc);
    w->rule = r;
    w->looked = 1;
    if (r->skip) continue;
    unsigned i = 0;
    if (collapse_functions && r->fn != 0)
      while (i < w->n && w->fns[i] != r->fn) i++;
    else
      while (i < w->n && w->out[i] != w->f.pc) i++;
    if (i < w->n) continue;
    if (w->n == HL_WALK_MAX_FRAMES) { /* no room: a caller asked for more than a walk holds */
      w->ended = 1;
      return 0;
    }
    w->fns[w->n] = r->fn;
    w->out[w->n++] = w->f.pc;
    return 1;
  }
}

int hl_walk_next(hl_walk *w) { return walk_next(w); }

/* Collect up to `want` frames outward from *f (f->pc first), as hl_walk_next does one at a
 * time. When `want` frames were found, *f is the frame of the last of them. */
unsigned hl_unwind_collect(hl_frame *f, uintptr_t *out, unsigned want, hl_trace *tr) {
  hl_walk w;
  hl_walk_start(&w, *f, out, tr);
  while (w.n < want && walk_next(&w)) {
  }
  *f = w.f;
  return w.n;
}
