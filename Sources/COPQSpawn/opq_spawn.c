#define _GNU_SOURCE
#include "opq_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

// Moves `fd` to `target`, clearing close-on-exec also when it already is `target`.
static int move_descriptor(int fd, int target) {
    if (fd == target) {
        int flags = fcntl(fd, F_GETFD);
        return flags < 0 ? -1 : fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC);
    }
    return dup2(fd, target) < 0 ? -1 : 0;
}

// Runs in the vfork child, which shares the parent's memory and stack until it execs or exits: only
// system calls, no allocation, no locks. A failure is written to `*failure` and the child exits.
// /dev/null opened once (read-only, close-on-exec) for every child's stdin: a dup2 in the child instead of
// an open of /dev/null (a path walk and a device open, several times a dup2) per command; -1 until the
// first spawn opens it, or when it could not be opened (then the child opens /dev/null itself).
static int null_input = -1;
static pthread_once_t null_input_once = PTHREAD_ONCE_INIT;

static void open_null_input(void) { null_input = open("/dev/null", O_RDONLY | O_CLOEXEC); }

__attribute__((noreturn)) static void child(const opq_spawn_request *r, pid_t parent, uint64_t reset,
                                            volatile int *failure) {
    // Signal dispositions are the child's own copy (no CLONE_SIGHAND). Those in `reset` (handled or
    // ignored in the parent) go back to SIG_DFL before unblocking: no handler of the parent ever runs on
    // the shared stack, and the command does not inherit an ignored signal. Every other one is SIG_DFL
    // already. glibc refuses its internal signals (32, 33) with EINVAL: those go through the system call
    // itself (an all-zero kernel sigaction is SIG_DFL, no flags, empty mask) — an ignored one would survive exec.
    struct sigaction fallback = { .sa_handler = SIG_DFL };
    sigemptyset(&fallback.sa_mask);
    const uint64_t kernel_default[4] = { 0, 0, 0, 0 };
    for (uint64_t left = reset; left != 0; left &= left - 1) {
        int number = __builtin_ctzll(left) + 1;
        if (number == SIGKILL || number == SIGSTOP) continue;
        if (sigaction(number, &fallback, NULL) < 0 && errno == EINVAL) {
            syscall(SYS_rt_sigaction, number, kernel_default, NULL, sizeof(uint64_t));
        }
    }
    if (setpgid(0, 0) < 0) goto failed;
    if (r->death_signal != 0) {
        if (prctl(PR_SET_PDEATHSIG, (unsigned long)r->death_signal, 0UL, 0UL, 0UL) < 0) goto failed;
        // The parent may have died between vfork and prctl: then nobody would signal us.
        if (getppid() != parent) { *failure = ESRCH; _exit(127); }
    }
    if (r->directory != NULL && chdir(r->directory) < 0) goto failed;
    int input = r->stdin_path == NULL && null_input >= 0 ? null_input
        : open(r->stdin_path != NULL ? r->stdin_path : "/dev/null", O_RDONLY | O_CLOEXEC);
    if (input < 0 || move_descriptor(input, 0) < 0) goto failed;
    if (move_descriptor(r->stdout_fd, 1) < 0 || move_descriptor(r->stderr_fd, 2) < 0) goto failed;
    if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0) {
        // Kernels before 5.9: the worker's own descriptors are close-on-exec anyway.
        for (int fd = 3; fd < 1024; fd++) close(fd);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    // Listed before the command runs anything: the entry is in memory shared with the lease watchdog.
    if (r->lease_entry != NULL) atomic_store((_Atomic int32_t *)r->lease_entry, (int32_t)getpid());
    execve(r->path, r->argv, r->envp);
failed:
    *failure = errno;
    _exit(127);
}

// Which signals a child must reset: those not at SIG_DFL in this process (bit n - 1 for signal n), read
// from the kernel (/proc/self/status: SigIgn | SigCgt, the process-wide dispositions) instead of asked
// signal by signal in every child — resetting all 62 cost 62 system calls per command, reading the file
// costs about as much as 50 of them, so it is read at most once per `signal_snapshot_lifetime` and
// whenever opq itself changed a disposition (`opq_spawn_signal_dispositions_changed`, called by every
// place in opq that installs a handler or ignores a signal). The snapshot is kept only for a short
// while because code that is not opq's (a library, Dispatch registering a signal source on its own
// thread) may change a disposition without saying so: such a change reaches commands at most that long
// after it was made. If the file cannot be read, every signal is reset, as before.
static pthread_mutex_t signal_snapshot_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t signal_snapshot;             // guarded by signal_snapshot_lock, like the next two
static int64_t signal_snapshot_taken;        // CLOCK_MONOTONIC_COARSE nanoseconds
static uint64_t signal_snapshot_generation;  // `signal_generation` when it was read (0: never read)
static _Atomic uint64_t signal_generation = 1;  // bumped by every announced change
static const int64_t signal_snapshot_lifetime = 100 * 1000 * 1000;

static int64_t coarse_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);  // vDSO: no system call
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

// Parses "Name:\t<hex>" out of /proc/self/status text; 0 when absent (and sets *found to 0).
static uint64_t status_mask(const char *text, const char *name, int *found) {
    const char *line = strstr(text, name);
    if (line == NULL) { *found = 0; return 0; }
    return strtoull(line + strlen(name), NULL, 16);
}

uint64_t opq_spawn_read_signal_dispositions(void) {
    char text[8192];
    size_t used = 0;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ~(uint64_t)0;
    while (used < sizeof text - 1) {
        ssize_t count = read(fd, text + used, sizeof text - 1 - used);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        used += (size_t)count;
    }
    close(fd);
    text[used] = 0;
    int found = 1;
    uint64_t ignored = status_mask(text, "\nSigIgn:", &found);
    uint64_t caught = status_mask(text, "\nSigCgt:", &found);
    return found ? (ignored | caught) : ~(uint64_t)0;
}

void opq_spawn_signal_dispositions_changed(void) {
    atomic_fetch_add(&signal_generation, 1);
}

static uint64_t signals_to_reset(void) {
    int64_t now = coarse_now();
    // Loaded before the file is read: a change announced while it is read makes the snapshot stale at once.
    uint64_t generation = atomic_load(&signal_generation);
    pthread_mutex_lock(&signal_snapshot_lock);
    int fresh = signal_snapshot_generation == generation && now - signal_snapshot_taken < signal_snapshot_lifetime;
    uint64_t mask = signal_snapshot;
    pthread_mutex_unlock(&signal_snapshot_lock);
    if (fresh) return mask;
    mask = opq_spawn_read_signal_dispositions();
    pthread_mutex_lock(&signal_snapshot_lock);
    if (generation >= signal_snapshot_generation) {
        signal_snapshot = mask;
        signal_snapshot_taken = now;
        signal_snapshot_generation = generation;
    }
    pthread_mutex_unlock(&signal_snapshot_lock);
    return mask;
}

void opq_spawn_blocked_signals(sigset_t *set) {
    sigfillset(set);
    // SIGCHLD at SIG_DFL has no handler that could run in the child, so it stays unblocked: another
    // command ending during this spawn sends it to this thread, and blocked it would be queued instead of
    // dropped — waking every signalfd reader of the process for nothing (Dispatch's signal sources in
    // opq-coordinator and opq-worker: a thread woken for a quarter of the commands' ends in `opq map`).
    // Asked of the kernel every time (one system call), not taken from the snapshot, which may be stale.
    struct sigaction current;
    if (sigaction(SIGCHLD, NULL, &current) == 0 && (current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL) {
        sigdelset(set, SIGCHLD);
    }
}

pid_t opq_spawn(const opq_spawn_request *request) {
    volatile int failure = 0;
    uint64_t reset = signals_to_reset();
    if (request->stdin_path == NULL) pthread_once(&null_input_once, open_null_input);
    sigset_t all, previous;
    opq_spawn_blocked_signals(&all);
    // Blocked across vfork so no signal handler can run in the child before it resets dispositions.
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t parent = getpid();
    pid_t pid = vfork();
    if (pid == 0) child(request, parent, reset, &failure);
    int spawnError = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (pid < 0) return -spawnError;
    if (failure != 0) {
        // Not started: back to a reservation before the reap frees the id (the caller unlists the entry).
        if (request->lease_entry != NULL) {
            int32_t listed = pid;
            atomic_compare_exchange_strong((_Atomic int32_t *)request->lease_entry, &listed, 1);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        return -failure;
    }
    return pid;
}

int opq_become_child_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL) < 0 ? -errno : 0;
}

int opq_pidfd_open(pid_t pid) {
    long fd = syscall(SYS_pidfd_open, pid, 0U);
    return fd < 0 ? -errno : (int)fd;
}

static __thread int long_lived_thread;

void opq_spawn_mark_long_lived_thread(void) { long_lived_thread = 1; }

int opq_spawn_thread_is_long_lived(void) { return long_lived_thread; }

int opq_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC) < 0 ? -errno : 0;
}

int opq_monitor_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static int monitor_ctl(int epfd, int op, int fd, uint32_t events, uint64_t token) {
    struct epoll_event event = {.events = events, .data.u64 = token};
    return epoll_ctl(epfd, op, fd, &event) < 0 ? -errno : 0;
}

int opq_monitor_add(int epfd, int fd, uint64_t token) { return monitor_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN, token); }

int opq_monitor_add_once(int epfd, int fd, uint64_t token) {
    return monitor_ctl(epfd, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLONESHOT, token);
}

int opq_monitor_rearm(int epfd, int fd, uint64_t token) {
    return monitor_ctl(epfd, EPOLL_CTL_MOD, fd, EPOLLIN | EPOLLONESHOT, token);
}

int opq_monitor_remove(int epfd, int fd) {
    struct epoll_event unused = {0};  // kernels before 2.6.9 want one
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, &unused) < 0 ? -errno : 0;
}

int opq_monitor_wait(int epfd, uint64_t *tokens, uint8_t *has_data, int capacity, int timeout_ms) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epfd, events, capacity, timeout_ms);
    if (count < 0) return -errno;
    for (int i = 0; i < count; i++) {
        tokens[i] = events[i].data.u64;
        // A pipe whose writers are all gone and that holds nothing reports EPOLLHUP alone; with data left it
        // reports EPOLLIN too. A pidfd reports EPOLLIN (exited); anything else (EPOLLERR) is read to find out.
        has_data[i] = (events[i].events & ~(uint32_t)EPOLLHUP) != 0;
    }
    return count;
}
