// Randomized allocator stress test for the heaplayout runtime.
//
//   stress THREADS OPS_PER_THREAD SEED
//
// Every worker thread runs a seeded random mix over the whole malloc family
// (malloc, calloc, realloc grow/shrink/to-and-from NULL/0, memalign, posix_memalign,
// aligned_alloc, valloc, reallocarray, malloc_usable_size, free) and the C++ operators
// (new/delete, new[]/delete[], sized delete, aligned new/delete, nothrow new), plus bursts
// of many small objects from a few hot call sites (list nodes, strings, map nodes) so that
// per-call-site pooling really kicks in. Every byte of every object carries a pattern that
// is written on allocation and verified before every free/realloc; alignment, calloc zeroing
// and malloc_usable_size are checked. Objects travel between threads through shared slots,
// so many are freed by a thread other than the one that allocated them. In the middle the
// main thread fork()s while the workers run; the child verifies the objects it inherited,
// allocates/frees on its own (also from a new thread) and exits 0.
//
// stdout is a deterministic summary (operation counts only: the same for any allocator,
// any scheduling); stderr gets the non-deterministic facts (cross-thread frees, time).
// Exit status: 0 when everything checked out, 1 on any detected corruption or failure.

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---------------------------------------------------------------- failure reporting

[[noreturn]] void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  // write(2) rather than stdio: the heap may be what is broken.
  char line[600];
  int n = snprintf(line, sizeof line, "stress: FAILURE: %s\n", buf);
  if (n > 0) {
    ssize_t ignored = write(2, line, (size_t)std::min(n, (int)sizeof line - 1));
    (void)ignored;
  }
  _exit(1);
}

// ---------------------------------------------------------------- random numbers

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  bool chance(unsigned percent) { return below(100) < percent; }
};

// ---------------------------------------------------------------- content pattern

// Byte i of an object is byte (i % 8) of the word W(tag, i / 8): position-dependent, so a
// shifted copy, a stale object or a neighbour's write is caught; and fast to write by words.
inline uint64_t word(uint64_t tag, size_t k) { return tag ^ ((uint64_t)(k + 1) * 0x9E3779B97F4A7C15ull); }
inline uint8_t pat(uint64_t tag, size_t i) { return (uint8_t)(word(tag, i >> 3) >> ((i & 7) * 8)); }

void fill(void *p, size_t from, size_t to, uint64_t tag) {
  uint8_t *b = (uint8_t *)p;
  size_t i = from;
  for (; i < to && (i & 7); i++) b[i] = pat(tag, i);
  for (; i + 8 <= to; i += 8) {
    uint64_t w = word(tag, i >> 3);
    memcpy(b + i, &w, 8);
  }
  for (; i < to; i++) b[i] = pat(tag, i);
}

// Returns the first bad offset in [from, to), or SIZE_MAX when all bytes match.
size_t check(const void *p, size_t from, size_t to, uint64_t tag) {
  const uint8_t *b = (const uint8_t *)p;
  size_t i = from;
  for (; i < to && (i & 7); i++)
    if (b[i] != pat(tag, i)) return i;
  for (; i + 8 <= to; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, 8);
    if (w != word(tag, i >> 3)) break;
  }
  for (; i < to; i++)
    if (b[i] != pat(tag, i)) return i;
  return SIZE_MAX;
}

// ---------------------------------------------------------------- object kinds

enum Family { F_MALLOC, F_NEW, F_NEWARR, F_ANEW, F_ANEWARR, NFAMILY };

// Slot i (local or shared) always holds objects of family slot_family(i): the sequence of
// operations a thread performs then depends only on its RNG, not on which objects other
// threads handed it, and the summary is deterministic.
constexpr int FAMILY_CYCLE = 10;
Family slot_family(int i) {
  static const Family f[FAMILY_CYCLE] = {F_MALLOC, F_MALLOC, F_MALLOC, F_MALLOC, F_MALLOC,
                                         F_NEW,    F_NEW,    F_NEWARR, F_ANEW,   F_ANEWARR};
  return f[i % FAMILY_CYCLE];
}

enum Kind {
  K_MALLOC, K_CALLOC, K_REALLOC_NULL, K_MEMALIGN, K_POSIX_MEMALIGN, K_ALIGNED_ALLOC, K_VALLOC,
  K_REALLOCARRAY, K_MALLOC0,
  K_NEW, K_NEW_NOTHROW,
  K_NEWARR, K_NEWARR_NOTHROW,
  K_ANEW, K_ANEW_NOTHROW,
  K_ANEWARR, K_ANEWARR_NOTHROW,
  NKIND
};
const char *const kind_name[NKIND] = {
    "malloc", "calloc", "realloc(NULL,n)", "memalign", "posix_memalign", "aligned_alloc", "valloc",
    "reallocarray(NULL,..)", "malloc(0)",
    "new", "new(nothrow)",
    "new[]", "new[](nothrow)",
    "new(align)", "new(align,nothrow)",
    "new[](align)", "new[](align,nothrow)",
};

enum FreeHow {
  D_FREE, D_DELETE, D_DELETE_SIZED, D_DELETEARR, D_DELETEARR_SIZED, D_DELETE_ALIGN,
  D_DELETE_ALIGN_SIZED, D_DELETEARR_ALIGN, D_DELETEARR_ALIGN_SIZED, D_REALLOC0, NFREE
};
const char *const free_name[NFREE] = {
    "free", "delete", "delete(sized)", "delete[]", "delete[](sized)", "delete(align)",
    "delete(align,sized)", "delete[](align)", "delete[](align,sized)", "realloc(p,0)",
};

enum Op {
  O_ALLOC, O_FREE, O_TOUCH, O_HANDOFF, O_REALLOC_GROW, O_REALLOC_SHRINK, O_REALLOC_RANDOM,
  O_REALLOCARRAY, O_USABLE, O_BURST, NOP
};
const char *const op_name[NOP] = {
    "alloc", "free", "verify+rewrite", "handoff", "realloc grow", "realloc shrink",
    "realloc random", "reallocarray", "malloc_usable_size", "burst",
};

struct Obj {
  void *p;
  size_t size;     // requested size
  size_t written;  // bytes carrying the pattern (>= size after a malloc_usable_size op)
  size_t align;    // alignment asked for (0 = default)
  uint64_t tag;
  int kind;
  int owner;       // thread that allocated it (0 = main thread)
};

struct Counts {
  uint64_t kind[NKIND] = {};
  uint64_t freed[NFREE] = {};
  uint64_t op[NOP] = {};
  uint64_t burst_objects = 0;
  uint64_t checksum = 0;      // deterministic: derived from RNG-chosen data only
  uint64_t cross_thread = 0;  // non-deterministic
  uint64_t frees_total = 0;   // non-deterministic split, deterministic sum per run
  void add(const Counts &o) {
    for (int i = 0; i < NKIND; i++) kind[i] += o.kind[i];
    for (int i = 0; i < NFREE; i++) freed[i] += o.freed[i];
    for (int i = 0; i < NOP; i++) op[i] += o.op[i];
    burst_objects += o.burst_objects;
    checksum += o.checksum;
    cross_thread += o.cross_thread;
    frees_total += o.frees_total;
  }
};

Family family_of(int kind) {
  if (kind <= K_MALLOC0) return F_MALLOC;
  if (kind <= K_NEW_NOTHROW) return F_NEW;
  if (kind <= K_NEWARR_NOTHROW) return F_NEWARR;
  if (kind <= K_ANEW_NOTHROW) return F_ANEW;
  return F_ANEWARR;
}

// Alignment every allocation of `size` bytes must have without an explicit request:
// suitable for any fundamental type that fits (glibc gives 16 always, jemalloc/mimalloc
// give 8 to an 8-byte object).
size_t natural_align(size_t size) {
  size_t a = 1;
  while (a < 16 && a * 2 <= size) a *= 2;
  return a;
}

// ---------------------------------------------------------------- sizes

size_t pick_size(Rng &r) {
  static const size_t hot[] = {8, 16, 24, 32, 40, 48, 64, 80, 96, 128};
  unsigned c = (unsigned)r.below(1000);
  if (c < 450) return hot[r.below(10)];
  if (c < 700) return 1 + r.below(128);
  if (c < 880) return 129 + r.below(1024 - 128);
  if (c < 975) return 1025 + r.below(16384 - 1024);
  if (c < 997) return 16385 + r.below(100000);
  return 128 * 1024 + r.below(900 * 1024);  // past glibc's mmap threshold
}

// STRESS_MAX_ALIGN caps the alignments asked for (valloc aside); the RNG sequence, hence the
// summary, stays the same. Debian's mimalloc 2.0.9 on its own (no heaplayout) returns
// misaligned blocks for 256-byte alignment in this mix (e.g. posix_memalign(256, 1024) ->
// ...d80), so runs on mimalloc set it to 128.
size_t max_align = 4096;

size_t pick_align(Rng &r, size_t min) {
  static const size_t al[] = {8, 16, 32, 64, 128, 256, 4096};
  size_t a;
  do a = al[r.below(7)]; while (a < min);
  return std::max(min, std::min(a, max_align));
}

// ---------------------------------------------------------------- checks

void check_obj(const Obj *o, const char *when) {
  if (o->p == nullptr) {
    if (o->size != 0) fail("%s: null pointer recorded for %zu-byte %s", when, o->size, kind_name[o->kind]);
    return;
  }
  size_t bad = check(o->p, 0, o->written, o->tag);
  if (bad != SIZE_MAX)
    fail("%s: corrupted byte at offset %zu of %zu-byte %s object %p (allocated by thread %d): 0x%02x, expected 0x%02x",
         when, bad, o->written, kind_name[o->kind], o->p, o->owner, ((uint8_t *)o->p)[bad], pat(o->tag, bad));
}

void check_align(const void *p, size_t size, size_t align, const char *what) {
  size_t need = std::max(align, natural_align(size));
  if (((uintptr_t)p & (need - 1)) != 0) fail("%s(%zu bytes, align %zu) returned %p, not %zu-aligned", what, size, align, p, need);
}

// ---------------------------------------------------------------- allocation / release

Obj *allocate(Rng &r, Family fam, int owner, Counts &c) {
  Obj *o = new Obj;  // a hot call site of its own (48-byte records)
  o->size = pick_size(r);
  o->align = 0;
  o->tag = r.next();
  o->owner = owner;
  void *p = nullptr;
  int k;
  switch (fam) {
    case F_MALLOC: {
      unsigned c = (unsigned)r.below(100);
      if (c < 40) k = K_MALLOC;
      else if (c < 55) k = K_CALLOC;
      else if (c < 63) k = K_REALLOC_NULL;
      else if (c < 70) k = K_MEMALIGN;
      else if (c < 77) k = K_POSIX_MEMALIGN;
      else if (c < 84) k = K_ALIGNED_ALLOC;
      else if (c < 88) k = K_VALLOC;
      else if (c < 97) k = K_REALLOCARRAY;
      else k = K_MALLOC0;
      switch (k) {
        case K_MALLOC: p = malloc(o->size); break;
        case K_CALLOC: {
          size_t n = 1 + r.below(8);
          o->size = (o->size + n - 1) / n * n;
          p = calloc(n, o->size / n);
          if (p) {
            const uint8_t *b = (const uint8_t *)p;
            for (size_t i = 0; i < o->size; i++)
              if (b[i]) fail("calloc(%zu, %zu) = %p: byte %zu is 0x%02x, not zero", n, o->size / n, p, i, b[i]);
          }
          break;
        }
        case K_REALLOC_NULL: p = realloc(nullptr, o->size); break;
        case K_MEMALIGN:
          o->align = pick_align(r, 8);
          p = memalign(o->align, o->size);
          break;
        case K_POSIX_MEMALIGN: {
          o->align = pick_align(r, sizeof(void *));
          int e = posix_memalign(&p, o->align, o->size);
          if (e != 0) fail("posix_memalign(%zu, %zu) failed: %d", o->align, o->size, e);
          break;
        }
        case K_ALIGNED_ALLOC:
          o->align = pick_align(r, 8);
          o->size = (o->size + o->align - 1) / o->align * o->align;
          p = aligned_alloc(o->align, o->size);
          break;
        case K_VALLOC:
          o->align = (size_t)sysconf(_SC_PAGESIZE);
          p = valloc(o->size);
          break;
        case K_REALLOCARRAY: {
          size_t n = 1 + r.below(4);
          o->size = (o->size + n - 1) / n * n;
          p = reallocarray(nullptr, n, o->size / n);
          break;
        }
        case K_MALLOC0:
          o->size = 0;
          p = malloc(0);  // NULL or a unique pointer: both fine, both freed with free()
          break;
      }
      break;
    }
    case F_NEW:
      k = r.chance(80) ? K_NEW : K_NEW_NOTHROW;
      p = k == K_NEW ? ::operator new(o->size) : ::operator new(o->size, std::nothrow);
      break;
    case F_NEWARR:
      k = r.chance(80) ? K_NEWARR : K_NEWARR_NOTHROW;
      p = k == K_NEWARR ? ::operator new[](o->size) : ::operator new[](o->size, std::nothrow);
      break;
    case F_ANEW:
      k = r.chance(80) ? K_ANEW : K_ANEW_NOTHROW;
      o->align = pick_align(r, 32);
      p = k == K_ANEW ? ::operator new(o->size, std::align_val_t(o->align))
                      : ::operator new(o->size, std::align_val_t(o->align), std::nothrow);
      break;
    default:
      k = r.chance(80) ? K_ANEWARR : K_ANEWARR_NOTHROW;
      o->align = pick_align(r, 32);
      p = k == K_ANEWARR ? ::operator new[](o->size, std::align_val_t(o->align))
                         : ::operator new[](o->size, std::align_val_t(o->align), std::nothrow);
      break;
  }
  o->kind = k;
  if (p == nullptr && o->size != 0) fail("%s of %zu bytes (align %zu) returned NULL", kind_name[k], o->size, o->align);
  if (p) check_align(p, o->size, o->align, kind_name[k]);
  o->p = p;
  o->written = o->size;
  if (p) fill(p, 0, o->size, o->tag);
  c.kind[k]++;
  c.op[O_ALLOC]++;
  return o;
}

// Frees o (verifying it first); `how_pick` is an RNG value that chooses among the valid ways.
void release(Obj *o, uint64_t how_pick, int me, Counts &c) {
  check_obj(o, "before free");
  bool sized = how_pick & 1;
  FreeHow how;
  switch (family_of(o->kind)) {
    case F_MALLOC:
      free(o->p);
      how = D_FREE;
      break;
    case F_NEW:
      if (sized) ::operator delete(o->p, o->size), how = D_DELETE_SIZED;
      else ::operator delete(o->p), how = D_DELETE;
      break;
    case F_NEWARR:
      if (sized) ::operator delete[](o->p, o->size), how = D_DELETEARR_SIZED;
      else ::operator delete[](o->p), how = D_DELETEARR;
      break;
    case F_ANEW:
      if (sized) ::operator delete(o->p, o->size, std::align_val_t(o->align)), how = D_DELETE_ALIGN_SIZED;
      else ::operator delete(o->p, std::align_val_t(o->align)), how = D_DELETE_ALIGN;
      break;
    default:
      if (sized) ::operator delete[](o->p, o->size, std::align_val_t(o->align)), how = D_DELETEARR_ALIGN_SIZED;
      else ::operator delete[](o->p, std::align_val_t(o->align)), how = D_DELETEARR_ALIGN;
      break;
  }
  c.freed[how]++;
  c.frees_total++;
  if (o->owner != me) c.cross_thread++;
  delete o;
}

// realloc o to n bytes; checks the preserved prefix and writes the new tail.
void do_realloc(Obj *o, size_t n, bool as_array, Rng &r) {
  check_obj(o, "before realloc");
  size_t keep = std::min(o->size, n);
  void *q;
  if (as_array) {
    size_t m = 1 + r.below(4);
    n = (n + m - 1) / m * m;
    keep = std::min(o->size, n);
    q = reallocarray(o->p, m, n / m);
  } else {
    q = realloc(o->p, n);
  }
  if (q == nullptr) fail("realloc(%p, %zu) of a %zu-byte %s returned NULL", o->p, n, o->size, kind_name[o->kind]);
  size_t bad = check(q, 0, keep, o->tag);
  if (bad != SIZE_MAX)
    fail("realloc %zu -> %zu bytes (%p -> %p) lost the content at offset %zu", o->size, n, o->p, q, bad);
  check_align(q, n, 0, "realloc");
  fill(q, keep, n, o->tag);
  o->p = q;
  o->size = o->written = n;
  o->align = 0;
}

// ---------------------------------------------------------------- shared state

constexpr int LOCAL_SLOTS = 320;   // per thread
constexpr int SHARED_SLOTS = 160;  // all threads; never empty

std::atomic<Obj *> shared_slots[SHARED_SLOTS];
std::atomic<uint64_t> progress{0};

// Bursts: many small objects from a few hot call sites, live at once, freed in random order.
struct Node {
  Node *next;
  uint64_t v[4];
};

uint64_t burst(Rng &r, Counts &c) {
  size_t n = 100 + r.below(200);
  uint64_t sum = 0;
  // 1. a linked list of 48-byte nodes (operator new, sized delete)
  Node *head = nullptr;
  for (size_t i = 0; i < n; i++) {
    Node *x = new Node;
    x->next = head;
    for (int j = 0; j < 4; j++) x->v[j] = i * 4 + j;
    head = x;
  }
  // 2. small malloc'd buffers from one call site
  std::vector<char *> bufs(n);
  for (size_t i = 0; i < n; i++) {
    bufs[i] = (char *)malloc(24);
    if (!bufs[i]) fail("malloc(24) returned NULL");
    memset(bufs[i], (int)(i & 0xff), 24);
  }
  // 3. strings past the small-string buffer, sorted
  std::vector<std::string> strs;
  for (size_t i = 0; i < n; i++) {
    std::string s(16 + r.below(48), 'a');
    for (auto &ch : s) ch = (char)('a' + r.below(26));
    strs.push_back(std::move(s));
  }
  std::sort(strs.begin(), strs.end());
  for (auto &s : strs)
    for (char ch : s) sum = sum * 131 + (uint8_t)ch;
  // 4. map nodes, half erased
  std::map<uint64_t, uint64_t> m;
  for (size_t i = 0; i < n; i++) m[r.below(1000)] += i;
  for (auto it = m.begin(); it != m.end();) it = (it->first & 1) ? m.erase(it) : std::next(it);
  for (auto &kv : m) sum += kv.first * kv.second;
  // verify and free lists/buffers in random order
  size_t i = n;
  for (Node *x = head; x; x = x->next) {
    i--;
    for (int j = 0; j < 4; j++)
      if (x->v[j] != i * 4 + j) fail("burst list node %zu corrupted", i);
  }
  std::vector<Node *> nodes;
  for (Node *x = head; x; x = x->next) nodes.push_back(x);
  for (size_t k = nodes.size(); k > 1; k--) std::swap(nodes[k - 1], nodes[r.below(k)]);
  for (Node *x : nodes) delete x;
  for (size_t k = n; k > 1; k--) std::swap(bufs[k - 1], bufs[r.below(k)]);
  for (size_t k = 0; k < n; k++) {
    char *b = bufs[k];
    for (int j = 1; j < 24; j++)
      if (b[j] != b[0]) fail("burst buffer corrupted");
    free(b);
  }
  c.burst_objects += 2 * n + strs.size() + m.size();
  return sum;
}

struct Worker {
  int id;  // 1..threads (0 = main thread)
  uint64_t ops;
  uint64_t seed;
  bool use_shared;
  Counts c;
  Obj *local[LOCAL_SLOTS] = {};

  void run() {
    Rng r(seed * 0x100000001B3ull + (uint64_t)id * 0x9E3779B97F4A7C15ull);
    for (uint64_t n = 0; n < ops; n++) {
      if ((n & 1023) == 1023) progress.fetch_add(1024, std::memory_order_relaxed);
      int i = (int)r.below(LOCAL_SLOTS);
      Family fam = slot_family(i);
      Obj *&o = local[i];
      if (o == nullptr) {
        o = allocate(r, fam, id, c);
        continue;
      }
      unsigned pick = (unsigned)r.below(1000);
      if (pick < 3) {
        c.op[O_BURST]++;
        c.checksum += burst(r, c);
      } else if (pick < 400) {
        c.op[O_FREE]++;
        release(o, r.next(), id, c);
        o = nullptr;
      } else if (pick < 680 && use_shared) {
        c.op[O_HANDOFF]++;
        int j = (int)(r.below(SHARED_SLOTS / FAMILY_CYCLE)) * FAMILY_CYCLE + i % FAMILY_CYCLE;
        Obj *got = shared_slots[j].exchange(o, std::memory_order_acq_rel);
        check_obj(got, "after handoff");
        o = got;
      } else if (fam == F_MALLOC && pick < 840) {
        unsigned sub = (unsigned)r.below(100);
        if (sub < 35) {
          c.op[O_REALLOC_GROW]++;
          size_t n2 = std::min<size_t>(o->size * 2 + 1 + r.below(64), 2u << 20);
          do_realloc(o, std::max(n2, o->size + 1), false, r);
        } else if (sub < 65) {
          c.op[O_REALLOC_SHRINK]++;
          do_realloc(o, std::max<size_t>(1, o->size / 2), false, r);
        } else if (sub < 85) {
          c.op[O_REALLOC_RANDOM]++;
          do_realloc(o, 1 + r.below(256), false, r);  // moves objects into and out of pool sizes
        } else if (sub < 93) {
          c.op[O_REALLOCARRAY]++;
          do_realloc(o, 1 + r.below(2 * o->size + 64), true, r);
        } else {
          // realloc(p, 0): frees (glibc) or returns a minimal object (others); both are freed.
          check_obj(o, "before realloc(p, 0)");
          void *q = realloc(o->p, 0);
          if (q) free(q);
          c.freed[D_REALLOC0]++;
          c.frees_total++;
          if (o->owner != id) c.cross_thread++;
          delete o;
          o = nullptr;
        }
      } else if (fam == F_MALLOC && pick < 880) {
        c.op[O_USABLE]++;
        check_obj(o, "before malloc_usable_size");
        if (o->p) {
          size_t u = malloc_usable_size(o->p);
          if (u < o->size) fail("malloc_usable_size(%p) = %zu < requested %zu (%s)", o->p, u, o->size, kind_name[o->kind]);
          if (u > o->size + (1u << 20) + 65536) fail("malloc_usable_size(%p) = %zu for %zu bytes: implausible", o->p, u, o->size);
          fill(o->p, o->size, u, o->tag);  // the whole usable size is the program's to use
          o->written = u;
        }
      } else if (pick < 930) {
        c.op[O_TOUCH]++;
        check_obj(o, "before rewrite");
        o->tag = r.next();
        if (o->p) fill(o->p, 0, o->written, o->tag);
      } else {
        c.op[O_FREE]++;
        release(o, r.next(), id, c);
        o = nullptr;
      }
    }
  }

  void finish() {
    for (auto &o : local)
      if (o) {
        release(o, 0, id, c);
        o = nullptr;
      }
  }
};

// ---------------------------------------------------------------- edge cases

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"  // q stays valid when reallocarray/realloc fail
// (errno after a failed malloc is not checked: mimalloc and tcmalloc leave it 0 in places.)
void edge_cases() {
  // volatile: keep the compiler from judging (and warning about) the impossible sizes
  volatile size_t huge = SIZE_MAX - 4096, max = SIZE_MAX, half = SIZE_MAX / 2 + 2;
  free(nullptr);
  ::operator delete(nullptr);
  ::operator delete[](nullptr);
  if (malloc_usable_size(nullptr) != 0) fail("malloc_usable_size(NULL) != 0");
  void *p = malloc(0);
  free(p);
  errno = 0;
  if (malloc(max) != nullptr) fail("malloc(max) did not fail");
  errno = 0;
  if (malloc(huge) != nullptr) fail("malloc(SIZE_MAX-4096) did not fail");
  errno = 0;
  if (calloc(half, 2) != nullptr) fail("calloc with an overflowing product did not fail");
  errno = 0;
  void *q = malloc(40);
  if (!q) fail("malloc(40) returned NULL");
  memset(q, 0x5a, 40);
  if (reallocarray(q, half, 2) != nullptr) fail("reallocarray with an overflowing product did not fail");
  for (int i = 0; i < 40; i++)
    if (((uint8_t *)q)[i] != 0x5a) fail("failed reallocarray changed the original object");
  errno = 0;
  if (realloc(q, huge) != nullptr) fail("realloc(p, huge) did not fail");
  for (int i = 0; i < 40; i++)
    if (((uint8_t *)q)[i] != 0x5a) fail("failed realloc changed the original object");
  free(q);
  void *r = nullptr;
  if (posix_memalign(&r, 3, 16) != EINVAL) fail("posix_memalign(align 3) did not return EINVAL");
  if (posix_memalign(&r, 24, 16) != EINVAL) fail("posix_memalign(align 24) did not return EINVAL");
  if (posix_memalign(&r, 4, 16) != EINVAL) fail("posix_memalign(align 4 < sizeof(void*)) did not return EINVAL");
  if (posix_memalign(&r, 64, huge) != ENOMEM) fail("posix_memalign(huge) did not return ENOMEM");
  if (::operator new(huge, std::nothrow) != nullptr) fail("new(nothrow) of a huge size returned memory");
  if (::operator new[](huge, std::align_val_t(64), std::nothrow) != nullptr) fail("aligned new[](nothrow) of a huge size returned memory");
  // (a throwing new of a huge size is not tried: libmimalloc's C build aborts instead of throwing)
  // free of a pointer in the middle of a big run of same-site small objects, out of order
  std::vector<void *> v;
  for (int i = 0; i < 5000; i++) {
    void *x = malloc(32);
    if (!x) fail("malloc(32) returned NULL");
    memset(x, i & 0xff, 32);
    v.push_back(x);
  }
  for (int i = 0; i < 5000; i += 2) free(v[i]);
  for (int i = 1; i < 5000; i += 2) {
    if (((uint8_t *)v[i])[31] != (i & 0xff)) fail("small object %d corrupted after neighbours were freed", i);
    free(v[i]);
  }
}

#pragma GCC diagnostic pop

// ---------------------------------------------------------------- thread churn, exit

// Short-lived threads: each allocates from hot sites, frees half itself and leaves the other
// half to the main thread, which frees them after the thread has exited (its pools are
// orphaned by then). Returns the number of objects; deterministic.
uint64_t thread_churn(uint64_t seed) {
  constexpr int ROUNDS = 30, PER_ROUND = 3, OBJECTS = 400;
  uint64_t total = 0;
  for (int round = 0; round < ROUNDS; round++) {
    std::vector<std::vector<Obj *>> left(PER_ROUND);
    std::vector<std::thread> ts;
    for (int t = 0; t < PER_ROUND; t++)
      ts.emplace_back([&left, t, round, seed] {
        Rng r(seed * 31 + (uint64_t)(round * PER_ROUND + t) + 77);
        Counts c;
        std::vector<Obj *> mine;
        for (int i = 0; i < OBJECTS; i++) mine.push_back(allocate(r, slot_family((int)r.below(FAMILY_CYCLE)), 500 + t, c));
        for (int i = 0; i < OBJECTS; i += 2) release(mine[i], r.next(), 500 + t, c);
        for (int i = 1; i < OBJECTS; i += 2) left[t].push_back(mine[i]);
      });
    for (auto &t : ts) t.join();
    Counts c;
    for (auto &v : left)
      for (Obj *o : v) {
        release(o, 0, 0, c);
        total++;
      }
  }
  return total * 2;
}

// A detached thread that keeps allocating and freeing while main() returns and the process
// exits (the runtime's exit-time work runs while it is still busy).
void start_busy_thread(uint64_t seed) {
  std::thread([seed] {
    Rng r(seed ^ 0xB0B5ull);
    Counts c;
    std::vector<Obj *> v(64, nullptr);
    for (;;) {
      Obj *&o = v[r.below(v.size())];
      if (o) {
        release(o, r.next(), 900, c);
        o = nullptr;
      } else {
        o = allocate(r, slot_family((int)r.below(FAMILY_CYCLE)), 900, c);
      }
    }
  }).detach();
}

// ---------------------------------------------------------------- fork

// In the child: verify and free what the shared slots hold, then a mix of our own, also from
// a new thread. Anything that hangs (an allocator lock held across fork) is killed by alarm.
void child_after_fork(uint64_t seed) {
  alarm(60);
  for (auto &s : shared_slots) {
    Obj *o = s.load(std::memory_order_acquire);
    check_obj(o, "in the fork child");
  }
  Counts c;
  for (int i = 0; i < SHARED_SLOTS; i += 2) {
    release(shared_slots[i].load(), (uint64_t)i, -1, c);
    shared_slots[i].store(nullptr);
  }
  Worker *w = new Worker{};
  w->id = 1000;
  w->ops = 20000;
  w->seed = seed ^ 0xC0FFEE;
  w->use_shared = false;
  std::thread t([w] {
    w->run();
    w->finish();
  });
  Worker *w2 = new Worker{};
  w2->id = 1001;
  w2->ops = 20000;
  w2->seed = seed ^ 0xF00D;
  w2->use_shared = false;
  w2->run();
  w2->finish();
  t.join();
  delete w;
  delete w2;
  exit(0);  // runs atexit handlers and destructors (the runtime's too)
}

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s THREADS OPS_PER_THREAD SEED\n", argv[0]);
    return 2;
  }
  int threads = atoi(argv[1]);
  uint64_t ops = strtoull(argv[2], nullptr, 10);
  uint64_t seed = strtoull(argv[3], nullptr, 10);
  if (threads < 1 || threads > 256) {
    fprintf(stderr, "stress: THREADS must be 1..256\n");
    return 2;
  }
  if (const char *cap = getenv("STRESS_MAX_ALIGN")) max_align = strtoull(cap, nullptr, 10);
  double t0 = now();
  edge_cases();

  Counts init;
  Rng r0(seed ^ 0x5EED);
  for (int i = 0; i < SHARED_SLOTS; i++) shared_slots[i].store(allocate(r0, slot_family(i), 0, init));

  std::vector<Worker *> workers;
  for (int t = 0; t < threads; t++) {
    Worker *w = new Worker{};
    w->id = t + 1;
    w->ops = ops;
    w->seed = seed;
    w->use_shared = true;
    workers.push_back(w);
  }
  std::vector<std::thread> ts;
  for (Worker *w : workers) ts.emplace_back([w] { w->run(); });

  // fork in the middle, while the workers are allocating
  uint64_t half = (uint64_t)threads * ops / 2;
  while (progress.load(std::memory_order_relaxed) < half && progress.load() < (uint64_t)threads * (ops & ~1023ull))
    usleep(200);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) fail("fork failed: %s", strerror(errno));
  if (pid == 0) child_after_fork(seed);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) fail("waitpid failed: %s", strerror(errno));
  if (WIFSIGNALED(status)) fail("fork child killed by signal %d%s", WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (hung: deadlock after fork?)" : "");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("fork child exited with status %d", WEXITSTATUS(status));

  for (auto &t : ts) t.join();
  Counts total = init;
  for (Worker *w : workers) {
    w->finish();
    total.add(w->c);
  }
  for (auto &s : shared_slots) {
    release(s.load(), 0, -1, total);
    s.store(nullptr);
  }
  for (Worker *w : workers) delete w;
  uint64_t churned = thread_churn(seed);

  printf("stress: threads=%d ops_per_thread=%" PRIu64 " seed=%" PRIu64 "\n", threads, ops, seed);
  printf("edge cases: ok\n");
  printf("fork child: exited 0\n");
  for (int i = 0; i < NOP; i++) printf("op %-22s %10" PRIu64 "\n", op_name[i], total.op[i]);
  for (int i = 0; i < NKIND; i++) printf("alloc %-22s %10" PRIu64 "\n", kind_name[i], total.kind[i]);
  uint64_t allocs = 0;
  for (int i = 0; i < NKIND; i++) allocs += total.kind[i];
  for (int i = 0; i < NFREE; i++) printf("free via %-22s %10" PRIu64 "\n", free_name[i], total.freed[i]);
  printf("allocations %" PRIu64 " frees %" PRIu64 " burst objects %" PRIu64 " checksum %016" PRIx64 "\n", allocs,
         total.frees_total, total.burst_objects, total.checksum);
  if (allocs != total.frees_total) fail("%" PRIu64 " allocations but %" PRIu64 " frees", allocs, total.frees_total);
  printf("thread churn: %" PRIu64 " objects from short-lived threads\n", churned);
  printf("result: OK\n");
  // which thread frees which object depends on scheduling: stderr only
  fprintf(stderr, "stress: cross-thread frees %" PRIu64 " of %" PRIu64 " (%.1f%%), %.3f s\n", total.cross_thread,
          total.frees_total, 100.0 * total.cross_thread / (double)total.frees_total, now() - t0);
  fflush(stdout);
  start_busy_thread(seed);
  usleep(2000);
  return 0;  // exit() while the busy thread allocates
}
