import OPQRuntime

/// The coordinator's clock is the runtime's (``OPQRuntime/MonotonicClock``): Unix seconds that never jump
/// backwards, so heartbeats and timeouts stay correct across wall-clock changes.
typealias MonotonicClock = OPQRuntime.MonotonicClock
