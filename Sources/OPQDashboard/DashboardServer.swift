import Foundation
import Hummingbird
import Logging
import OPQCoordinator

/// The coordinator's HTTP side (Hummingbird): `/metrics` for Prometheus, `/` the live dashboard,
/// `/api/...` the same data as JSON (docs/dashboard.md). It only reads the snapshots the coordinator's
/// loop publishes (``SnapshotPublisher``), so a slow or busy reader never holds up dispatch.
public struct DashboardServer: Sendable {
    /// Time between two checks for a new snapshot on an event stream: at most two snapshots a second
    /// per stream (a snapshot with a full task stream is a few hundred kilobytes of JSON).
    static let streamPollInterval: Duration = .milliseconds(500)
    /// Seconds between keep-alive comments on an idle event stream.
    static let keepAliveInterval = 15.0

    let address: HTTPAddress
    let publisher: SnapshotPublisher
    let logger: Logger
    /// The token rule (``HTTPAccess``).
    let access: HTTPAccess
    private let encoded = EncodedSnapshot()

    /// A server for `address` that serves what `publisher` holds, to requests `access` admits.
    public init(address: HTTPAddress, publisher: SnapshotPublisher, access: HTTPAccess = HTTPAccess(), logger: Logger) {
        self.address = address
        self.access = access
        self.publisher = publisher
        self.logger = logger
    }

    /// Serves until the task is cancelled. `onBound` is called once with the port as bound (useful with port 0).
    public func run(onBound: @escaping @Sendable (Int) -> Void) async throws {
        let app = Application(
            router: makeRouter(),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: "opq-coordinator"),
            onServerRunning: { channel in onBound(channel.localAddress?.port ?? address.port) },
            logger: logger)
        try await app.runService(gracefulShutdownSignals: [])
    }

    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router()
        if access.token != nil { router.add(middleware: TokenMiddleware(access: access)) }
        router.get("/") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                     body: .init(byteBuffer: ByteBuffer(string: DashboardAssets.page(initial: self.snapshotJSON()))))
        }
        router.get("/dashboard.js") { _, _ in Self.text(DashboardAssets.script, type: "text/javascript; charset=utf-8") }
        router.get("/dashboard.css") { _, _ in Self.text(DashboardAssets.style, type: "text/css; charset=utf-8") }
        router.get("/metrics") { _, _ in
            guard let snapshot = self.publisher.latest else { return Self.text("", type: PrometheusExposition.contentType) }
            return Self.text(PrometheusExposition.render(snapshot), type: PrometheusExposition.contentType)
        }
        router.get("/api/snapshot") { _, _ in
            self.publisher.latest == nil ? Self.notYet() : Self.text(self.snapshotJSON(), type: "application/json")
        }
        router.get("/api/jobs") { _, _ in self.jsonResponse(\.jobs) }
        router.get("/api/queues") { _, _ in self.jsonResponse(\.queues) }
        router.get("/api/workers") { _, _ in self.jsonResponse(\.workers) }
        router.get("/api/tasks") { _, _ in self.jsonResponse(\.tasks) }
        router.get("/api/failures") { _, _ in self.jsonResponse(\.failures) }
        router.get("/api/totals") { _, _ in self.jsonResponse(\.totals) }
        router.get("/api/operations/:id") { _, context in
            let id = try context.parameters.require("id", as: UInt64.self)
            return try await self.operationDetails(id).map { Self.text($0, type: "application/json") } ?? Self.unknownOperation(id)
        }
        router.get("/operations/:id") { _, context in
            let id = try context.parameters.require("id", as: UInt64.self)
            guard let json = try await self.operationDetails(id) else { return Self.unknownOperation(id) }
            return Self.html(DashboardAssets.detailPage(title: "operation \(id)", kind: "story", initial: json))
        }
        router.get("/api/jobs/:id/graph") { _, context in
            let id = try context.parameters.require("id", as: UInt64.self)
            return try await self.graph(id).map { Self.text($0, type: "application/json") } ?? Self.unknownJob(id)
        }
        router.get("/jobs/:id") { _, context in
            let id = try context.parameters.require("id", as: UInt64.self)
            guard let json = try await self.graph(id) else { return Self.unknownJob(id) }
            return Self.html(DashboardAssets.detailPage(title: "job \(id)", kind: "graph", initial: json))
        }
        router.get("/detail.js") { _, _ in Self.text(DashboardAssets.detailScript, type: "text/javascript; charset=utf-8") }
        router.get("/api/events") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
                     body: ResponseBody { writer in try await self.stream(into: &writer) })
        }
        return router
    }

    /// Server-sent events: the whole snapshot (`event: snapshot`) each time a new one is published.
    private func stream(into writer: inout any ResponseBodyWriter) async throws {
        var last: UInt64 = 0
        var lastWrite = Date()
        try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
        while !Task.isCancelled {
            if let snapshot = publisher.latest, snapshot.sequence != last {
                last = snapshot.sequence
                try await writer.write(ByteBuffer(string: "event: snapshot\nid: \(last)\ndata: \(encoded.json(of: snapshot))\n\n"))
                lastWrite = Date()
            } else if Date().timeIntervalSince(lastWrite) > Self.keepAliveInterval {
                try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                lastWrite = Date()
            }
            try await Task.sleep(for: Self.streamPollInterval)
        }
        try await writer.finish(nil)
    }

    /// Seconds a request waits for the loop to build a detail (a graph, a story).
    static let detailDeadline = 5.0

    /// Job `id`'s graph as JSON; nil when the job is unknown. Throws 503 when the loop did not answer in time.
    private func graph(_ id: UInt64) async throws -> String? {
        switch await publisher.detail(.graph(job: id), within: Self.detailDeadline) {
        case .graph(let graph): return String(decoding: try JSONEncoder.dashboard.encode(graph), as: UTF8.self)
        case .story, .unknown: return nil
        case nil: throw HTTPError(.serviceUnavailable, message: "the coordinator did not build the graph within \(Self.detailDeadline) s; retry")
        }
    }

    /// Operation `id`'s details as JSON: its story from the event log, and its attempts and failure from the
    /// snapshot. Nil when the operation is unknown.
    private func operationDetails(_ id: UInt64) async throws -> String? {
        let story: OperationStory?
        switch await publisher.detail(.story(operation: id), within: Self.detailDeadline) {
        case .story(let found): story = found
        case .graph, .unknown: story = nil
        case nil: throw HTTPError(.serviceUnavailable, message: "the coordinator did not answer within \(Self.detailDeadline) s; retry")
        }
        guard let details = OperationDetails(id, story: story, in: publisher.latest) else { return nil }
        return String(decoding: try JSONEncoder.dashboard.encode(details), as: UTF8.self)
    }

    static func unknownOperation(_ id: UInt64) -> Response {
        error(.notFound, "operation \(id) is unknown to this coordinator (never submitted, or pruned)")
    }

    static func unknownJob(_ id: UInt64) -> Response {
        error(.notFound, "job \(id) is unknown to this coordinator (never submitted, or pruned)")
    }

    static func html(_ page: String) -> Response {
        text(page, type: "text/html; charset=utf-8")
    }

    /// The newest snapshot as JSON, or `null` before the first.
    private func snapshotJSON() -> String {
        publisher.latest.map(encoded.json(of:)) ?? "null"
    }

    private func jsonResponse(_ part: KeyPath<ClusterSnapshot, some Encodable>) -> Response {
        guard let snapshot = publisher.latest else { return Self.notYet() }
        let text = (try? String(decoding: JSONEncoder.dashboard.encode(snapshot[keyPath: part]), as: UTF8.self)) ?? "null"
        return Self.text(text, type: "application/json")
    }

    static func notYet() -> Response {
        error(.serviceUnavailable, "the coordinator has not published a snapshot yet; retry in a moment")
    }

    static func text(_ body: String, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type, .cacheControl: "no-store"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        let body = (try? String(decoding: JSONEncoder.dashboard.encode(["error": message]), as: UTF8.self)) ?? "{}"
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}

/// What `/api/operations/ID` shows: the operation's story (from the coordinator's event log), its
/// attempts in the task stream and its failure, if any.
struct OperationDetails: Encodable {
    let operation: UInt64
    let name: String
    let job: UInt64
    let queue: String
    let story: OperationStory?
    let attempts: [TaskBar]
    let failure: FailureSummary?

    init?(_ id: UInt64, story: OperationStory?, in snapshot: ClusterSnapshot?) {
        let attempts = snapshot?.tasks.filter { $0.operation == id } ?? []
        let failure = snapshot?.failures.last { $0.operation == id }
        if let story {
            (name, job, queue) = (story.name, story.job, story.queue)
        } else if let first = attempts.first {
            (name, job, queue) = (first.name, first.job, first.queue)
        } else if let failure {
            (name, job, queue) = (failure.name, failure.job, failure.queue)
        } else {
            return nil
        }
        operation = id
        self.story = story
        self.attempts = attempts
        self.failure = failure
    }
}

/// The JSON of the newest snapshot, encoded once however many readers ask for it.
// @unchecked Sendable: `sequence` and `text` are read and replaced only under `lock`.
final class EncodedSnapshot: @unchecked Sendable {
    private let lock = NSLock()
    private var sequence: UInt64 = 0
    private var text = "null"

    func json(of snapshot: ClusterSnapshot) -> String {
        lock.lock()
        defer { lock.unlock() }
        if snapshot.sequence != sequence {
            text = (try? String(decoding: JSONEncoder.dashboard.encode(snapshot), as: UTF8.self)) ?? "null"
            sequence = snapshot.sequence
        }
        return text
    }
}

extension JSONEncoder {
    /// Sorted keys (stable output for tests and diffs).
    static var dashboard: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}
