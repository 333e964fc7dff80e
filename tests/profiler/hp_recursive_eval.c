/* Contexts modulo recursion, for tests/test_plan_generality.py: an evaluator recursing
 * through one call site per operator and operand (16 in all), so the call chain of an
 * allocation records the path taken through the recursion. Two phases evaluate the same
 * kind of trees: "keep" links every value into a list that is then walked many times (the
 * planner groups it), "scratch" frees each value at once (left to the allocator). Telling
 * the two apart needs the frame beyond the recursion, so a deeper run than the profiled
 * one meets paths through the recursion that the profile never saw.
 * Usage: hp_recursive_eval DEPTH [mix]  (prints the two phases' sums; with "mix" the
 * phases alternate tree by tree, so the answer for one call chain keeps changing). */
#include <stdio.h>
#include <stdlib.h>

struct value { struct value* next; long x; long pad; };

static struct value* kept;
static int keep;

__attribute__((noinline)) static struct value* new_value(long x)
{
   struct value* v = malloc(sizeof *v);
   __asm__ volatile("" ::: "memory");
   v->x = x;
   v->next = 0;
   return v;
}

static unsigned next_seed(unsigned s) { return s * 1103515245u + 12345u; }

__attribute__((noinline)) static long done(struct value* a, struct value* b)
{
   long s = a->x + b->x;
   if (keep) {
      a->next = kept; kept = a;
      b->next = kept; kept = b;
   } else {
      free(a);
      free(b);
   }
   return s;
}

__attribute__((noinline)) static struct value* eval(int depth, unsigned seed)
{
   long x;
   if (depth == 0) {
      x = seed >> 28;
   } else {
      unsigned s1 = next_seed(seed), s2 = next_seed(s1);
      struct value *a, *b;
      switch ((seed >> 16) % 8) {
      case 0: a = eval(depth - 1, s1); b = eval(depth - 1, s2); x = done(a, b) + 1; break;
      case 1: a = eval(depth - 1, s1); b = eval(depth - 1, s2); x = done(a, b) - 1; break;
      case 2: a = eval(depth - 1, s1); b = eval(depth - 1, s2); x = done(a, b) * 3; break;
      case 3: a = eval(depth - 1, s1); b = eval(depth - 1, s2); x = done(a, b) / 2; break;
      case 4: a = eval(depth - 1, s1); b = eval(depth - 1, s2); x = done(a, b) ^ 5; break;
      case 5: a = eval(depth - 1, s1); b = eval(depth - 1, s2); x = done(a, b) & 1023; break;
      case 6: a = eval(depth - 1, s1); b = eval(depth - 1, s2); x = done(a, b) | 4; break;
      default: a = eval(depth - 1, s1); b = eval(depth - 1, s2); x = done(a, b) % 1000; break;
      }
   }
   struct value* v = new_value(x % 100000);
   __asm__ volatile("" ::: "memory");   /* no tail call */
   return v;
}

__attribute__((noinline)) static long run_keep(int depth, int trees)
{
   long sum = 0;
   keep = 1;
   for (int t = 0; t < trees; t++) {
      struct value* r = eval(depth, 7919u * (unsigned)t + 1);
      r->next = kept; kept = r;
   }
   for (int pass = 0; pass < 20; pass++)
      for (struct value* v = kept; v; v = v->next) sum += v->x;
   return sum;
}

__attribute__((noinline)) static long run_scratch(int depth, int trees)
{
   long sum = 0;
   keep = 0;
   for (int t = 0; t < trees; t++) {
      struct value* r = eval(depth, 104729u * (unsigned)t + 3);
      sum += r->x;
      free(r);
   }
   return sum;
}

int main(int argc, char** argv)
{
   int depth = argc > 1 ? atoi(argv[1]) : 7;
   long a = 0, b = 0;
   if (argc > 2 && argv[2][0] == 'm') {   /* "mix": the phases alternate tree by tree */
      for (int t = 0; t < 16; t++) {
         a += run_keep(depth, 1);
         b += run_scratch(depth, 1);
      }
   } else {
      a = run_keep(depth, 16);
      b = run_scratch(depth, 16);
   }
   printf("%ld %ld\n", a, b);
   while (kept) { struct value* n = kept->next; free(kept); kept = n; }
   return 0;
}
