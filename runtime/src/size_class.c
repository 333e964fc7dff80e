/* Size classes: 16-byte steps up to 256 bytes (where most pooled objects are), then four
 * classes per power of two up to HL_MAX_CLASS_SIZE, so rounding wastes at most 25%. */
#include "internal.h"

const uint32_t hl_class_size[HL_NCLASSES] = {
    0,     16,    32,    48,    64,    80,    96,    112,   128,   144,   160,   176,
    192,   208,   224,   240,   256,   320,   384,   448,   512,   640,   768,   896,
    1024,  1280,  1536,  1792,  2048,  2560,  3072,  3584,  4096,  5120,  6144,  7168,
    8192,  10240, 12288, 14336, 16384, 20480, 24576, 28672, 32768,
};

/* index: granules, (size + 15) / 16; a zero-byte request gets the smallest class */
const uint8_t hl_small_class[(256 >> HL_GRANULE_SHIFT) + 1] = {
    1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
};

