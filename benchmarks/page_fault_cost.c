/* Cost of a page's first touch (the kernel's page fault and zero-fill), the figure behind
 * hlsim's --fault-cost default. Maps 256 MiB, writes one byte per 4 KiB page, unmaps; five
 * rounds; prints ns per first touch and the cycles that makes at the CPU's nominal clock
 * (cpu MHz of /proc/cpuinfo, when present).
 *
 *     build/benchmarks/page_fault_cost */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double cpu_mhz(void)
{
   FILE* f = fopen("/proc/cpuinfo", "r");
   char line[256];
   double mhz = 0;
   while (f && fgets(line, sizeof line, f))
      if (strncmp(line, "cpu MHz", 7) == 0 && sscanf(strchr(line, ':') + 1, "%lf", &mhz) == 1) break;
   if (f) fclose(f);
   return mhz;
}

int main(void)
{
   const size_t bytes = 256u << 20, page = 4096;
   double mhz = cpu_mhz();
   for (int round = 0; round < 5; round++) {
      volatile char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) { perror("mmap"); return 1; }
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      for (size_t i = 0; i < bytes; i += page) p[i] = 1;
      clock_gettime(CLOCK_MONOTONIC, &b);
      double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)(bytes / page);
      printf("round %d: %.0f ns per first touch", round, ns);
      if (mhz > 0) printf(" = %.0f cycles at %.0f MHz", ns * mhz / 1000, mhz);
      printf("\n");
      munmap((void*)p, bytes);
   }
   return 0;
}
