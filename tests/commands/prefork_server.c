/* A pre-forking server in miniature: the parent builds a table of records (its "config"),
 * then forks workers without exec; each worker walks the inherited records, frees some of
 * them and allocates records of its own, and the parent walks the table once at the end.
 * tests/test_profiler_fork.py: every worker writes a profile of its own that counts the
 * records it inherited as its objects, with its accesses only. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct rec {
  struct rec *next;
  long key, value;
};

static struct rec *build(long n, long base) {
  struct rec *head = NULL;
  for (long i = 0; i < n; i++) {
    struct rec *r = malloc(sizeof *r);
    if (!r) exit(1);
    r->key = base + i;
    r->value = (base + i) * 3;
    r->next = head;
    head = r;
  }
  return head;
}

static long walk(const struct rec *r, int passes) {
  long s = 0;
  for (int p = 0; p < passes; p++)
    for (const struct rec *q = r; q; q = q->next) s += q->key ^ q->value;
  return s;
}

static struct rec *own_records(long n, long base) { return build(n, base); }

int main(int argc, char **argv) {
  int workers = argc > 1 ? atoi(argv[1]) : 2;
  long n = argc > 2 ? atol(argv[2]) : 20000;
  struct rec *table = build(n, 0);
  for (int k = 0; k < workers; k++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      long s = walk(table, 10);
      struct rec *mine = own_records(n / 2, 1000000L * (k + 1));
      s += walk(mine, 5);
      /* drop the first quarter of the inherited table */
      for (long i = 0; i < n / 4 && table; i++) {
        struct rec *nx = table->next;
        free(table);
        table = nx;
      }
      printf("worker %d sum %ld\n", k, s + walk(table, 1));
      exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  printf("parent sum %ld\n", walk(table, 1));
  return 0;
}
