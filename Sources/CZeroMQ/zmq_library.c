// Loads libzmq on the first zmq_* call of a process (see include/CZeroMQ.h).
#include "CZeroMQ.h"

#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#ifdef __APPLE__
#define OPQ_ZMQ_LIBRARY "libzmq.5.dylib"
#define OPQ_ZMQ_INSTALL "brew install zeromq"
#else
#define OPQ_ZMQ_LIBRARY "libzmq.so.5"
#define OPQ_ZMQ_INSTALL "apt-get install libzmq5"
#endif

const struct opq_zmq_library *opq_zmq_library_loaded;

static struct opq_zmq_library library;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[768];
static int failed;

static void fail(const char *what, const char *detail) {
    snprintf(failure, sizeof failure,
             "%s (%s); opq needs ZeroMQ's library (libzmq 4.3 or later) at run time: install it with `%s`",
             what, detail ? detail : "no detail", OPQ_ZMQ_INSTALL);
    failed = 1;
}

static void load(void) {
    // RTLD_LOCAL: libzmq's symbols stay out of the global scope (nothing else binds to them by name).
    // RTLD_LAZY, as the loader binds a DT_NEEDED libzmq: RTLD_NOW would resolve every symbol libzmq and
    // its 14 libraries import at once (callgrind: +3.2M instructions, ≈ 1 ms, on top of the open).
    void *handle = dlopen(OPQ_ZMQ_LIBRARY, RTLD_LAZY | RTLD_LOCAL);
    if (!handle) {
        fail("cannot load " OPQ_ZMQ_LIBRARY, dlerror());
        return;
    }
    struct opq_zmq_library resolved;
#define OPQ_ZMQ_RESOLVE(type, name, parameters, arguments) \
    *(void **)&resolved.zmq_##name = dlsym(handle, "zmq_" #name); \
    if (!resolved.zmq_##name) { \
        fail(OPQ_ZMQ_LIBRARY " has no function zmq_" #name " (not libzmq 4.3 or later?)", dlerror()); \
        dlclose(handle); \
        return; \
    }
    OPQ_ZMQ_FUNCTIONS(OPQ_ZMQ_RESOLVE)
#undef OPQ_ZMQ_RESOLVE
    library = resolved;
    __atomic_store_n(&opq_zmq_library_loaded, &library, __ATOMIC_RELEASE);
}

const struct opq_zmq_library *opq_zmq_load(void) {
    pthread_once(&once, load);
    return __atomic_load_n(&opq_zmq_library_loaded, __ATOMIC_ACQUIRE);
}

const char *opq_zmq_load_error(void) {
    // `failed` is written before pthread_once returns in the loading thread; a caller that saw a call
    // fail went through opq_zmq_load, whose pthread_once orders that write before this read.
    return failed ? failure : NULL;
}

int opq_zmq_is_loaded(void) {
    return __atomic_load_n(&opq_zmq_library_loaded, __ATOMIC_ACQUIRE) != NULL;
}

// ZMQ_EVENTS of `socket` reduced to what `wanted` asks for (ZMQ_POLLIN | ZMQ_POLLOUT); -1 on error.
static int socket_events(void *socket, short wanted, short *ready) {
    uint32_t events = 0;
    size_t size = sizeof events;
    if (zmq_getsockopt(socket, ZMQ_EVENTS, &events, &size) == -1) return -1;
    *ready = (short)(events & (uint32_t)(wanted & (ZMQ_POLLIN | ZMQ_POLLOUT)));
    return 0;
}

static int64_t monotonic_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int opq_zmq_poll(zmq_pollitem_t *items, int count, long timeout) {
    return opq_zmq_poll_quiet(items, count, timeout, NULL, NULL);
}

int opq_zmq_poll_quiet(zmq_pollitem_t *items, int count, long timeout, const uint8_t *quiet, uint8_t *was_read) {
    if (count > OPQ_ZMQ_POLL_MAX_ITEMS || count < 0) {
        if (was_read) for (int i = 0; i < count; i++) was_read[i] = items[i].socket != NULL;
        return zmq_poll(items, count, timeout);
    }
    struct pollfd fds[OPQ_ZMQ_POLL_MAX_ITEMS];
    int ready = 0;
    // Sockets first: what they hold now (libzmq's first pass) — unless the caller knows they held nothing
    // and were not used since —, and the descriptor that signals a change.
    for (int i = 0; i < count; i++) {
        items[i].revents = 0;
        if (items[i].socket) {
            int known = quiet != NULL && quiet[i];
            if (!known && socket_events(items[i].socket, items[i].events, &items[i].revents) == -1) return -1;
            if (was_read) was_read[i] = !known;
            if (items[i].revents) ready++;
            int fd = -1;
            size_t size = sizeof fd;
            if (zmq_getsockopt(items[i].socket, ZMQ_FD, &fd, &size) == -1) return -1;
            fds[i].fd = fd;
            fds[i].events = POLLIN;
        } else {
            fds[i].fd = items[i].fd;
            fds[i].events = (short)((items[i].events & ZMQ_POLLIN ? POLLIN : 0) | (items[i].events & ZMQ_POLLOUT ? POLLOUT : 0)
                                    | (items[i].events & ZMQ_POLLPRI ? POLLPRI : 0));
        }
        fds[i].revents = 0;
    }
    int64_t deadline = timeout > 0 ? monotonic_ms() + timeout : 0;
    long wait = ready ? 0 : timeout;
    while (1) {
        if (poll(fds, (nfds_t)count, (int)(wait > INT32_MAX ? INT32_MAX : wait)) == -1) return -1;  // EINTR: the caller's
        int found = 0;
        for (int i = 0; i < count; i++) {
            if (items[i].socket) {
                // A socket's descriptor is readable only when its events may have changed since they were read.
                if (fds[i].revents & POLLIN) {
                    short now = 0;
                    if (socket_events(items[i].socket, items[i].events, &now) == -1) return -1;
                    items[i].revents |= now;
                    if (was_read) was_read[i] = 1;
                }
            } else {
                short revents = fds[i].revents;
                items[i].revents = (short)((revents & POLLIN ? ZMQ_POLLIN : 0) | (revents & POLLOUT ? ZMQ_POLLOUT : 0)
                                           | (revents & POLLPRI ? ZMQ_POLLPRI : 0)
                                           | (revents & ~(POLLIN | POLLOUT | POLLPRI) ? ZMQ_POLLERR : 0));
            }
            if (items[i].revents) found++;
        }
        if (found || wait == 0) return found;
        if (timeout > 0) {
            int64_t left = deadline - monotonic_ms();
            if (left <= 0) return 0;
            wait = left;
        }
    }
}
