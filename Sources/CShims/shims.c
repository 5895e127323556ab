#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
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

static volatile int tuneup_signal_fd = -1;

static void tuneup_forward_signal(int sig) {
    int saved = errno;
    unsigned char byte = (unsigned char)sig;
    if (tuneup_signal_fd >= 0) {
        ssize_t ignored = write(tuneup_signal_fd, &byte, 1);
        (void)ignored;
    }
    errno = saved;
}

int tuneup_forward_signals(const int *signals, int count, int fd) {
    tuneup_signal_fd = fd;
    for (int i = 0; i < count; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = tuneup_forward_signal;
        action.sa_flags = SA_RESTART;
        sigemptyset(&action.sa_mask);
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

void tuneup_block_termination_signals(void *old) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &set, (sigset_t *)old);
}

void tuneup_restore_signal_mask(const void *old) {
    pthread_sigmask(SIG_SETMASK, (const sigset_t *)old, NULL);
}

size_t tuneup_sigset_size(void) { return sizeof(sigset_t); }

int tuneup_spawn_closefrom(void *actions, int lowfd) {
    return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, lowfd);
}

int tuneup_spawn_chdir(void *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np((posix_spawn_file_actions_t *)actions, path);
}

int tuneup_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int tuneup_timerfd_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC); }

int tuneup_timerfd_arm(int fd, int64_t nanoseconds) {
    if (nanoseconds < 1) nanoseconds = 1;
    struct itimerspec spec = {0};
    spec.it_value.tv_sec = nanoseconds / 1000000000;
    spec.it_value.tv_nsec = nanoseconds % 1000000000;
    return timerfd_settime(fd, 0, &spec, NULL);
}

int tuneup_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int tuneup_enable_receive_timestamps(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
}

long tuneup_recv_timestamped(int fd, void *buf, size_t len, int flags, void *addr, unsigned int *addrlen,
                             int64_t *sec, int64_t *nsec) {
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    union {
        char bytes[CMSG_SPACE(sizeof(struct timespec)) + 64];
        struct cmsghdr align;
    } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_name = addr;
    msg.msg_namelen = addrlen ? *addrlen : 0;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    *sec = -1;
    *nsec = -1;
    ssize_t n = recvmsg(fd, &msg, flags);
    if (n < 0) return -1;
    if (addrlen) *addrlen = msg.msg_namelen;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            *sec = (int64_t)ts.tv_sec;
            *nsec = (int64_t)ts.tv_nsec;
        }
    }
    return (long)n;
}
