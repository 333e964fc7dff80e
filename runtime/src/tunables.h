/* Every tunable of the runtime, with its default and where the default comes from.
 * The environment can override those marked (env); options.c validates them. */
#ifndef HL_TUNABLES_H
#define HL_TUNABLES_H

/* (env HEAPLAYOUT_MIN_OBJECTS) DPA 3.3.1: a context gets a pool only after this many
 * objects; fewer would leave sparsely filled pool memory that hurts locality. */
#define HL_DEFAULT_MIN_OBJECTS 100u

/* (env HEAPLAYOUT_MAX_SIZE) DPA 3.3.2: larger objects span lines anyway and gain little. */
#define HL_DEFAULT_MAX_SIZE 128u

/* (env HEAPLAYOUT_CHUNK_SIZE) HALO 5: grouped objects come from 1 MiB chunks. */
#define HL_DEFAULT_CHUNK_SIZE (1u << 20)
#define HL_MIN_CHUNK_SIZE (256u << 10)
#define HL_MAX_CHUNK_SIZE (64u << 20)

/* (env HEAPLAYOUT_RANGE) one range of addresses for all pools, at most this large; 16 GiB
 * stays well inside what valgrind can map for a client. */
#define HL_DEFAULT_RANGE (16ull << 30)
/* The range is mapped as the pools need it, from HL_RANGE_HINT up, at first HL_RANGE_STEP
 * bytes (or a chunk, if larger) and then doubling: mapping all of it at start made every
 * program's virtual size 16 GiB larger, which programs that print their memory use print
 * (minisat's "Memory used"), and which an address-space limit (ulimit -v) refused, leaving
 * the program unoptimized. The hint, 96 TiB, lies between the PIE images with their brk
 * heaps (0x55.., about 85 TiB, plus ASLR's 1 TiB) and the kernel's mmap area (top-down from
 * below 128 TiB), so the addresses above it stay free to grow into, and pooled objects lie
 * above the brk heap as they did when the whole range was an mmap: programs that order
 * objects by address (graphviz dot's node IDs) print what they printed then; at 32 TiB,
 * below the brk heap, dot's coordinates changed. Where the hint is taken (another mapping,
 * a kernel without MAP_FIXED_NOREPLACE), the whole range is mapped at start instead. */
#define HL_RANGE_HINT 0x600000000000ull
/* one default chunk: the runtime's own virtual size before the pools need more (with 16 MiB
 * minisat's "Memory used" was 34 MB under off and 38 under callsite, 13 alone; now 19 and 24) */
#define HL_RANGE_STEP (1ull << 20)

/* (env HEAPLAYOUT_CC_BLOCK) ccmalloc: a cc-block of 256 bytes (a few cache lines). */
#define HL_DEFAULT_CC_BLOCK 256u
#define HL_MIN_CC_BLOCK 64u
#define HL_MAX_CC_BLOCK 2048u /* block fill is kept in one byte of 16-byte granules */

/* (env HEAPLAYOUT_CHUNK_COLORS, 1 = off) Chunk colouring, ours (mimalloc's 64 KiB pages
 * have the effect by accident): each new chunk's objects start 64 bytes further into the
 * page than the previous chunk's, cycling through 64 line positions. Packed same-size objects repeat their line positions in every
 * page, so every k-th of them (a hot subset, prefix_hot) would otherwise use the same few
 * cache sets in every chunk. Costs at most 4 KiB of a chunk. */
#define HL_CHUNK_COLORS 64u
#define HL_COLOR_STEP 64u

/* (no tunable) Ours. Chunks are chunk-size aligned, so with its header at its first byte
 * every chunk would put its header, its size map and its first objects at the same
 * offsets: the headers on L1 set 0 (a 32 KiB 8-way L1 indexes sets by address bits 6-11,
 * inside the page, so natively as in cachegrind) and every chunk's n-th page in the same
 * set of a set-associative second-level TLB (indexed by the page number's low bits). With
 * more chunks in use than those sets have ways (a pool per site or group), pooled mallocs
 * and frees missed on headers and walked the page tables. Each chunk's header, and the size
 * map and objects after it, start HL_HEADER_COLOR_STEP bytes times the chunk's colour into
 * the chunk: the colour is chunk address bits 20-23 (the range is 16 MiB aligned, so at the
 * default 1 MiB it is the chunk's number, the same on every run; other sizes get fewer
 * distinct colours among neighbours, 16 MiB chunks none, never a wrong one), and the step
 * a page and two lines (the header's two hot lines), so 16 consecutive chunks use 16 pairs
 * of L1 sets and 16 TLB sets. It costs a chunk at most 15 steps (62 KiB) of its space and
 * 5 instructions wherever an address is mapped to its chunk (docs/results.md section 22). */
#define HL_HEADER_COLORS 16u
#define HL_HEADER_COLOR_STEP (4096u + 128u)
#define HL_HEADER_COLOR_BIT 20u /* the colour's lowest address bit */

/* (env HEAPLAYOUT_HUGE_PAGES) 1: the pools' range is madvised MADV_HUGEPAGE, so where the
 * kernel's THP mode is "madvise" (Debian's default) it is backed by 2 MiB pages. Off by
 * default, as the allocators ship: huge pages cost resident memory (a 2 MiB page for a
 * partly used chunk pair) and fault-time compaction, and pay only where the heap's pages
 * overflow the TLB. `optimize` measures both (docs/results.md section 32). */
#define HL_DEFAULT_HUGE_PAGES 0u

/* (env HEAPLAYOUT_SPARE_CHUNKS) Empty chunks kept resident for reuse; the others' pages go
 * back to the OS. HALO 5 keeps one, as early jemalloc did; we keep 8 (8 MiB of 1 MiB
 * chunks): a structure freed and rebuilt every round (apa_split) re-faulted ~9000 pages,
 * about 2 us each here, and ran 1.29x mimalloc's time with one spare, 1.08x with 16. */
#define HL_SPARE_CHUNKS 8u
#define HL_MAX_SPARE_CHUNKS 4096u

/* (env HEAPLAYOUT_SPAN_BYTES) Ours, after mimalloc's per-size pages (64 KiB there): fresh
 * slots of one class are carved together in spans of this size, so a pool's objects of
 * one size share pages and lines instead of interleaving with its other sizes (alloc.c).
 * lua5.4 under callsite on mimalloc (corpus, cachegrind): D1 misses 53.5M -> 49.3M, LL
 * 39.6M -> 34.4M (mimalloc alone 46.8M / 31.9M); 4 KiB spans kept less of it (51.6M), 64 KiB
 * no more (49.3M) for four times the reservation (docs/results.md section 16). */
#define HL_SPAN_BYTES 16384u
#define HL_MIN_SPAN_BYTES 256u
#define HL_MAX_SPAN_BYTES (1u << 20)

/* (no tunable) Ours. Spans are carved one after another, and 16 KiB is a multiple of the
 * 4 KiB one way of a 32 KiB 8-way L1 covers: every span would start on the same cache set,
 * and where each class keeps only a few live objects at its span's head, those heads fight
 * over one set's 8 ways (mimalloc's 64 KiB-aligned pages share the trait). prefix_recycle's
 * plan with a span per class took 2.12x the D1 misses of allocation order (cachegrind,
 * small input; 16,320-byte spans 1.37x, 15,424-byte 1.06x). A gap of this many lines before
 * a span carved after another class's (alloc.c span_start) moves its head 9 sets on: an odd step, so 64 spans start on 64 different
 * sets, and heads of up to 9 lines do not overlap. Measured gaps of 0/1/3/5/9/15/31 lines:
 * prefix_recycle 1.43M/1.95M/0.93M/0.82M/0.74M/0.71M/0.72M D1 misses (interleaved 0.66M);
 * on six suite plans and lua5.4/cppcheck/gawk under callsite any gap moved D1 and LLd misses
 * by -2% to +3%, with no order between the gaps. It costs 576 bytes per 16 KiB span (3.5%). */
#define HL_SPAN_GAP_LINES 9u

/* (no tunable) A chunk that empties is released at once (alloc.c, chunk_emptied). It used
 * to keep its slots listed until 1/2 of the pool's chunks were empty (HL_EMPTIED_KEEP_SHARE),
 * because releasing meant unlinking every slot, a cache miss each (health: 10% of its D1
 * misses); with free lists sharded by chunk the release touches no slot. */

/* (env HEAPLAYOUT_MIN_ALIGN, 8 or 16; else the plan's min_align record; else 16) 16 is
 * what glibc promises on x86-64, and what clang assumes of every malloc and operator new
 * result of 16 bytes or more (it may initialise a 24-byte object with aligned vector
 * stores). HALO 5 allocates with a minimum alignment of 8, which C, C++ and GCC allow for
 * sizes that are odd multiples of 8 (no type of such a size needs 16): those objects pack
 * at 40, 72, ... bytes instead of 48, 80, ..., and at 24 in packed groups (size_class.c).
 * The planner asks for 8 when every module the plan names was built by GCC. */

/* Ours. A plan rule that needs frames beyond a deep recursion makes every allocation walk
 * the whole recursion (hp_recursive_eval at depth 16: ~200 ns per allocation, its run
 * time nearly doubled), because no walk replays another path through it. When the walks
 * of one (return address, caller) key agree HL_SPEC_MIN_AGREED times in a row, their
 * answer is given without walking for a budget that doubles with every further agreeing
 * walk, up to HL_SPEC_MAX_BUDGET decisions: a stable key then walks for under 1% of its
 * allocations, and a change of answer (a new phase of the program) is seen within that
 * many allocations. A key whose answer changed more than HL_SPEC_MAX_CHANGES times never
 * speculates again, so interleaved answers stay exact. Only placement can be wrong, never
 * the program. HL_SPEC_MAX_BUDGET 0 turns it off. */
#define HL_SPEC_MIN_AGREED 4u
#define HL_SPEC_MAX_BUDGET 256u
#define HL_SPEC_MAX_CHANGES 8u

/* The cache line the layout rules assume (x86-64, and the simulator's default). */
#define HL_LINE_BYTES 64u

/* The size map's granule: at most one object starts in each (objects are >= 16 bytes). */
#define HL_GRANULE_SHIFT 4u
#define HL_GRANULE (1u << HL_GRANULE_SHIFT)

/* The largest object a pool holds; larger requests go to the allocator underneath. */
#define HL_MAX_CLASS_SIZE (32u << 10)

/* Pool ids are small integers; 0 means "not pooled". Contexts past this many pools are
 * simply not pooled. */
#define HL_MAX_POOLS 4096u

/* Open-addressed table of allocation contexts (return addresses) for the callsite policy;
 * 64K entries cover far more call sites than a large program has. */
#define HL_CONTEXT_TABLE_BITS 16u

/* PreFix (prefix.c). Ours; the paper has no divergence rule, its artefact trusts the input.
 * A counter is cut off (the allocator underneath serves its site for the rest of the run)
 * once it has been refused (wrong site or too large) at least HL_PREFIX_CUT_MIN times and
 * for at least one in HL_PREFIX_CUT_SHARE of its values that had a slot: one in four says
 * the input is not the profiled one; 64 keeps a few outliers of a long run from cutting a
 * counter that places well. A busy recycled slot is no divergence. */
#define HL_PREFIX_CUT_MIN 64u
#define HL_PREFIX_CUT_SHARE 4u

/* ---- the dpa policy (dpa*.c, docs/dpa.md). Its thresholds are HL_DEFAULT_MIN_OBJECTS
 * and HL_DEFAULT_MAX_SIZE above (DPA 3.3.1, 3.3.2: 100 objects, 128 bytes). DPA's 4 KiB
 * header-free segments are our chunks: header-free too (the size map), 1 MiB (HALO). */

/* DPA 3.1: the longest APCC (the paper's deepest was 4, in xalancbmk); 4 frames are also
 * what the fast path's chain cache answers without a walk (HL_CHAIN_FAST_STEPS + 1). */
#define HL_DPA_MAX_CHAIN 4u

/* Ours. Instructions the wrapper analysis decodes for one return address before it gives
 * up (DPA 3.1: "dozens of instructions on average"; a wrapper is short, a function past
 * this is no wrapper worth a frame). */
#define HL_DPA_DECODE_BUDGET 1024u

/* Ours. Verdicts cached per return address (2^14) and APCCs in the compound table (2^14):
 * far more allocation sites than a large program has (gcc: ~3000). */
#define HL_DPA_VERDICT_BITS 14u
#define HL_DPA_CHAIN_BITS 14u

/* Ours. Object groups (heap nodes of the shape graph); past this, new contexts are not pooled. */
#define HL_DPA_MAX_GROUPS 8192u

/* Ours. After a group is pooled, its next 64 allocations still take the slow path so that
 * the shape graph learns its edges (DPA 3.2 learns them from a points-to analysis; we
 * sample the group's previous object): then its contexts are cached in the fast path.
 * 256 cost cppcheck's short runs 1.4x their instructions; the edges show in the first few. */
#define HL_DPA_LEARN_OBJECTS 64u
/* Ours. While a group is counted towards the threshold, every 8th allocation samples its
 * previous object (about 12 samples before the pool: a process_vm_readv each). */
#define HL_DPA_COUNT_SAMPLE_EVERY 8u

/* Ours. Shape graph edges kept (group, offset, group), and the table of recently allocated
 * objects (address -> group) that names the targets of pointers into the allocator
 * underneath while groups are not pooled yet (2^16 entries, overwritten). */
#define HL_DPA_MAX_EDGES 4096u
#define HL_DPA_RECENT_BITS 16u

/* Ours (issue 23, "do no harm"). When a pool of the calling thread that holds at least
 * HL_DPA_HARM_MIN_CHUNKS chunks takes another one while more than
 * (HL_DPA_HARM_FREE_SHARE - 1) / HL_DPA_HARM_FREE_SHARE of its bytes sit in free slots
 * (live/capacity below 1/4: lifetimes and sizes that leave the pool fragmented, where the
 * allocator underneath would have coalesced or shared them), its group goes back to the
 * allocator underneath. The share is estimated from HL_DPA_HARM_SAMPLES random bytes of
 * the pool (256: about +-3%, a few microseconds once per MiB the pool grows). */
#define HL_DPA_HARM_MIN_CHUNKS 2u
#define HL_DPA_HARM_FREE_SHARE 4u
#define HL_DPA_HARM_SAMPLES 256u

/* dlsym may allocate before the allocator underneath is known: served from here. */
#define HL_BOOTSTRAP_BYTES (64u << 10)

#endif
