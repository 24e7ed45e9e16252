#ifndef SPOUT_CEVENTPOLL_SHIM_H
#define SPOUT_CEVENTPOLL_SHIM_H
// Linux's epoll and timerfd, for the PostgreSQL driver's reactor thread (glibc; no package).
#include <sys/epoll.h>
#include <sys/timerfd.h>

#endif
