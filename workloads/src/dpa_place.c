/* dpa_place: a twolf-like standard-cell placement by annealing (DPA's motivating program).
 * Nearly all memory comes through safe_malloc (DPA figure 2), partly via two-level wrappers
 * (safe_calloc -> safe_malloc, safe_strdup -> safe_malloc, alloc_term -> safe_calloc). Each
 * net's terminal list is one data structure built from several allocation sites: add_cell_term
 * while cells are read, add_pad_term for I/O pads afterwards, and reroute_term during
 * annealing (DPA 3.2). Short-lived line buffers are allocated and freed in between.
 * Every move walks cell -> pins -> nets -> terminal lists -> cells.
 * usage: dpa_place <cells> <moves>
 */
#include <string.h>
#include "wl_common.h"

typedef struct cell {
    int x, y;
    int id;
    int npins;
    struct pin *pins;
    char *name;
} cell;

typedef struct pin {
    struct net *net;
    int dx, dy;
    struct pin *next; /* next pin of the same cell */
} pin;

typedef struct term {
    cell *c;
    int dx, dy;
    struct term *next; /* next terminal of the same net */
} term;

typedef struct net {
    int id;
    int nterms;
    term *terms;
    long cost;
} net;

__attribute__((noinline)) static char *safe_malloc(size_t size) {
    char *p = (char *)malloc(size);
    if (!p) wl_oom("safe_malloc");
    return p;
}

__attribute__((noinline)) static char *safe_calloc(size_t n, size_t size) {
    char *p = safe_malloc(n * size);
    memset(p, 0, n * size);
    return p;
}

__attribute__((noinline)) static char *safe_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = safe_malloc(n);
    memcpy(p, s, n);
    return p;
}

__attribute__((noinline)) static void safe_free(void *p) { free(p); }

__attribute__((noinline)) static term *alloc_term(cell *c, int dx, int dy) {
    term *t = (term *)safe_calloc(1, sizeof *t);
    t->c = c;
    t->dx = dx;
    t->dy = dy;
    return t;
}

/* site 1: terminals of ordinary cells, added while the netlist is read */
__attribute__((noinline)) static void add_cell_term(net *n, cell *c, int dx, int dy) {
    term *t = alloc_term(c, dx, dy);
    t->next = n->terms;
    n->terms = t;
    n->nterms++;
}

/* site 2: pad terminals, appended at the end of the list after all cells are read */
__attribute__((noinline)) static void add_pad_term(net *n, cell *pad) {
    term *t = (term *)safe_malloc(sizeof *t);
    t->c = pad;
    t->dx = 0;
    t->dy = 0;
    t->next = NULL;
    term **link = &n->terms;
    while (*link) link = &(*link)->next;
    *link = t;
    n->nterms++;
}

/* site 3: during annealing a terminal is occasionally re-created (pin swap) */
__attribute__((noinline)) static void reroute_term(net *n, int k) {
    term **link = &n->terms;
    for (int i = 0; i < k && (*link)->next; i++) link = &(*link)->next;
    term *old = *link;
    term *t = (term *)safe_malloc(sizeof *t);
    t->c = old->c;
    t->dx = -old->dx;
    t->dy = old->dy;
    t->next = old->next;
    *link = t;
    safe_free(old);
}

static long net_cost(const net *n) {
    int minx = 1 << 30, maxx = -(1 << 30), miny = 1 << 30, maxy = -(1 << 30);
    for (const term *t = n->terms; t; t = t->next) {
        int x = t->c->x + t->dx, y = t->c->y + t->dy;
        if (x < minx) minx = x;
        if (x > maxx) maxx = x;
        if (y < miny) miny = y;
        if (y > maxy) maxy = y;
    }
    return (long)(maxx - minx) + (long)(maxy - miny);
}

int main(int argc, char **argv) {
    int ncells = (int)wl_arg(argc, argv, 1, 5000);
    long moves = wl_arg(argc, argv, 2, 100000);
    if (ncells < 16) {
        fprintf(stderr, "dpa_place: need at least 16 cells\n");
        return 2;
    }
    wl_rng rng;
    wl_seed(&rng, 300);
    int nnets = ncells;
    int npads = ncells / 16;
    int width = 1;
    while (width * width < ncells) width++;
    cell **cells = (cell **)safe_calloc((size_t)ncells, sizeof(cell *));
    net **nets = (net **)safe_calloc((size_t)nnets, sizeof(net *));
    for (int i = 0; i < nnets; i++) {
        nets[i] = (net *)safe_calloc(1, sizeof(net));
        nets[i]->id = i;
    }
    /* "read" the netlist: one text line per cell, parsed from a temporary buffer */
    for (int i = 0; i < ncells; i++) {
        char *line = safe_malloc(64 + wl_below(&rng, 64));
        snprintf(line, 64, "cell c%d pins %d", i, 2 + (int)wl_below(&rng, 4));
        cell *c = (cell *)safe_malloc(sizeof *c);
        c->id = i;
        c->x = (int)(wl_below(&rng, (uint32_t)width)) * 10;
        c->y = (int)(wl_below(&rng, (uint32_t)width)) * 10;
        c->name = safe_strdup(line + 5);
        c->npins = line[strlen(line) - 1] - '0';
        c->pins = NULL;
        safe_free(line);
        for (int k = 0; k < c->npins; k++) {
            /* nets connect cells that are close in the input order */
            int j = i + (int)wl_below(&rng, 9) - 4;
            if (j < 0) j += nnets;
            if (j >= nnets) j -= nnets;
            pin *p = (pin *)safe_calloc(1, sizeof *p);
            p->net = nets[j];
            p->dx = (int)wl_below(&rng, 5);
            p->dy = (int)wl_below(&rng, 5);
            p->next = c->pins;
            c->pins = p;
            add_cell_term(nets[j], c, p->dx, p->dy);
        }
        cells[i] = c;
    }
    /* pads: fixed cells on the border, attached to every 16th net */
    cell **pads = (cell **)safe_calloc((size_t)npads, sizeof(cell *));
    for (int k = 0; k < npads; k++) {
        cell *pad = (cell *)safe_calloc(1, sizeof *pad);
        pad->id = ncells + k;
        pad->x = (k % 2) ? 0 : width * 10;
        pad->y = (k * 37) % (width * 10);
        pad->name = safe_strdup("pad");
        pads[k] = pad;
        add_pad_term(nets[k * 16], pad);
    }
    long total = 0;
    for (int i = 0; i < nnets; i++) {
        if (nets[i]->terms) nets[i]->cost = net_cost(nets[i]);
        total += nets[i]->cost;
    }
    long initial = total;
    long temp = 2000, accepted = 0;
    for (long m = 0; m < moves; m++) {
        int a = (int)wl_below(&rng, (uint32_t)ncells);
        int b = a + (int)wl_below(&rng, 201) - 100;
        if (b < 0 || b >= ncells || b == a) continue;
        cell *ca = cells[a], *cb = cells[b];
        int t;
        t = ca->x; ca->x = cb->x; cb->x = t;
        t = ca->y; ca->y = cb->y; cb->y = t;
        long delta = 0;
        for (int side = 0; side < 2; side++)
            for (pin *p = (side ? cb : ca)->pins; p; p = p->next) {
                net *n = p->net;
                long c = net_cost(n);
                delta += c - n->cost;
            }
        long threshold = (long)wl_below(&rng, (uint32_t)(temp + 1)) / 8;
        if (delta <= threshold) {
            accepted++;
            for (int side = 0; side < 2; side++)
                for (pin *p = (side ? cb : ca)->pins; p; p = p->next) {
                    long c = net_cost(p->net);
                    total += c - p->net->cost;
                    p->net->cost = c;
                }
        } else {
            t = ca->x; ca->x = cb->x; cb->x = t;
            t = ca->y; ca->y = cb->y; cb->y = t;
        }
        if ((m & 1023) == 1023) {
            if (temp > 1) temp = temp * 97 / 100;
            net *n = nets[wl_below(&rng, (uint32_t)nnets)];
            if (n->terms) {
                reroute_term(n, (int)wl_below(&rng, 4));
                long c = net_cost(n);
                total += c - n->cost;
                n->cost = c;
            }
        }
    }
    /* recompute from scratch to validate the incremental cost */
    long check = 0;
    for (int i = 0; i < nnets; i++)
        if (nets[i]->terms) check += net_cost(nets[i]);
    uint64_t h = wl_mix(wl_mix(wl_mix(0, (uint64_t)initial), (uint64_t)total), (uint64_t)accepted);
    for (int i = 0; i < ncells; i++) h = wl_mix(h, (uint64_t)(cells[i]->x * 7 + cells[i]->y));
    printf("cells: %d initial: %ld final: %ld recomputed: %ld accepted: %ld\n", ncells, initial, total, check,
           accepted);
    printf("checksum: %llu\n", (unsigned long long)h);
    if (check != total) return 1;
    for (int i = 0; i < nnets; i++) {
        term *t = nets[i]->terms;
        while (t) {
            term *nx = t->next;
            safe_free(t);
            t = nx;
        }
        safe_free(nets[i]);
    }
    for (int i = 0; i < ncells; i++) {
        pin *p = cells[i]->pins;
        while (p) {
            pin *nx = p->next;
            safe_free(p);
            p = nx;
        }
        safe_free(cells[i]->name);
        safe_free(cells[i]);
    }
    for (int k = 0; k < npads; k++) {
        safe_free(pads[k]->name);
        safe_free(pads[k]);
    }
    safe_free(pads);
    safe_free(cells);
    safe_free(nets);
    return 0;
}
