#ifndef OPQ_CZEROMQ_SHIM_H
#define OPQ_CZEROMQ_SHIM_H
#include <zmq.h>
#endif
