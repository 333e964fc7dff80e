/* Seccomp filters: the runtime must not make a system call the program's filter forbids.
 *
 * dpa's shape sampling reads objects of the allocator underneath with process_vm_readv
 * (dpa_shape.c), a call the program itself never makes. A hardened program forbids it:
 * systemd's SystemCallFilter=~@debug, or a sandbox that lists what it allows, kills the
 * process with SIGSYS on it (a program that installs such a filter and then builds lists
 * died under dpa, and ran fine alone: tests/test_runtime_sandbox.py). So those reads stop for good once a
 * filter may be in force: one the process inherited (seen at start in /proc/self/status,
 * which it can still read: the loader opened its libraries under the same filter), or one
 * the program installs through libc's prctl or syscall (libseccomp uses either), wrapped
 * here. A filter installed by a raw system call instruction is not seen. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dpa.h"

/* Under the DPA lock, which every sample holds while it reads (dpa_policy.c): once this
 * returns, no read is in flight, and none starts. */
static void no_more_remote_reads(void) {
  hl_dpa_lock();
  hl_dpa_remote_reads_off();
  hl_dpa_unlock();
}

void hl_sandbox_check_inherited(void) {
  int saved = errno; /* the program's first malloc must not change errno */
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  char buf[4096];
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0) close(fd);
  errno = saved;
  if (n <= 0) { /* cannot tell: assume a filter */
    hl_dpa_remote_reads_off();
    return;
  }
  buf[n] = 0;
  const char *s = strstr(buf, "\nSeccomp:");
  if (s != NULL)
    for (s += 9; *s == ' ' || *s == '\t'; s++) continue;
  /* "0": none; 1 strict, 2 filter. A status without the line (it is near the end, past
   * 4 KiB only with a very long group list): assume one */
  if (s == NULL || *s != '0') hl_dpa_remote_reads_off();
}

/* The next definitions (libc's), found on first use. */
static void *next_fn(void **slot, const char *name) {
  void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    f = dlsym(RTLD_NEXT, name);
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  }
  return f;
}

/* glibc's prctl takes up to four more arguments, syscall up to six: reading an argument
 * the caller did not pass reads a register or a stack word, which the call below ignores,
 * as the kernel does. */
static void *next_prctl, *next_syscall;

/* At start (init.c), where dlsym may allocate: so that a first call from a signal handler
 * (syscall(SYS_futex) in one, say) finds libc's at once, never in dlsym. */
void hl_sandbox_resolve(void) {
  (void)next_fn(&next_prctl, "prctl");
  (void)next_fn(&next_syscall, "syscall");
}

HL_EXPORT int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
  unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  if (option == PR_SET_SECCOMP) no_more_remote_reads();
  int (*f)(int, ...) = (int (*)(int, ...))next_fn(&next_prctl, "prctl");
  return f(option, a2, a3, a4, a5);
}

HL_EXPORT long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
  long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
  va_end(ap);
#ifdef SYS_seccomp
  if (number == SYS_seccomp) no_more_remote_reads();
#endif
  long (*f)(long, ...) = (long (*)(long, ...))next_fn(&next_syscall, "syscall");
  return f(number, a1, a2, a3, a4, a5, a6);
}
