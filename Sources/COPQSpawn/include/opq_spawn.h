// opq_spawn: start a command the way an opq worker needs, in one step the child cannot get wrong.
//
// posix_spawn cannot set a parent-death signal, and wrapping every command in `setpriv --pdeathsig`
// costs a second exec per command (about half the cost of running `true`). This does what glibc's
// posix_spawn does — vfork, a few system calls in the child, exec — plus PR_SET_PDEATHSIG.
#ifndef OPQ_SPAWN_H
#define OPQ_SPAWN_H

#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include "opq_lease.h"  // the lease watchdog (included here so module caches notice the new header)

typedef struct {
    const char *path;          // The executable, already resolved (no PATH search here).
    char *const *argv;         // NULL-terminated.
    char *const *envp;         // NULL-terminated.
    const char *directory;     // Working directory, or NULL for the caller's.
    const char *stdin_path;    // Opened read-only as the child's descriptor 0, or NULL for /dev/null.
    int stdout_fd;             // Becomes the child's descriptor 1.
    int stderr_fd;             // Becomes the child's descriptor 2.
    int death_signal;          // Sent to the child when the spawning *thread* ends; 0 for none.
    int32_t *lease_entry;      // A lease table entry reserved for the child's group (opq_lease_watchdog_slot),
                               // or NULL: the child writes its group id there before it execs, so a worker
                               // killed right after the spawn leaves no group its watchdog does not know.
} opq_spawn_request;

// Starts the child: a new process group led by it, stdin from `stdin_path` (default /dev/null), stdout and stderr from the
// request, every other descriptor closed, default signal dispositions (the child resets only the
// signals that are handled or ignored here), an empty signal mask, the working directory, then exec. Returns the child's pid (also its process group id), or -errno when
// the child could not be started (e.g. -ENOENT for a missing working directory or program); a child
// that failed to start is reaped before this returns.
pid_t opq_spawn(const opq_spawn_request *request);

// The signals opq_spawn blocks in the calling thread across vfork: all, except SIGCHLD while it is at
// SIG_DFL (no handler of the parent can then run in the child, and a SIGCHLD that arrives is dropped,
// not queued to wake the process's signalfd readers).
void opq_spawn_blocked_signals(sigset_t *set);

// Tells opq_spawn that this process changed a signal's disposition (installed a handler, ignored it or
// set it back to default): the next spawn reads which signals its child must reset again instead of
// using its snapshot (see opq_spawn.c). Call it after every sigaction/signal that is not SIG_DFL → SIG_DFL.
void opq_spawn_signal_dispositions_changed(void);

// The signals whose disposition is not SIG_DFL in this process (bit n - 1 for signal n: /proc/self/status
// SigIgn | SigCgt), or all bits when that cannot be read.
uint64_t opq_spawn_read_signal_dispositions(void);

// prctl(PR_SET_CHILD_SUBREAPER, 1): orphaned descendants are re-parented to this process.
// Returns 0 or -errno.
int opq_become_child_subreaper(void);

// pidfd_open(pid, 0): a descriptor that polls readable once the process `pid` (a child not reaped yet)
// has exited. Returns the descriptor (close-on-exec) or -errno (ENOSYS before Linux 5.3).
int opq_pidfd_open(pid_t pid);

// pipe2(fds, O_CLOEXEC): both ends close-on-exec in one system call. Returns 0 or -errno.
int opq_pipe_cloexec(int fds[2]);

// The worker's child monitor: an epoll set (level-triggered) whose events carry a 64-bit token.
// opq_monitor_create: epoll_create1(EPOLL_CLOEXEC); the descriptor or -errno.
int opq_monitor_create(void);
// Adds `fd` (readable, hang-up) with `token`. Returns 0 or -errno.
int opq_monitor_add(int epfd, int fd, uint64_t token);
// Adds `fd` like opq_monitor_add, reported once (EPOLLONESHOT): after its event it stays in the set,
// disarmed, until it is removed or closed — a descriptor whose one event is all that matters (a pidfd)
// is closed without opq_monitor_remove, and a copy of it that another process holds for a moment (a
// child between vfork and exec) makes no event of it.
int opq_monitor_add_once(int epfd, int fd, uint64_t token);
// Arms again a descriptor added with opq_monitor_add_once, for one more event. Returns 0 or -errno.
int opq_monitor_rearm(int epfd, int fd, uint64_t token);
// Removes `fd`. Returns 0 or -errno (ENOENT when it was not in the set).
int opq_monitor_remove(int epfd, int fd);
// Waits up to `timeout_ms` (-1: no limit; 0: no wait) for at most `capacity` (≤ 64) ready descriptors;
// fills their tokens and whether each has data or an end to read (EPOLLIN, EPOLLHUP, EPOLLERR: 1) or only
// a hang-up with nothing left to read (0). Returns how many, or -errno (EINTR).
int opq_monitor_wait(int epfd, uint64_t *tokens, uint8_t *has_data, int capacity, int timeout_ms);

// Marks the calling thread as one that lives as long as the worker (its socket thread, the child
// monitor): a child it spawns keeps its parent-death signal until the worker ends.
void opq_spawn_mark_long_lived_thread(void);

// Whether the calling thread was marked by opq_spawn_mark_long_lived_thread.
int opq_spawn_thread_is_long_lived(void);

// Asks the scheduler for time slices of `slice_ns` for the calling thread (sched_setattr's sched_runtime
// for SCHED_OTHER, Linux 6.12 and later; older kernels ignore it), with reset-on-fork so that the children
// it spawns get the default slice. 0 when set; 1 when left alone (a real-time policy, or a negative
// niceness that reset-on-fork would take from its children); -errno when the kernel refused.
int opq_thread_prefer_short_slices(uint64_t slice_ns);

#endif
