#ifndef TUNEUP_CSHIMS_H
#define TUNEUP_CSHIMS_H

/* Small wrappers for libc/Linux calls that Swift's Glibc module hides (GNU extensions) or imports awkwardly
 * (epoll_event is a packed struct). Everything else is called directly from Swift. */

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>

/* Pseudo-terminal allocation (posix_openpt & co. are hidden without _XOPEN_SOURCE / _GNU_SOURCE). */
int tuneup_posix_openpt(int flags);
int tuneup_grantpt(int fd);
int tuneup_unlockpt(int fd);
int tuneup_ptsname_r(int fd, char *buf, size_t buflen);

/* accept4 is a GNU extension. `addr` is a struct sockaddr *, `addrlen` a socklen_t *. */
int tuneup_accept4(int fd, void *addr, unsigned int *addrlen, int flags);

/* Names the calling thread (at most 15 bytes are kept). */
void tuneup_set_thread_name(const char *name);

/* epoll with an unpacked event record. */
typedef struct {
    uint32_t events;
    uint64_t data;
} tuneup_epoll_event;

int tuneup_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
int tuneup_epoll_wait(int epfd, tuneup_epoll_event *events, int maxevents, int timeout_ms);

/* Termination signals without losses: installs, for each of `signals`, a handler that writes the signal number (one
 * byte) to `fd` (async-signal-safe; errno preserved; SA_RESTART). A signal handled this way reaches whichever thread
 * the kernel picks and is never dropped, unlike SIG_IGN plus a signalfd-based source, where a thread that does not
 * block the signal can take it first and discard it. Returns 0, or -1 with errno. */
int tuneup_forward_signals(const int *signals, int count, int fd);

/* A descriptor that becomes readable when process `pid` (a child) ends (pidfd_open, Linux 5.3); -1 with errno. */
int tuneup_pidfd_open(int pid);

/* Blocks the termination signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT) in the calling thread, so that threads it creates
 * afterwards inherit a mask that leaves those signals to the threads that expect them. Returns the old mask in
 * `old` (a sigset_t) for tuneup_restore_signal_mask. */
void tuneup_block_termination_signals(void *old);
void tuneup_restore_signal_mask(const void *old);
size_t tuneup_sigset_size(void);

/* posix_spawn_file_actions_addclosefrom_np (glibc 2.34, a GNU extension): the spawned program gets no descriptor
 * from `lowfd` up, so a daemon it leaves behind holds none of ours. `actions` is a posix_spawn_file_actions_t *. */
int tuneup_spawn_closefrom(void *actions, int lowfd);

/* posix_spawn_file_actions_addchdir_np (glibc 2.29, a GNU extension): the spawned program starts in `path`. */
int tuneup_spawn_chdir(void *actions, const char *path);

/* A non-blocking, close-on-exec timerfd on CLOCK_MONOTONIC (the I/O reactor's timers); -1 with errno. */
int tuneup_timerfd_create(void);

/* Arms the timerfd to expire once, `nanoseconds` from now (at least 1 ns: 0 would disarm it). 0, or -1 with errno. */
int tuneup_timerfd_arm(int fd, int64_t nanoseconds);

/* pipe2 (a GNU extension): a pipe whose ends are close-on-exec from the start (no window for a concurrent spawn). */
int tuneup_pipe_cloexec(int fds[2]);

/* Kernel receive timestamps of a UDP socket: SO_TIMESTAMPNS on (0, or -1 with errno). */
int tuneup_enable_receive_timestamps(int fd);

/* recvmsg of one datagram with its sender (`addr`, a struct sockaddr_storage *, `*addrlen` in/out) and the kernel's
 * receive time (SCM_TIMESTAMPNS, CLOCK_REALTIME) in `*sec`/`*nsec`, both set to -1 when the datagram carries none.
 * Returns the byte count, or -1 with errno. `flags` as recvmsg's (MSG_DONTWAIT...). */
long tuneup_recv_timestamped(int fd, void *buf, size_t len, int flags, void *addr, unsigned int *addrlen,
                             int64_t *sec, int64_t *nsec);

#endif
