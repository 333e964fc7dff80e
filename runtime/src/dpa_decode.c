/* A small x86-64 decoder for the wrapper analysis (dpa_wrapper.c): the length of every
 * instruction compilers emit in ordinary code (legacy, 0F, 0F38, 0F3A, VEX and EVEX maps),
 * and for the general-purpose ones what the data flow of a pointer needs: moves, lea,
 * push/pop, stack adjustments, calls, jumps, returns, and which registers and memory an
 * instruction may write. Ours rather than libcapstone: the analysis needs a few dozen
 * opcodes' meaning, the runtime stays libc-only, and CI installs nothing more. Anything
 * not understood decodes as DPA_I_BAD and the analysis answers "not a wrapper", which only
 * keeps a chain shorter. */
#include <string.h>

#include "dpa.h"

enum { RAX = 0, RCX, RDX, RBX, RSP, RBP, RSI, RDI };
#define BIT(r) ((uint16_t)(1u << (r)))

/* 1-byte opcodes that take a ModRM byte */
static int has_modrm_1(uint8_t op) {
  if (op < 0x40) return (op & 7) < 4; /* ALU r/m forms; 0x0F, 0x26.. handled before */
  switch (op) {
    case 0x63: case 0x69: case 0x6B: case 0x80: case 0x81: case 0x83: case 0x84: case 0x85:
    case 0x86: case 0x87: case 0x88: case 0x89: case 0x8A: case 0x8B: case 0x8C: case 0x8D:
    case 0x8E: case 0x8F: case 0xC0: case 0xC1: case 0xC6: case 0xC7: case 0xD0: case 0xD1:
    case 0xD2: case 0xD3: case 0xD8: case 0xD9: case 0xDA: case 0xDB: case 0xDC: case 0xDD:
    case 0xDE: case 0xDF: case 0xF6: case 0xF7: case 0xFE: case 0xFF:
      return 1;
    default:
      return 0;
  }
}

/* 0F xx without ModRM */
static int no_modrm_0f(uint8_t op) {
  return op == 0x05 || op == 0x06 || op == 0x07 || op == 0x08 || op == 0x09 || op == 0x0B || op == 0x0E ||
         (op >= 0x30 && op <= 0x37) || op == 0x77 || (op >= 0x80 && op <= 0x8F) || op == 0xA0 || op == 0xA1 ||
         op == 0xA2 || op == 0xA8 || op == 0xA9 || op == 0xAA || (op >= 0xC8 && op <= 0xCF);
}

/* 0F xx (and VEX map 1) with an imm8 after the ModRM */
static int imm8_0f(uint8_t op) {
  return (op >= 0x70 && op <= 0x73) || op == 0xA4 || op == 0xAC || op == 0xBA || op == 0xC2 || op == 0xC4 ||
         op == 0xC5 || op == 0xC6;
}

/* ModRM, SIB and displacement at *p; fills the operand fields. 0 when out of bytes. */
static int decode_modrm(const uint8_t **pp, const uint8_t *end, uint8_t rex, dpa_insn *in, uint8_t *modrm_out) {
  const uint8_t *p = *pp;
  if (p >= end) return 0;
  uint8_t m = *p++;
  *modrm_out = m;
  unsigned mod = m >> 6, reg = (m >> 3) & 7, rm = m & 7;
  in->reg = (int8_t)(reg | ((rex & 4) << 1));
  if (mod == 3) {
    in->rm = (int8_t)(rm | ((rex & 1) << 3));
    *pp = p;
    return 1;
  }
  in->rm = DPA_REG_NONE;
  in->has_mem = 1;
  in->base = DPA_REG_NONE;
  in->index = DPA_REG_NONE;
  int disp_bytes = mod == 1 ? 1 : mod == 2 ? 4 : 0;
  if (rm == 4) { /* SIB */
    if (p >= end) return 0;
    uint8_t sib = *p++;
    unsigned idx = ((sib >> 3) & 7) | ((rex & 2) << 2), base = sib & 7;
    if (idx != RSP) in->index = (int8_t)idx;
    if (base == 5 && mod == 0) disp_bytes = 4;
    else in->base = (int8_t)(base | ((rex & 1) << 3));
  } else if (rm == 5 && mod == 0) {
    in->base = DPA_REG_RIP;
    disp_bytes = 4;
  } else {
    in->base = (int8_t)(rm | ((rex & 1) << 3));
  }
  if (end - p < disp_bytes) return 0;
  if (disp_bytes == 1) in->disp = (int8_t)*p;
  else if (disp_bytes == 4) { int32_t d; memcpy(&d, p, 4); in->disp = d; }
  p += disp_bytes;
  *pp = p;
  return 1;
}

static int read_imm(const uint8_t **pp, const uint8_t *end, int bytes, int64_t *out) {
  const uint8_t *p = *pp;
  if (end - p < bytes) return 0;
  switch (bytes) {
    case 0: *out = 0; break;
    case 1: *out = (int8_t)p[0]; break;
    case 2: { int16_t v; memcpy(&v, p, 2); *out = v; break; }
    case 4: { int32_t v; memcpy(&v, p, 4); *out = v; break; }
    case 8: { int64_t v; memcpy(&v, p, 8); *out = v; break; }
    default: return 0;
  }
  *pp = p + bytes;
  return 1;
}

/* The registers a ModRM instruction writes when its destination is the r/m operand:
 * none for memory (mem_write instead). */
static void writes_rm(dpa_insn *in) {
  if (in->rm >= 0) in->writes |= BIT(in->rm);
  else if (in->has_mem) in->mem_write = 1;
}

/* VEX/EVEX (and 0F38/0F3A) instructions: vector registers mostly; the few that write a
 * general register (movmsk, pextr, vmovd/q to r/m, BMI) are covered by writing reg and
 * rm when they are general registers. Over-approximating writes only loses the pointer. */
static void vector_effects(dpa_insn *in, uint8_t map, uint8_t op) {
  if (in->has_mem) {
    /* stores of vector registers: 0F 11, 13, 17, 29, 2B, 7E, 7F, D6, E7; 0F3A 14-17, 1D */
    if ((map == 1 && (op == 0x11 || op == 0x13 || op == 0x17 || op == 0x29 || op == 0x2B || op == 0x7E ||
                      op == 0x7F || op == 0xD6 || op == 0xE7 || op == 0xC3)) ||
        (map == 3 && ((op >= 0x14 && op <= 0x17) || op == 0x1D)))
      in->mem_write = 1;
  }
  if ((map == 1 && (op == 0x50 || op == 0xD7 || op == 0xC5 || op == 0x2C || op == 0x2D)) ||
      (map == 2 && op >= 0xF0) || (map == 1 && (op == 0xB8 || op == 0xBC || op == 0xBD)))
    in->writes |= BIT(in->reg);
  if (in->rm >= 0 && ((map == 1 && op == 0x7E) || (map == 3 && op >= 0x14 && op <= 0x17))) in->writes |= BIT(in->rm);
}

int hl_dpa_decode(const uint8_t *pc, const uint8_t *end, dpa_insn *in) {
  memset(in, 0, sizeof *in);
  in->reg = in->rm = in->base = in->index = DPA_REG_NONE;
  const uint8_t *p = pc;
  int opsize16 = 0, rep = 0;
  uint8_t rex = 0;
  /* legacy prefixes, then at most one REX directly before the opcode */
  for (int n = 0;; n++) {
    if (p >= end || n > 14) return 0;
    uint8_t b = *p;
    if (b == 0x66) opsize16 = 1;
    else if (b == 0xF2 || b == 0xF3) rep = b;
    else if (b == 0x67 || b == 0xF0 || b == 0x2E || b == 0x3E || b == 0x26 || b == 0x36 || b == 0x64 || b == 0x65) {
    } else break;
    p++;
  }
  if (p < end && (*p & 0xF0) == 0x40) rex = *p++;
  if (p >= end) return 0;
  in->w64 = (rex & 8) != 0;
  uint8_t op = *p++, modrm = 0;
  int imm_bytes = 0;
  int64_t imm = 0;
  int z = in->w64 ? 4 : opsize16 ? 2 : 4; /* an "iz" immediate */

  if (op == 0x0F) { /* two-byte and three-byte maps */
    if (p >= end) return 0;
    uint8_t op2 = *p++;
    if (op2 == 0x38 || op2 == 0x3A) {
      if (p >= end) return 0;
      uint8_t op3 = *p++;
      if (!decode_modrm(&p, end, rex, in, &modrm)) return 0;
      if (op2 == 0x3A && !read_imm(&p, end, 1, &imm)) return 0;
      in->kind = DPA_I_OTHER;
      vector_effects(in, op2 == 0x38 ? 2 : 3, op3);
      if (op2 == 0x38 && op3 >= 0xF0) in->writes |= BIT(in->reg); /* movbe, crc32, adcx/adox */
      if (op2 == 0x38 && op3 >= 0xF0 && op3 <= 0xF1 && in->has_mem && !(rep == 0xF2)) in->mem_write = op3 == 0xF1;
      in->len = (uint8_t)(p - pc);
      return in->len;
    }
    if (op2 >= 0x80 && op2 <= 0x8F) { /* jcc rel32 */
      if (!read_imm(&p, end, 4, &imm)) return 0;
      in->kind = DPA_I_JCC;
      in->cc = (int8_t)(op2 & 0xF);
      in->len = (uint8_t)(p - pc);
      in->target = (uintptr_t)pc + in->len + (uintptr_t)imm;
      return in->len;
    }
    if (op2 == 0x0B || op2 == 0xFF || op2 == 0xB9) { /* ud2, ud0, ud1 */
      if (op2 != 0x0B && !decode_modrm(&p, end, rex, in, &modrm)) return 0;
      in->kind = DPA_I_TRAP;
      in->len = (uint8_t)(p - pc);
      return in->len;
    }
    if (!no_modrm_0f(op2) && !decode_modrm(&p, end, rex, in, &modrm)) return 0;
    if (imm8_0f(op2) && !read_imm(&p, end, 1, &imm)) return 0;
    in->len = (uint8_t)(p - pc);
    in->kind = DPA_I_OTHER;
    unsigned sub = (modrm >> 3) & 7;
    if (op2 == 0x1F || op2 == 0x18 || op2 == 0x0D || (op2 == 0x1E && rep == 0xF3)) in->kind = DPA_I_NOP; /* nop, prefetch, endbr */
    else if ((op2 >= 0x40 && op2 <= 0x4F) || op2 == 0xAF || op2 == 0xB6 || op2 == 0xB7 || op2 == 0xBE ||
             op2 == 0xBF || op2 == 0xBC || op2 == 0xBD || op2 == 0xB8)
      in->writes |= BIT(in->reg); /* cmov, imul, movzx/movsx, bsf/bsr/tzcnt/lzcnt, popcnt */
    else if (op2 >= 0x90 && op2 <= 0x9F) writes_rm(in); /* setcc */
    else if (op2 == 0xA3) { /* bt: reads */
    } else if (op2 == 0xAB || op2 == 0xB3 || op2 == 0xBB || op2 == 0xA4 || op2 == 0xA5 || op2 == 0xAC || op2 == 0xAD)
      writes_rm(in); /* bts/btr/btc, shld/shrd */
    else if (op2 == 0xBA) { if (sub != 4) writes_rm(in); }
    else if (op2 == 0xB0 || op2 == 0xB1) { writes_rm(in); in->writes |= BIT(RAX); } /* cmpxchg */
    else if (op2 == 0xC0 || op2 == 0xC1) { writes_rm(in); in->writes |= BIT(in->reg); } /* xadd */
    else if (op2 == 0xC7) { writes_rm(in); in->writes |= BIT(RAX) | BIT(RDX); } /* cmpxchg8b/16b, rdrand */
    else if (op2 >= 0xC8 && op2 <= 0xCF) in->writes |= BIT((op2 & 7) | ((rex & 1) << 3)); /* bswap */
    else if (op2 == 0xA2) in->writes |= BIT(RAX) | BIT(RBX) | BIT(RCX) | BIT(RDX); /* cpuid */
    else if (op2 == 0x31 || op2 == 0x33 || op2 == 0x32) in->writes |= BIT(RAX) | BIT(RDX); /* rdtsc, rdpmc, rdmsr */
    else if (op2 == 0x05) in->writes |= BIT(RAX) | BIT(RCX) | BIT(11); /* syscall */
    else if (op2 == 0x01 || op2 == 0x00 || op2 == 0xAE) { if (in->has_mem) in->mem_write = 1; else in->writes = 0xffff; }
    else vector_effects(in, 1, op2);
    return in->len;
  }

  if (op == 0xC4 || op == 0xC5 || op == 0x62) { /* VEX, EVEX */
    uint8_t map = 1, vop;
    uint8_t vrex = 0;
    if (op == 0xC5) {
      if (p >= end) return 0;
      vrex = (uint8_t)((~*p & 0x80) ? 4 : 0);
      p++;
    } else if (op == 0xC4) {
      if (end - p < 2) return 0;
      vrex = (uint8_t)(((~p[0] >> 5) & 7) | ((p[1] & 0x80) ? 8 : 0));
      map = p[0] & 0x1F;
      p += 2;
    } else {
      if (end - p < 3) return 0;
      vrex = (uint8_t)(((~p[0] >> 5) & 7) | ((p[1] & 0x80) ? 8 : 0));
      map = p[0] & 0x07;
      p += 3;
    }
    if (p >= end) return 0;
    vop = *p++;
    in->w64 = (vrex & 8) != 0;
    if (!(map == 1 && vop == 0x77)) /* vzeroupper/vzeroall have no ModRM */
      if (!decode_modrm(&p, end, vrex, in, &modrm)) return 0;
    if ((map == 3 || (map == 1 && imm8_0f(vop))) && !read_imm(&p, end, 1, &imm)) return 0;
    in->kind = DPA_I_OTHER;
    vector_effects(in, map, vop);
    if (map == 2 && vop >= 0xF0) in->writes |= BIT(in->reg);
    in->len = (uint8_t)(p - pc);
    return in->len;
  }

  /* one-byte map */
  if (op == 0x06 || op == 0x07 || op == 0x0E || op == 0x16 || op == 0x17 || op == 0x1E || op == 0x1F || op == 0x27 ||
      op == 0x2F || op == 0x37 || op == 0x3F || op == 0x60 || op == 0x61 || op == 0x82 || op == 0x9A || op == 0xD4 ||
      op == 0xD5 || op == 0xD6 || op == 0xEA || op == 0xCE)
    return 0; /* invalid in 64-bit mode */
  if (has_modrm_1(op) && !decode_modrm(&p, end, rex, in, &modrm)) return 0;
  unsigned sub = (modrm >> 3) & 7;
  in->kind = DPA_I_OTHER;

  if (op < 0x40 && (op & 7) < 6) { /* ALU: add or adc and sbb sub xor cmp */
    unsigned alu = op >> 3, form = op & 7;
    if (form == 4) imm_bytes = 1;
    else if (form == 5) imm_bytes = z;
    if (form >= 4) {
      if (alu != 7) in->writes |= BIT(RAX);
    } else if (alu == 7) { /* cmp reads */
    } else if ((alu == 6 || alu == 5) && in->rm >= 0 && in->rm == in->reg && (form & 1)) {
      in->kind = DPA_I_ZERO; /* xor/sub reg, reg */
      in->writes |= BIT(in->reg);
    } else if (form & 2) {
      in->writes |= BIT(in->reg); /* op reg, r/m */
    } else {
      writes_rm(in); /* op r/m, reg */
    }
  } else if (op >= 0x50 && op <= 0x57) {
    in->kind = DPA_I_PUSH;
    in->reg = (int8_t)((op & 7) | ((rex & 1) << 3));
  } else if (op >= 0x58 && op <= 0x5F) {
    in->kind = DPA_I_POP;
    in->reg = (int8_t)((op & 7) | ((rex & 1) << 3));
    in->writes |= BIT(in->reg);
  } else if (op == 0x63) {
    in->writes |= BIT(in->reg); /* movsxd */
  } else if (op == 0x68 || op == 0x6A) {
    in->kind = DPA_I_PUSH;
    in->reg = DPA_REG_NONE;
    imm_bytes = op == 0x68 ? 4 : 1;
  } else if (op == 0x69 || op == 0x6B) {
    imm_bytes = op == 0x69 ? z : 1;
    in->writes |= BIT(in->reg);
  } else if (op >= 0x70 && op <= 0x7F) {
    in->kind = DPA_I_JCC;
    in->cc = (int8_t)(op & 0xF);
    imm_bytes = 1;
  } else if (op == 0x80 || op == 0x81 || op == 0x83) {
    imm_bytes = op == 0x81 ? z : 1;
    if (sub == 7 && in->w64 && op == 0x83 && p < end && *p == 0) in->test_zero = 1;
    if (sub != 7) {
      if (in->rm == RSP && in->w64 && (sub == 0 || sub == 5)) in->kind = DPA_I_ADD_RSP;
      else writes_rm(in);
    }
  } else if (op == 0x84 || op == 0x85) { /* test */
    if (op == 0x85 && in->w64 && in->rm >= 0 && in->rm == in->reg) in->test_zero = 1;
  } else if (op == 0x86 || op == 0x87) {
    writes_rm(in);
    in->writes |= BIT(in->reg);
  } else if (op == 0x88 || op == 0x89) {
    if (op == 0x89 && (in->w64)) in->kind = DPA_I_MOV_STORE;
    else writes_rm(in);
  } else if (op == 0x8A || op == 0x8B) {
    if (op == 0x8B && in->w64) in->kind = DPA_I_MOV_LOAD;
    else in->writes |= BIT(in->reg);
  } else if (op == 0x8C) {
    writes_rm(in);
  } else if (op == 0x8D) {
    in->kind = DPA_I_LEA;
    in->writes |= BIT(in->reg);
    if (!in->has_mem) return 0;
  } else if (op == 0x8E) {
  } else if (op == 0x8F) {
    if (sub != 0) return 0;
    in->kind = DPA_I_POP;
    if (in->rm >= 0) { in->reg = in->rm; in->writes |= BIT(in->rm); }
    else { in->reg = DPA_REG_NONE; in->mem_write = 1; }
  } else if (op == 0x90 && !(rex & 1)) {
    in->kind = rep == 0xF3 ? DPA_I_NOP : DPA_I_NOP; /* nop, pause */
  } else if (op >= 0x90 && op <= 0x97) {
    in->writes |= BIT(RAX) | BIT((op & 7) | ((rex & 1) << 3)); /* xchg */
  } else if (op == 0x98) {
    in->writes |= BIT(RAX);
  } else if (op == 0x99) {
    in->writes |= BIT(RDX);
  } else if (op == 0x9C || op == 0x9D) {
    in->kind = op == 0x9C ? DPA_I_PUSH : DPA_I_POP;
    in->reg = DPA_REG_NONE;
  } else if (op == 0x9E || op == 0x9F || op == 0x9B) {
    if (op == 0x9F) in->writes |= BIT(RAX);
  } else if (op >= 0xA0 && op <= 0xA3) {
    imm_bytes = 8; /* moffs */
    if (op <= 0xA1) in->writes |= BIT(RAX);
    else { in->has_mem = 1; in->mem_write = 1; in->base = DPA_REG_NONE; } /* an absolute address */
  } else if ((op >= 0xA4 && op <= 0xA7) || (op >= 0xAA && op <= 0xAF)) {
    in->string_op = 1;
    in->writes |= BIT(RDI) | BIT(RSI) | BIT(RCX) | BIT(RAX);
  } else if (op == 0xA8 || op == 0xA9) {
    imm_bytes = op == 0xA8 ? 1 : z;
  } else if (op >= 0xB0 && op <= 0xB7) {
    imm_bytes = 1;
    in->writes |= BIT((op & 7) | ((rex & 1) << 3));
  } else if (op >= 0xB8 && op <= 0xBF) {
    imm_bytes = in->w64 ? 8 : opsize16 ? 2 : 4;
    in->kind = DPA_I_MOV_IMM;
    in->reg = (int8_t)((op & 7) | ((rex & 1) << 3));
    in->writes |= BIT(in->reg);
  } else if (op == 0xC0 || op == 0xC1 || (op >= 0xD0 && op <= 0xD3)) {
    if (op <= 0xC1) imm_bytes = 1;
    writes_rm(in);
  } else if (op == 0xC2 || op == 0xC3) {
    in->kind = DPA_I_RET;
    if (op == 0xC2) imm_bytes = 2;
  } else if (op == 0xC6 || op == 0xC7) {
    imm_bytes = op == 0xC6 ? 1 : z;
    if (sub != 0) return 0;
    if (op == 0xC7 && in->rm >= 0) {
      in->kind = DPA_I_MOV_IMM;
      in->reg = in->rm;
    }
    writes_rm(in);
  } else if (op == 0xC8) {
    imm_bytes = 2;
    if (end - p < 3) return 0;
    p++; /* enter's second operand */
    return 0; /* enter: not followed */
  } else if (op == 0xC9) {
    in->kind = DPA_I_LEAVE;
    in->writes |= BIT(RBP);
  } else if (op == 0xCC || op == 0xF4 || op == 0xCD) {
    in->kind = DPA_I_TRAP;
    if (op == 0xCD) imm_bytes = 1;
  } else if (op >= 0xD8 && op <= 0xDF) { /* x87 */
    if (in->has_mem && (sub == 2 || sub == 3 || sub == 7 || sub == 6 || sub == 5)) in->mem_write = 1;
    if (op == 0xDF && modrm == 0xE0) in->writes |= BIT(RAX); /* fnstsw ax */
  } else if (op >= 0xE0 && op <= 0xE3) {
    in->kind = DPA_I_JCC; /* loop, jrcxz */
    in->cc = -1;
    imm_bytes = 1;
    in->writes |= BIT(RCX);
  } else if (op >= 0xE4 && op <= 0xE7) {
    imm_bytes = 1;
    in->writes |= BIT(RAX);
  } else if (op == 0xE8) {
    in->kind = DPA_I_CALL;
    imm_bytes = 4;
  } else if (op == 0xE9 || op == 0xEB) {
    in->kind = DPA_I_JMP;
    imm_bytes = op == 0xE9 ? 4 : 1;
  } else if (op >= 0xEC && op <= 0xEF) {
    if (op <= 0xED) in->writes |= BIT(RAX);
  } else if (op == 0xF5 || (op >= 0xF8 && op <= 0xFD)) { /* flags */
  } else if (op == 0xF6 || op == 0xF7) {
    if (sub == 0 || sub == 1) imm_bytes = op == 0xF6 ? 1 : z; /* test */
    else if (sub == 2 || sub == 3) writes_rm(in);
    else in->writes |= BIT(RAX) | BIT(RDX); /* mul, imul, div, idiv */
  } else if (op == 0xFE || op == 0xFF) {
    if (sub == 0 || sub == 1) writes_rm(in);
    else if (op == 0xFE) return 0;
    else if (sub == 2) in->kind = DPA_I_CALL_IND;
    else if (sub == 4) in->kind = DPA_I_JMP_IND;
    else if (sub == 6) { in->kind = DPA_I_PUSH; in->reg = in->rm; }
    else return 0; /* far call/jump */
  } else {
    return 0;
  }
  if (!read_imm(&p, end, imm_bytes, &imm)) return 0;
  in->imm = imm;
  in->len = (uint8_t)(p - pc);
  if (in->kind == DPA_I_JCC || in->kind == DPA_I_CALL || in->kind == DPA_I_JMP)
    in->target = (uintptr_t)pc + in->len + (uintptr_t)imm;
  if (in->kind == DPA_I_ADD_RSP && sub == 5) in->imm = -imm;
  return in->len;
}
