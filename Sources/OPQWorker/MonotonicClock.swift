import OPQRuntime

/// The worker's clock for deadlines and leases is the runtime's (``OPQRuntime/MonotonicClock``): seconds
/// that never jump backwards.
typealias MonotonicClock = OPQRuntime.MonotonicClock
