/* Client requests from vgpreload_hlsimwrap (hs_wrap.c) to the hlsim tool (hs_main.c). */
#ifndef HLSIM_REQUESTS_H
#define HLSIM_REQUESTS_H
#include "valgrind.h"
enum {
  HS_REQ_ALLOC = VG_USERREQ_TOOL_BASE('H', 'S'), /* ptr, size, return address of the call */
  HS_REQ_FREE                                    /* ptr */
};
#endif
