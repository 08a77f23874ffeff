#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import OPQCore

// Conversions between OPQCore's value types and their wire messages: thin and symmetric.
// Core → wire is total. Wire → core assumes a message that passed validation (`Frames.decode`); enum
// zero values map to nil where the core value is optional, and to the documented default otherwise.

extension Opq_V1_QualityOfService {
    /// The wire form of a core QoS.
    public init(_ qos: QualityOfService) {
        switch qos {
        case .background: self = .background
        case .utility: self = .utility
        case .default: self = .default
        case .userInitiated: self = .userInitiated
        case .userInteractive: self = .userInteractive
        }
    }
}

extension QualityOfService {
    /// The core QoS of a (validated) wire value; an unrecognized value is `.default`.
    public init(_ wire: Opq_V1_QualityOfService) {
        switch wire {
        case .background: self = .background
        case .utility: self = .utility
        case .default, .UNRECOGNIZED: self = .default
        case .userInitiated: self = .userInitiated
        case .userInteractive: self = .userInteractive
        }
    }
}

extension Opq_V1_Requirement {
    /// The wire form of a core requirement.
    public init(_ requirement: Requirement) { self = requirement == .success ? .success : .any }
}

extension Requirement {
    /// The core requirement of a (validated) wire value; an unrecognized value is `.any`.
    public init(_ wire: Opq_V1_Requirement) { self = wire == .success ? .success : .any }
}

extension QueuePriority {
    /// The level of a wire priority integer, snapped toward normal (SEMANTICS §4.1).
    public init(wire value: Int32) { self.init(snapping: Int(value)) }

    /// The wire integer of this level (Foundation's raw value).
    public var wireValue: Int32 { Int32(rawValue) }
}

extension Opq_V1_OperationState {
    /// The wire form of a core state.
    public init(_ state: OperationState) {
        switch state {
        case .pending: self = .pending
        case .ready: self = .ready
        case .dispatched: self = .dispatched
        case .executing: self = .executing
        case .finished: self = .finished
        }
    }
}

extension OperationState {
    /// The core state of a wire value; nil for `unspecified` or an unrecognized value.
    public init?(_ wire: Opq_V1_OperationState) {
        switch wire {
        case .pending: self = .pending
        case .ready: self = .ready
        case .dispatched: self = .dispatched
        case .executing: self = .executing
        case .finished: self = .finished
        case .unspecified, .UNRECOGNIZED: return nil
        }
    }
}

extension Opq_V1_Outcome {
    /// The wire form of an optional core outcome (nil = `.none`).
    public init(_ outcome: Outcome?) {
        switch outcome {
        case nil: self = .none
        case .succeeded: self = .succeeded
        case .failed: self = .failed
        case .cancelled: self = .cancelled
        }
    }

    /// The core outcome; nil for `.none` or an unrecognized value.
    public var core: Outcome? {
        switch self {
        case .succeeded: .succeeded
        case .failed: .failed
        case .cancelled: .cancelled
        case .none, .UNRECOGNIZED: nil
        }
    }
}

extension Opq_V1_FinishReason {
    /// The wire form of an optional core reason (nil = `.none`).
    public init(_ reason: FinishReason?) {
        switch reason {
        case nil: self = .none
        case .completed: self = .completed
        case .exitStatus: self = .exitStatus
        case .signal: self = .signal
        case .error: self = .error
        case .timeout: self = .timeout
        case .lostWorker: self = .lostWorker
        case .cancelRequested: self = .cancelRequested
        case .dependencyFailed: self = .dependencyFailed
        case .upToDate: self = .upToDate
        }
    }

    /// The core reason; nil for `.none` or an unrecognized value.
    public var core: FinishReason? {
        switch self {
        case .completed: .completed
        case .exitStatus: .exitStatus
        case .signal: .signal
        case .error: .error
        case .timeout: .timeout
        case .lostWorker: .lostWorker
        case .cancelRequested: .cancelRequested
        case .dependencyFailed: .dependencyFailed
        case .upToDate: .upToDate
        case .none, .UNRECOGNIZED: nil
        }
    }
}

extension Opq_V1_Command {
    /// The wire form of a core command.
    public init(_ command: Command) {
        self.init()
        argv = command.argv
        environment = command.environment
        if let directory = command.workingDirectory { workingDirectory = directory }
        inputs = command.inputs
        outputs = command.outputs
    }
}

extension Command {
    /// The core command of a wire command.
    public init(_ wire: Opq_V1_Command) {
        // A copy of the arguments' array: the decoded one sits among the message's own allocations, which
        // a big submission frees at once (the coordinator then gives those pages back: ``HeapTrim``).
        self.init(wire.argv.map { $0 }, environment: wire.environment,
                  workingDirectory: wire.hasWorkingDirectory ? wire.workingDirectory : nil)
        inputs = wire.inputs
        outputs = wire.outputs
    }
}

extension Opq_V1_Work {
    /// The wire form of core work (`.empty` = no `kind`).
    public init(_ work: Work) {
        self.init()
        switch work {
        case .empty: break
        case .command(let command): kind = .command(Opq_V1_Command(command))
        case .commands(let commands): kind = .commands(.with { $0.commands = commands.map(Opq_V1_Command.init) })
        case let .handler(name, payload): kind = .handler(.with { $0.name = name; $0.payload = Data(payload) })
        case .handlers(let calls): kind = .handlers(.with { $0.calls = calls.map { call in .with { $0.name = call.name; $0.payload = Data(call.payload) } } })
        }
    }
}

extension Work {
    /// The core work of a wire work (no `kind` = `.empty`).
    public init(_ wire: Opq_V1_Work) {
        switch wire.kind {
        case nil: self = .empty
        case .command(let command): self = .command(Command(command))
        case .commands(let list): self = .commands(list.commands.map(Command.init))
        case .handler(let handler): self = .handler(name: handler.name, payload: [UInt8](handler.payload))
        case .handlers(let list): self = .handlers(list.calls.map { HandlerCall($0.name, payload: [UInt8]($0.payload)) })
        }
    }
}

extension Opq_V1_DependencyRef {
    /// The wire form of a dependency reference.
    public init(_ reference: DependencyReference) {
        self.init()
        switch reference {
        case .name(let name): target = .name(name)
        case .id(let id): target = .id(id.rawValue)
        }
    }

    /// The core reference; nil when no target is set (validation refuses that).
    public var core: DependencyReference? {
        switch target {
        case .name(let name): .name(name)
        case .id(let id): .id(OperationID(id))
        case nil: nil
        }
    }
}

extension Opq_V1_Counts {
    /// The wire form of core counts.
    public init(_ counts: OperationCounts) {
        self.init()
        pending = UInt64(counts.pending)
        ready = UInt64(counts.ready)
        dispatched = UInt64(counts.dispatched)
        executing = UInt64(counts.executing)
        succeeded = UInt64(counts.succeeded)
        failed = UInt64(counts.failed)
        cancelled = UInt64(counts.cancelled)
    }

    /// The core counts (values beyond `Int.max` saturate).
    public var core: OperationCounts {
        func int(_ value: UInt64) -> Int { Int(clamping: value) }
        return OperationCounts(pending: int(pending), ready: int(ready), dispatched: int(dispatched),
                               executing: int(executing), succeeded: int(succeeded), failed: int(failed),
                               cancelled: int(cancelled))
    }
}
