// Allocation calls of every kind from known sites, for the simulator's object tracking
// (simulator/hs_hooks.c). Each site is its own noinline function so that its allocations
// have one return address in it. A deep frame throws std::bad_alloc out of operator new
// before the last site, which allocates from a deeper frame still: its objects must count.
// usage: sim_cxx_contexts N [throw]   (prints the counts the test expects). "throw" asks for
// the bad_alloc; mimalloc's operator new aborts on an impossible size instead of throwing.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

struct Node {
  Node* next;
  long v[5];
};

#define SITE __attribute__((noinline))

SITE static Node* site_new(Node* next, long v) {
  Node* n = new Node;
  n->next = next;
  n->v[0] = v;
  return n;
}
SITE static long* site_new_array(long n) { return new long[n]; }
SITE static void* site_malloc(size_t n) { return std::malloc(n); }
SITE static void* site_calloc(size_t n) { return std::calloc(n, 8); }
SITE static void* site_realloc(void* p, size_t n) { return std::realloc(p, n); }
SITE static void* site_memalign(size_t n) {
  void* p = nullptr;
  return posix_memalign(&p, 64, n) == 0 ? p : nullptr;
}
SITE static void* site_deep(int depth, size_t n) {
  if (depth == 0) return std::malloc(n);
  void* p = site_deep(depth - 1, n);
  __asm__ volatile("" ::: "memory");  // keep the recursion (no tail call)
  return p;
}
static char* volatile escaped;  // keeps the compiler from eliding the throwing allocation

SITE static int throw_deep(int depth) {
  if (depth == 0) {
    try {
      volatile size_t huge = (size_t)1 << 62;
      escaped = new char[huge];
      return 1;
    } catch (const std::bad_alloc&) {
      throw;
    }
  }
  return throw_deep(depth - 1) + 1;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : 1000;
  Node* list = nullptr;
  for (long i = 0; i < n; i++) list = site_new(list, i);
  std::vector<long*> arrays;
  for (long i = 0; i < n; i++) arrays.push_back(site_new_array(4 + i % 8));
  std::vector<void*> blocks;
  for (long i = 0; i < n; i++) blocks.push_back(site_malloc(24 + i % 40));
  for (long i = 0; i < n; i++) blocks.push_back(site_calloc(3));
  for (long i = 0; i < n; i++) blocks.push_back(site_memalign(100));
  void* grow = nullptr;
  for (long i = 1; i <= n; i++) {
    grow = site_realloc(grow, 16 * i);
    std::memset(grow, 2, 16);
  }
  int thrown = 0;
  for (int k = 0; argc > 2 && std::strcmp(argv[2], "throw") == 0 && k < 20; k++) {
    try {
      throw_deep(3);
    } catch (const std::bad_alloc&) {
      thrown++;
    }
  }
  for (long i = 0; i < n; i++) blocks.push_back(site_deep(12, 40));
  long sum = 0;
  for (Node* p = list; p; p = p->next) sum += p->v[0];
  for (long* a : arrays) { a[0] = 1; sum += a[0]; }
  for (void* b : blocks) { std::memset(b, 1, 8); sum += ((char*)b)[0]; }
  std::printf("nodes %ld arrays %ld blocks %zu thrown %d sum %ld\n", n, (long)arrays.size(), blocks.size(),
              thrown, sum);
  while (list) {
    Node* next = list->next;
    delete list;
    list = next;
  }
  for (long* a : arrays) delete[] a;
  for (void* b : blocks) std::free(b);
  std::free(grow);
  return 0;
}
