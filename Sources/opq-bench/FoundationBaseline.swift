import Foundation

/// Foundation's in-process `OperationQueue` on the same graphs: the semantics opq reproduces across
/// processes, run here as the yardstick.
///
/// Each operation is a `BlockOperation` with an empty block; dependencies go through `addDependency`;
/// the queue's `maxConcurrentOperationCount` is the simulated cluster's total slots. The operations and
/// their dependencies are built before the clock starts (as the core's submission is); the time runs
/// from `addOperations` to the return of `waitUntilAllOperationsAreFinished()`.
enum FoundationBaseline {
    /// Sizes above these are not attempted, whatever the budget: Foundation's cost per operation grows
    /// with chain length (about 1,000–3,000 operations/s on 10,000–20,000-operation chains here). A smoke
    /// run keeps chains to 1,000 so that it stays within seconds.
    static func sizeCap(_ shape: Shape, smoke: Bool) -> Int {
        switch shape {
        case .chain: smoke ? 1_000 : 20_000
        case .independent, .fanIn, .randomDAG: 100_000
        }
    }

    /// Seconds to run `workload` on an `OperationQueue` of width `maxConcurrent`.
    static func run(_ workload: Workload, maxConcurrent: Int) -> Double {
        let operations = (0..<workload.size).map { _ in BlockOperation {} }
        for k in 0..<workload.size {
            for target in workload.dependencies(of: k) {
                operations[k].addDependency(operations[Int(target)])
            }
        }
        let queue = OperationQueue()
        queue.name = "opq-bench.foundation"
        queue.maxConcurrentOperationCount = maxConcurrent

        let start = Clock.nanoseconds()
        queue.addOperations(operations, waitUntilFinished: false)
        queue.waitUntilAllOperationsAreFinished()
        let end = Clock.nanoseconds()

        precondition(operations.allSatisfy(\.isFinished), "opq-bench: Foundation left operations unfinished")
        return Clock.seconds(end - start)
    }
}
