/* A stand-in "custom allocator" for the --allocator PATH tests: a shared library that
 * defines the malloc family and forwards to glibc's own entry points (__libc_malloc...).
 * It counts its calls and, when HL_WRAP_LOG names a file, appends "wrap PID MALLOCS" to it
 * at exit, so a test can see that the library was really preloaded and used. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static unsigned long calls;

void *malloc(size_t n) {
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return __libc_malloc(n);
}
void free(void *p) { __libc_free(p); }
void *calloc(size_t n, size_t size) {
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return __libc_realloc(p, n);
}
void *memalign(size_t align, size_t n) {
    __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
    return __libc_memalign(align, n);
}
void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1))) return EINVAL;
    void *p = memalign(align, n);
    if (!p && n) return ENOMEM;
    *out = p;
    return 0;
}

__attribute__((destructor)) static void report(void) {
    const char *log = getenv("HL_WRAP_LOG");
    if (!log || !*log) return;
    char line[64];
    int len = snprintf(line, sizeof line, "wrap %ld %lu\n", (long)getpid(), calls);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return;
    if (write(fd, line, (size_t)len) < 0) { /* nothing to do: the test will see no line */ }
    close(fd);
}
