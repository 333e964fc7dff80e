/* libhlperturb's settings, in one place (docs/simulator.md, "Layout perturbation"). */
#ifndef HLPERTURB_TUNABLES_H
#define HLPERTURB_TUNABLES_H

#define PT_PAGE 4096                      /* x86 base page: shuffle mode permutes within it */
#define PT_SMALL_MAX 1024                 /* 16-byte size classes up to here, as glibc's tcache bins */
#define PT_CLASSES 94                     /* 64 small classes + powers of two 2 KiB .. 1 TiB */
#define PT_MAX_SIZE (1ULL << 39)          /* larger requests go to the next allocator */
#define PT_SHUFFLE_MAX 1024               /* shuffle objects up to this slot size; a quarter page keeps pages mixed */
#define PT_DEFAULT_LINE_OFFSET 16         /* the first object 16 bytes into its line: the library's layout before the setting */
#define PT_DEFAULT_ARENAS 4               /* random mode: the "four arenas" */
#define PT_MAX_ARENAS 128                 /* the header keeps the arena in 8 bits */
#define PT_DEFAULT_RESERVE (64ULL << 30)  /* virtual bytes for all arenas (MAP_NORESERVE): split evenly */
#define PT_MIN_ARENA (1ULL << 24)       /* smallest arena tried when a reservation is refused */
#define PT_BOOT_BYTES 4096                /* dlsym's calloc before the next allocator is known */
#define PT_MAGIC 0x4850ULL                /* "HP" in the header above class and arena */

#endif
