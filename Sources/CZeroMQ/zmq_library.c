// Loads libzmq on the first zmq_* call of a process (see include/CZeroMQ.h).
#include "CZeroMQ.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

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
