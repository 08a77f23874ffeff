// What opening libzmq on first use (Sources/CZeroMQ: dlopen, static inline zmq_* wrappers calling through
// one table) costs per ZeroMQ call: one thread, DEALER <-> ROUTER over inproc://, N round trips through
// zmq_send / zmq_msg_recv / zmq_msg_send / zmq_msg_more, built twice — linked to libzmq, and through
// CZeroMQ — and counted by callgrind at two sizes (the difference over the difference of N is one round
// trip; what is left is the fixed cost of loading):
//
//   cc -O2 -o /tmp/zc-linked scripts/zmq-calls.c -lzmq
//   cc -O2 -DTHROUGH_CZEROMQ -ISources/CZeroMQ/include -o /tmp/zc-dlopen scripts/zmq-calls.c Sources/CZeroMQ/zmq_library.c
//   for b in linked dlopen; do for n in 2000 12000; do valgrind --tool=callgrind --callgrind-out-file=/tmp/zc.$b.$n /tmp/zc-$b $n; done; done
//
// Not built by SwiftPM or CI. Eighth session: per round trip 2,513.5 instructions linked, 2,512.2 through
// CZeroMQ (the same: the wrapper's load of the table and its indirect call replace the PLT's indirect jump);
// fixed cost 8.68M vs 8.92M instructions (the dlopen and 31 dlsym); with RTLD_NOW instead of RTLD_LAZY it
// was 11.91M (every import of libzmq and its 14 libraries bound at once).
#include <stdlib.h>
#include <string.h>
#ifdef THROUGH_CZEROMQ
#include "CZeroMQ.h"
#else
#include <zmq.h>
#endif
static void recv_all(void *s, zmq_msg_t *m) { do { zmq_msg_recv(m, s, 0); } while (zmq_msg_more(m)); }
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    void *c = zmq_ctx_new();
    void *r = zmq_socket(c, ZMQ_ROUTER), *d = zmq_socket(c, ZMQ_DEALER);
    zmq_bind(r, "inproc://rt"); zmq_connect(d, "inproc://rt");
    zmq_msg_t m, id; zmq_msg_init(&m); zmq_msg_init(&id);
    char payload[64]; memset(payload, 1, sizeof payload);
    for (int i = 0; i < n; i++) {
        zmq_send(d, payload, sizeof payload, 0);
        zmq_msg_recv(&id, r, 0); zmq_msg_recv(&m, r, 0);
        zmq_msg_send(&id, r, ZMQ_SNDMORE); zmq_msg_send(&m, r, 0);
        recv_all(d, &m);
    }
    zmq_msg_close(&m); zmq_msg_close(&id);
    int zero = 0; zmq_setsockopt(r, ZMQ_LINGER, &zero, sizeof zero); zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(d); zmq_close(r); zmq_ctx_term(c);
    return 0;
}
