import Foundation
import OPQCoordinator
import Testing
@testable import OPQDashboard

/// The text exposition format rendered from a snapshot (the JSON form is how a snapshot is written by hand).
struct PrometheusExpositionTests {
    static let snapshotJSON = """
        {"time": 1700000000.5, "startedAt": 1700000000, "sequence": 3, "workersEndpoint": "w", "clientsEndpoint": "c",
         "jobs": [{"id": 1, "name": "a", "operations": 3, "isFinished": false, "firstSeen": 1700000000,
                   "counts": {"pending": 0, "ready": 1, "dispatched": 0, "executing": 1, "succeeded": 1, "failed": 0, "cancelled": 0}}],
         "queues": [{"name": "we\\"ird\\\\q\\n", "maxConcurrent": -1, "isSuspended": true, "barriers": 0,
                     "counts": {"pending": 2, "ready": 1, "dispatched": 0, "executing": 1, "succeeded": 4, "failed": 1, "cancelled": 0},
                     "finishedTotal": {"succeeded": 5, "failed": 1, "cancelled": 0}}],
         "workers": [{"id": "w1", "slots": 4, "used": 1, "labels": {}, "lastSeen": 1700000000, "host": "h", "pid": 1,
                      "handlers": [], "operations": [7]}],
         "tasks": [], "failures": [],
         "totals": {"messagesReceived": 42, "messagesPerSecond": 2.5, "retries": 1, "attemptsLost": 0, "workersLost": 2, "jobs": 1,
                    "eventsMissed": 0, "telemetrySeconds": 0.25,
                    "snapshotBuild": {"bounds": [0.1, 1], "counts": [3, 0, 0], "sum": 0.03, "count": 3},
                    "dispatchLatency": {"bounds": [0.1, 1], "counts": [2, 1, 1], "sum": 3.5, "count": 4},
                    "journalCommit": {"bounds": [0.1, 1], "counts": [0, 0, 0], "sum": 0, "count": 0}}}
        """

    static func snapshot() throws -> ClusterSnapshot {
        try JSONDecoder().decode(ClusterSnapshot.self, from: Data(snapshotJSON.utf8))
    }

    @Test func countsByQueueAndStateAndOutcomeAreSamplesWithEscapedLabels() throws {
        let text = PrometheusExposition.render(try Self.snapshot())
        #expect(text.contains("opq_operations{queue=\"we\\\"ird\\\\q\\n\",state=\"pending\"} 2\n"))
        #expect(text.contains("opq_operations_finished_total{queue=\"we\\\"ird\\\\q\\n\",outcome=\"succeeded\"} 5\n"))
        #expect(text.contains("opq_queue_depth{queue=\"we\\\"ird\\\\q\\n\"} 4\n"))
        #expect(text.contains("opq_queue_suspended{queue=\"we\\\"ird\\\\q\\n\"} 1\n"))
        #expect(text.contains("opq_worker_slots{worker=\"w1\",state=\"free\"} 3\n"))
        #expect(text.contains("opq_workers_lost_total 2\n") && text.contains("opq_retries_total 1\n"))
        #expect(text.contains("opq_messages_per_second 2.5\n"))
        #expect(text.contains("opq_telemetry_loop_seconds_total 0.25\n") && text.contains("opq_snapshot_build_seconds_count 3\n"))
    }

    @Test func histogramBucketsAreCumulativeAndEndWithInfinity() throws {
        let text = PrometheusExposition.render(try Self.snapshot())
        #expect(text.contains("""
            # TYPE opq_dispatch_latency_seconds histogram
            opq_dispatch_latency_seconds_bucket{le="0.1"} 2
            opq_dispatch_latency_seconds_bucket{le="1.0"} 3
            opq_dispatch_latency_seconds_bucket{le="+Inf"} 4
            opq_dispatch_latency_seconds_sum 3.5
            opq_dispatch_latency_seconds_count 4

            """))
    }

    @Test func everyLineIsACommentOrASampleAndEveryFamilyHasHelpAndType() throws {
        let lines = PrometheusExposition.render(try Self.snapshot()).split(separator: "\n")
        let sample = /^[a-z_]+(\{[^}]*\})? -?[0-9.e+Inf]+$/
        for line in lines where !line.hasPrefix("#") {
            #expect(line.wholeMatch(of: sample) != nil, "not a sample: \(line)")
        }
        let helped = Set(lines.filter { $0.hasPrefix("# HELP ") }.map { $0.split(separator: " ")[2] })
        let typed = Set(lines.filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] })
        #expect(helped == typed && helped.count >= 15)
    }

    @Test func aHistogramCountsEachObservationInTheFirstBucketThatHoldsIt() {
        var histogram = Histogram(bounds: [1, 2])
        for value in [0.5, 1, 1.5, 2, 3] { histogram.observe(value) }
        #expect(histogram.counts == [2, 2, 1] && histogram.count == 5 && histogram.sum == 8)
    }
}
