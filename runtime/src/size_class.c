/* Size classes: 8-byte steps from 16 to 256 bytes (where most pooled objects are), then
 * four classes per power of two up to HL_MAX_CLASS_SIZE, so rounding wastes at most 25%.
 *
 * Which small classes a pool uses is its class table (hl_tpool.classes):
 *   hl_classes_16     only multiples of 16: every slot 16-aligned, what glibc promises and
 *                     what clang assumes of every malloc/new result of 16 bytes or more;
 *   hl_classes_even   with minimum alignment 8 (HALO 5: "a minimum alignment of 8 bytes"),
 *                     odd multiples of 8 (40, 72, 88, ...) where the 16-multiple above is
 *                     not line-friendly: a 40-byte object in a 48-byte slot spans 1.5 lines
 *                     on average, in a 40-byte slot too, and 8 fit in 5 lines instead of 6;
 *   hl_classes_packed also 24: packing saves lines on a walk (health's 24-byte list
 *                     cells: 8 in 3 lines instead of 4). 56, 120, 184 and 248 keep their
 *                     16-multiples (64, 128, 192, 256), which never straddle a line:
 *                     packed, they cost lines on a lone access (cxx_dom's 120-byte nodes
 *                     spanned 2.75 lines, not 2, and took 40% more misses). The planner
 *                     packs groups that are walked.
 * Only a size that is a multiple of 16 can hold a type aligned to 16, so such sizes keep
 * 16-aligned classes in every table; a slot of an odd-multiple class may start 8 bytes
 * into a 16-byte granule (alloc.c walks the size map by byte position for that reason). */
#include "internal.h"

const uint32_t hl_class_size[HL_NCLASSES] = {
    0,     16,    24,    32,    40,    48,    56,    64,    72,    80,    88,    96,
    104,   112,   120,   128,   136,   144,   152,   160,   168,   176,   184,   192,
    200,   208,   216,   224,   232,   240,   248,   256,   320,   384,   448,   512,
    640,   768,   896,   1024,  1280,  1536,  1792,  2048,  2560,  3072,  3584,  4096,
    5120,  6144,  7168,  8192,  10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
};

/* index (size + 7) / 8; the class of 8k bytes is k - 1 (16 bytes at least: a free-list link) */
const uint8_t hl_classes_16[HL_SMALL_INDEX] = {
    1,  1,  1,  3,  3,  5,  5,  7,  7,  9,  9,  11, 11, 13, 13, 15, 15,
    17, 17, 19, 19, 21, 21, 23, 23, 25, 25, 27, 27, 29, 29, 31, 31,
};
const uint8_t hl_classes_even[HL_SMALL_INDEX] = {
    1,  1,  1,  3,  3,  4,  5,  7,  7,  8,  9,  10, 11, 12, 13, 15, 15,
    16, 17, 18, 19, 20, 21, 23, 23, 24, 25, 26, 27, 28, 29, 31, 31,
};
const uint8_t hl_classes_packed[HL_SMALL_INDEX] = {
    1,  1,  1,  2,  3,  4,  5,  7,  7,  8,  9,  10, 11, 12, 13, 15, 15,
    16, 17, 18, 19, 20, 21, 23, 23, 24, 25, 26, 27, 28, 29, 31, 31,
};

/* A plan's min_align 8 covers its groups, whose allocating modules the planner checked
 * (built by GCC, which assumes 8 of malloc and new); the environment's covers every pool. */
const uint8_t *hl_pool_classes(uint16_t pool) {
  if (hl_state.opt.min_align != 8 || pool < HL_POOL_FIRST_DYNAMIC) return hl_classes_16;
  uint16_t g = hl_pool_group(pool);
  if (g == 0) return hl_state.opt.min_align_env ? hl_classes_even : hl_classes_16;
  return hl_plan_group_packed(g) ? hl_classes_packed : hl_classes_even;
}

unsigned hl_pool_line_off(uint16_t pool) {
  if (pool < HL_POOL_FIRST_DYNAMIC) return 0;
  uint16_t g = hl_pool_group(pool);
  return g ? hl_plan_group_line(g) : 0;
}
