// opq_lease: the worker's lease watchdog (SEMANTICS §7, leases).
//
// A worker may run an attempt only while it holds a lease from the coordinator. Its commands run in
// process groups of their own, so a worker that is stopped (SIGSTOP, a debugger, a machine under
// memory pressure) cannot kill them itself when its lease runs out. The watchdog is a small process
// forked from the worker that does: the worker tells it the lease's end (on CLOCK_MONOTONIC, which all
// processes of a machine share) and every process group it starts and reaps; the moment the lease
// ends, the watchdog sends SIGKILL to every group it knows, and to any group it is told about later
// until the lease is renewed. When the worker goes away (its end of the socket closes: exit, crash,
// SIGKILL) the watchdog kills what is left and exits. It only ever calls async-signal-safe functions.
#ifndef OPQ_LEASE_H
#define OPQ_LEASE_H

#include <stdint.h>
#include <sys/types.h>

typedef struct {
    int fd;     // The worker's end of the socket pair (SOCK_SEQPACKET, close-on-exec).
    pid_t pid;  // The watchdog process.
} opq_lease_watchdog;

// Starts a watchdog with no lease (a group it is told about is killed at once until the first renew).
// Returns 0, or -errno.
int opq_lease_watchdog_start(opq_lease_watchdog *watchdog);

// The lease now ends `remaining_ns` nanoseconds from now (≤ 0: it is over). Returns 0 or -errno.
int opq_lease_watchdog_renew(const opq_lease_watchdog *watchdog, int64_t remaining_ns);

// Process group `pgid` runs under the lease (`opq_lease_watchdog_add`) or is reaped (`_remove`).
// Returns 0 or -errno.
int opq_lease_watchdog_add(const opq_lease_watchdog *watchdog, pid_t pgid);
int opq_lease_watchdog_remove(const opq_lease_watchdog *watchdog, pid_t pgid);

// Closes the worker's end (the watchdog kills any group it still knows, then exits) and reaps it.
void opq_lease_watchdog_stop(opq_lease_watchdog *watchdog);

#endif
