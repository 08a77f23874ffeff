// Imports exactly Foundation and OPQClient (not OPQCore): the names a program porting Foundation code
// sees. This file compiling is half of the test: `QualityOfService` and `Operation.QueuePriority` below
// are Foundation's, unambiguously, and opq's are reached as `RemoteOperation.QueuePriority` and
// `RemoteOperation.QualityOfService`.
import Foundation
import OPQClient
import Testing

@Suite struct FoundationNamesTests {
    @Test func foundationPrioritiesSetTheSameLevelOnARemoteOperation() {
        let levels: [Operation.QueuePriority] = [.veryLow, .low, .normal, .high, .veryHigh]
        let local = BlockOperation {}
        for level in levels {
            local.queuePriority = level
            let remote = RemoteOperation(command: ["true"])
            remote.queuePriority = .init(local.queuePriority)
            #expect(remote.queuePriority.rawValue == Int8(level.rawValue))
            #expect(Operation.QueuePriority(remote.queuePriority) == level)
        }
        let remote = RemoteOperation()
        remote.queuePriority = RemoteOperation.QueuePriority.high
        #expect(Operation.QueuePriority(remote.queuePriority) == .high)
    }

    @Test func foundationQualityOfServiceSetsTheSameClassOnARemoteOperation() {
        let classes: [QualityOfService] = [.userInteractive, .userInitiated, .utility, .background, .default]
        for qos in classes {
            let remote = RemoteOperation(handler: "h")
            remote.qualityOfService = .init(qos)
            #expect(QualityOfService(remote.qualityOfService) == qos)
        }
        let remote = RemoteOperation()
        remote.qualityOfService = RemoteOperation.QualityOfService.background
        #expect(QualityOfService(remote.qualityOfService) == .background)
        #expect("\(remote.qualityOfService)" == "background")
    }
}
