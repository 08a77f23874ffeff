#define _GNU_SOURCE
#include "opq_spawn.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_RESET_ON_FORK 0x01
#endif

// The kernel's struct sched_attr (version 1, 56 bytes: with the utilization clamps), declared here so
// the build needs no linux/sched/types.h.
struct opq_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
    uint32_t sched_util_min;
    uint32_t sched_util_max;
};

int opq_thread_prefer_short_slices(uint64_t slice_ns) {
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
    struct opq_sched_attr attr;
    memset(&attr, 0, sizeof attr);
    if (syscall(SYS_sched_getattr, 0, &attr, (unsigned)sizeof attr, 0U) < 0) return -errno;
    // A real-time thread is left alone; so is a negative niceness, which reset-on-fork would take from
    // the commands this thread spawns (they inherit its niceness: see NicenessLane).
    if (attr.sched_policy != SCHED_OTHER || attr.sched_nice < 0) return 1;
    attr.size = sizeof attr;
    attr.sched_runtime = slice_ns;
    // Children start with the default slice (and policy), not this one.
    attr.sched_flags = SCHED_FLAG_RESET_ON_FORK;
    if (syscall(SYS_sched_setattr, 0, &attr, 0U) < 0) return -errno;
    return 0;
#else
    (void)slice_ns;
    return -ENOSYS;
#endif
}
