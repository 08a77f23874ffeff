// CZeroMQ: libzmq's API for the ZeroMQ module, with libzmq loaded on first use instead of at start.
//
// No opq binary has libzmq as a DT_NEEDED library: the dynamic loader would map it and the 14 libraries
// it needs (libsodium, libpgm, libnorm, gssapi, krb5…) at every start, ≈ 1.9 ms of a short command such
// as `opq status`, which speaks ZMTP by hand and never calls libzmq (issue 19). Instead the first zmq_*
// call of a process opens libzmq.so.5 (dlopen, once, thread-safe) and resolves every function below;
// each later call is one indirect call through that table.
//
// The functions keep libzmq's names so the ZeroMQ module's Swift reads as libzmq's documentation does,
// but they are `static inline`: every object that uses one gets a private copy, and no binary exports a
// symbol named like libzmq's own (which libzmq's internal calls could bind to instead of its own). The
// only exported names are opq_zmq_*.
//
// When libzmq.so.5 cannot be opened or lacks a function, every call fails as libzmq reports failure
// (-1 or NULL) with errno OPQ_ZMQ_NOT_LOADED, and zmq_strerror of that code is a sentence naming the
// library, the missing symbol and the package to install (`opq_zmq_load_error()`): a ZMQError, not a
// crash.
#ifndef OPQ_CZEROMQ_H
#define OPQ_CZEROMQ_H

// zmq.h declares the functions as external ones; renamed here, so the static inline definitions below
// do not follow a non-static declaration of the same name. Only zmq.h's types and constants are used.
#define zmq_errno opq_zmq_declared_errno
#define zmq_strerror opq_zmq_declared_strerror
#define zmq_version opq_zmq_declared_version
#define zmq_ctx_new opq_zmq_declared_ctx_new
#define zmq_ctx_term opq_zmq_declared_ctx_term
#define zmq_ctx_shutdown opq_zmq_declared_ctx_shutdown
#define zmq_ctx_set opq_zmq_declared_ctx_set
#define zmq_msg_init opq_zmq_declared_msg_init
#define zmq_msg_send opq_zmq_declared_msg_send
#define zmq_msg_recv opq_zmq_declared_msg_recv
#define zmq_msg_close opq_zmq_declared_msg_close
#define zmq_msg_data opq_zmq_declared_msg_data
#define zmq_msg_size opq_zmq_declared_msg_size
#define zmq_msg_more opq_zmq_declared_msg_more
#define zmq_msg_gets opq_zmq_declared_msg_gets
#define zmq_socket opq_zmq_declared_socket
#define zmq_close opq_zmq_declared_close
#define zmq_setsockopt opq_zmq_declared_setsockopt
#define zmq_getsockopt opq_zmq_declared_getsockopt
#define zmq_bind opq_zmq_declared_bind
#define zmq_connect opq_zmq_declared_connect
#define zmq_unbind opq_zmq_declared_unbind
#define zmq_disconnect opq_zmq_declared_disconnect
#define zmq_send opq_zmq_declared_send
#define zmq_socket_monitor opq_zmq_declared_socket_monitor
#define zmq_poll opq_zmq_declared_poll
#define zmq_has opq_zmq_declared_has
#define zmq_z85_encode opq_zmq_declared_z85_encode
#define zmq_z85_decode opq_zmq_declared_z85_decode
#define zmq_curve_keypair opq_zmq_declared_curve_keypair
#define zmq_curve_public opq_zmq_declared_curve_public
#include <zmq.h>
#undef zmq_errno
#undef zmq_strerror
#undef zmq_version
#undef zmq_ctx_new
#undef zmq_ctx_term
#undef zmq_ctx_shutdown
#undef zmq_ctx_set
#undef zmq_msg_init
#undef zmq_msg_send
#undef zmq_msg_recv
#undef zmq_msg_close
#undef zmq_msg_data
#undef zmq_msg_size
#undef zmq_msg_more
#undef zmq_msg_gets
#undef zmq_socket
#undef zmq_close
#undef zmq_setsockopt
#undef zmq_getsockopt
#undef zmq_bind
#undef zmq_connect
#undef zmq_unbind
#undef zmq_disconnect
#undef zmq_send
#undef zmq_socket_monitor
#undef zmq_poll
#undef zmq_has
#undef zmq_z85_encode
#undef zmq_z85_decode
#undef zmq_curve_keypair
#undef zmq_curve_public

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// The errno of every call while libzmq is not loaded: "cannot access a needed shared library".
#ifdef ELIBACC
#define OPQ_ZMQ_NOT_LOADED ELIBACC
#else
#define OPQ_ZMQ_NOT_LOADED ENOSYS
#endif

// The functions of libzmq the ZeroMQ module calls: X(return type, name without zmq_, parameters, arguments).
#define OPQ_ZMQ_FUNCTIONS(X) \
    X(int, errno, (void), ()) \
    X(const char *, strerror, (int code), (code)) \
    X(void, version, (int *major, int *minor, int *patch), (major, minor, patch)) \
    X(void *, ctx_new, (void), ()) \
    X(int, ctx_term, (void *context), (context)) \
    X(int, ctx_shutdown, (void *context), (context)) \
    X(int, ctx_set, (void *context, int option, int value), (context, option, value)) \
    X(int, msg_init, (zmq_msg_t *message), (message)) \
    X(int, msg_send, (zmq_msg_t *message, void *socket, int flags), (message, socket, flags)) \
    X(int, msg_recv, (zmq_msg_t *message, void *socket, int flags), (message, socket, flags)) \
    X(int, msg_close, (zmq_msg_t *message), (message)) \
    X(void *, msg_data, (zmq_msg_t *message), (message)) \
    X(size_t, msg_size, (const zmq_msg_t *message), (message)) \
    X(int, msg_more, (const zmq_msg_t *message), (message)) \
    X(const char *, msg_gets, (const zmq_msg_t *message, const char *property), (message, property)) \
    X(void *, socket, (void *context, int type), (context, type)) \
    X(int, close, (void *socket), (socket)) \
    X(int, setsockopt, (void *socket, int option, const void *value, size_t length), (socket, option, value, length)) \
    X(int, getsockopt, (void *socket, int option, void *value, size_t *length), (socket, option, value, length)) \
    X(int, bind, (void *socket, const char *endpoint), (socket, endpoint)) \
    X(int, connect, (void *socket, const char *endpoint), (socket, endpoint)) \
    X(int, unbind, (void *socket, const char *endpoint), (socket, endpoint)) \
    X(int, disconnect, (void *socket, const char *endpoint), (socket, endpoint)) \
    X(int, send, (void *socket, const void *buffer, size_t length, int flags), (socket, buffer, length, flags)) \
    X(int, socket_monitor, (void *socket, const char *endpoint, int events), (socket, endpoint, events)) \
    X(int, poll, (zmq_pollitem_t *items, int count, long timeout), (items, count, timeout)) \
    X(int, has, (const char *capability), (capability)) \
    X(char *, z85_encode, (char *destination, const uint8_t *data, size_t size), (destination, data, size)) \
    X(uint8_t *, z85_decode, (uint8_t *destination, const char *string), (destination, string)) \
    X(int, curve_keypair, (char *public_key, char *secret_key), (public_key, secret_key)) \
    X(int, curve_public, (char *public_key, const char *secret_key), (public_key, secret_key))

// (Fields are named zmq_NAME: pasting keeps a name such as errno from being expanded as a macro.)
#define OPQ_ZMQ_FIELD(type, name, parameters, arguments) type (*zmq_##name) parameters;
/// libzmq's functions, resolved from libzmq.so.5.
struct opq_zmq_library {
    OPQ_ZMQ_FUNCTIONS(OPQ_ZMQ_FIELD)
};
#undef OPQ_ZMQ_FIELD

/// The resolved functions once loaded, else NULL (read with an acquire load; see opq_zmq()).
extern const struct opq_zmq_library *opq_zmq_library_loaded;

/// Loads libzmq.so.5 and resolves its functions, once per process (later calls return the first
/// result). NULL when that failed: opq_zmq_load_error() says why.
const struct opq_zmq_library *opq_zmq_load(void);

/// Why libzmq could not be loaded (naming the library or the missing function, and what to install),
/// or NULL when it was not tried or succeeded.
const char *opq_zmq_load_error(void);

/// The most items ``opq_zmq_poll`` polls itself (a larger set goes to zmq_poll).
#define OPQ_ZMQ_POLL_MAX_ITEMS 64

/// zmq_poll without its extra pass: libzmq polls every descriptor once without waiting and reads every
/// socket's ZMQ_EVENTS before it waits, then reads them all again after the wait. This reads the sockets'
/// events once, then waits (not at all if one is ready), and after the wait reads the events again only of
/// the sockets whose descriptor says they may have changed — in a loop that sleeps, two `poll` and two
/// `getpid` calls fewer per wait for two sockets. Same items, results, timeout and errors as zmq_poll (-1
/// with errno, EINTR included; a wait with nothing found goes on until `timeout`).
int opq_zmq_poll(zmq_pollitem_t *items, int count, long timeout);

/// opq_zmq_poll for a caller that keeps track of its sockets: a socket item with `quiet[i]` set held
/// none of the events it waits for when they were last read, and nothing was done with the socket
/// since (no send, receive or option call — each may take in what its descriptor announced). Its events
/// are then not read before the wait: its descriptor becomes readable when they may have changed (that
/// is ZMQ_FD's contract), and they are read then. Saves a socket that stays quiet a `getpid` and a
/// `poll` per wait. `was_read[i]` (out, for socket items) says whether the call read socket i's events —
/// its `revents` are then what it held, and with none, the caller may count it quiet again until it next
/// uses the socket. `quiet` NULL: every socket is read (opq_zmq_poll); `was_read` may be NULL.
int opq_zmq_poll_quiet(zmq_pollitem_t *items, int count, long timeout, const uint8_t *quiet, uint8_t *was_read);

/// Whether libzmq is loaded in this process (without loading it): a test's and a benchmark's check
/// that a command did without it.
int opq_zmq_is_loaded(void);

/// The resolved functions, loading them on the first call; NULL when libzmq cannot be loaded.
static inline const struct opq_zmq_library *opq_zmq(void) {
    const struct opq_zmq_library *library = __atomic_load_n(&opq_zmq_library_loaded, __ATOMIC_ACQUIRE);
    return library ? library : opq_zmq_load();
}

// zmq_errno, zmq_strerror and zmq_version answer without libzmq; every other call fails as libzmq's do.
static inline int zmq_errno(void) {
    const struct opq_zmq_library *library = __atomic_load_n(&opq_zmq_library_loaded, __ATOMIC_ACQUIRE);
    return library ? library->zmq_errno() : errno;
}

static inline const char *zmq_strerror(int code) {
    const struct opq_zmq_library *library = opq_zmq();
    if (library) return library->zmq_strerror(code);
    return code == OPQ_ZMQ_NOT_LOADED && opq_zmq_load_error() ? opq_zmq_load_error() : strerror(code);
}

static inline void zmq_version(int *major, int *minor, int *patch) {
    const struct opq_zmq_library *library = opq_zmq();
    if (library) {
        library->zmq_version(major, minor, patch);
    } else {
        *major = 0;
        *minor = 0;
        *patch = 0;
    }
}

#define OPQ_ZMQ_CALL(type, name, parameters, arguments, failure) \
    static inline type zmq_##name parameters { \
        const struct opq_zmq_library *library = opq_zmq(); \
        if (library) return library->zmq_##name arguments; \
        errno = OPQ_ZMQ_NOT_LOADED; \
        return failure; \
    }
#define OPQ_ZMQ_INT(type, name, parameters, arguments) OPQ_ZMQ_CALL(type, name, parameters, arguments, -1)
#define OPQ_ZMQ_POINTER(type, name, parameters, arguments) OPQ_ZMQ_CALL(type, name, parameters, arguments, NULL)
OPQ_ZMQ_POINTER(void *, ctx_new, (void), ())
OPQ_ZMQ_INT(int, ctx_term, (void *context), (context))
OPQ_ZMQ_INT(int, ctx_shutdown, (void *context), (context))
OPQ_ZMQ_INT(int, ctx_set, (void *context, int option, int value), (context, option, value))
OPQ_ZMQ_INT(int, msg_init, (zmq_msg_t *message), (message))
OPQ_ZMQ_INT(int, msg_send, (zmq_msg_t *message, void *socket, int flags), (message, socket, flags))
OPQ_ZMQ_INT(int, msg_recv, (zmq_msg_t *message, void *socket, int flags), (message, socket, flags))
OPQ_ZMQ_INT(int, msg_close, (zmq_msg_t *message), (message))
OPQ_ZMQ_POINTER(void *, msg_data, (zmq_msg_t *message), (message))
OPQ_ZMQ_CALL(size_t, msg_size, (const zmq_msg_t *message), (message), 0)
OPQ_ZMQ_CALL(int, msg_more, (const zmq_msg_t *message), (message), 0)
OPQ_ZMQ_POINTER(const char *, msg_gets, (const zmq_msg_t *message, const char *property), (message, property))
OPQ_ZMQ_POINTER(void *, socket, (void *context, int type), (context, type))
OPQ_ZMQ_INT(int, close, (void *socket), (socket))
OPQ_ZMQ_INT(int, setsockopt, (void *socket, int option, const void *value, size_t length), (socket, option, value, length))
OPQ_ZMQ_INT(int, getsockopt, (void *socket, int option, void *value, size_t *length), (socket, option, value, length))
OPQ_ZMQ_INT(int, bind, (void *socket, const char *endpoint), (socket, endpoint))
OPQ_ZMQ_INT(int, connect, (void *socket, const char *endpoint), (socket, endpoint))
OPQ_ZMQ_INT(int, unbind, (void *socket, const char *endpoint), (socket, endpoint))
OPQ_ZMQ_INT(int, disconnect, (void *socket, const char *endpoint), (socket, endpoint))
OPQ_ZMQ_INT(int, send, (void *socket, const void *buffer, size_t length, int flags), (socket, buffer, length, flags))
OPQ_ZMQ_INT(int, socket_monitor, (void *socket, const char *endpoint, int events), (socket, endpoint, events))
OPQ_ZMQ_INT(int, poll, (zmq_pollitem_t *items, int count, long timeout), (items, count, timeout))
OPQ_ZMQ_CALL(int, has, (const char *capability), (capability), 0)
OPQ_ZMQ_POINTER(char *, z85_encode, (char *destination, const uint8_t *data, size_t size), (destination, data, size))
OPQ_ZMQ_POINTER(uint8_t *, z85_decode, (uint8_t *destination, const char *string), (destination, string))
OPQ_ZMQ_INT(int, curve_keypair, (char *public_key, char *secret_key), (public_key, secret_key))
OPQ_ZMQ_INT(int, curve_public, (char *public_key, const char *secret_key), (public_key, secret_key))
#undef OPQ_ZMQ_INT
#undef OPQ_ZMQ_POINTER
#undef OPQ_ZMQ_CALL

#endif
