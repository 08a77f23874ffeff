import Foundation
import OPQCore
import OPQWire
import Testing
@testable import OPQCoordinator

/// The output spool: chunks written at their offsets, a repeat after a reconnect changes nothing, the
/// per-stream cap cuts, a newer attempt starts over, the budget drops the oldest finished output first.
@Suite struct OutputSpoolTests {
    private func chunk(_ operation: UInt64, attempt: UInt32 = 1, _ stream: Opq_V1_OutputStream = .stdout,
                       offset: UInt64) -> Opq_V1_OutputChunk {
        .with {
            $0.operation = operation
            $0.attempt = attempt
            $0.stream = stream
            $0.offset = offset
            $0.frame = 1
        }
    }

    private func spool(cap: UInt64 = 1 << 20, budget: UInt64 = 1 << 30) throws -> OutputSpool {
        try OutputSpool(directory: nil, capPerStream: cap, budget: budget)
    }

    @Test func chunksReadBackWholeAndARepeatedChunkChangesNothing() throws {
        let spool = try spool()
        defer { spool.close() }
        let id = OperationID(1)
        spool.write(chunk(1, offset: 0), bytes: Array("hello ".utf8))
        spool.write(chunk(1, offset: 6), bytes: Array("world\n".utf8))
        spool.write(chunk(1, offset: 0), bytes: Array("hello ".utf8))  // sent again after a reconnect
        spool.write(chunk(1, .stderr, offset: 0), bytes: [0, 255])
        spool.finished(id, attempt: 1, totals: [12, 2])
        let (slice, bytes) = spool.read(id, .stdout, offset: 0, maxBytes: 0)
        #expect(bytes == Array("hello world\n".utf8))
        #expect(slice.complete && slice.spooledBytes == 12 && slice.totalBytes == 12 && !slice.isCut)
        #expect(spool.read(id, .stderr, offset: 0, maxBytes: 1).1 == [0])
        #expect(spool.read(id, .stderr, offset: 1, maxBytes: 0).1 == [255])
        #expect(spool.read(OperationID(2), .stdout, offset: 0, maxBytes: 0).0.expired, "nothing spooled: expired")
    }

    @Test func theCapCutsAndANewerAttemptStartsOver() throws {
        let spool = try spool(cap: 4)
        defer { spool.close() }
        let id = OperationID(3)
        spool.write(chunk(3, offset: 0), bytes: Array("abcdef".utf8))
        spool.finished(id, attempt: 1, totals: [6, 0])
        let (cut, kept) = spool.read(id, .stdout, offset: 0, maxBytes: 0)
        #expect(kept == Array("abcd".utf8) && cut.isCut && cut.totalBytes == 6)
        spool.write(chunk(3, attempt: 2, offset: 0), bytes: Array("xy".utf8))
        let (again, bytes) = spool.read(id, .stdout, offset: 0, maxBytes: 0)
        #expect(bytes == Array("xy".utf8) && again.attempt == 2 && !again.complete)
        spool.write(chunk(3, attempt: 1, offset: 2), bytes: Array("zz".utf8))  // a late chunk of the old attempt
        #expect(spool.read(id, .stdout, offset: 0, maxBytes: 0).1 == Array("xy".utf8))
    }

    @Test func theBudgetDropsTheOldestFinishedOutputFirst() throws {
        let spool = try spool(budget: 10)
        defer { spool.close() }
        for k in UInt64(1)...3 {
            spool.write(chunk(k, offset: 0), bytes: Array(repeating: UInt8(k), count: 4))
            spool.finished(OperationID(k), attempt: 1, totals: [4, 0])
        }
        #expect(spool.bytes <= 10)
        #expect(spool.read(OperationID(1), .stdout, offset: 0, maxBytes: 0).0.expired)
        #expect(spool.read(OperationID(3), .stdout, offset: 0, maxBytes: 0).1 == [3, 3, 3, 3])
        spool.remove(OperationID(3))
        #expect(spool.read(OperationID(3), .stdout, offset: 0, maxBytes: 0).0.expired, "a pruned operation's output goes")
    }
}
