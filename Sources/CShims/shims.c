#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "cshims.h"

int tuneup_posix_openpt(int flags) { return posix_openpt(flags); }
int tuneup_grantpt(int fd) { return grantpt(fd); }
int tuneup_unlockpt(int fd) { return unlockpt(fd); }
int tuneup_ptsname_r(int fd, char *buf, size_t buflen) { return ptsname_r(fd, buf, buflen); }

int tuneup_accept4(int fd, void *addr, unsigned int *addrlen, int flags) {
    return accept4(fd, (struct sockaddr *)addr, (socklen_t *)addrlen, flags);
}

void tuneup_set_thread_name(const char *name) {
    char buf[16];
    strncpy(buf, name, sizeof buf - 1);
    buf[sizeof buf - 1] = 0;
    pthread_setname_np(pthread_self(), buf);
}

int tuneup_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &ev);
}

int tuneup_epoll_wait(int epfd, tuneup_epoll_event *events, int maxevents, int timeout_ms) {
    struct epoll_event raw[64];
    if (maxevents > 64) maxevents = 64;
    int n = epoll_wait(epfd, raw, maxevents, timeout_ms);
    for (int i = 0; i < n; i++) {
        events[i].events = raw[i].events;
        events[i].data = raw[i].data.u64;
    }
    return n;
}
