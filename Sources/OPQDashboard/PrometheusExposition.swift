import OPQCoordinator

/// Renders a ``ClusterSnapshot`` in the Prometheus text exposition format (version 0.0.4).
///
/// Why not swift-prometheus: its instruments are write-side (`increment`, `record` per event, each under
/// the registry's lock), fed from where things happen. Here the loop already keeps cumulative counters
/// and bucketed histograms in the snapshot it publishes; feeding them into swift-prometheus would mean
/// either a locked call per event on the dispatch thread (what the snapshot design avoids) or replaying
/// deltas into counters — and a histogram's buckets cannot be set at all. So the format is written
/// here from the snapshot, in one pass, when `/metrics` is scraped.
public enum PrometheusExposition {
    /// The `Content-Type` of the text format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The metrics of `snapshot`, one family per `# HELP`/`# TYPE` pair.
    public static func render(_ snapshot: ClusterSnapshot) -> String {
        var out = Writer()
        out.family("opq_operations", "gauge", "Operations by queue and state (barriers excluded).")
        for queue in snapshot.queues {
            for (state, count) in queue.counts.named { out.sample("opq_operations", [("queue", queue.name), ("state", state)], count) }
        }
        out.family("opq_operations_finished_total", "counter", "Operations finished since the coordinator started, by queue and outcome.")
        for queue in snapshot.queues {
            for outcome in ["succeeded", "failed", "cancelled"] {
                out.sample("opq_operations_finished_total", [("queue", queue.name), ("outcome", outcome)], queue.finishedTotal[outcome] ?? 0)
            }
        }
        out.family("opq_queue_depth", "gauge", "Unfinished operations per queue (Foundation's operationCount).")
        for queue in snapshot.queues { out.sample("opq_queue_depth", [("queue", queue.name)], queue.counts.unfinished) }
        out.family("opq_queue_suspended", "gauge", "1 while a queue is suspended.")
        for queue in snapshot.queues { out.sample("opq_queue_suspended", [("queue", queue.name)], queue.isSuspended ? 1 : 0) }
        out.family("opq_queue_max_concurrent", "gauge", "A queue's cap on dispatched and executing operations (-1 = none).")
        for queue in snapshot.queues { out.sample("opq_queue_max_concurrent", [("queue", queue.name)], queue.maxConcurrent) }
        out.family("opq_jobs_unfinished", "gauge", "Jobs with unfinished operations.")
        out.sample("opq_jobs_unfinished", [], snapshot.jobs.filter { !$0.isFinished }.count)
        out.family("opq_jobs_total", "counter", "Jobs accepted, including jobs recovered from the journal.")
        out.sample("opq_jobs_total", [], snapshot.totals.jobs)
        out.family("opq_workers", "gauge", "Live workers.")
        out.sample("opq_workers", [], snapshot.workers.count)
        out.family("opq_worker_slots", "gauge", "Slots of each live worker, used (holding an attempt) or free.")
        for worker in snapshot.workers {
            out.sample("opq_worker_slots", [("worker", worker.id), ("state", "used")], worker.used)
            out.sample("opq_worker_slots", [("worker", worker.id), ("state", "free")], max(0, worker.slots - worker.used))
        }
        out.family("opq_slots", "gauge", "Slots over all live workers, used or free.")
        out.sample("opq_slots", [("state", "used")], snapshot.workers.reduce(0) { $0 + $1.used })
        out.sample("opq_slots", [("state", "free")], snapshot.workers.reduce(0) { $0 + max(0, $1.slots - $1.used) })
        out.family("opq_workers_lost_total", "counter", "Workers declared lost (no heartbeat, or unreachable).")
        out.sample("opq_workers_lost_total", [], snapshot.totals.workersLost)
        out.family("opq_attempts_lost_total", "counter", "Attempts sent back to ready because their worker was lost.")
        out.sample("opq_attempts_lost_total", [], snapshot.totals.attemptsLost)
        out.family("opq_retries_total", "counter", "Failed attempts that will run again.")
        out.sample("opq_retries_total", [], snapshot.totals.retries)
        out.family("opq_messages_received_total", "counter", "Messages received from workers and clients.")
        out.sample("opq_messages_received_total", [], snapshot.totals.messagesReceived)
        out.family("opq_messages_per_second", "gauge", "Messages received per second over the last publishing interval.")
        out.sample("opq_messages_per_second", [], snapshot.totals.messagesPerSecond)
        out.histogram("opq_dispatch_latency_seconds", "Seconds from ready to executing, per attempt.", snapshot.totals.dispatchLatency)
        out.histogram("opq_journal_commit_seconds", "Seconds per journal commit.", snapshot.totals.journalCommit)
        out.family("opq_telemetry_loop_seconds_total", "counter", "Seconds the coordinator's loop spent on metrics and the dashboard (reading events, building snapshots).")
        out.sample("opq_telemetry_loop_seconds_total", [], snapshot.totals.telemetrySeconds)
        out.histogram("opq_snapshot_build_seconds", "Seconds per snapshot built and published by the coordinator's loop.", snapshot.totals.snapshotBuild)
        out.family("opq_telemetry_events_missed_total", "counter", "Events the metrics could not read (counters may be low by this many).")
        out.sample("opq_telemetry_events_missed_total", [], snapshot.totals.eventsMissed)
        out.family("opq_snapshot_age_seconds", "gauge", "Unix time of the snapshot these metrics come from.")
        out.sample("opq_snapshot_age_seconds", [], snapshot.time)
        return out.text
    }

    /// Escapes a label value: backslash, double quote and newline.
    static func escape(_ value: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    private struct Writer {
        var text = ""

        mutating func family(_ name: String, _ type: String, _ help: String) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }

        mutating func sample(_ name: String, _ labels: [(String, String)], _ value: some Numeric & CustomStringConvertible) {
            text += name
            if !labels.isEmpty {
                text += "{" + labels.map { "\($0.0)=\"\(PrometheusExposition.escape($0.1))\"" }.joined(separator: ",") + "}"
            }
            text += " \(value)\n"
        }

        mutating func histogram(_ name: String, _ help: String, _ histogram: Histogram) {
            family(name, "histogram", help)
            var cumulative: UInt64 = 0
            for (bound, count) in zip(histogram.bounds, histogram.counts) {
                cumulative &+= count
                sample("\(name)_bucket", [("le", "\(bound)")], cumulative)
            }
            sample("\(name)_bucket", [("le", "+Inf")], histogram.count)
            sample("\(name)_sum", [], histogram.sum)
            sample("\(name)_count", [], histogram.count)
        }
    }
}
