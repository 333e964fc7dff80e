// The C library functions whose effect on pointers the analysis knows. The list is small on
// purpose: a function missing here is treated as unknown, which is always safe (its
// arguments' data structures stay on malloc), never wrong.
#include "ExternalFunctions.h"

#include "llvm/ADT/StringSwitch.h"

using namespace llvm;

namespace hlapa {

CalleeKind classifyCallee(StringRef Name, bool IsIntrinsic) {
  if (IsIntrinsic) {
    if (Name.startswith("llvm.memcpy") || Name.startswith("llvm.memmove")) return CalleeKind::MemCopy;
    // Intrinsics that return their first argument (or a pointer into it): ptrmask, the
    // invariant-group ones, the annotations, expect, and threadlocal.address, through which
    // clang 16 reaches every __thread/_Thread_local variable (the result is the variable).
    if (Name.startswith("llvm.ptrmask") || Name.startswith("llvm.launder") || Name.startswith("llvm.strip") ||
        Name.startswith("llvm.threadlocal.address") || Name.startswith("llvm.ptr.annotation") ||
        Name.startswith("llvm.annotation") || Name.startswith("llvm.expect") || Name.startswith("llvm.ssa.copy"))
      return CalleeKind::ReturnsArg0;
    if (Name.startswith("llvm.va_start") || Name.startswith("llvm.va_copy")) return CalleeKind::Unknown;
    return CalleeKind::Intrinsic;
  }
  return StringSwitch<CalleeKind>(Name)
      .Case("malloc", CalleeKind::Malloc)
      .Case("calloc", CalleeKind::Calloc)
      .Case("realloc", CalleeKind::Realloc)
      .Case("free", CalleeKind::Free)
      .Cases("memcpy", "memmove", "__memcpy_chk", "__memmove_chk", CalleeKind::MemCopy)
      .Cases("strchr", "strrchr", "strstr", "strpbrk", "memchr", "memrchr", CalleeKind::ReturnsArg0)
      .Cases("strcpy", "strncpy", "strcat", "strncat", "stpcpy", "fgets", CalleeKind::ReturnsArg0)
      .Cases("memset", "__memset_chk", CalleeKind::ReturnsArg0)
      .Cases("strtol", "strtoul", "strtoll", "strtoull", "strtod", "strtof", "strtold", CalleeKind::StrToNum)
      .Cases("__isoc23_strtol", "__isoc23_strtoul", "__isoc23_strtoll", "__isoc23_strtoull", CalleeKind::StrToNum)
      .Cases("getenv", "fopen", "fdopen", "strerror", "__errno_location", "localtime", "gmtime",
             CalleeKind::ExternalResult)
      .Cases("printf", "fprintf", "sprintf", "snprintf", "vprintf", "vfprintf", "vsnprintf", "vsprintf",
             CalleeKind::NoCapture)
      .Cases("__printf_chk", "__fprintf_chk", "__sprintf_chk", "__snprintf_chk", CalleeKind::NoCapture)
      .Cases("puts", "fputs", "putchar", "putc", "fputc", "fwrite", "fread", "fflush", CalleeKind::NoCapture)
      .Cases("fclose", "fseek", "ftell", "rewind", "feof", "ferror", "getc", "fgetc", "getchar",
             CalleeKind::NoCapture)
      .Cases("__isoc99_sscanf", "__isoc99_scanf", "__isoc99_fscanf", "sscanf", "scanf", "fscanf",
             CalleeKind::NoCapture)
      .Cases("strlen", "strnlen", "strcmp", "strncmp", "strcasecmp", "strncasecmp", "memcmp", "bcmp",
             CalleeKind::NoCapture)
      .Cases("atoi", "atol", "atoll", "atof", "abs", "labs", "llabs", CalleeKind::NoCapture)
      .Cases("exit", "_exit", "abort", "perror", "__assert_fail", "srand", "rand", "random", "srandom",
             CalleeKind::NoCapture)
      .Cases("time", "clock", "clock_gettime", "gettimeofday", "usleep", "sleep", CalleeKind::NoCapture)
      .Cases("sqrt", "exp", "log", "pow", "sin", "cos", "fabs", "floor", "ceil", "fmod", CalleeKind::NoCapture)
      .Cases("toupper", "tolower", "isalpha", "isdigit", "isspace", "isalnum", "isupper", "islower",
             CalleeKind::NoCapture)
      .Default(CalleeKind::Unknown);
}

const char *calleeKindName(CalleeKind K) {
  switch (K) {
  case CalleeKind::Malloc: return "malloc";
  case CalleeKind::Calloc: return "calloc";
  case CalleeKind::Realloc: return "realloc";
  case CalleeKind::Free: return "free";
  case CalleeKind::NoCapture: return "no-capture";
  case CalleeKind::ReturnsArg0: return "returns-arg0";
  case CalleeKind::MemCopy: return "memcopy";
  case CalleeKind::StrToNum: return "strtonum";
  case CalleeKind::ExternalResult: return "external-result";
  case CalleeKind::Intrinsic: return "intrinsic";
  case CalleeKind::Unknown: return "unknown";
  }
  return "?";
}

} // namespace hlapa
