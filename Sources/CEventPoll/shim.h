#ifndef SPOUT_CEVENTPOLL_SHIM_H
#define SPOUT_CEVENTPOLL_SHIM_H
// Linux's epoll and eventfd, for the PostgreSQL driver's reactor thread (glibc; no package).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

/// Names the calling thread (shown by top -H, perf and gdb); prctl is variadic, so Swift
/// cannot call it directly.
static inline void spout_name_current_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}
#endif
