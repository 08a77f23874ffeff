import Foundation
import OPQClient
import OPQCore
import OPQWorker
import Testing

/// What a handler's result is for (README "Handler results"): NSInvocationOperation's `result`, read
/// by clients apart from stdout, kept across a coordinator restart, bounded, and passed along edges to
/// dependants' handlers, with the queue and name a handler runs for; several blocks in one operation.
@Suite(.serialized) struct HandlerResultTests {
    struct Tally: Codable, Equatable {
        var words: Int
        var queue: String
        var name: String
    }

    /// An embedded worker named "results" with `register` applied, serving `cluster`; stopped by `stop`.
    private static func worker(_ cluster: TestCluster, slots: Int = 4, _ register: (Worker) -> Void) throws -> Worker {
        let worker = try Worker(coordinator: cluster.workersEndpoint, name: "results", slots: slots, builtins: false)
        register(worker)
        worker.start()
        return worker
    }

    private static func stop(_ worker: Worker) {
        worker.stop(handBack: true)
        #expect((try? worker.waitUntilStopped(timeout: 30)) == true, "the worker stopped")
    }

    @Test func aResultReachesTheClientApartFromStdoutTypedAndAfterACoordinatorRestart() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let worker = try Self.worker(cluster) { worker in
            worker.register("greet", returning: { context in Array("hello \(context.payloadText ?? "")".utf8) })
            worker.register("tally", encoding: { context in
                Tally(words: (context.payloadText ?? "").split(separator: " ").count, queue: HandlerContext.current?.queueName ?? "none",
                      name: context.operationName)
            })
        }
        defer { Self.stop(worker) }
        var coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let queue = RemoteOperationQueue(name: "words", coordinator: coordinator)
        let greet = RemoteOperation(handler: "greet", text: "world")
        let tally = RemoteOperation(handler: "tally", text: "one two three")
        tally.name = "count-words"
        try queue.addOperations([greet, tally], waitUntilFinished: false)
        #expect(greet.waitUntilFinished(timeout: 60) && tally.waitUntilFinished(timeout: 60), "\(cluster.logs)")
        #expect(greet.outcome == .succeeded && tally.outcome == .succeeded)
        #expect(try greet.result(as: String.self) == "hello world")
        #expect(try greet.result == Data("hello world".utf8))
        #expect(try greet.output().standardOutput.isEmpty, "the result is not stdout")
        #expect(try tally.result(as: Tally.self) == Tally(words: 3, queue: "words", name: "count-words"),
                "the handler learned the queue it runs for (HandlerContext.current) and its operation's name")

        // kill -9 and a restart on the same state directory: the journal gives the result back.
        let ids = try [#require(greet.id), #require(tally.id)]
        coordinator.close()
        cluster.killCoordinator()
        try cluster.startCoordinator()
        coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        let client = try CoordinatorClient(endpoint: cluster.clientsEndpoint)
        #expect(try client.result(of: ids[0]) == Array("hello world".utf8))
        let tallied = try JSONDecoder().decode(Tally.self, from: Data(client.result(of: ids[1])))
        #expect(tallied == Tally(words: 3, queue: "words", name: "count-words"))
        #expect(try client.operation(ids[0]).resultBytes == 11)
    }

    @Test func aPlainFoundationOperationProvidesItsResult() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let worker = try Self.worker(cluster) { worker in
            worker.register("double") { context in Doubler(Int(context.payloadText ?? "") ?? 0) }
        }
        defer { Self.stop(worker) }
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let doubled = RemoteOperation(handler: "double", text: "21")
        try RemoteOperationQueue(name: "default", coordinator: coordinator).addOperation(doubled)
        #expect(doubled.waitUntilFinished(timeout: 60), "\(cluster.logs)")
        #expect(try doubled.result(as: String.self) == "42")
    }

    @Test func aResultOverTheLimitFailsItsOperationWithAMessageNamingIt() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let worker = try Self.worker(cluster) { worker in
            worker.register("huge", returning: { _ in [UInt8](repeating: 7, count: Limits.maxResultBytes + 1) })
            worker.register("full", returning: { _ in [UInt8](repeating: 7, count: Limits.maxResultBytes) })
        }
        defer { Self.stop(worker) }
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let queue = RemoteOperationQueue(name: "default", coordinator: coordinator)
        let huge = RemoteOperation(handler: "huge")
        huge.name = "too-big"
        let full = RemoteOperation(handler: "full")
        try queue.addOperations([huge, full], waitUntilFinished: false)
        #expect(huge.waitUntilFinished(timeout: 60) && full.waitUntilFinished(timeout: 60), "\(cluster.logs)")
        #expect(huge.outcome == .failed && huge.finishReason == .error)
        let message = String(decoding: try huge.output().standardError, as: UTF8.self)
        #expect(message.contains("handler 'huge' of op-\(try #require(huge.id).rawValue) 'too-big' returned a result of 1048577 bytes, over the limit"),
                "\(message)")
        #expect(try huge.result.isEmpty)
        #expect(full.outcome == .succeeded, "exactly 1 MiB is allowed")
        #expect(try full.result.count == Limits.maxResultBytes)
    }

    @Test func aHandlerSeesItsDependenciesOutcomesAndResults() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        let worker = try Self.worker(cluster) { worker in
            worker.register("number", returning: { context in context.payload })
            worker.register("fail", returning: { _ in throw HandlerError("no number today") })
            worker.register("sum", returning: { context in
                let lines = context.dependencies.map { "\($0.name)=\($0.outcome):\($0.resultText ?? "?")" }
                let total = context.dependencies.compactMap { $0.resultText.flatMap { Int($0) } }.reduce(0, +)
                return Array((lines + ["total=\(total)"]).joined(separator: "\n").utf8)
            })
        }
        defer { Self.stop(worker) }
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let queue = RemoteOperationQueue(name: "default", coordinator: coordinator)
        let two = RemoteOperation(handler: "number", text: "2")
        two.name = "two"
        let forty = RemoteOperation(handler: "number", text: "40")
        forty.name = "forty"
        let broken = RemoteOperation(handler: "fail")
        broken.name = "broken"
        let sum = RemoteOperation(handler: "sum")
        for dependency in [two, forty, broken] { try sum.addDependency(dependency) }
        try queue.addOperations([two, forty, broken, sum], waitUntilFinished: false)
        #expect(sum.waitUntilFinished(timeout: 60), "\(cluster.logs)")
        #expect(try sum.result(as: String.self) == "two=succeeded:2\nforty=succeeded:40\nbroken=failed:\ntotal=42")
    }

    @Test func severalBlocksRunAtOnceAndOneFailingFailsTheOperation() throws {
        let cluster = try TestCluster()
        defer { cluster.stop() }
        try cluster.startCoordinator()
        // Each block waits for the other: they finish only if they run at the same time.
        let worker = try Self.worker(cluster) { worker in
            worker.register("pair", blocks: [
                { operation in try Self.meet(operation, mine: "left", other: "right") },
                { operation in try Self.meet(operation, mine: "right", other: "left") },
            ])
            worker.register("half-broken", blocks: [
                { operation in operation.result = Array("fine".utf8) },
                { _ in throw HandlerError("the second block broke") },
            ])
        }
        defer { Self.stop(worker) }
        let coordinator = try RemoteCoordinator(endpoint: cluster.clientsEndpoint, timeout: 20)
        defer { coordinator.close() }
        let queue = RemoteOperationQueue(name: "blocks", coordinator: coordinator)
        let pair = RemoteOperation(handler: "pair")
        let broken = RemoteOperation(handler: "half-broken")
        try queue.addOperations([pair, broken], waitUntilFinished: false)
        #expect(HandlerContext.current == nil, "no handler runs on the test's thread")
        #expect(pair.waitUntilFinished(timeout: 60) && broken.waitUntilFinished(timeout: 60), "\(cluster.logs)")
        #expect(pair.outcome == .succeeded, "\(String(decoding: (try? pair.output().standardError) ?? [], as: UTF8.self))")
        #expect(try pair.result(as: String.self).count == "left+right".count)
        #expect(broken.outcome == .failed)
        let message = String(decoding: try broken.output().standardError, as: UTF8.self)
        #expect(message.contains("block 2 of 2 failed: the second block broke"), "\(message)")
    }

    /// Shared by the two blocks of "pair": arrive, then wait (bounded) until the other block arrived.
    private static let meeting = Meeting()

    private static func meet(_ operation: BlockHandlerOperation, mine: String, other: String) throws {
        guard meeting.arrive(mine, waitFor: other, within: 30) else { throw HandlerError("\(other) never ran while \(mine) waited") }
        guard let current = HandlerContext.current, current.key == operation.context.key, current.queueName == "blocks" else {
            throw HandlerError("block \(mine) sees HandlerContext.current \(String(describing: HandlerContext.current))")
        }
        if mine == "left" { operation.result = Array("left+right".utf8) }
    }
}

/// NSInvocationOperation's shape: a plain `Operation` whose `main()` computes a value it offers as its result.
final class Doubler: Operation, HandlerResultProviding, @unchecked Sendable {
    private let value: Int
    private let lock = NSLock()
    private var doubled: Int?

    init(_ value: Int) { self.value = value }

    override func main() { lock.withLock { doubled = value * 2 } }

    var handlerResult: [UInt8] { lock.withLock { doubled.map { Array("\($0)".utf8) } ?? [] } }
}

/// Blocks that wait for each other, with a deadline.
final class Meeting: @unchecked Sendable {
    private let condition = NSCondition()
    private var arrived: Set<String> = []

    func arrive(_ name: String, waitFor other: String, within seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        return condition.withLock {
            arrived.insert(name)
            condition.broadcast()
            while !arrived.contains(other) {
                if !condition.wait(until: deadline) { return arrived.contains(other) }
            }
            return true
        }
    }
}
