// epoll for the benchmarks' load loop: Swift's Glibc module does not bring <sys/epoll.h>, so these wrappers
// hand it over with plain ints (a client's index stands in the event's data).
#ifndef CEPOLL_H
#define CEPOLL_H

#include <sys/epoll.h>

/// A new epoll instance (close-on-exec), or -1.
static inline int lv_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/// Watches `fd` for reading (level-triggered), reporting `index`.
static inline int lv_epoll_watch(int epoll, int fd, int index) {
    struct epoll_event event = { .events = EPOLLIN, .data = { .u64 = (unsigned long long)index } };
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
}

/// Stops watching `fd`.
static inline int lv_epoll_unwatch(int epoll, int fd) {
    struct epoll_event event = { 0 };
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, &event);
}

/// Waits up to `timeout` ms; writes the indices of at most `capacity` (≤ 256) ready descriptors to
/// `indices` and returns their count, or -1 (errno set).
static inline int lv_epoll_wait(int epoll, int *indices, int capacity, int timeout) {
    struct epoll_event events[256];
    if (capacity > 256) capacity = 256;
    int n = epoll_wait(epoll, events, capacity, timeout);
    for (int i = 0; i < n; i++) indices[i] = (int)events[i].data.u64;
    return n;
}

#endif
