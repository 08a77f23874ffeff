// The lease watchdog: see include/opq_lease.h.
#define _GNU_SOURCE
#include "opq_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { OPQ_LEASE_RENEW = 1, OPQ_LEASE_ADD = 2, OPQ_LEASE_REMOVE = 3 };

// One order, sent as one datagram: atomic, never split or merged.
typedef struct {
    int32_t kind;
    int32_t pgid;
    int64_t deadline_ns;  // RENEW: when the lease ends, on CLOCK_MONOTONIC.
} opq_lease_order;

// More groups than any machine can hold processes (pid_max is at most 2^22); reserved, not committed.
#define OPQ_LEASE_CAPACITY (1 << 22)

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void kill_all(pid_t *groups, size_t *count) {
    for (size_t k = 0; k < *count; k++) kill(-groups[k], SIGKILL);
    *count = 0;
}

// The watchdog's loop, in the forked child: only async-signal-safe calls and raw system calls.
static void __attribute__((noreturn)) watchdog_main(int fd) {
    pid_t *groups = mmap(NULL, (size_t)OPQ_LEASE_CAPACITY * sizeof(pid_t), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (groups == MAP_FAILED) _exit(1);
    size_t count = 0;
    int64_t deadline = 0;  // No lease yet.
    for (;;) {
        int timeout = -1;
        if (count > 0) {
            int64_t left = deadline - monotonic_ns();
            if (left <= 0) {
                kill_all(groups, &count);
                continue;
            }
            int64_t ms = (left + 999999) / 1000000;
            timeout = ms > INT_MAX ? INT_MAX : (int)ms;
        }
        struct pollfd item = {.fd = fd, .events = POLLIN, .revents = 0};
        int ready = poll(&item, 1, timeout);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) break;
        if (ready == 0) continue;
        opq_lease_order order;
        ssize_t got = recv(fd, &order, sizeof order, 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got != (ssize_t)sizeof order) break;  // 0: the worker is gone.
        switch (order.kind) {
        case OPQ_LEASE_RENEW:
            deadline = order.deadline_ns;
            break;
        case OPQ_LEASE_ADD:
            if (order.pgid <= 1) break;
            if (count == OPQ_LEASE_CAPACITY || monotonic_ns() >= deadline) {
                kill(-order.pgid, SIGKILL);  // No lease: it may not run.
                break;
            }
            groups[count++] = order.pgid;
            break;
        case OPQ_LEASE_REMOVE:
            for (size_t k = 0; k < count; k++) {
                if (groups[k] == order.pgid) {
                    groups[k] = groups[--count];
                    break;
                }
            }
            break;
        default:
            break;
        }
    }
    kill_all(groups, &count);
    _exit(0);
}

int opq_lease_watchdog_start(opq_lease_watchdog *watchdog) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int error = errno;
        close(pair[0]);
        close(pair[1]);
        return -error;
    }
    if (pid == 0) {
        // Its own process group: a terminal's ^C for the worker does not reach it (the worker stops
        // its attempts itself; the watchdog exits when the worker's end closes).
        setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (dup2(pair[1], 3) < 0) _exit(1);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        // Every other descriptor closed: the watchdog must not keep the worker's sockets or pipes open.
        if (syscall(SYS_close_range, 4U, ~0U, 0) != 0) {
            struct rlimit limit;
            long last = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 65536 ? (long)limit.rlim_cur : 65536;
            for (long k = 4; k < last; k++) close((int)k);
        }
        watchdog_main(3);
    }
    close(pair[1]);
    watchdog->fd = pair[0];
    watchdog->pid = pid;
    return 0;
}

static int send_order(const opq_lease_watchdog *watchdog, opq_lease_order order) {
    for (;;) {
        if (send(watchdog->fd, &order, sizeof order, MSG_NOSIGNAL) == (ssize_t)sizeof order) return 0;
        if (errno != EINTR) return -errno;
    }
}

int opq_lease_watchdog_renew(const opq_lease_watchdog *watchdog, int64_t remaining_ns) {
    opq_lease_order order = {.kind = OPQ_LEASE_RENEW, .pgid = 0, .deadline_ns = monotonic_ns() + remaining_ns};
    return send_order(watchdog, order);
}

int opq_lease_watchdog_add(const opq_lease_watchdog *watchdog, pid_t pgid) {
    opq_lease_order order = {.kind = OPQ_LEASE_ADD, .pgid = pgid, .deadline_ns = 0};
    return send_order(watchdog, order);
}

int opq_lease_watchdog_remove(const opq_lease_watchdog *watchdog, pid_t pgid) {
    opq_lease_order order = {.kind = OPQ_LEASE_REMOVE, .pgid = pgid, .deadline_ns = 0};
    return send_order(watchdog, order);
}

void opq_lease_watchdog_stop(opq_lease_watchdog *watchdog) {
    if (watchdog->fd >= 0) close(watchdog->fd);
    watchdog->fd = -1;
    if (watchdog->pid > 0) {
        while (waitpid(watchdog->pid, NULL, 0) < 0 && errno == EINTR) {}
    }
    watchdog->pid = 0;
}
