/* vgpreload_hlsim: loaded into every client by Valgrind. Deliberately empty: nothing is
 * replaced, so the simulated layout is the one the client's own allocator produces. The
 * malloc-family wrappers that track objects are in vgpreload_hlsimwrap (hs_wrap.c), preloaded
 * only when object tracking is wanted. */
int hlsim_preload_marker = 1;
