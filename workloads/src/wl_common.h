/* Shared helpers for the workload programs: a deterministic PRNG, argument parsing and the
 * checksum line. Nothing here depends on addresses. */
#ifndef WL_COMMON_H
#define WL_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct { uint64_t s; } wl_rng;

static inline void wl_seed(wl_rng *r, uint64_t seed) { r->s = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull; }

/* splitmix64 */
static inline uint64_t wl_next(wl_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0, n) */
static inline uint32_t wl_below(wl_rng *r, uint32_t n) {
    return (uint32_t)(((wl_next(r) >> 32) * (uint64_t)n) >> 32);
}

static inline uint64_t wl_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static inline long wl_arg(int argc, char **argv, int i, long def) {
    if (argc > i) {
        char *end;
        long v = strtol(argv[i], &end, 10);
        if (*end != '\0' || v < 0) {
            fprintf(stderr, "bad argument %d: %s\n", i, argv[i]);
            exit(2);
        }
        return v;
    }
    return def;
}

static inline void *wl_oom(const char *what) {
    fprintf(stderr, "out of memory (%s)\n", what);
    exit(3);
}

#ifdef __cplusplus
}
#endif

#endif
