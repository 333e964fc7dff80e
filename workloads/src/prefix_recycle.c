/* prefix_recycle: PreFix's object-recycling pattern (swissmap/leela-like). Millions of
 * short-lived request objects, each with a payload buffer of varying size, are created, used
 * and freed, with at most a small window of them live at once. Rarely a request leaves a
 * long-lived summary record, and the growing list of summaries is walked regularly; those
 * records are scattered between the recycled request memory.
 * usage: prefix_recycle <requests> <window>
 */
#include <string.h>
#include "wl_common.h"

typedef struct request {
    int id;
    int kind;
    int len;
    int status;
    unsigned char *payload;
    struct request *peer;
} request;

typedef struct summary {
    long id;
    long digest;
    struct summary *next;
} summary;

__attribute__((noinline)) static request *new_request(int id, wl_rng *r) {
    request *q = (request *)malloc(sizeof *q);
    if (!q) wl_oom("request");
    q->id = id;
    q->kind = (int)wl_below(r, 4);
    q->len = 16 + (int)wl_below(r, 16) * 12 + q->kind * 40;
    q->payload = (unsigned char *)malloc((size_t)q->len);
    if (!q->payload) wl_oom("payload");
    for (int i = 0; i < q->len; i += 8) q->payload[i] = (unsigned char)(id + i);
    q->status = 0;
    q->peer = NULL;
    return q;
}

static long digest(const request *q) {
    long d = q->kind;
    for (int i = 0; i < q->len; i += 8) d = d * 31 + q->payload[i];
    if (q->peer) d ^= q->peer->id;
    return d;
}

int main(int argc, char **argv) {
    long nreq = wl_arg(argc, argv, 1, 200000);
    int window = (int)wl_arg(argc, argv, 2, 64);
    if (window < 2 || window > 1 << 20) {
        fprintf(stderr, "prefix_recycle: window must be 2..1048576\n");
        return 2;
    }
    wl_rng rng;
    wl_seed(&rng, 42);
    request **live = (request **)calloc((size_t)window, sizeof(request *));
    if (!live) wl_oom("window");
    summary *sums = NULL;
    long nsum = 0;
    uint64_t h = 0, walk = 0;
    for (long i = 0; i < nreq; i++) {
        int slot = (int)(i % window);
        if (live[slot]) { /* the oldest request retires */
            request *old = live[slot];
            long d = digest(old);
            h = wl_mix(h, (uint64_t)d);
            if ((d & 255) == 7) {
                summary *s = (summary *)malloc(sizeof *s);
                if (!s) wl_oom("summary");
                s->id = old->id;
                s->digest = d;
                s->next = sums;
                sums = s;
                nsum++;
            }
            free(old->payload);
            free(old);
        }
        request *q = new_request((int)i, &rng);
        q->peer = live[(slot + window / 2) % window];
        if (q->peer) q->peer->status++;
        live[slot] = q;
        /* requests that point at a retiring peer must forget it */
        request *next_victim = live[(slot + 1) % window];
        if (next_victim)
            for (int k = 0; k < window; k++)
                if (live[k] && live[k]->peer == next_victim) live[k]->peer = NULL;
        if ((i & 4095) == 4095)
            for (summary *s = sums; s; s = s->next) walk += (uint64_t)(s->digest & 0xffff) + (uint64_t)s->id;
    }
    for (int k = 0; k < window; k++)
        if (live[k]) {
            h = wl_mix(h, (uint64_t)digest(live[k]));
        }
    for (int k = 0; k < window; k++)
        if (live[k]) {
            free(live[k]->payload);
            free(live[k]);
        }
    free(live);
    printf("requests: %ld summaries: %ld walk: %llu\n", nreq, nsum, (unsigned long long)walk);
    printf("checksum: %llu\n", (unsigned long long)wl_mix(h, walk));
    while (sums) {
        summary *n = sums->next;
        free(sums);
        sums = n;
    }
    return 0;
}
