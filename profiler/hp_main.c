/* hlprof: the tool contract in one place (options, init, fini). See hp.h for the files. */
#include "hp.h"
#include "pub_tool_vkiscnums.h"

HpOptions hp_opt = {
   .out_file = "hlprof.out.%p",
   .depth = 12,
   .max_unwind = 128,
   .affinity_distance = 128,
   .max_object_size = 4096,
   .stream_max = 10000000,
   .objects = 2,
   .progress = 0,
   .trim = "vgpreload_,libc.so,libc-,libstdc++.so,ld-linux,libgcc_s.so",
   .pointer_edges = True,
   .affinity = True,
   .follow_forks = True,
   .graph_max = 1 << 22,
   .objects_max = 10000000,
   .sample = False,
   .sample_period = 10,
   .sample_window = 100000,
   .sample_seed = 1,
   .sample_edges = True,
};

static const HChar* objects_arg = "all";
static Bool context_cache_set;   /* --context-cache given; else it follows --sample */
static Bool out_ok;

void hp_access_init_progress(void);

static Bool hp_process_cmd_line_option(const HChar* arg)
{
   const HChar* tmp_str;
   Long l;
   if VG_STR_CLO(arg, "--out-file", hp_opt.out_file) {}
   else if VG_BINT_CLO(arg, "--depth", l, 1, 256) { hp_opt.depth = l; }
   else if VG_BINT_CLO(arg, "--max-unwind", l, 1, 512) { hp_opt.max_unwind = l; }
   else if VG_BINT_CLO(arg, "--affinity-distance", l, 1, 1 << 20) { hp_opt.affinity_distance = l; }
   else if VG_BINT_CLO(arg, "--max-object-size", l, 0, 1LL << 40) { hp_opt.max_object_size = l; }
   else if VG_BINT_CLO(arg, "--stream-max", l, 0, 1LL << 50) { hp_opt.stream_max = l; }
   else if VG_BINT_CLO(arg, "--progress", l, 0, 1LL << 50) { hp_opt.progress = l; }
   else if VG_STR_CLO(arg, "--trim", hp_opt.trim) {}
   else if VG_BOOL_CLO(arg, "--pointer-edges", hp_opt.pointer_edges) {}
   else if VG_BOOL_CLO(arg, "--affinity", hp_opt.affinity) {}
   else if VG_BOOL_CLO(arg, "--follow-forks", hp_opt.follow_forks) {}
   else if VG_BINT_CLO(arg, "--graph-max", l, 0, 1LL << 40) { hp_opt.graph_max = l; }
   else if VG_BINT_CLO(arg, "--objects-max", l, 0, 1LL << 50) { hp_opt.objects_max = l; }
   else if VG_BOOL_CLO(arg, "--sample", hp_opt.sample) {}
   else if VG_BOOL_CLO(arg, "--context-cache", hp_opt.context_cache) { context_cache_set = True; }
   else if VG_BINT_CLO(arg, "--sample-period", l, 1, 1 << 20) { hp_opt.sample_period = l; }
   else if VG_BINT_CLO(arg, "--sample-window", l, 1000, 1LL << 40) { hp_opt.sample_window = l; }
   else if VG_BINT_CLO(arg, "--sample-seed", l, 0, 1LL << 62) { hp_opt.sample_seed = l; }
   else if VG_BINT_CLO(arg, "--sample-phase", l, 0, 1 << 20) { hp_opt.sample_phase = l; }
   else if VG_BOOL_CLO(arg, "--sample-retranslate", hp_opt.sample_retranslate) {}
   else if VG_BOOL_CLO(arg, "--sample-edges", hp_opt.sample_edges) {}
   else if VG_STR_CLO(arg, "--objects", tmp_str) {
      objects_arg = tmp_str;
      if (VG_STREQ(tmp_str, "all")) hp_opt.objects = 2;
      else if (VG_STREQ(tmp_str, "accessed")) hp_opt.objects = 1;
      else if (VG_STREQ(tmp_str, "none")) hp_opt.objects = 0;
      else return False;
   }
   else return VG_(replacement_malloc_process_cmd_line_option)(arg);
   return True;
}

static void hp_print_usage(void)
{
   VG_(printf)(
"    --out-file=<file>         profile file [hlprof.out.%%p]\n"
"    --depth=<n>               frames kept per allocation context [12]\n"
"    --max-unwind=<n>          raw frames unwound per allocation [128]\n"
"    --affinity-distance=<b>   HALO affinity distance in bytes [128]\n"
"    --max-object-size=<b>     larger objects stay out of the affinity graph [4096]\n"
"    --stream-max=<n>          reference stream entries kept, 0 = none [10000000]\n"
"    --objects=all|accessed|none  which O records to write [all]\n"
"    --progress=<n>            progress line every n heap accesses, 0 = never [0]\n"
"    --trim=<a,b,..>           module name substrings whose frames are dropped\n"
"    --pointer-edges=yes|no    record pointer edges [yes]\n"
"    --affinity=yes|no         build the affinity graph [yes]\n"
"    --follow-forks=yes|no     a forked child writes its own profile when --out-file has %%p [yes]\n"
"    --graph-max=<n>           keys kept per graph (affinity, pointer edges, neighbours), 0 = no cap [4194304]\n"
"    --objects-max=<n>         O records written at most, 0 = no cap [10000000]\n"
"    --context-cache=yes|no    contexts by their 16 innermost frames, checked every 16th use [= --sample]\n"
"    --sample=yes|no           profile accesses in one time window of every period [no]\n"
"    --sample-period=<r>       one window in r is profiled; counts are written times r [10]\n"
"    --sample-window=<n>       window length in executed superblocks [100000]\n"
"    --sample-seed=<s>         picks which window of every period is profiled [1]\n"
"    --sample-phase=<j>        shifts that choice by j: phases 0..r-1 of one seed cover the run once [0]\n"
"    --sample-retranslate=yes|no  off windows run uninstrumented code; all code is retranslated\n"
"                              at every switch (use windows of millions of blocks) [no]\n"
"    --sample-edges=yes|no     record pointer edges in every window (exact P counts) [yes]\n");
}

static void hp_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

static void start_client_code(ThreadId tid, ULong blocks) { hp_cur_tid = tid; hp_sample_tick(blocks); }
static void thread_exit(ThreadId tid) { hp_affinity_thread_exit(tid); }
/* Heap accesses, objects and contexts before a fork: a forked child's summary counts its own. */
static ULong clock_at_fork, objects_at_fork;
static UInt contexts_at_fork;

static void write_header(void);

/* A forked child's file, opened at its first write (hp_output.c): the header with the
 * child's pid, then every context known at the fork (with its modules and symbols). */
static void child_start(void)
{
   HChar* path = VG_(expand_file_name)("--out-file", hp_opt.out_file);
   if (!hp_out_open(path)) {
      VG_(message)(Vg_UserMsg, "hlprof: cannot open profile file %s in a forked child\n", path);
      hp_out_disable();
      out_ok = False;
      return;
   }
   write_header();
   hp_out_printf("H forked_at %llu\n", hp_est(clock_at_fork));
   hp_alloc_write_contexts(contexts_at_fork);
}

/* A child forked without exec (a pre-forking server's worker) writes a profile of its own
 * when the output file's name has %p, which names the child (`heaplayout profile` follows
 * processes so and merges those of the program); else it writes nothing. Its counts start
 * from zero here; the objects it inherited are its own (hp_alloc.c). */
static void in_child(ThreadId tid)
{
   if (!out_ok) return;
   if (!hp_opt.follow_forks || !VG_(strstr)(hp_opt.out_file, "%p")) {
      hp_out_disable();
      out_ok = False;
      return;
   }
   clock_at_fork = hp_clock;
   objects_at_fork = hp_nobjects;
   contexts_at_fork = hp_ncontexts;
   hp_out_defer(child_start);
   hp_module_fork_child();
   hp_alloc_fork_child();
   hp_affinity_fork_child();
   hp_edges_fork_child();
   hp_stream_fork_child();
}

/* Valgrind does not follow exec: at least keep what was recorded before it. */
static void pre_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nargs)
{
   if ((sysno == __NR_execve || sysno == __NR_execveat) && out_ok) hp_out_flush();
}

static void post_syscall(ThreadId tid, UInt sysno, UWord* args, UInt nargs, SysRes res) {}

static void write_header(void)
{
   hp_out_printf("hlprof %d\n", HP_FORMAT_VERSION);
   hp_out_printf("H tool hlprof %s\n", HP_TOOL_VERSION);
   hp_out_puts("H exe ");
   hp_out_escaped(VG_(args_the_exename) ? VG_(args_the_exename) : "?");
   hp_out_puts("\n");
   for (Word i = 0; i < VG_(sizeXA)(VG_(args_for_client)); i++) {
      hp_out_puts("H arg ");
      hp_out_escaped(*(HChar**)VG_(indexXA)(VG_(args_for_client), i));
      hp_out_puts("\n");
   }
   hp_out_printf("H pid %d\n", VG_(getpid)());
   hp_out_puts("H clock heap-accesses\n");
   hp_out_printf("H depth %u\n", hp_opt.depth);
   hp_out_printf("H max_unwind %u\n", hp_opt.max_unwind);
   hp_out_printf("H affinity_distance %u\n", hp_opt.affinity_distance);
   hp_out_printf("H max_object_size %llu\n", hp_opt.max_object_size);
   hp_out_printf("H stream_max %llu\n", hp_opt.stream_max);
   hp_out_printf("H graph_max %llu\n", hp_opt.graph_max);
   hp_out_printf("H context_cache %d\n", hp_opt.context_cache ? 1 : 0);
   hp_out_printf("H objects_max %llu\n", hp_opt.objects_max);
   hp_out_printf("H objects %s\n", objects_arg);
   hp_out_printf("H affinity %d\n", hp_opt.affinity ? 1 : 0);
   hp_out_printf("H pointer_edges %d\n", hp_opt.pointer_edges ? 1 : 0);
   /* sample_period 1: every access profiled; R > 1: access counts are estimates (times R) */
   hp_out_printf("H sample_period %u\n", hp_sample_period);
   if (hp_opt.sample) {
      hp_out_printf("H sample_window %llu\n", hp_opt.sample_window);
      hp_out_printf("H sample_seed %llu\n", hp_opt.sample_seed);
      hp_out_printf("H sample_phase %u\n", hp_opt.sample_phase);
      hp_out_printf("H sample_retranslate %d\n", hp_opt.sample_retranslate ? 1 : 0);
      hp_out_printf("H sample_edges %d\n", hp_edges_every_window() ? 1 : 0);
   }
   hp_out_puts("H trim ");
   hp_out_escaped(hp_opt.trim[0] ? hp_opt.trim : "-");
   hp_out_puts("\n");
   hp_out_flush();
}

static void hp_post_clo_init(void)
{
   if (!context_cache_set) hp_opt.context_cache = hp_opt.sample;
   HChar* path = VG_(expand_file_name)("--out-file", hp_opt.out_file);
   out_ok = hp_out_open(path);
   if (!out_ok) {
      VG_(message)(Vg_UserMsg, "hlprof: cannot open profile file %s\n", path);
      VG_(exit)(1);
   }
   hp_module_init();
   hp_alloc_start();
   hp_affinity_init();
   hp_edges_init();
   hp_stream_init();
   hp_access_init_progress();
   hp_guard_span = hp_heap_span;
   hp_sample_init();
   write_header();
}

static void hp_fini(Int exitcode)
{
   if (!out_ok) return;
   if (hp_opt.stream_max) hp_stream_fini();
   hp_alloc_fini();
   hp_affinity_fini();
   hp_edges_fini();
   hp_out_printf("Z heap_accesses %llu\n", hp_est(hp_clock - clock_at_fork));
   hp_out_printf("Z objects %llu\n", hp_nobjects - objects_at_fork);
   hp_out_printf("Z contexts %u\n", hp_ncontexts);
   hp_out_printf("Z affinity_pairs %llu\n", hp_est(hp_affinity_pairs));
   hp_sample_fini();
   hp_ctxcache_fini();
   /* the walk's work, for the cost tables (docs/results.md): raw, not estimates */
   hp_out_printf("Z affinity_walks %llu\n", hp_stat_aff_walks);
   hp_out_printf("Z affinity_walk_entries %llu\n", hp_stat_aff_entries);
   hp_out_printf("END %08x\n", hp_out_checksum());
   hp_out_close();
}

static void hp_pre_clo_init(void)
{
   VG_(details_name)("hlprof");
   VG_(details_version)(HP_TOOL_VERSION);
   VG_(details_description)("heaplayout heap-use profiler");
   VG_(details_copyright_author)("heaplayout");
   VG_(details_bug_reports_to)("heaplayout");
   VG_(details_avg_translation_sizeB)(400);
   VG_(basic_tool_funcs)(hp_post_clo_init, hp_instrument, hp_fini);
   VG_(needs_command_line_options)(hp_process_cmd_line_option, hp_print_usage, hp_print_debug_usage);
   hp_alloc_init();
   VG_(track_start_client_code)(start_client_code);
   VG_(track_pre_thread_ll_exit)(thread_exit);
   VG_(atfork)(NULL, NULL, in_child);
   VG_(needs_syscall_wrapper)(pre_syscall, post_syscall);
}

VG_DETERMINE_INTERFACE_VERSION(hp_pre_clo_init)
