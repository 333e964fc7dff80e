/* bignum: cfrac-like multi-precision arithmetic churn. A table of bignums, each one malloc'd
 * block of exactly its length, is updated by random additions, multiplications, subtractions
 * and small-factor steps; every operation allocates its result (plus a temporary for products),
 * trims it with realloc and frees the operand it replaces, so many small blocks of varying
 * size are allocated and freed. A scan pass reads the whole table periodically.
 * usage: bignum <table-size> <operations> [max-words]
 */
#include <string.h>
#include "wl_common.h"

typedef struct big {
    int len; /* used words, >= 1 */
    int cap;
    uint32_t w[];
} big;

static int maxwords = 24;

static big *big_alloc(int cap) {
    big *b = (big *)malloc(sizeof(big) + sizeof(uint32_t) * (size_t)cap);
    if (!b) wl_oom("big");
    b->cap = cap;
    b->len = 1;
    memset(b->w, 0, sizeof(uint32_t) * (size_t)cap);
    return b;
}

/* drop leading zero words, truncate to a limit, and give back unused capacity */
static big *big_trim(big *b, int limit) {
    int len = b->len < limit ? b->len : limit;
    while (len > 1 && b->w[len - 1] == 0) len--;
    b->len = len;
    if (len < b->cap) {
        big *n = (big *)realloc(b, sizeof(big) + sizeof(uint32_t) * (size_t)len);
        if (!n) wl_oom("realloc");
        n->cap = len;
        b = n;
    }
    return b;
}

static big *big_random(wl_rng *r, int len) {
    big *b = big_alloc(len);
    for (int i = 0; i < len; i++) b->w[i] = (uint32_t)wl_next(r);
    if (b->w[len - 1] == 0) b->w[len - 1] = 1;
    b->len = len;
    return b;
}

static big *big_add(const big *a, const big *b) {
    int n = (a->len > b->len ? a->len : b->len) + 1;
    big *c = big_alloc(n);
    uint64_t carry = 0;
    for (int i = 0; i < n; i++) {
        uint64_t s = carry;
        if (i < a->len) s += a->w[i];
        if (i < b->len) s += b->w[i];
        c->w[i] = (uint32_t)s;
        carry = s >> 32;
    }
    c->len = n;
    return big_trim(c, maxwords);
}

static int big_cmp(const big *a, const big *b) {
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    for (int i = a->len - 1; i >= 0; i--)
        if (a->w[i] != b->w[i]) return a->w[i] < b->w[i] ? -1 : 1;
    return 0;
}

/* |a - b| */
static big *big_absdiff(const big *a, const big *b) {
    if (big_cmp(a, b) < 0) {
        const big *t = a;
        a = b;
        b = t;
    }
    big *c = big_alloc(a->len);
    int64_t borrow = 0;
    for (int i = 0; i < a->len; i++) {
        int64_t d = (int64_t)a->w[i] - borrow - (i < b->len ? (int64_t)b->w[i] : 0);
        borrow = d < 0;
        c->w[i] = (uint32_t)(d + (borrow ? ((int64_t)1 << 32) : 0));
    }
    c->len = a->len;
    return big_trim(c, maxwords);
}

static big *big_mul(const big *a, const big *b) {
    int n = a->len + b->len;
    big *t = big_alloc(n); /* full product, a temporary */
    for (int i = 0; i < a->len; i++) {
        uint64_t carry = 0;
        for (int j = 0; j < b->len; j++) {
            uint64_t p = (uint64_t)a->w[i] * b->w[j] + t->w[i + j] + carry;
            t->w[i + j] = (uint32_t)p;
            carry = p >> 32;
        }
        t->w[i + b->len] = (uint32_t)carry;
    }
    t->len = n;
    /* keep a middle slice so numbers stay bounded but vary in length */
    int keep = (a->len + b->len) / 2 + 1;
    if (keep > maxwords) keep = maxwords;
    big *c = big_alloc(keep);
    memcpy(c->w, t->w + (n - keep) / 2, sizeof(uint32_t) * (size_t)keep);
    c->len = keep;
    free(t);
    return big_trim(c, maxwords);
}

static big *big_mul_small(const big *a, uint32_t m, uint32_t add) {
    big *c = big_alloc(a->len + 1);
    uint64_t carry = add;
    for (int i = 0; i < a->len; i++) {
        uint64_t p = (uint64_t)a->w[i] * m + carry;
        c->w[i] = (uint32_t)p;
        carry = p >> 32;
    }
    c->w[a->len] = (uint32_t)carry;
    c->len = a->len + 1;
    return big_trim(c, maxwords);
}

static uint32_t big_mod_small(const big *a, uint32_t m) {
    uint64_t r = 0;
    for (int i = a->len - 1; i >= 0; i--) r = ((r << 32) | a->w[i]) % m;
    return (uint32_t)r;
}

int main(int argc, char **argv) {
    int n = (int)wl_arg(argc, argv, 1, 2000);
    long ops = wl_arg(argc, argv, 2, 100000);
    maxwords = (int)wl_arg(argc, argv, 3, 24);
    if (n < 4 || maxwords < 2 || maxwords > 4096) {
        fprintf(stderr, "bignum: table-size >= 4, max-words 2..4096\n");
        return 2;
    }
    wl_rng rng;
    wl_seed(&rng, 11);
    big **t = (big **)malloc(sizeof(big *) * (size_t)n);
    if (!t) wl_oom("table");
    for (int i = 0; i < n; i++) t[i] = big_random(&rng, 1 + (int)wl_below(&rng, (uint32_t)maxwords));
    uint64_t h = 0;
    for (long k = 0; k < ops; k++) {
        int a = (int)wl_below(&rng, (uint32_t)n), b = (int)wl_below(&rng, (uint32_t)n);
        int d = (int)wl_below(&rng, (uint32_t)n);
        big *res;
        switch (wl_below(&rng, 4)) {
        case 0: res = big_add(t[a], t[b]); break;
        case 1: res = big_mul(t[a], t[b]); break;
        case 2: res = big_absdiff(t[a], t[b]); break;
        default: res = big_mul_small(t[a], 3 + wl_below(&rng, 1000), (uint32_t)k); break;
        }
        res = big_trim(res, 2 + (int)wl_below(&rng, (uint32_t)maxwords - 1)); /* vary the sizes */
        if (res->len == 1 && res->w[0] < 2) { /* re-seed degenerate values */
            free(res);
            res = big_random(&rng, 1 + (int)wl_below(&rng, (uint32_t)maxwords));
        }
        free(t[d]);
        t[d] = res;
        if ((k & 65535) == 65535) {
            uint64_t s = 0;
            for (int i = 0; i < n; i++) s += (uint64_t)t[i]->w[t[i]->len - 1] * 3u + t[i]->w[0] + (uint64_t)t[i]->len;
            h = wl_mix(h, s);
        }
    }
    uint64_t words = 0;
    for (int i = 0; i < n; i++) {
        words += (uint64_t)t[i]->len;
        h = wl_mix(h, big_mod_small(t[i], 998244353u));
        free(t[i]);
    }
    free(t);
    printf("table: %d ops: %ld words: %llu\n", n, ops, (unsigned long long)words);
    printf("checksum: %llu\n", (unsigned long long)h);
    return 0;
}
