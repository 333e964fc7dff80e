/* A client that forks workers and then waits for every child it has, until wait() says there
 * are none: run under `heaplayout simulate --oracle`, it must not wait for the tool's oracle
 * helper. Each process allocates and walks a list so that there is heap traffic to simulate. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct node { struct node *next; long v; };

static long walk(int n) {
  struct node *head = NULL;
  for (int i = 0; i < n; i++) {
    struct node *x = malloc(sizeof *x);
    x->v = i;
    x->next = head;
    head = x;
  }
  long s = 0;
  while (head) {
    struct node *x = head;
    s += x->v;
    head = x->next;
    free(x);
  }
  return s;
}

int main(int argc, char **argv) {
  int workers = argc > 1 ? atoi(argv[1]) : 2;
  for (int w = 0; w < workers; w++) {
    pid_t p = fork();
    if (p == 0) _exit(walk(1000 * (w + 1)) == (long)(1000 * (w + 1)) * (1000 * (w + 1) - 1) / 2 ? 0 : 1);
  }
  int reaped = 0, failed = 0, status;
  while (wait(&status) > 0) {  /* every child, then ECHILD */
    reaped++;
    if (!WIFEXITED(status) || WEXITSTATUS(status)) failed++;
  }
  printf("reaped %d failed %d sum %ld\n", reaped, failed, walk(5000));
  return failed ? 1 : 0;
}
