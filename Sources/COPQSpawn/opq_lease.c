// The lease watchdog: see include/opq_lease.h.
#define _GNU_SOURCE
#include "opq_lease.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// An entry the watchdog is signalling: the worker does not unlist it until the mark is gone.
#define OPQ_LEASE_BUSY ((int32_t)1 << 30)

// Shared between the worker (writes) and the watchdog (reads; marks entries busy while it signals them).
struct opq_lease_table {
    _Atomic int64_t deadline_ns;  // When the lease ends, on CLOCK_MONOTONIC; 0: no lease yet.
    _Atomic int32_t used;         // Entries [0, used) have ever been taken: the watchdog reads only those.
    int32_t capacity;
    _Atomic int32_t entries[];    // 0: free; a process group id; or one | OPQ_LEASE_BUSY.
};

// The worker's own bookkeeping of free entries (never shared, so never read by the watchdog).
struct opq_lease_entries {
    pthread_mutex_t lock;
    int32_t *free;  // A stack of entries below `used` that were freed.
    int32_t count;
    int32_t room;
};

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static size_t table_size(int32_t capacity) {
    return sizeof(struct opq_lease_table) + (size_t)capacity * sizeof(_Atomic int32_t);
}

// Kills every listed group (watchdog): each entry is marked busy while it is signalled, so a worker
// unlisting it waits until the signal is sent and cannot reap (and free the id of) the group meanwhile.
static void kill_listed(struct opq_lease_table *table) {
    int32_t used = atomic_load(&table->used);
    for (int32_t k = 0; k < used; k++) {
        int32_t pgid = atomic_load(&table->entries[k]);
        if (pgid <= 1 || (pgid & OPQ_LEASE_BUSY)) continue;
        if (!atomic_compare_exchange_strong(&table->entries[k], &pgid, pgid | OPQ_LEASE_BUSY)) continue;
        kill(-pgid, SIGKILL);
        atomic_store(&table->entries[k], pgid);
    }
}

// The watchdog's loop, in the forked child: only async-signal-safe calls and raw system calls.
static void __attribute__((noreturn)) watchdog_main(int fd, struct opq_lease_table *table) {
    for (;;) {
        int timeout = -1;  // The lease is over (or there is none yet): sleep until woken.
        int64_t left = atomic_load(&table->deadline_ns) - monotonic_ns();
        if (left <= 0) {
            kill_listed(table);
        } else {
            int64_t ms = (left + 999999) / 1000000;
            timeout = ms > INT_MAX ? INT_MAX : (int)ms;
        }
        struct pollfd item = {.fd = fd, .events = POLLIN, .revents = 0};
        int ready = poll(&item, 1, timeout);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) break;
        if (ready == 0) continue;  // The end it slept to: read it again.
        char wake[16];
        ssize_t got = recv(fd, wake, sizeof wake, MSG_DONTWAIT);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) break;  // 0: the worker is gone.
    }
    kill_listed(table);
    _exit(0);
}

int opq_lease_watchdog_start(opq_lease_watchdog *watchdog, int32_t capacity) {
    if (capacity <= 0 || capacity > OPQ_LEASE_DEFAULT_CAPACITY) capacity = OPQ_LEASE_DEFAULT_CAPACITY;
    struct opq_lease_entries *entries = calloc(1, sizeof *entries);
    if (entries == NULL) return -ENOMEM;
    pthread_mutex_init(&entries->lock, NULL);
    struct opq_lease_table *table = mmap(NULL, table_size(capacity), PROT_READ | PROT_WRITE,
                                         MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (table == MAP_FAILED) {
        int error = errno;
        free(entries);
        return -error;
    }
    table->capacity = capacity;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        int error = errno;
        munmap(table, table_size(capacity));
        free(entries);
        return -error;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int error = errno;
        close(pair[0]);
        close(pair[1]);
        munmap(table, table_size(capacity));
        free(entries);
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
        watchdog_main(3, table);
    }
    close(pair[1]);
    // Processes the worker forks later (not its commands: those exec at once) do not share the table.
    madvise(table, table_size(capacity), MADV_DONTFORK);
    watchdog->fd = pair[0];
    watchdog->pid = pid;
    watchdog->table = table;
    watchdog->free = entries;
    return 0;
}

// One byte on the socket: the watchdog reads the table again. A full queue means a wake-up is pending.
static int wake(const opq_lease_watchdog *watchdog) {
    char byte = 1;
    for (;;) {
        if (send(watchdog->fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) return 0;
        if (errno == EAGAIN) return 0;
        if (errno != EINTR) return -errno;
    }
}

int opq_lease_watchdog_renew(const opq_lease_watchdog *watchdog, int64_t remaining_ns) {
    int64_t now = monotonic_ns();
    int64_t end = remaining_ns > 0 ? now + remaining_ns : now;
    int64_t before = atomic_exchange(&watchdog->table->deadline_ns, end);
    // Sleeping to `before` (or, once it passed, until woken), the watchdog must hear of an earlier end and
    // of a new lease after one ended; a later end it reads when it wakes at `before`.
    if (end < before || before <= now) return wake(watchdog);
    return 0;
}

// Takes a free entry (or a new one) holding `value`; -ENOSPC when the table is full.
static int32_t take_entry(const opq_lease_watchdog *watchdog, int32_t value) {
    struct opq_lease_table *table = watchdog->table;
    struct opq_lease_entries *entries = watchdog->free;
    int32_t entry = -ENOSPC;
    pthread_mutex_lock(&entries->lock);
    if (entries->count > 0) {
        entry = entries->free[--entries->count];
        atomic_store(&table->entries[entry], value);
    } else {
        int32_t used = atomic_load(&table->used);
        if (used < table->capacity) {
            entry = used;
            atomic_store(&table->entries[entry], value);
            atomic_store(&table->used, used + 1);  // After the entry: the watchdog never reads one half made.
        }
    }
    pthread_mutex_unlock(&entries->lock);
    return entry;
}

// No lease (or no room): the group may not run. The watchdog may have killed what was listed already, and
// does not wake for a group listed after that; the worker is running, so it kills the group itself.
static void kill_unless_leased(const opq_lease_watchdog *watchdog, int32_t entry, pid_t pgid) {
    if (entry < 0 || atomic_load(&watchdog->table->deadline_ns) <= monotonic_ns()) kill(-pgid, SIGKILL);
}

int32_t opq_lease_watchdog_add(const opq_lease_watchdog *watchdog, pid_t pgid) {
    if (pgid <= 1) return -EINVAL;
    int32_t entry = take_entry(watchdog, pgid);
    kill_unless_leased(watchdog, entry, pgid);
    return entry;
}

int32_t opq_lease_watchdog_reserve(const opq_lease_watchdog *watchdog) { return take_entry(watchdog, 1); }

int32_t *opq_lease_watchdog_slot(const opq_lease_watchdog *watchdog, int32_t entry) {
    return (int32_t *)&watchdog->table->entries[entry];
}

void opq_lease_watchdog_confirm(const opq_lease_watchdog *watchdog, int32_t entry, pid_t pgid) {
    if (pgid <= 1 || entry < 0) return;
    // Only over the reservation: once the child wrote its id the watchdog may be signalling it (busy mark).
    int32_t reserved = 1;
    atomic_compare_exchange_strong(&watchdog->table->entries[entry], &reserved, pgid);
    kill_unless_leased(watchdog, entry, pgid);
}

void opq_lease_watchdog_remove(const opq_lease_watchdog *watchdog, int32_t entry) {
    struct opq_lease_table *table = watchdog->table;
    if (entry < 0 || entry >= atomic_load(&table->used)) return;
    for (unsigned spins = 0;; spins++) {
        int32_t pgid = atomic_load(&table->entries[entry]);
        if (!(pgid & OPQ_LEASE_BUSY)) {
            if (atomic_compare_exchange_strong(&table->entries[entry], &pgid, 0)) break;
            continue;
        }
        // The watchdog is signalling this group: wait for the kill to be sent — unless the watchdog died
        // in between (then nobody clears the mark, and nobody signals any more).
        if (spins < 64) {
            sched_yield();
            continue;
        }
        siginfo_t info = {0};
        if (waitid(P_PID, (id_t)watchdog->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == watchdog->pid) {
            atomic_store(&table->entries[entry], 0);
            break;
        }
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 100000};
        nanosleep(&pause, NULL);
    }
    struct opq_lease_entries *entries = watchdog->free;
    pthread_mutex_lock(&entries->lock);
    if (entries->count == entries->room) {
        int32_t room = entries->room > 0 ? entries->room * 2 : 64;
        int32_t *grown = realloc(entries->free, (size_t)room * sizeof *grown);
        if (grown == NULL) {  // The entry is unlisted; it is only not reused.
            pthread_mutex_unlock(&entries->lock);
            return;
        }
        entries->free = grown;
        entries->room = room;
    }
    entries->free[entries->count++] = entry;
    pthread_mutex_unlock(&entries->lock);
}

void opq_lease_watchdog_stop(opq_lease_watchdog *watchdog) {
    if (watchdog->fd >= 0) close(watchdog->fd);
    watchdog->fd = -1;
    if (watchdog->pid > 0) {
        while (waitpid(watchdog->pid, NULL, 0) < 0 && errno == EINTR) {}
    }
    watchdog->pid = 0;
    if (watchdog->table != NULL) munmap(watchdog->table, table_size(watchdog->table->capacity));
    watchdog->table = NULL;
    if (watchdog->free != NULL) {
        pthread_mutex_destroy(&watchdog->free->lock);
        free(watchdog->free->free);
        free(watchdog->free);
    }
    watchdog->free = NULL;
}
