/* hlsim: the malloc family observed from inside the tool (hs_hooks.c). */
#ifndef HLSIM_HOOKS_H
#define HLSIM_HOOKS_H
#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"

/* the running thread's pending allocation call: its return address, 0 = none */
extern Addr hk_cur_ra;
/* the stack pointer at that call's entry (meaningful while hk_cur_ra != 0) */
extern Addr hk_cur_sp;

void hk_init(Bool trace);
/* instrumentation: the check at the start of a superblock at guest address `base`, and the
 * hook at the instruction `pc` if it is the entry of a malloc-family function */
void hk_add_return_check(IRSB* sb, Addr base);
void hk_add_entry_hook(IRSB* sb, Addr pc);
#endif
