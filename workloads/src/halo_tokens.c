/* halo_tokens: the povray-like pattern of HALO's figure 2.
 * A token stream is read; each token becomes an object made by a per-kind creator function,
 * and every creator allocates through one xmalloc wrapper. Planes (A) and composites (B) are
 * linked into the scene list; the more numerous text records (C) are kept aside and never
 * traversed. All three kinds have the same size. The scene list is then traversed many times (ray tests), so with allocation-order
 * placement every cache line of the walk also carries C records.
 * usage: halo_tokens <tokens> <passes>
 */
#include <string.h>
#include "wl_common.h"

typedef struct object {
    int kind; /* 0 plane, 1 composite */
    int id;
    struct object *sibling;
} object;

typedef struct {
    object base;
    double nx, ny, nz, d;
} plane;

typedef struct {
    object base;
    float cx, cy, cz, r2;
    int nparts;
    int flags;
    double weight;
} composite;

/* all three kinds are 48 bytes, so a size-segregating allocator cannot tell them apart */
typedef struct textrec {
    int line;
    int len;
    char text[40];
} textrec;

_Static_assert(sizeof(plane) == 48 && sizeof(composite) == 48 && sizeof(textrec) == 48, "kinds differ in size");

__attribute__((noinline)) static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) wl_oom("xmalloc");
    return p;
}

__attribute__((noinline)) static object *create_a(wl_rng *r, int id) {
    plane *p = (plane *)xmalloc(sizeof *p);
    p->base.kind = 0;
    p->base.id = id;
    p->nx = (double)wl_below(r, 1000) / 1000.0 - 0.5;
    p->ny = (double)wl_below(r, 1000) / 1000.0 - 0.5;
    p->nz = 1.0;
    p->d = (double)wl_below(r, 100);
    return &p->base;
}

__attribute__((noinline)) static object *create_b(wl_rng *r, int id) {
    composite *c = (composite *)xmalloc(sizeof *c);
    c->base.kind = 1;
    c->base.id = id;
    c->cx = (float)wl_below(r, 200) - 100.0f;
    c->cy = (float)wl_below(r, 200) - 100.0f;
    c->cz = (float)wl_below(r, 200);
    float rad = (float)(wl_below(r, 20) + 1);
    c->r2 = rad * rad;
    c->nparts = (int)wl_below(r, 5) + 1;
    c->flags = 0;
    c->weight = 1.0;
    return &c->base;
}

__attribute__((noinline)) static textrec *create_c(wl_rng *r, int line) {
    int len = 8 + (int)wl_below(r, 32);
    textrec *t = (textrec *)xmalloc(sizeof *t);
    t->line = line;
    t->len = len;
    for (int i = 0; i < len - 1; i++) t->text[i] = (char)('a' + (line + i) % 26);
    t->text[len - 1] = '\0';
    return t;
}

static long do_something(textrec *t) { return t->len + t->text[0]; }

/* a ray from (ox,oy,-1000) along +z: count hits, accumulate a depth */
static long process(const object *o, double ox, double oy, long *depth) {
    if (o->kind == 0) {
        const plane *p = (const plane *)o;
        double t = p->d - p->nx * ox - p->ny * oy;
        if (t > 0) {
            *depth += (long)t;
            return 1;
        }
        return 0;
    }
    const composite *c = (const composite *)o;
    double dx = ox - c->cx, dy = oy - c->cy;
    if (dx * dx + dy * dy <= (double)c->r2) {
        *depth += (long)(c->cz * c->weight) * c->nparts;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    long ntokens = wl_arg(argc, argv, 1, 50000);
    long passes = wl_arg(argc, argv, 2, 10);
    wl_rng rng;
    wl_seed(&rng, 3);
    object *list = NULL;
    long na = 0, nb = 0, nc = 0, aside = 0;
    textrec **texts = (textrec **)malloc(sizeof(textrec *) * (size_t)(ntokens + 1));
    if (!texts) wl_oom("texts");
    for (long i = 0; i < ntokens; i++) {
        uint32_t kind = wl_below(&rng, 20); /* A 15%, B 15%, C 70% */
        if (kind < 3) {
            object *o = create_a(&rng, (int)i);
            o->sibling = list;
            list = o;
            na++;
        } else if (kind < 6) {
            object *o = create_b(&rng, (int)i);
            o->sibling = list;
            list = o;
            nb++;
        } else {
            textrec *t = create_c(&rng, (int)i);
            aside += do_something(t);
            texts[nc++] = t;
        }
    }
    uint64_t h = 0;
    for (long p = 0; p < passes; p++) {
        double ox = (double)(p % 37) * 3.0 - 50.0, oy = (double)(p % 23) * 4.0 - 40.0;
        long hits = 0, depth = 0;
        for (const object *o = list; o; o = o->sibling) hits += process(o, ox, oy, &depth);
        h = wl_mix(h, (uint64_t)hits * 1000003u + (uint64_t)depth);
    }
    printf("planes: %ld composites: %ld texts: %ld aside: %ld\n", na, nb, nc, aside);
    printf("checksum: %llu\n", (unsigned long long)wl_mix(h, (uint64_t)aside));
    while (list) {
        object *n = list->sibling;
        free(list);
        list = n;
    }
    for (long i = 0; i < nc; i++) free(texts[i]);
    free(texts);
    return 0;
}
