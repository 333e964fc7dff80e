/* DPA, the `dpa` policy (docs/dpa.md): online pools with no profile.
 *
 *   dpa_decode.c   a small x86-64 decoder: length and operands of one instruction
 *   dpa_wrapper.c  is the function around a return address an allocation wrapper? (data
 *                  flow of the returned pointer), the verdict cached per return address
 *   dpa_chain.c    adaptive partial call chains (APCC): one frame more per wrapper level,
 *                  and the compound table from APCC to object group
 *   dpa_shape.c    the storage shape graph learned online and the type-I/type-II merging
 *   dpa_policy.c   object groups, DPA's thresholds, pools, do-no-harm, the entry hooks
 *   dpa_stats.c    the statistics (chain lengths, verdicts, merges, groups returned)
 */
#ifndef HL_DPA_H
#define HL_DPA_H

#include "internal.h"

#pragma GCC visibility push(hidden)

/* ---- decoder (dpa_decode.c) ---- */
enum dpa_kind {
  DPA_I_BAD = 0,   /* not decoded: the analysis gives up */
  DPA_I_OTHER,     /* writes what dpa_insn.writes says */
  DPA_I_NOP,
  DPA_I_MOV_STORE, /* mov r/m, reg */
  DPA_I_MOV_LOAD,  /* mov reg, r/m */
  DPA_I_MOV_IMM,   /* mov r/m or reg, imm */
  DPA_I_LEA,
  DPA_I_ZERO,      /* xor/sub reg, reg (same register) */
  DPA_I_PUSH,      /* push reg (reg -1: push imm or r/m) */
  DPA_I_POP,
  DPA_I_ADD_RSP,   /* add/sub rsp, imm: imm is the signed change */
  DPA_I_LEAVE,
  DPA_I_CALL,      /* direct call; target */
  DPA_I_CALL_IND,
  DPA_I_JMP,       /* direct jump; target */
  DPA_I_JMP_IND,
  DPA_I_JCC,       /* conditional jump; target */
  DPA_I_RET,
  DPA_I_TRAP,      /* ud2, hlt, int3: the path ends */
};

#define DPA_REG_NONE (-1)
#define DPA_REG_RIP (-2)

typedef struct dpa_insn {
  uint8_t len;
  uint8_t kind;     /* enum dpa_kind */
  uint8_t w64;      /* the operation is 64 bits wide (REX.W) */
  uint8_t has_mem;  /* a memory operand: base, index, disp */
  int8_t reg;       /* ModRM.reg as a general register, or the register of push/pop/mov-imm */
  int8_t rm;        /* ModRM.rm as a register (mod 3), else DPA_REG_NONE */
  int8_t base, index;
  int32_t disp;
  int64_t imm;
  uintptr_t target; /* direct branches */
  uint16_t writes;  /* general registers the instruction may write (bit per register) */
  uint8_t mem_write; /* the memory operand may be written */
  uint8_t string_op; /* movs/stos/...: accesses memory at rdi/rsi */
  uint8_t test_zero; /* test reg,reg or cmp $0,r/m (64-bit): compares the operand with 0 */
  int8_t cc;         /* a conditional jump's condition (4: equal/zero, 5: not equal) */
} dpa_insn;

/* Decodes the instruction at pc (at most end - pc bytes are read). 0: not decoded. */
int hl_dpa_decode(const uint8_t *pc, const uint8_t *end, dpa_insn *out);

/* ---- wrapper analysis (dpa_wrapper.c) ---- */
enum dpa_verdict {
  DPA_V_UNKNOWN = 0,
  DPA_V_WRAPPER,      /* the pointer goes back to the caller unchanged on every return */
  DPA_V_NOT_RETURNED, /* some return gives the caller something else */
  DPA_V_PROCESSES,    /* the function reads or writes the new object */
  DPA_V_LINKS,        /* the function stores the pointer into other (non-stack, non-global) memory */
  DPA_V_UNDECODABLE,  /* an instruction or control flow the analysis does not follow */
  DPA_V_NO_FUNCTION,  /* no .eh_frame entry: the function's bounds are unknown */
  DPA_V_COUNT
};
const char *hl_dpa_verdict_name(int v);
/* The verdict for the function containing the call that returns to ra; computed once per
 * return address, then cached (lock-free reads). */
int hl_dpa_verdict(uintptr_t ra);
/* The analysis itself on code [lo, hi) for a call returning to ra (tests, the cache). */
int hl_dpa_analyze(uintptr_t ra, uintptr_t lo, uintptr_t hi);
/* Calls fn for every cached verdict (statistics). */
void hl_dpa_verdicts_forget(uintptr_t lo, uintptr_t hi); /* code in [lo, hi) was unloaded */
void hl_dpa_verdicts_each(void (*fn)(uintptr_t ra, int verdict, void *arg), void *arg);

/* ---- chains (dpa_chain.c) ---- */
typedef struct dpa_chain {
  uint8_t len;                       /* 1..HL_DPA_MAX_CHAIN */
  uintptr_t pc[HL_DPA_MAX_CHAIN];    /* return addresses, innermost first */
  hl_step_rule rule[HL_DPA_MAX_CHAIN]; /* rule[k]: how to step from pc[k] (for the chain cache) */
} dpa_chain;
/* The APCC of an allocation whose entry point's frame pointer is fp. */
void hl_dpa_chain_of(void *const *fp, dpa_chain *c);
/* The group of a chain (made at its first sight, with the request size as its type);
 * 0 when the table is full. */
uint32_t hl_dpa_chain_group(const dpa_chain *c, size_t size);
/* Distinct chains seen, by length (index 1..HL_DPA_MAX_CHAIN). */
void hl_dpa_chain_lengths(uint64_t out[HL_DPA_MAX_CHAIN + 1]);

/* ---- groups (dpa_policy.c) ---- */
#define DPA_SIZE_MIXED 0xffffffffu
uint32_t hl_dpa_group_new(uint32_t size, uint8_t chain_len, uintptr_t site);
uint32_t hl_dpa_group_root(uint32_t g);
uint32_t hl_dpa_group_size(uint32_t g); /* the type: the request size, or DPA_SIZE_MIXED */
uint32_t hl_dpa_group_of_pool(uint16_t pool);
uint32_t hl_dpa_group_of_object(uintptr_t p); /* pooled or recently seen object's group; 0 none */
/* Merge the groups of a and b (roots found here): the caller holds hl_dpa_lock. */
void hl_dpa_group_merge(uint32_t a, uint32_t b, int type_two);
void hl_dpa_lock(void);
void hl_dpa_unlock(void);

/* ---- shape graph (dpa_shape.c) ---- */
/* Group g allocates again: read its previous object `prev` (size bytes) for words that
 * point into known groups' objects, record the edges and merge by DPA's rules. Caller
 * holds hl_dpa_lock. */
void hl_dpa_shape_learn(uint32_t g, uintptr_t prev, uint32_t size);
/* Records an edge (from, offset, to) and applies the type-I/type-II rules (tests too). */
void hl_dpa_shape_edge(uint32_t from, uint32_t offset, uint32_t to);
typedef struct dpa_shape_stats {
  uint64_t samples, edges, type1, type2;
} dpa_shape_stats;
void hl_dpa_shape_stats(dpa_shape_stats *out);
/* No more reads of the allocator underneath's objects (process_vm_readv) from now on: a
 * seccomp filter may forbid the call and kill the process (sandbox.c). Caller holds
 * hl_dpa_lock, or the process is starting. */
void hl_dpa_remote_reads_off(void);
/* At start under dpa: reads off when the process inherited a seccomp filter (sandbox.c). */
void hl_sandbox_check_inherited(void);
void hl_sandbox_resolve(void); /* libc's prctl and syscall, which sandbox.c wraps */

/* ---- policy hooks (dpa_policy.c) ---- */
/* the full malloc path under dpa (interpose.c, hl_malloc_from) */
void *hl_dpa_malloc(size_t size, void *const *fp);
/* the pool for the other entry points' full path (calloc, memalign): NULL forwards */
hl_tpool *hl_dpa_tpool(void *const *fp, size_t size);
/* a DPA pool of the calling thread takes another chunk (stats.c): the do-no-harm check */
void hl_dpa_pool_grew(uint16_t pool);
void hl_dpa_fork_prepare(void); /* takes the verdict, chain and group locks (in that order) */
void hl_dpa_verdicts_fork(int take);
void hl_dpa_chains_fork(int take);
void hl_dpa_fork_done(void);

typedef struct dpa_stats {
  uint64_t groups, pooled, merged, returned, slow_allocs;
  uint64_t by_len_objects[HL_DPA_MAX_CHAIN + 1]; /* slow-path allocations by chain length */
} dpa_stats;
void hl_dpa_stats(dpa_stats *out);
uint8_t hl_dpa_pool_chain_len(uint16_t pool);
/* the statistics' dpa part, as text lines or a JSON member (dpa_stats.c) */
void hl_dpa_stats_write(void (*emit)(void *ctx, const char *s), void *ctx, int json);

#pragma GCC visibility pop

#endif
