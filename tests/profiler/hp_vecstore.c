/* Vector stores of pointers, for tests/test_profiler.py: compilers fill two or four pointer
 * fields with one 16- or 32-byte store, and each 8-byte lane must count as a pointer edge.
 * N payloads P_0..P_{N-1} are allocated first, then N cells C_0..C_{N-1} (32 bytes each).
 *   phase 1: one 16-byte store per cell: {P_i, C_{i-1}} at offset 0
 *   phase 2 (if the CPU has AVX): one 32-byte store per cell: {P_i, C_{i-1}, P_i, C_i}
 * C_0's back pointer is NULL (no edge). Prints "avx 1" or "avx 0". */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>

#define N 300

struct cell { void *p, *back, *q, *self; };

static void *payload[N];
static struct cell *cells[N];

__attribute__((noinline)) static void *alloc_payload(void)
{
   void *p = malloc(24);
   __asm__ volatile("" ::: "memory");
   return p;
}

__attribute__((noinline)) static struct cell *alloc_cell(void)
{
   struct cell *c = malloc(sizeof *c);
   __asm__ volatile("" ::: "memory");
   return c;
}

__attribute__((noinline)) static void store16(struct cell *c, void *a, void *b)
{
   _mm_storeu_si128((__m128i *)c, _mm_set_epi64x((long long)b, (long long)a));
}

__attribute__((noinline, target("avx"))) static void store32(struct cell *c, void *a, void *b, void *d, void *e)
{
   _mm256_storeu_si256((__m256i *)c, _mm256_set_epi64x((long long)e, (long long)d, (long long)b, (long long)a));
}

int main(void)
{
   for (int i = 0; i < N; i++) payload[i] = alloc_payload();
   for (int i = 0; i < N; i++) cells[i] = alloc_cell();
   for (int i = 0; i < N; i++) store16(cells[i], payload[i], i ? cells[i - 1] : NULL);
   int avx = __builtin_cpu_supports("avx");
   if (avx)
      for (int i = 0; i < N; i++) store32(cells[i], payload[i], i ? cells[i - 1] : NULL, payload[i], cells[i]);
   printf("avx %d\n", avx ? 1 : 0);
   for (int i = 0; i < N; i++) {
      free(cells[i]);
      free(payload[i]);
   }
   return 0;
}
