import OPQCore

/// Bounds every decoded message must respect. Anything beyond is refused with a `WireError`, so a
/// malformed or hostile peer cannot make the coordinator allocate without limit.
///
/// Use `maxFrameBytes` for `ZMQ_MAXMSGSIZE` on every socket that faces outside (ZeroMQ applies it per
/// frame and disconnects a peer that exceeds it); `Frames.encode` refuses to build a frame larger than
/// that, so a sender learns of the problem instead of being silently disconnected.
public enum WireLimits {
    /// The protocol version this module speaks (`Register.protocol_version`, `Welcome.protocol_version`).
    public static let protocolVersion: UInt32 = 1
    /// Largest frame, in bytes: the value for `ZMQ_MAXMSGSIZE` (64 MiB).
    public static let maxFrameBytes = 64 << 20
    /// Most frames in one message, identity and signature included.
    public static let maxFrames = 4_096
    /// Most raw frames after the protobuf frame (one per captured output tail).
    public static let maxRawFrames = maxFrames - 3
    /// Most items in one batch (`Reports`, `Orders`, `Events`, `Register.held`, id lists in replies).
    public static let maxBatchItems = 100_000
    /// The most slowest operations a job summary lists (`GetJob.summary_slowest`).
    public static let maxSummarySlowest: UInt32 = 100
    /// Most operations in one `Submit`.
    public static let maxOperationsPerSubmission = Limits.maxOperationsPerSubmission
    /// Most entries of one list inside an operation (argv, environment, commands, dependencies, labels).
    public static let maxListEntries = Limits.maxListEntries
    /// Most bytes of one name (operation, queue, worker, handler, label key).
    public static let maxNameBytes = Limits.maxNameBytes
    /// Most reservations one `Reserve` asks for.
    public static let maxReservations = Limits.maxReservations
    /// Most bytes of a progress report's message (`Progress.message`); longer ones are refused, and
    /// ``Opq_V1_Progress/clampedMessage(_:)`` shortens a message to fit.
    public static let maxProgressMessageBytes = 1_024
    /// Most worker slots.
    public static let maxSlots = Int32(Limits.maxSlots)
    /// Most CPUs of an operation or a worker (`cpus`).
    public static let maxCpus = UInt32(Limits.maxCpus)
    /// Most bytes of memory of an operation or a worker (`memory_bytes`).
    public static let maxMemory = UInt64(Limits.maxMemory)
    /// Highest attempt number a valid message can carry.
    public static let maxAttempt = UInt32(Limits.maxAttempt)
    /// Most retries of one operation.
    public static let maxRetries = UInt32(Limits.maxRetries)
    /// Longest duration in seconds (timeouts, grace periods, heartbeat intervals): about 100 years.
    public static let maxSeconds = Limits.maxSeconds
}
