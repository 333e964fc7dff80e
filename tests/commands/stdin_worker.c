/* A program that reads its input from stdin, for the --stdin tests of run, profile, bench,
 * simulate and optimize.
 *
 *   stdin_worker list      numbers on stdin -> a linked list of heap cells, walked a few
 *                          times; prints "count N sum S"
 *   stdin_worker compute   numbers on stdin -> a few heap objects, then arithmetic that
 *                          touches no heap (where the layout cannot matter); the first
 *                          number is the work in millions of steps; prints "checksum C"
 *
 * Without input (a run that got /dev/null instead of the file) both say "no input" on
 * stderr and exit 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cell {
    struct cell *next;
    long value;
};

static int list_mode(void) {
    struct cell *head = NULL;
    long v, count = 0, sum = 0;
    while (scanf("%ld", &v) == 1) {
        struct cell *c = malloc(sizeof *c);
        if (!c) return 1;
        c->value = v;
        c->next = head;
        head = c;
        count++;
    }
    for (int pass = 0; pass < 4; pass++)
        for (struct cell *c = head; c; c = c->next) sum += c->value;
    if (count == 0) {
        fputs("stdin_worker: no input\n", stderr);
        return 3;
    }
    printf("count %ld sum %ld\n", count, sum / 4);
    while (head) {
        struct cell *next = head->next;
        free(head);
        head = next;
    }
    return 0;
}

static int compute_mode(void) {
    long v, steps = 0, n = 0;
    long *seeds = calloc(16, sizeof *seeds);
    if (!seeds) return 1;
    while (scanf("%ld", &v) == 1) {
        if (n == 0) steps = v * 1000000L;
        seeds[n++ % 16] ^= v;
    }
    if (n == 0) {
        fputs("stdin_worker: no input\n", stderr);
        return 3;
    }
    unsigned long x = 88172645463325252UL;
    for (long i = 0; i < steps; i++) { /* xorshift: registers only */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    for (int i = 0; i < 16; i++) x += (unsigned long)seeds[i];
    printf("checksum %lu\n", x);
    free(seeds);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "compute") == 0) return compute_mode();
    return list_mode();
}
