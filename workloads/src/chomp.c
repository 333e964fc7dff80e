/* chomp: solves the game of Chomp by memoised search over board positions (after the chomp
 * benchmark of the pool-allocation papers). A position is a small malloc'd array of column
 * heights; a hash table of chained position records, per-position lists of move records and
 * short-lived candidate arrays of several sizes are all allocated interleaved. Query passes
 * then walk the position table and move lists repeatedly.
 * usage: chomp <columns> <rows> <passes>
 */
#include <string.h>
#include "wl_common.h"

typedef struct move {
    int col, row;      /* bite at (col,row) */
    struct pos *to;    /* resulting position */
    struct move *next;
} move;

typedef struct pos {
    unsigned char *h; /* heights, ncols bytes */
    int win;          /* -1 unknown, 0 lose, 1 win */
    int nmoves;
    move *moves;
    struct pos *chain; /* hash chain */
    struct pos *all;   /* list of all positions, in discovery order */
} pos;

static int ncols, nrows;
static pos **table;
static unsigned tsize;
static pos *all_head;
static long npos, nmoves_total;

static unsigned hash_heights(const unsigned char *h) {
    uint64_t x = 1469598103934665603ull;
    for (int i = 0; i < ncols; i++) x = (x ^ h[i]) * 1099511628211ull;
    return (unsigned)(x % tsize);
}

static pos *lookup_or_add(unsigned char *h, int *added) {
    unsigned b = hash_heights(h);
    for (pos *p = table[b]; p; p = p->chain)
        if (memcmp(p->h, h, (size_t)ncols) == 0) {
            *added = 0;
            return p;
        }
    pos *p = (pos *)malloc(sizeof *p);
    if (!p) wl_oom("pos");
    p->h = h;
    p->win = -1;
    p->nmoves = 0;
    p->moves = NULL;
    p->chain = table[b];
    table[b] = p;
    p->all = all_head;
    all_head = p;
    npos++;
    *added = 1;
    return p;
}

/* bite at (c,r): every column >= c is cut down to height r */
static unsigned char *bite(const unsigned char *h, int c, int r) {
    unsigned char *n = (unsigned char *)malloc((size_t)ncols);
    if (!n) wl_oom("heights");
    memcpy(n, h, (size_t)ncols);
    for (int i = c; i < ncols; i++)
        if (n[i] > r) n[i] = (unsigned char)r;
    return n;
}

/* iterative DFS so deep boards do not overflow the stack */
typedef struct frame {
    pos *p;
} frame;

static void solve(pos *root) {
    long cap = 1024, sp = 0;
    frame *stack = (frame *)malloc(sizeof(frame) * (size_t)cap);
    if (!stack) wl_oom("stack");
    stack[sp++].p = root;
    while (sp > 0) {
        pos *p = stack[sp - 1].p;
        if (p->win >= 0) {
            sp--;
            continue;
        }
        if (p->moves == NULL && p->nmoves == 0) {
            /* expand: one move record per legal bite except the poisoned (0,0) */
            move **tail = &p->moves;
            for (int c = 0; c < ncols; c++)
                for (int r = 0; r < p->h[c]; r++) {
                    if (c == 0 && r == 0) continue;
                    unsigned char *nh = bite(p->h, c, r);
                    int added;
                    pos *q = lookup_or_add(nh, &added);
                    if (!added) free(nh);
                    move *m = (move *)malloc(sizeof *m);
                    if (!m) wl_oom("move");
                    m->col = c;
                    m->row = r;
                    m->to = q;
                    m->next = NULL;
                    *tail = m;
                    tail = &m->next;
                    p->nmoves++;
                    nmoves_total++;
                }
            if (p->nmoves == 0) { /* only the poisoned square is left: the player to move loses */
                p->win = 0;
                sp--;
                continue;
            }
        }
        /* all children solved? */
        int pending = 0, win = 0;
        for (move *m = p->moves; m; m = m->next) {
            if (m->to->win < 0) {
                if (sp == cap) {
                    cap *= 2;
                    stack = (frame *)realloc(stack, sizeof(frame) * (size_t)cap);
                    if (!stack) wl_oom("stack");
                }
                stack[sp++].p = m->to;
                pending = 1;
            } else if (m->to->win == 0) {
                win = 1;
            }
        }
        if (!pending) {
            p->win = win;
            sp--;
        }
    }
    free(stack);
}

int main(int argc, char **argv) {
    ncols = (int)wl_arg(argc, argv, 1, 7);
    nrows = (int)wl_arg(argc, argv, 2, 7);
    long passes = wl_arg(argc, argv, 3, 10);
    if (ncols < 1 || ncols > 64 || nrows < 1 || nrows > 255) {
        fprintf(stderr, "chomp: columns 1..64, rows 1..255\n");
        return 2;
    }
    tsize = 65521;
    table = (pos **)calloc(tsize, sizeof(pos *));
    if (!table) wl_oom("table");
    unsigned char *full = (unsigned char *)malloc((size_t)ncols);
    if (!full) wl_oom("heights");
    memset(full, nrows, (size_t)ncols);
    int added;
    pos *root = lookup_or_add(full, &added);
    solve(root);
    /* query passes: for every position count its winning replies, weighted by the move */
    uint64_t h = 0;
    for (long p = 0; p < passes; p++) {
        uint64_t s = 0;
        for (pos *q = all_head; q; q = q->all) {
            int good = 0;
            for (move *m = q->moves; m; m = m->next)
                if (m->to->win == 0) good += m->col * 3 + m->row + (int)(p & 3) + m->to->h[0];
            s += (uint64_t)good * (uint64_t)(q->h[ncols - 1] + 1);
        }
        h = wl_mix(h, s);
    }
    int first_c = -1, first_r = -1;
    for (move *m = root->moves; m; m = m->next)
        if (m->to->win == 0) {
            first_c = m->col;
            first_r = m->row;
            break;
        }
    printf("positions: %ld moves: %ld first-win: %d %d root-win: %d\n", npos, nmoves_total, first_c, first_r,
           root->win);
    printf("checksum: %llu\n", (unsigned long long)h);
    pos *q = all_head;
    while (q) {
        pos *nx = q->all;
        move *m = q->moves;
        while (m) {
            move *mn = m->next;
            free(m);
            m = mn;
        }
        free(q->h);
        free(q);
        q = nx;
    }
    free(table);
    return 0;
}
