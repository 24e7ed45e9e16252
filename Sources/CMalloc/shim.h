#ifndef SPOUT_CMALLOC_SHIM_H
#define SPOUT_CMALLOC_SHIM_H
// glibc's mallopt, for the spout executable's allocator settings (glibc; no package).
#include <malloc.h>

#endif
