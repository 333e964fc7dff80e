/* The dpa policy's x86-64 decoder alone (runtime/src/dpa_decode.c), for tests/test_dpa.py:
 * each input line is one instruction in hex (as objdump prints it); the output line is the
 * length our decoder finds for it (0: not decoded), then its kind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpa.h"

int main(void) {
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    uint8_t buf[32];
    size_t n = 0;
    for (char *p = line; *p && n < 16;) {
      while (*p == ' ') p++;
      if (!p[0] || !p[1] || p[0] == '\n') break;
      char hex[3] = {p[0], p[1], 0};
      buf[n++] = (uint8_t)strtoul(hex, NULL, 16);
      p += 2;
    }
    memset(buf + n, 0x90, sizeof buf - n); /* what follows the instruction: never read past it */
    dpa_insn in;
    int len = hl_dpa_decode(buf, buf + n, &in);
    printf("%d %d\n", len, len ? in.kind : 0);
  }
  return 0;
}
