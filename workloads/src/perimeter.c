/* perimeter: Olden's quadtree perimeter computation (Samet's neighbour-finding algorithm).
 * A quadtree encodes a disc in a 2^levels x 2^levels image; each pass sums the perimeter by
 * visiting every black leaf and finding its equal-or-larger neighbours through parent links.
 * usage: perimeter <levels> <passes>
 */
#include "wl_common.h"

enum { WHITE, BLACK, GREY };
enum { NW, NE, SW, SE };
enum { NORTH, EAST, SOUTH, WEST };

typedef struct quad {
    int color;
    int childtype;
    struct quad *child[4];
    struct quad *parent;
} quad;

static long long cx, cy, radius2;

/* is pixel-square [x0,x0+s) x [y0,y0+s) entirely inside / outside the disc? */
static int classify(long long x0, long long y0, long long s) {
    long long far = 0, near;
    long long xs[2] = {x0, x0 + s}, ys[2] = {y0, y0 + s};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            long long dx = 2 * xs[i] - cx, dy = 2 * ys[j] - cy; /* doubled coordinates */
            long long d = dx * dx + dy * dy;
            if (d > far) far = d;
        }
    long long nx = cx < 2 * x0 ? 2 * x0 : (cx > 2 * (x0 + s) ? 2 * (x0 + s) : cx);
    long long ny = cy < 2 * y0 ? 2 * y0 : (cy > 2 * (y0 + s) ? 2 * (y0 + s) : cy);
    near = (nx - cx) * (nx - cx) + (ny - cy) * (ny - cy);
    if (far <= radius2) return BLACK;
    if (near >= radius2) return WHITE;
    return GREY;
}

static long node_count;

static quad *make_tree(long long x0, long long y0, long long s, quad *parent, int ct) {
    quad *q = (quad *)malloc(sizeof *q);
    if (!q) wl_oom("quad");
    node_count++;
    q->parent = parent;
    q->childtype = ct;
    int c = classify(x0, y0, s);
    if (c == GREY && s == 1) {
        long long dx = 2 * x0 + 1 - cx, dy = 2 * y0 + 1 - cy;
        c = dx * dx + dy * dy <= radius2 ? BLACK : WHITE;
    }
    q->color = c;
    if (c == GREY) {
        long long h = s / 2;
        q->child[NW] = make_tree(x0, y0, h, q, NW);
        q->child[NE] = make_tree(x0 + h, y0, h, q, NE);
        q->child[SW] = make_tree(x0, y0 + h, h, q, SW);
        q->child[SE] = make_tree(x0 + h, y0 + h, h, q, SE);
    } else {
        for (int i = 0; i < 4; i++) q->child[i] = NULL;
    }
    return q;
}

/* is quadrant ct on side dir of its parent? */
static int adj(int dir, int ct) {
    switch (dir) {
    case NORTH: return ct == NW || ct == NE;
    case SOUTH: return ct == SW || ct == SE;
    case EAST: return ct == NE || ct == SE;
    default: return ct == NW || ct == SW;
    }
}

/* mirror image of ct across the edge on side dir */
static int reflect(int dir, int ct) {
    if (dir == NORTH || dir == SOUTH) {
        static const int r[4] = {SW, SE, NW, NE};
        return r[ct];
    }
    static const int r[4] = {NE, NW, SE, SW};
    return r[ct];
}

static quad *gtequal_adj_neighbor(quad *t, int dir) {
    quad *q = t->parent, *n;
    if (q && adj(dir, t->childtype))
        n = gtequal_adj_neighbor(q, dir);
    else
        n = q;
    if (n && n->color == GREY) return n->child[reflect(dir, t->childtype)];
    return n;
}

static long sum_adjacent(quad *p, int q1, int q2, long size) {
    if (p->color == GREY)
        return sum_adjacent(p->child[q1], q1, q2, size / 2) + sum_adjacent(p->child[q2], q1, q2, size / 2);
    if (p->color == WHITE) return size;
    return 0;
}

static long perimeter(quad *t, long size) {
    if (t->color == GREY) {
        long r = 0;
        for (int i = 0; i < 4; i++) r += perimeter(t->child[i], size / 2);
        return r;
    }
    if (t->color == WHITE) return 0;
    static const int facing[4][2] = {{SW, SE}, {NW, SW}, {NW, NE}, {NE, SE}};
    long r = 0;
    for (int dir = 0; dir < 4; dir++) {
        quad *n = gtequal_adj_neighbor(t, dir);
        if (!n || n->color == WHITE)
            r += size;
        else if (n->color == GREY)
            r += sum_adjacent(n, facing[dir][0], facing[dir][1], size);
    }
    return r;
}

static void destroy(quad *q) {
    if (q->color == GREY)
        for (int i = 0; i < 4; i++) destroy(q->child[i]);
    free(q);
}

int main(int argc, char **argv) {
    int levels = (int)wl_arg(argc, argv, 1, 10);
    long passes = wl_arg(argc, argv, 2, 4);
    if (levels < 2 || levels > 24) {
        fprintf(stderr, "perimeter: levels must be 2..24\n");
        return 2;
    }
    long long size = 1LL << levels;
    /* disc slightly off centre, in doubled coordinates */
    cx = size + 3;
    cy = size - 5;
    long long r = size * 7 / 8; /* doubled radius */
    radius2 = r * r;
    quad *root = make_tree(0, 0, size, NULL, 0);
    uint64_t h = 0;
    long p = 0;
    for (long i = 0; i < passes; i++) {
        p = perimeter(root, (long)size);
        h = wl_mix(h, (uint64_t)p + (uint64_t)i);
    }
    printf("nodes: %ld perimeter: %ld\n", node_count, p);
    printf("checksum: %llu\n", (unsigned long long)h);
    destroy(root);
    return 0;
}
