// Imports exactly Foundation and OPQClient, as a program porting `BlockOperation` code would.
import Foundation
import OPQClient
import Testing

/// Building a remote `BlockOperation` out of handler calls before it is added (README "Execution
/// blocks"): what becomes a block, and what is refused without changing the operation.
@Suite struct ExecutionBlockDefinitionTests {
    private func refusal(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            guard case .executionBlockRefused(_, let reason)? = error as? ClientError else { return "not a refusal: \(error)" }
            return reason
        }
    }

    @Test func anEmptyOrHandlerOperationGainsBlocksInOrder() throws {
        let empty = RemoteOperation()
        #expect(empty.executionBlocks.isEmpty)
        try empty.addExecutionBlock(handler: "resize", text: "a.png")
        try empty.addExecutionBlock(handler: "resize", payload: [1, 2])
        #expect(empty.executionBlocks == [RemoteOperation.HandlerCall("resize", text: "a.png"), .init("resize", payload: [1, 2])])

        let handler = RemoteOperation(handler: "greet", text: "x")
        #expect(handler.executionBlocks == [.init("greet", text: "x")], "a handler operation is one block")
        try handler.addExecutionBlock(handler: "greet", text: "y")
        #expect(handler.executionBlocks == [.init("greet", text: "x"), .init("greet", text: "y")])

        let built = RemoteOperation(executionBlocks: [.init("a"), .init("b")])
        #expect(built.executionBlocks.map(\.name) == ["a", "b"])
    }

    @Test func commandsNamelessBlocksAndTooManyBlocksAreRefusedAndNothingChanges() throws {
        let command = RemoteOperation(command: ["true"])
        #expect(refusal { try command.addExecutionBlock(handler: "greet") }?.contains("runs commands") == true)
        #expect(command.executionBlocks.isEmpty)

        let operation = RemoteOperation()
        #expect(refusal { try operation.addExecutionBlock(handler: "") } == "handlers[0] must be a handler name")
        #expect(operation.executionBlocks.isEmpty)
        for _ in 0..<1_024 { try operation.addExecutionBlock(handler: "noop") }
        #expect(refusal { try operation.addExecutionBlock(handler: "noop") }?.hasPrefix("handlers holds 1025 handler calls; at most 1024") == true)
        #expect(operation.executionBlocks.count == 1_024)

        let heavy = RemoteOperation()
        try heavy.addExecutionBlock(handler: "a", payload: [UInt8](repeating: 0, count: 16 << 20))
        #expect(refusal { try heavy.addExecutionBlock(handler: "b", payload: [1]) }?.hasPrefix("handlers[1].payload brings the operation's handler payloads to 16777217 bytes") == true)
        #expect(heavy.executionBlocks.count == 1)
    }
}
