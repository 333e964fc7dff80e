/* health: the Colombian health-care simulation of Olden.
 * A 4-ary tree of villages, each with a hospital holding doubly linked patient lists
 * (waiting, assess, inside, up) whose list cells are allocated apart from the patients.
 * Every time step walks every list; patients move between lists and up the tree, and the
 * "returned" lists grow without bound, so the walks chase pointers over many MB.
 * usage: health <levels> <time-steps> <seed>
 */
#include "wl_common.h"

struct village;

typedef struct patient {
    int hosps_visited;
    int time;
    int time_left;
    struct village *home;
} patient;

typedef struct lcell {
    patient *p;
    struct lcell *back;
    struct lcell *forward;
} lcell;

/* a list is a dummy head cell: forward is the first real cell */
typedef struct hospital {
    int personnel;
    int free_personnel;
    lcell waiting, assess, inside, up;
} hospital;

typedef struct village {
    struct village *child[4];
    struct village *parent;
    lcell returned;
    hospital hosp;
    int label;
    uint64_t seed;
} village;

static uint64_t village_rand(village *v) {
    v->seed = v->seed * 6364136223846793005ull + 1442695040888963407ull;
    return v->seed >> 33; /* 31 bits */
}

/* append at the end, walking the list as Olden does */
static void list_add(lcell *head, patient *p) {
    lcell *c = (lcell *)malloc(sizeof *c);
    if (!c) wl_oom("list cell");
    lcell *b = head;
    while (b->forward) b = b->forward;
    c->p = p;
    c->forward = NULL;
    c->back = b;
    b->forward = c;
}

/* find the cell of p and unlink it */
static void list_remove(lcell *head, patient *p) {
    lcell *c = head->forward;
    while (c && c->p != p) c = c->forward;
    if (!c) {
        fprintf(stderr, "health: patient not in list\n");
        exit(4);
    }
    c->back->forward = c->forward;
    if (c->forward) c->forward->back = c->back;
    free(c);
}

static village *alloc_tree(int level, int label, village *parent, uint64_t seed) {
    if (level == 0) return NULL;
    village *v = (village *)calloc(1, sizeof *v);
    if (!v) wl_oom("village");
    v->parent = parent;
    v->label = label;
    v->seed = seed * 2654435761u + (uint64_t)label * 40503u + 12345u;
    v->hosp.personnel = 1 << (level - 1);
    v->hosp.free_personnel = v->hosp.personnel;
    for (int i = 0; i < 4; i++) v->child[i] = alloc_tree(level - 1, label * 4 + i + 1, v, seed);
    return v;
}

static void put_in_hosp(hospital *h, patient *p) {
    p->hosps_visited++;
    if (h->free_personnel > 0) {
        h->free_personnel--;
        list_add(&h->assess, p);
        p->time_left = 3;
        p->time += 3;
    } else {
        list_add(&h->waiting, p);
    }
}

static void check_inside(village *v) {
    hospital *h = &v->hosp;
    lcell *c = h->inside.forward;
    while (c) {
        patient *p = c->p;
        c = c->forward;
        if (--p->time_left == 0) {
            h->free_personnel++;
            list_remove(&h->inside, p);
            list_add(&p->home->returned, p);
        }
    }
}

static void check_assess(village *v) {
    hospital *h = &v->hosp;
    lcell *c = h->assess.forward;
    while (c) {
        patient *p = c->p;
        c = c->forward;
        if (--p->time_left == 0) {
            if ((village_rand(v) % 10) != 0 || v->parent == NULL) {
                list_remove(&h->assess, p);
                list_add(&h->inside, p);
                p->time_left = 10;
                p->time += 10;
            } else {
                h->free_personnel++;
                list_remove(&h->assess, p);
                list_add(&h->up, p);
            }
        }
    }
}

static void check_waiting(village *v) {
    hospital *h = &v->hosp;
    lcell *c = h->waiting.forward;
    while (c) {
        patient *p = c->p;
        c = c->forward;
        if (h->free_personnel > 0) {
            h->free_personnel--;
            p->time_left = 3;
            p->time += 3;
            list_remove(&h->waiting, p);
            list_add(&h->assess, p);
        } else {
            p->time++;
        }
    }
}

static void generate_patient(village *v) {
    if (village_rand(v) % 3 != 0) { /* two thirds of the time */
        patient *p = (patient *)malloc(sizeof *p);
        if (!p) wl_oom("patient");
        p->hosps_visited = 0;
        p->time = 0;
        p->time_left = 0;
        p->home = v;
        put_in_hosp(&v->hosp, p);
    }
}

static void sim(village *v) {
    if (!v) return;
    for (int i = 0; i < 4; i++) {
        village *c = v->child[i];
        if (!c) continue;
        sim(c);
        /* move the child's up-list into this hospital */
        lcell *cell = c->hosp.up.forward;
        while (cell) {
            patient *p = cell->p;
            lcell *next = cell->forward;
            free(cell);
            put_in_hosp(&v->hosp, p);
            cell = next;
        }
        c->hosp.up.forward = NULL;
    }
    check_inside(v);
    check_assess(v);
    check_waiting(v);
    generate_patient(v);
}

typedef struct { uint64_t patients, total_time, total_hosps; } results;

static void get_results(village *v, results *r) {
    if (!v) return;
    for (int i = 0; i < 4; i++) get_results(v->child[i], r);
    for (lcell *c = v->returned.forward; c; c = c->forward) {
        r->patients++;
        r->total_time += (uint64_t)c->p->time;
        r->total_hosps += (uint64_t)c->p->hosps_visited;
    }
}

static void free_list(lcell *head, int free_patients) {
    lcell *c = head->forward;
    while (c) {
        lcell *n = c->forward;
        if (free_patients) free(c->p);
        free(c);
        c = n;
    }
    head->forward = NULL;
}

static void free_tree(village *v) {
    if (!v) return;
    for (int i = 0; i < 4; i++) free_tree(v->child[i]);
    free_list(&v->returned, 1);
    free_list(&v->hosp.waiting, 1);
    free_list(&v->hosp.assess, 1);
    free_list(&v->hosp.inside, 1);
    free_list(&v->hosp.up, 1);
    free(v);
}

int main(int argc, char **argv) {
    int levels = (int)wl_arg(argc, argv, 1, 5);
    int steps = (int)wl_arg(argc, argv, 2, 50);
    uint64_t seed = (uint64_t)wl_arg(argc, argv, 3, 1);
    if (levels < 1 || levels > 12) {
        fprintf(stderr, "health: levels must be 1..12\n");
        return 2;
    }
    village *top = alloc_tree(levels, 0, NULL, seed);
    for (int t = 0; t < steps; t++) sim(top);
    results r = {0, 0, 0};
    get_results(top, &r);
    printf("patients: %llu time: %llu hosps: %llu\n", (unsigned long long)r.patients,
           (unsigned long long)r.total_time, (unsigned long long)r.total_hosps);
    uint64_t h = wl_mix(wl_mix(wl_mix(0, r.patients), r.total_time), r.total_hosps);
    printf("checksum: %llu\n", (unsigned long long)h);
    free_tree(top);
    return 0;
}
