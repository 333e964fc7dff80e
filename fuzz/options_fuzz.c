/* libFuzzer harness for the runtime's environment settings (runtime/src/options.c,
 * hl_options_parse): the input is an environment, one NAME=value per line. Whatever it
 * holds, the settings that come out are within the runtime's limits or the policy is off,
 * and nothing crashes (ASan, UBSan). See fuzz/README.md. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PROMISE(x) ((x) ? (void)0 : abort())

/* util.c's, without the write to stderr: the message is formatted (so its format and
 * arguments are exercised) and dropped. */
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
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  enum { MAX_VARS = 64 };
  char *copy = malloc(size + 1);
  memcpy(copy, data, size);
  copy[size] = '\0';
  const char *env[MAX_VARS + 1];
  int n = 0;
  for (char *line = copy; n < MAX_VARS;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    env[n++] = line;
    if (!nl) break;
    line = nl + 1;
  }
  env[n] = NULL;
  hl_options opt;
  hl_options_parse(&opt, env, 0);
  PROMISE(opt.policy == HL_POLICY_OFF || opt.policy == HL_POLICY_CALLSITE || opt.policy == HL_POLICY_PLAN ||
          opt.policy == HL_POLICY_DPA);
  PROMISE(memchr(opt.plan, '\0', sizeof opt.plan) && memchr(opt.stats_json, '\0', sizeof opt.stats_json));
  if (opt.policy != HL_POLICY_OFF) {
    PROMISE(opt.chunk_size >= HL_MIN_CHUNK_SIZE && opt.chunk_size <= HL_MAX_CHUNK_SIZE);
    PROMISE((opt.chunk_size & (opt.chunk_size - 1)) == 0);
    PROMISE(opt.range_size >= 16 * opt.chunk_size && opt.range_size <= (1ull << 40));
    PROMISE(opt.max_size >= 1 && opt.max_size <= HL_MAX_CLASS_SIZE);
    PROMISE(opt.cc_block >= HL_MIN_CC_BLOCK && opt.cc_block <= HL_MAX_CC_BLOCK);
    PROMISE(opt.chunk_colors >= 1 && opt.chunk_colors <= HL_CHUNK_COLORS);
    PROMISE(opt.spare_chunks <= HL_MAX_SPARE_CHUNKS);
    PROMISE(opt.min_align == 0 || opt.min_align == 8 || opt.min_align == 16);
    PROMISE(opt.policy != HL_POLICY_PLAN || opt.plan[0] != '\0');
  }
  free(copy);
  return 0;
}
