#define _GNU_SOURCE
#include "opq_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
__attribute__((noreturn)) static void child(const opq_spawn_request *r, pid_t parent, volatile int *failure) {
    // Signal dispositions are the child's own (no CLONE_SIGHAND): reset them before unblocking, so no
    // handler of the parent ever runs on the shared stack.
    struct sigaction fallback = { .sa_handler = SIG_DFL };
    sigemptyset(&fallback.sa_mask);
    for (int number = 1; number < _NSIG; number++) {
        if (number != SIGKILL && number != SIGSTOP) sigaction(number, &fallback, NULL);
    }
    if (setpgid(0, 0) < 0) goto failed;
    if (r->death_signal != 0) {
        if (prctl(PR_SET_PDEATHSIG, (unsigned long)r->death_signal, 0UL, 0UL, 0UL) < 0) goto failed;
        // The parent may have died between vfork and prctl: then nobody would signal us.
        if (getppid() != parent) { *failure = ESRCH; _exit(127); }
    }
    if (r->directory != NULL && chdir(r->directory) < 0) goto failed;
    int input = open(r->stdin_path != NULL ? r->stdin_path : "/dev/null", O_RDONLY | O_CLOEXEC);
    if (input < 0 || move_descriptor(input, 0) < 0) goto failed;
    if (move_descriptor(r->stdout_fd, 1) < 0 || move_descriptor(r->stderr_fd, 2) < 0) goto failed;
    if (syscall(SYS_close_range, 3U, ~0U, 0U) < 0) {
        // Kernels before 5.9: the worker's own descriptors are close-on-exec anyway.
        for (int fd = 3; fd < 1024; fd++) close(fd);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(r->path, r->argv, r->envp);
failed:
    *failure = errno;
    _exit(127);
}

pid_t opq_spawn(const opq_spawn_request *request) {
    volatile int failure = 0;
    sigset_t all, previous;
    sigfillset(&all);
    // Blocked across vfork so no signal handler can run in the child before it resets dispositions.
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pid_t parent = getpid();
    pid_t pid = vfork();
    if (pid == 0) child(request, parent, &failure);
    int spawnError = errno;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (pid < 0) return -spawnError;
    if (failure != 0) {
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
