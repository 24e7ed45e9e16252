#ifndef SPOUT_CEVENTPOLL_SHIM_H
#define SPOUT_CEVENTPOLL_SHIM_H
// Linux's epoll, timerfd and eventfd, for the PostgreSQL driver's reactor thread (glibc; no
// package).
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#endif
