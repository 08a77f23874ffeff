// opq_lease: the worker's lease watchdog (SEMANTICS §7, leases).
//
// A worker may run an attempt only while it holds a lease from the coordinator. Its commands run in
// process groups of their own, so a worker that is stopped (SIGSTOP, a debugger, a machine under
// memory pressure) cannot kill them itself when its lease runs out. The watchdog is a small process
// forked from the worker that does: the moment the lease ends it sends SIGKILL to every process group
// listed, and when the worker goes away (its end of the socket closes: exit, crash, SIGKILL) it kills
// what is listed and exits. It only ever calls async-signal-safe functions.
//
// The worker and the watchdog share one table (a MAP_SHARED anonymous mapping made before the fork):
// the lease's end (CLOCK_MONOTONIC, which all processes of a machine share) and the process groups of
// the running commands. The worker writes it with atomic stores, so listing a group, unlisting it and
// extending the lease cost no system call and wake nobody. The watchdog sleeps until the end it last
// read; woken then, it reads the end again and sleeps on if the lease was extended meanwhile (one
// wake-up per extension at most). The worker wakes it (one byte on the socket) only when the end moves
// earlier than the watchdog may be sleeping to (the lease ended), or after a lease had ended (the
// watchdog sleeps without a timeout then).
//
// Unlisting and reaping: a process group's id is free for reuse once every member of it is reaped. The
// worker unlists a group BEFORE it reaps the member that may be its last (`opq_lease_watchdog_remove`
// returns only once the watchdog is not signalling that group: an entry being signalled is marked busy
// and the worker waits for the mark to go), so the watchdog never signals a reused id. A group found to
// have members left after that reap is listed again.
#ifndef OPQ_LEASE_H
#define OPQ_LEASE_H

#include <stdint.h>
#include <sys/types.h>

struct opq_lease_table;
struct opq_lease_entries;

typedef struct {
    int fd;                            // The worker's end of the socket pair (SOCK_SEQPACKET, close-on-exec).
    pid_t pid;                         // The watchdog process.
    struct opq_lease_table *table;     // Shared with the watchdog.
    struct opq_lease_entries *free;    // The worker's free entries (private, guarded by its own mutex).
} opq_lease_watchdog;

// More groups than any machine can hold processes (PID_MAX_LIMIT is 2^22): every listed entry is a
// distinct process group that exists, so the table cannot fill. Reserved, not committed: only the
// pages of entries in use are ever touched (a freed entry is reused before a new one is taken).
#define OPQ_LEASE_DEFAULT_CAPACITY (1 << 22)

// Starts a watchdog with no lease and room for `capacity` groups at once (≤ 0: the default).
// Returns 0, or -errno.
int opq_lease_watchdog_start(opq_lease_watchdog *watchdog, int32_t capacity);

// The lease now ends `remaining_ns` nanoseconds from now (≤ 0: it is over, every listed group is killed
// at once). Returns 0, or -errno when the watchdog could not be woken (it is gone).
int opq_lease_watchdog_renew(const opq_lease_watchdog *watchdog, int64_t remaining_ns);

// Lists process group `pgid` (> 1), which the caller leads and has not reaped. Returns the entry to
// give to `opq_lease_watchdog_remove` (≥ 0). When there is no lease now, the group is killed at once
// (SIGKILL) and stays listed. When the table is full the group is killed at once and -ENOSPC returned:
// a group is never left running untracked.
int32_t opq_lease_watchdog_add(const opq_lease_watchdog *watchdog, pid_t pgid);

// Takes an entry for a group not spawned yet (it holds 1, which the watchdog skips): the child writes its
// group id there itself before it execs (`opq_spawn_request.lease_entry`, from `opq_lease_watchdog_slot`),
// then the worker calls `opq_lease_watchdog_confirm`; if the spawn fails, `opq_lease_watchdog_remove`.
// Returns the entry, or -ENOSPC when the table is full.
int32_t opq_lease_watchdog_reserve(const opq_lease_watchdog *watchdog);

// Where the spawned child writes its group id for a reserved `entry`.
int32_t *opq_lease_watchdog_slot(const opq_lease_watchdog *watchdog, int32_t entry);

// After a spawn into a reserved `entry`: the entry lists `pgid` (written here too if the child did not). As
// with `opq_lease_watchdog_add`, a group listed when there is no lease is killed at once.
void opq_lease_watchdog_confirm(const opq_lease_watchdog *watchdog, int32_t entry, pid_t pgid);

// Unlists `entry`; when this returns the watchdog does not signal its group any more (it waits while the
// watchdog is signalling it, a system call's time). Call it before reaping the group's last member.
void opq_lease_watchdog_remove(const opq_lease_watchdog *watchdog, int32_t entry);

// Closes the worker's end (the watchdog kills any group still listed, then exits), reaps it and frees
// the table.
void opq_lease_watchdog_stop(opq_lease_watchdog *watchdog);

#endif
