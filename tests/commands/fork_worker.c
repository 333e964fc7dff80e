/* A program whose work is done by children it forks without exec (as a pre-forking server
 * or a parallel tool running itself does): each child builds and sums a list of heap cells;
 * the parent only waits. tests/test_target.py: optimize's census counts the children, the
 * profiler follows the parent only, and optimize says so. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct cell {
  struct cell *next;
  long value;
};

static long work(long n) {
  struct cell *head = NULL;
  for (long i = 0; i < n; i++) {
    struct cell *c = malloc(sizeof *c);
    if (!c) exit(1);
    c->value = i;
    c->next = head;
    head = c;
  }
  long s = 0;
  for (int pass = 0; pass < 20; pass++)
    for (struct cell *c = head; c; c = c->next) s += c->value;
  return s;
}

int main(int argc, char **argv) {
  int children = argc > 1 ? atoi(argv[1]) : 2;
  long n = argc > 2 ? atol(argv[2]) : 200000;
  for (int k = 0; k < children; k++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      printf("child %d sum %ld\n", k, work(n));
      exit(0);  /* exit, not _exit: stdio flushed and the runtime's exit handlers run */
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  printf("parent done\n");
  return 0;
}
