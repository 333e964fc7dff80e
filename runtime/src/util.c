/* Messages without malloc: the runtime may be asked to speak from inside malloc. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

int hl_format(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, cap, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= cap) n = (int)cap - 1;
  return n;
}

void hl_message(const char *fmt, ...) {
  char buf[1024];
  int n = hl_format(buf, sizeof buf, "heaplayout: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) m = 0;
  n += m;
  if ((size_t)n > sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t ignored = write(2, buf, (size_t)n);
  (void)ignored;
}

#ifdef HL_DEBUG
void hl_assert_fail(const char *expr, const char *file, int line) {
  hl_message("internal assertion failed: %s (%s:%d)", expr, file, line);
  abort();
}
#endif
