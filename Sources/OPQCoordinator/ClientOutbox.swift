import DequeModule
import ZeroMQ

/// Messages for clients whose connection could not take them yet: the coordinator never drops a reply
/// to a request it applied.
///
/// The clients' ROUTER sends with `DONTWAIT`; a peer that does not read fills its pipe (`SNDHWM`) and
/// the next send returns `EAGAIN`. Such a message is kept here, in order, and retried every loop turn
/// (``drain(send:)``) until the socket takes it or the client is gone (`EHOSTUNREACH`: everything kept
/// for it is dropped along with its watches and waits).
///
/// The policy that keeps this bounded (README "Limits and backpressure"):
/// - A client whose outbox holds ``maxMessages`` messages or ``maxBytes`` bytes is *full*. A request from
///   a full client is refused **before** it is applied, with an `INTERNAL` error ("retry later"), so it
///   changes nothing; only admitted requests produce replies, hence the outbox holds at most the limit
///   plus what one request produces (one reply, or a watch's snapshot parts).
/// - Refusals are kept too, up to ``refusalAllowance`` of them while the client's queue is not empty;
///   beyond that a refusal is dropped. That loses nothing: the request was not applied, so the client's
///   retry after its own timeout is safe. The allowance counts refusals, not the queue's length: a loop
///   turn applies up to `messagesPerTurn` requests before their replies are kept, so the queue can pass
///   the limit by more than the allowance and a client would otherwise never be told (issue 11).
/// - Watch events for a full client are not kept: its streams skip them and the next `Events` message it
///   gets names the skipped sequence as `previous`, so the client sees a gap and resumes (Clone pattern).
struct ClientOutbox {
    /// Messages kept for one client before it counts as full.
    let maxMessages: Int
    /// Bytes kept for one client before it counts as full.
    let maxBytes: Int
    /// Refusals kept for a client whose queue is not empty (a full client's first refusals).
    let refusalAllowance: Int

    private struct Queue {
        var messages = Deque<[[UInt8]]>()
        var bytes = 0
        /// Refusals kept since the queue was last empty.
        var refusals = 0
    }

    /// Waiting messages by client routing identity; no entry = nothing waiting.
    private var queues: [[UInt8]: Queue] = [:]

    init(maxMessages: Int, maxBytes: Int, refusalAllowance: Int = 1_024) {
        self.maxMessages = max(1, maxMessages)
        self.maxBytes = max(1, maxBytes)
        self.refusalAllowance = max(0, refusalAllowance)
    }

    /// True when nothing waits for any client.
    var isEmpty: Bool { queues.isEmpty }

    /// Messages waiting for `identity`.
    func count(for identity: [UInt8]) -> Int { queues[identity]?.messages.count ?? 0 }

    /// True when something waits for `identity`: a new message must queue behind it (order is kept).
    func hasWaiting(_ identity: [UInt8]) -> Bool { queues[identity] != nil }

    /// True when `identity` has reached its limit: its requests are refused and its events skipped.
    func isFull(_ identity: [UInt8]) -> Bool {
        guard let queue = queues[identity] else { return false }
        return queue.messages.count >= maxMessages || queue.bytes >= maxBytes
    }

    /// Keeps `frames` (identity first) for later. A reply to an applied request is always kept;
    /// a `refusal` is kept only within ``refusalAllowance``. Returns whether it was kept.
    @discardableResult
    mutating func keep(_ frames: [[UInt8]], refusal: Bool = false) -> Bool {
        let identity = frames[0]
        if refusal, let queue = queues[identity], queue.refusals >= refusalAllowance {
            return false
        }
        var queue = queues.removeValue(forKey: identity) ?? Queue()
        if refusal { queue.refusals += 1 }
        queue.messages.append(frames)
        queue.bytes += frames.reduce(0) { $0 + $1.count }
        queues[identity] = queue
        return true
    }

    /// Forgets everything waiting for `identity` (the client is gone).
    mutating func drop(_ identity: [UInt8]) { queues[identity] = nil }

    /// Sends what waits, oldest first per client, until each client's socket would block. Returns the
    /// identities found gone (everything kept for them is dropped).
    mutating func drain(send: ([[UInt8]]) -> SendResult) -> [[UInt8]] {
        var gone: [[UInt8]] = []
        for identity in Array(queues.keys) {
            guard var queue = queues.removeValue(forKey: identity) else { continue }
            var result = SendResult.sent
            while let frames = queue.messages.first {
                result = send(frames)
                guard result == .sent else { break }
                queue.messages.removeFirst()
                queue.bytes -= frames.reduce(0) { $0 + $1.count }
            }
            switch result {
            case .hostUnreachable: gone.append(identity)
            case .wouldBlock: queues[identity] = queue
            case .sent: break
            }
        }
        return gone
    }
}
