import Foundation
import Testing
import ZeroMQ
@testable import OPQCoordinator

/// The `inproc://` workers endpoint of the one-process cluster (`opq-coordinator --local-workers`): only
/// an `inproc://` endpoint, never with CURVE (in-process peers carry no key, so a CURVE coordinator
/// would otherwise have unauthenticated workers); and `inproc://` is refused where a user gives an
/// endpoint for other processes to reach.
@Suite struct InProcessWorkersEndpointTests {
    @Test func anInprocWorkersEndpointIsAccepted() {
        var configuration = CoordinatorConfiguration()
        configuration.inProcessWorkersEndpoint = "inproc://opq-local-workers"
        #expect(configuration.problem == nil)
    }

    @Test(arguments: ["ipc:///tmp/x", "tcp://127.0.0.1:7130", "inproc://", "not an endpoint"])
    func anythingButInprocIsRefusedNamingIt(_ endpoint: String) {
        var configuration = CoordinatorConfiguration()
        configuration.inProcessWorkersEndpoint = endpoint
        #expect(configuration.problem == "inProcessWorkersEndpoint must be an inproc:// endpoint, not '\(endpoint)'")
    }

    @Test func itCannotBeCombinedWithCurve() throws {
        var configuration = CoordinatorConfiguration()
        configuration.inProcessWorkersEndpoint = "inproc://opq-local-workers"
        configuration.curve = CurveSettings(keys: try CurveKeyPair.generate(), authorizedWorkers: "/nonexistent/w",
                                            authorizedClients: "/nonexistent/c")
        #expect(configuration.problem?.contains("cannot be combined with CURVE") == true, "\(configuration.problem ?? "no problem")")
    }

    @Test func inprocIsRefusedAsAnEndpointBetweenProcessesWithWhatToWriteInstead() throws {
        let error = #expect(throws: EndpointError.self) { try Endpoint(parsingBetweenProcesses: "inproc://mine") }
        #expect(error?.endpoint == "inproc://mine")
        #expect(error?.problem.contains("only reachable inside one process") == true)
        #expect(error?.problem.contains("tcp://HOST:PORT or ipc://PATH") == true)
        #expect(try Endpoint(parsingBetweenProcesses: "ipc:///tmp/x") == Endpoint(.ipc(path: "/tmp/x")))
        #expect(try Endpoint(parsingBetweenProcesses: "tcp://127.0.0.1:7130").isInProcess == false)
        #expect(try Endpoint(parsing: "inproc://mine").isInProcess)
    }
}
