import OPQRuntime

/// SIGINT/SIGTERM as a counter the command's loop polls: the first asks for a graceful stop, the second
/// for an immediate one (``OPQRuntime/SignalTrap``, the runtime's one signal helper).
typealias SignalTrap = OPQRuntime.SignalTrap
