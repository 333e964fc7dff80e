// Multi-threaded program for tests/test_profiler.py: T threads each build a list of M nodes
// with `new` from one site and walk it R times; main allocates an array with new[] and
// releases everything. Each node access is one volatile load or store.
#include <cstdio>
#include <thread>
#include <vector>

constexpr int T = 4, M = 200, R = 3;

struct Node { Node* volatile next; volatile long val; };

__attribute__((noinline)) Node* make_node() { Node* n = new Node; __asm__ volatile("" ::: "memory"); return n; }

static long walk(int k)
{
   Node* head = nullptr;
   for (int i = 0; i < M; i++) { Node* n = make_node(); n->next = head; n->val = i + k; head = n; }
   long s = 0;
   for (int r = 0; r < R; r++)
      for (Node* n = head; n; n = n->next) s += n->val;
   while (head) { Node* nx = head->next; delete head; head = nx; }
   return s;
}

int main()
{
   long* results = new long[T];
   std::vector<std::thread> ts;
   for (int k = 0; k < T; k++) ts.emplace_back([k, results] { results[k] = walk(k); });
   for (auto& t : ts) t.join();
   long total = 0;
   for (int k = 0; k < T; k++) total += results[k];
   delete[] results;
   std::printf("%ld\n", total);
   return 0;
}
