/* Is the function around a return address an allocation wrapper? (DPA 3.1)
 *
 * The return address follows a call that returned the new object's pointer in rax. We
 * follow that pointer through the function's machine code along every path from the
 * return address (both ways at each conditional jump) and answer "wrapper" when
 *   - every return hands the pointer back in rax (or NULL: the failure path), or a tail
 *     call passes it on as the first argument,
 *   - the function neither reads nor writes the object (DPA: "does not process the
 *     allocated object"), and
 *   - it stores the pointer nowhere but its own stack frame and global variables
 *     (bookkeeping, as a tracking wrapper does); a store into other memory links the
 *     object with others, and such a function is a constructor, not a wrapper.
 * A call that gets the pointer as its first argument is taken to return it (memset,
 * memcpy and strcpy do; GCC then uses their result instead of keeping the pointer:
 * safe_calloc, strdup). The state per path: which registers hold the pointer, hold a
 * known global address or zero, and which stack slots hold it (by rsp offset from the
 * return address, or by rbp offset). Paths leave the function's .eh_frame bounds only to
 * .cold parts or noreturn calls' successors, and are not followed there.
 *
 * The verdict is computed once per return address and cached; a wrong verdict only
 * changes how long a chain is, never the program. */
#include <string.h>

#include "dpa.h"

enum { RAX = 0, RCX, RDX, RBX, RSP, RBP, RSI, RDI };
#define BIT(r) ((uint16_t)(1u << (r)))
#define CALLER_SAVED (BIT(RAX) | BIT(RCX) | BIT(RDX) | BIT(RSI) | BIT(RDI) | BIT(8) | BIT(9) | BIT(10) | BIT(11))

#define MAX_SLOTS 8
#define MAX_PENDING 64
#define VISITED_SLOTS 4096 /* above HL_DPA_DECODE_BUDGET: never full before the budget ends */

typedef struct slot {
  int8_t kind; /* 0 empty, 1 rsp-relative (offset from rsp at the return address), 2 rbp-relative */
  int32_t off;
} slot;

typedef struct flow_state {
  uintptr_t pc;
  uint16_t ptr;     /* registers holding the pointer */
  uint16_t derived; /* registers pointing into the object (ptr + something) */
  uint16_t zero;    /* registers known to be 0 */
  uint16_t global;  /* registers holding a global address (rip-relative lea/load) */
  uint8_t sp_known;
  int32_t sp;       /* rsp - rsp at the return address */
  slot slots[MAX_SLOTS];
} flow_state;

typedef struct analysis {
  uintptr_t lo, hi, ra;
  flow_state pending[MAX_PENDING];
  unsigned npending;
  uint64_t visited[VISITED_SLOTS]; /* all 0 between analyses: the used slots are cleared after */
  uint16_t used[HL_DPA_DECODE_BUDGET];
  unsigned nused;
  unsigned budget;
  int returned_ptr, returned_other, processes, links, undecodable;
} analysis;
_Static_assert(VISITED_SLOTS > HL_DPA_DECODE_BUDGET, "the visited set outlasts the budget");

static uint64_t state_hash(const flow_state *s) {
  uint64_t h = s->pc * 0x9E3779B97F4A7C15ull;
  h ^= ((uint64_t)s->ptr << 32 | (uint64_t)s->derived << 16 | s->zero) * 0xC2B2AE3D27D4EB4Full;
  h ^= ((uint64_t)s->global << 40) ^ ((uint64_t)(uint32_t)s->sp << 8) ^ s->sp_known;
  for (int i = 0; i < MAX_SLOTS; i++)
    if (s->slots[i].kind) h ^= ((uint64_t)(uint32_t)s->slots[i].off * 0x9E3779B1u + (uint64_t)s->slots[i].kind) << (i * 3);
  return h | 1;
}

/* 1 when this (pc, state) was seen before; else remembers it */
static int seen(analysis *a, const flow_state *s) {
  uint64_t h = state_hash(s);
  unsigned i = (unsigned)(h >> 20) & (VISITED_SLOTS - 1);
  for (unsigned probe = 0; probe < VISITED_SLOTS; probe++, i = (i + 1) & (VISITED_SLOTS - 1)) {
    if (a->visited[i] == h) return 1;
    if (a->visited[i] == 0) {
      a->visited[i] = h;
      if (a->nused < HL_DPA_DECODE_BUDGET) a->used[a->nused++] = (uint16_t)i;
      return 0;
    }
  }
  a->undecodable = 1; /* full: the paths were not all followed */
  return 1;
}

static void push_path(analysis *a, const flow_state *s) {
  if (a->npending == MAX_PENDING) {
    a->undecodable = 1;
    return;
  }
  a->pending[a->npending++] = *s;
}

static int slot_find(const flow_state *s, int kind, int32_t off) {
  for (int i = 0; i < MAX_SLOTS; i++)
    if (s->slots[i].kind == kind && s->slots[i].off == off) return i;
  return -1;
}

static void slot_set(flow_state *s, int kind, int32_t off, int holds) {
  int i = slot_find(s, kind, off);
  if (!holds) {
    if (i >= 0) s->slots[i].kind = 0;
    return;
  }
  if (i >= 0) return;
  for (i = 0; i < MAX_SLOTS; i++)
    if (s->slots[i].kind == 0) {
      s->slots[i] = (slot){(int8_t)kind, off};
      return;
    }
  /* no room: the pointer is lost from this slot (conservative) */
}

static void kill_regs(flow_state *s, uint16_t regs) {
  s->ptr &= (uint16_t)~regs;
  s->derived &= (uint16_t)~regs;
  s->zero &= (uint16_t)~regs;
  s->global &= (uint16_t)~regs;
}

/* Where a memory operand points: 1 into the object, 2 the stack frame (*kind, *off set),
 * 3 a global, 0 other memory. */
static int mem_target(const flow_state *s, const dpa_insn *in, int *kind, int32_t *off) {
  uint16_t obj = s->ptr | s->derived;
  if ((in->base >= 0 && (obj & BIT(in->base))) || (in->index >= 0 && (obj & BIT(in->index)))) return 1;
  if (in->base == DPA_REG_RIP || (in->base == DPA_REG_NONE && in->index == DPA_REG_NONE)) return 3;
  if (in->base >= 0 && (s->global & BIT(in->base))) return 3;
  if (in->base == RSP && in->index == DPA_REG_NONE) {
    *kind = s->sp_known ? 1 : 0;
    *off = s->sp + in->disp;
    return 2;
  }
  if (in->base == RBP && in->index == DPA_REG_NONE) {
    *kind = 2;
    *off = in->disp;
    return 2;
  }
  if (in->base == RSP || in->base == RBP) { /* an indexed stack array */
    *kind = 0;
    return 2;
  }
  return 0;
}

/* A path ends at a return or a tail call: what does the caller get? */
static void path_returns(analysis *a, const flow_state *s, int tail_call) {
  int gives_ptr = tail_call ? (s->ptr & BIT(RDI)) != 0 : (s->ptr & BIT(RAX)) != 0;
  if (gives_ptr) a->returned_ptr = 1;
  else if (!tail_call && (s->zero & BIT(RAX))) { /* return NULL: a failure path */
  } else a->returned_other = 1;
}

static int in_function(const analysis *a, uintptr_t pc) { return pc >= a->lo && pc < a->hi; }

static int holds_pointer(const flow_state *s) {
  if (s->ptr | s->derived) return 1;
  for (int i = 0; i < MAX_SLOTS; i++)
    if (s->slots[i].kind) return 1;
  return 0;
}

/* Follows one path from s until it ends; branches go on the pending list. */
static void follow(analysis *a, flow_state s) {
  int null_test = 0; /* the previous instruction compared the pointer with 0 */
  for (;;) {
    if (!in_function(a, s.pc)) return; /* past a noreturn call, or into a .cold part */
    /* nothing holds the pointer any more: this path cannot give it back (it returns
     * something else, or never returns); no need to read on */
    if (!holds_pointer(&s)) {
      a->returned_other = 1;
      return;
    }
    if (a->budget == 0) {
      a->undecodable = 1;
      return;
    }
    a->budget--;
    if (seen(a, &s)) return;
    dpa_insn in;
    if (!hl_dpa_decode((const uint8_t *)s.pc, (const uint8_t *)a->hi, &in)) {
      a->undecodable = 1;
      return;
    }
    uintptr_t next = s.pc + in.len;
    int kind = 0;
    int32_t off = 0;
    int where = in.has_mem ? mem_target(&s, &in, &kind, &off) : -1;
    /* any memory access through the pointer but lea processes the object */
    if (where == 1 && in.kind != DPA_I_LEA && in.kind != DPA_I_NOP) {
      a->processes = 1;
      return;
    }
    if (in.string_op && ((s.ptr | s.derived) & (BIT(RDI) | BIT(RSI)))) {
      a->processes = 1;
      return;
    }
    int tested = null_test;
    null_test = 0;
    if (in.test_zero)
      null_test = in.rm >= 0 ? (s.ptr & BIT(in.rm)) != 0 : where == 2 && kind && slot_find(&s, kind, off) >= 0;
    switch (in.kind) {
      case DPA_I_BAD:
        a->undecodable = 1;
        return;
      case DPA_I_NOP:
        break;
      case DPA_I_MOV_STORE: {
        int holds = (s.ptr & BIT(in.reg)) != 0;
        if (in.rm >= 0) { /* register to register */
          int derived = (s.derived & BIT(in.reg)) != 0, zero = (s.zero & BIT(in.reg)) != 0,
              global = (s.global & BIT(in.reg)) != 0;
          kill_regs(&s, BIT(in.rm));
          if (holds) s.ptr |= BIT(in.rm);
          if (derived) s.derived |= BIT(in.rm);
          if (zero) s.zero |= BIT(in.rm);
          if (global) s.global |= BIT(in.rm);
          if (in.rm == RSP) s.sp_known = 0;
        } else if (where == 2) {
          if (kind) slot_set(&s, kind, off, holds);
          else if (holds) { a->links = 1; return; } /* an indexed stack array: not followed */
        } else if (holds || (s.derived & BIT(in.reg))) {
          if (where == 0) { /* into other memory: linked with other objects */
            a->links = 1;
            return;
          }
        }
        break;
      }
      case DPA_I_MOV_LOAD: {
        int holds = 0;
        int global = where == 3; /* a GOT entry or a global's value: treated as a global address */
        if (in.rm >= 0) {
          holds = (s.ptr & BIT(in.rm)) != 0;
          int derived = (s.derived & BIT(in.rm)) != 0, zero = (s.zero & BIT(in.rm)) != 0;
          global = (s.global & BIT(in.rm)) != 0;
          kill_regs(&s, BIT(in.reg));
          if (derived) s.derived |= BIT(in.reg);
          if (zero) s.zero |= BIT(in.reg);
        } else {
          if (where == 2 && kind) holds = slot_find(&s, kind, off) >= 0;
          kill_regs(&s, BIT(in.reg));
        }
        if (holds) s.ptr |= BIT(in.reg);
        if (global) s.global |= BIT(in.reg);
        if (in.reg == RSP) s.sp_known = 0;
        if (in.reg == RBP) for (int i = 0; i < MAX_SLOTS; i++) if (s.slots[i].kind == 2) s.slots[i].kind = 0;
        break;
      }
      case DPA_I_MOV_IMM:
        kill_regs(&s, BIT(in.reg));
        if (in.imm == 0) s.zero |= BIT(in.reg);
        if (in.reg == RSP) s.sp_known = 0;
        break;
      case DPA_I_LEA: {
        int from_obj = (in.base >= 0 && ((s.ptr | s.derived) & BIT(in.base))) ||
                       (in.index >= 0 && ((s.ptr | s.derived) & BIT(in.index)));
        int exact = in.base >= 0 && (s.ptr & BIT(in.base)) && in.index == DPA_REG_NONE && in.disp == 0;
        int global = in.base == DPA_REG_RIP;
        int sp_rel = in.base == RSP && in.index == DPA_REG_NONE && s.sp_known;
        kill_regs(&s, BIT(in.reg));
        if (exact) s.ptr |= BIT(in.reg);
        else if (from_obj) s.derived |= BIT(in.reg);
        if (global) s.global |= BIT(in.reg);
        if (in.reg == RSP) {
          if (sp_rel) s.sp += in.disp;
          else s.sp_known = 0;
        }
        break;
      }
      case DPA_I_ZERO:
        kill_regs(&s, BIT(in.reg));
        s.zero |= BIT(in.reg);
        break;
      case DPA_I_PUSH:
        if (s.sp_known) {
          s.sp -= 8;
          slot_set(&s, 1, s.sp, in.reg >= 0 && (s.ptr & BIT(in.reg)));
        }
        break;
      case DPA_I_POP: {
        int holds = 0;
        if (s.sp_known) {
          holds = slot_find(&s, 1, s.sp) >= 0;
          slot_set(&s, 1, s.sp, 0);
          s.sp += 8;
        }
        if (in.reg >= 0) {
          kill_regs(&s, BIT(in.reg));
          if (holds) s.ptr |= BIT(in.reg);
          if (in.reg == RSP) s.sp_known = 0;
          if (in.reg == RBP) for (int i = 0; i < MAX_SLOTS; i++) if (s.slots[i].kind == 2) s.slots[i].kind = 0;
        }
        break;
      }
      case DPA_I_ADD_RSP:
        if (s.sp_known) s.sp += (int32_t)in.imm;
        break;
      case DPA_I_LEAVE: /* mov rsp, rbp; pop rbp: the frame is gone */
        s.sp_known = 0;
        for (int i = 0; i < MAX_SLOTS; i++) s.slots[i].kind = 0;
        kill_regs(&s, BIT(RBP));
        break;
      case DPA_I_CALL:
      case DPA_I_CALL_IND: {
        int arg = (s.ptr & BIT(RDI)) != 0;
        kill_regs(&s, CALLER_SAVED);
        /* the allocation call itself again (a retry loop), or a call given the pointer as
         * its first argument (memset, memcpy: they return it) */
        if ((in.kind == DPA_I_CALL && next == a->ra) || arg) s.ptr |= BIT(RAX);
        break;
      }
      case DPA_I_JCC:
        /* the failure branch of `if (p == NULL)`: no object there, what it returns (or
         * that it never returns) says nothing about the wrapper */
        if (tested && in.cc == 4) break;            /* je: taken when NULL, go on */
        if (tested && in.cc == 5) {                 /* jne: fall-through is NULL */
          s.pc = in.target;
          if (!in_function(a, s.pc)) return;
          continue;
        }
        if (in_function(a, in.target)) {
          flow_state b = s;
          b.pc = in.target;
          push_path(a, &b);
        }
        break;
      case DPA_I_JMP:
        if (!in_function(a, in.target)) { /* a tail call */
          path_returns(a, &s, 1);
          return;
        }
        s.pc = in.target;
        continue;
      case DPA_I_JMP_IND: /* a jump table or an indirect tail call: not followed */
        a->undecodable = 1;
        return;
      case DPA_I_RET:
        path_returns(a, &s, 0);
        return;
      case DPA_I_TRAP:
        return;
      default: { /* DPA_I_OTHER */
        uint16_t w = in.writes;
        kill_regs(&s, w);
        if (w & BIT(RSP)) s.sp_known = 0;
        if (w & BIT(RBP)) for (int i = 0; i < MAX_SLOTS; i++) if (s.slots[i].kind == 2) s.slots[i].kind = 0;
        if (in.mem_write && where == 2 && kind) slot_set(&s, kind, off, 0);
        break;
      }
    }
    s.pc = next;
  }
}

int hl_dpa_analyze(uintptr_t ra, uintptr_t lo, uintptr_t hi) {
  static analysis shared; /* the caller holds the verdict lock: one analysis at a time */
  analysis *a = &shared;
  a->npending = 0;
  a->returned_ptr = a->returned_other = a->processes = a->links = a->undecodable = 0;
  a->lo = lo;
  a->hi = hi;
  a->ra = ra;
  a->budget = HL_DPA_DECODE_BUDGET;
  flow_state s;
  memset(&s, 0, sizeof s);
  s.pc = ra;
  s.ptr = BIT(RAX);
  s.sp_known = 1;
  push_path(a, &s);
  /* any of these decides the verdict: the other paths need not be read */
  while (a->npending > 0 && !a->undecodable && !a->processes && !a->links && !a->returned_other)
    follow(a, a->pending[--a->npending]);
  for (unsigned i = 0; i < a->nused; i++) a->visited[a->used[i]] = 0;
  a->nused = 0;
  if (a->undecodable) return DPA_V_UNDECODABLE;
  if (a->processes) return DPA_V_PROCESSES;
  if (a->links) return DPA_V_LINKS;
  if (a->returned_other || !a->returned_ptr) return DPA_V_NOT_RETURNED;
  return DPA_V_WRAPPER;
}

const char *hl_dpa_verdict_name(int v) {
  static const char *const names[DPA_V_COUNT] = {"unknown", "wrapper", "not-returned", "processes",
                                                "links", "undecodable", "no-function"};
  return v >= 0 && v < DPA_V_COUNT ? names[v] : "unknown";
}

/* ---- the verdict cache: return address -> verdict, lock-free reads ---- */

#define VERDICT_SLOTS (1u << HL_DPA_VERDICT_BITS)
#define VERDICT_FORGOTTEN ((uintptr_t)1) /* unloaded code's (hl_dpa_verdicts_forget) */
typedef struct verdict_entry {
  _Atomic(uintptr_t) ra; /* 0 empty; published after verdict; VERDICT_FORGOTTEN */
  uint8_t verdict;
} verdict_entry;
static verdict_entry verdicts[VERDICT_SLOTS];
static atomic_flag verdict_lock = ATOMIC_FLAG_INIT;

static HL_NOINLINE int verdict_fill(uintptr_t ra, uint32_t i) {
  while (atomic_flag_test_and_set_explicit(&verdict_lock, memory_order_acquire)) {
  }
  int v = DPA_V_UNKNOWN;
  uint32_t j = i;
  for (unsigned probe = 0; probe < 64; probe++, j = (j + 1) & (VERDICT_SLOTS - 1)) {
    uintptr_t k = atomic_load_explicit(&verdicts[j].ra, memory_order_relaxed);
    if (k == ra) { v = verdicts[j].verdict; break; }
    if (k != 0 && k != VERDICT_FORGOTTEN) continue;
    uintptr_t lo, hi;
    v = hl_unwind_function_bounds(ra, &lo, &hi) ? hl_dpa_analyze(ra, lo, hi) : DPA_V_NO_FUNCTION;
    verdicts[j].verdict = (uint8_t)v;
    atomic_store_explicit(&verdicts[j].ra, ra, memory_order_release);
    break;
  }
  if (v == DPA_V_UNKNOWN) { /* the table is crowded: analysed, not cached */
    uintptr_t lo, hi;
    v = hl_unwind_function_bounds(ra, &lo, &hi) ? hl_dpa_analyze(ra, lo, hi) : DPA_V_NO_FUNCTION;
  }
  atomic_flag_clear_explicit(&verdict_lock, memory_order_release);
  return v;
}

void hl_dpa_verdicts_fork(int take) {
  if (take)
    while (atomic_flag_test_and_set_explicit(&verdict_lock, memory_order_acquire)) {
    }
  else
    atomic_flag_clear_explicit(&verdict_lock, memory_order_release);
}

int hl_dpa_verdict(uintptr_t ra) {
  uint32_t i = (uint32_t)((ra * 0x9E3779B97F4A7C15ull) >> (64 - HL_DPA_VERDICT_BITS));
  for (unsigned probe = 0; probe < 64; probe++) {
    const verdict_entry *e = &verdicts[(i + probe) & (VERDICT_SLOTS - 1)];
    uintptr_t k = atomic_load_explicit(&e->ra, memory_order_acquire);
    if (k == ra) return e->verdict;
    if (k == 0) break;
  }
  return verdict_fill(ra, i);
}

/* Unloaded code's verdicts: another library loaded at the same addresses is analysed anew.
 * Probes go on past a forgotten slot and a fill reuses it: no thread still asks about a
 * return address into unloaded code. */
void hl_dpa_verdicts_forget(uintptr_t lo, uintptr_t hi) {
  while (atomic_flag_test_and_set_explicit(&verdict_lock, memory_order_acquire)) {
  }
  for (uint32_t i = 0; i < VERDICT_SLOTS; i++) {
    uintptr_t k = atomic_load_explicit(&verdicts[i].ra, memory_order_relaxed);
    if (k > VERDICT_FORGOTTEN && k - lo < hi - lo) atomic_store_explicit(&verdicts[i].ra, VERDICT_FORGOTTEN, memory_order_release);
  }
  atomic_flag_clear_explicit(&verdict_lock, memory_order_release);
}

void hl_dpa_verdicts_each(void (*fn)(uintptr_t ra, int verdict, void *arg), void *arg) {
  for (uint32_t i = 0; i < VERDICT_SLOTS; i++) {
    uintptr_t k = atomic_load_explicit(&verdicts[i].ra, memory_order_acquire);
    if (k > VERDICT_FORGOTTEN) fn(k, verdicts[i].verdict, arg);
  }
}
