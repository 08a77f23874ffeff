import OPQCore

/// Builds what readers asked for (``DetailRequest``) on the loop thread, only when asked: a job's graph
/// and an operation's story are never part of the regular snapshot.
extension Coordinator {
    /// The answer to `request` now.
    func detail(for request: DetailRequest, now: Double) -> Detail {
        switch request {
        case .graph(let job): state.jobGraph(JobID(job), now: now).map(Detail.graph) ?? .unknown
        case .story(let operation): state.story(of: OperationID(operation)).map(Detail.story) ?? .unknown
        }
    }
}

/// A job's graph and an operation's story (the dashboard's detail views, `opq show --story`), built from
/// the pure state only when asked.
extension CoordinatorState {
    /// The state of `operation` as the dashboard colours it: its state, or its outcome once finished.
    static func stateName(_ operation: Scheduler.OperationSnapshot) -> String {
        operation.state == .finished ? (operation.outcome?.description ?? "finished") : operation.state.description
    }

    /// Job `id` as a layered graph (``JobGraph``), or nil when unknown or pruned.
    /// - Complexity: O(n + e) over the first ``JobGraph/maxOperations`` operations and their dependencies.
    func jobGraph(_ id: JobID, now: Double) -> JobGraph? {
        guard let job = core.job(id) else { return nil }
        let operations = job.operations.prefix(JobGraph.maxOperations).compactMap { core.operation($0) }
        var position: [OperationID: Int] = [:]
        for (index, operation) in operations.enumerated() { position[operation.id] = index }
        // Longest-path layering (Kahn's order): a node's layer is one more than its deepest dependency's.
        var layer = Array(repeating: 0, count: operations.count)
        var waiting = Array(repeating: 0, count: operations.count)
        var dependents = Array(repeating: [Int](), count: operations.count)
        for (index, operation) in operations.enumerated() {
            for dependency in operation.dependencies {
                guard let from = position[dependency] else { continue }  // outside the job, or not laid out
                waiting[index] += 1
                dependents[from].append(index)
            }
        }
        var order = operations.indices.filter { waiting[$0] == 0 }
        var next = 0
        while next < order.count {
            let index = order[next]
            next += 1
            for dependent in dependents[index] {
                layer[dependent] = max(layer[dependent], layer[index] + 1)
                waiting[dependent] -= 1
                if waiting[dependent] == 0 { order.append(dependent) }
            }
        }
        let depth = (layer.max() ?? -1) + 1
        var layers = (0..<min(depth, JobGraph.maxLayers)).map { GraphLayer(index: $0, nodes: [], hiddenStates: [:]) }
        var hiddenLayerStates: [String: Int] = [:]
        var shown = Set<OperationID>()
        for (index, operation) in operations.enumerated() {
            let state = Self.stateName(operation)
            guard layer[index] < JobGraph.maxLayers else {
                hiddenLayerStates[state, default: 0] += 1
                continue
            }
            if layers[layer[index]].nodes.count < JobGraph.maxNodesPerLayer {
                layers[layer[index]].nodes.append(GraphNode(
                    id: operation.id.rawValue, name: operation.name, state: state, attempt: operation.attempt,
                    worker: operation.worker?.name, isBarrier: operation.isBarrier))
                shown.insert(operation.id)
            } else {
                layers[layer[index]].hiddenStates[state, default: 0] += 1
            }
        }
        let edges = operations.filter { shown.contains($0.id) }.flatMap { operation in
            operation.dependencies.filter(shown.contains).map { GraphEdge(from: $0.rawValue, to: operation.id.rawValue) }
        }
        return JobGraph(job: id.rawValue, operations: job.operations.count, laidOut: operations.count, layers: layers,
                        edges: edges, hiddenLayers: max(0, depth - JobGraph.maxLayers), hiddenLayerStates: hiddenLayerStates, time: now)
    }

    /// The causal timeline of operation `id`: its transitions from its own story (``StoryBook``, kept
    /// as long as the operation is), with the progress reports the event log still holds between them;
    /// nil when unknown or pruned.
    /// - Complexity: O(its steps) + O(events kept) when asked for progress (at most
    ///   ``CoordinatorConfiguration/eventHistory``).
    func story(of id: OperationID) -> OperationStory? {
        guard let operation = core.operation(id) else { return nil }
        let (transitions, dropped) = events.stories.story(of: id) ?? ([], 0)
        // After a gap in a long story, only the progress that came after it is shown (the gap is one).
        let gapEnd = dropped > 0 ? transitions[events.stories.keptFirst].sequence : 0
        var progress = events.history(of: id).events.filter { event in
            if case .progress = event.kind { return true } else { return false }
        }
        var omitted = dropped
        if gapEnd > 0 {
            let before = progress.count
            progress.removeAll { $0.sequence < gapEnd }
            omitted += before - progress.count
        }
        var entries: [StoryEntry] = []
        var lastWorker: WorkerID?
        var next = progress.startIndex
        for transition in transitions {
            while next < progress.endIndex, progress[next].sequence < transition.sequence {
                entries.append(Self.progressEntry(progress[next], lastWorker: lastWorker))
                next += 1
            }
            var entry = Self.storyEntry(transition, isFirst: entries.isEmpty, lastWorker: lastWorker)
            entry.cause = transition.cause.description
            entries.append(entry)
            if let worker = transition.worker { lastWorker = worker }
        }
        entries += progress[next...].map { Self.progressEntry($0, lastWorker: lastWorker) }
        let submitted = entries.first.map { $0.event == "submitted" } ?? false
        if entries.count > OperationStory.maxEntries {
            let cut = entries.count - OperationStory.maxEntries
            entries.removeSubrange(OperationStory.keptFirst..<(OperationStory.keptFirst + cut))
            omitted += cut
        }
        return OperationStory(
            operation: id.rawValue, name: operation.name, job: operation.job.rawValue, queue: operation.queue,
            state: Self.stateName(operation), attempt: operation.attempt, dependencies: operation.dependencies.map(\.rawValue),
            entries: entries, omitted: omitted, isComplete: submitted)
    }

    /// A progress report in words.
    static func progressEntry(_ event: LoggedEvent, lastWorker: WorkerID?) -> StoryEntry {
        guard case .progress(let progress) = event.kind else { preconditionFailure("not a progress event: \(event.kind)") }
        let fraction = progress.hasFraction ? " \(Int((progress.fraction * 100).rounded())) %" : ""
        return StoryEntry(sequence: event.sequence, time: nil, event: "progress", attempt: Int(progress.attempt),
                          worker: lastWorker?.name, text: "progress\(fraction)\(progress.message.isEmpty ? "" : ": " + progress.message)",
                          cause: event.cause.description)
    }

    /// One transition in words.
    static func storyEntry(_ change: StoryBook.Transition, isFirst: Bool, lastWorker: WorkerID?) -> StoryEntry {
        let worker = change.worker ?? lastWorker
        let on = worker.map { " on worker \($0.name)" } ?? ""
        // The reason in words, unless the exit status or signal below says it already.
        let said = (change.reason == .exitStatus && change.exitCode != nil) || (change.reason == .signal && change.signal != nil)
        let why = said ? "" : change.reason.map { " (\($0.description))" } ?? ""
        let status = change.exitCode.map { ", exit status \($0)" } ?? change.signal.map { ", signal \($0)" } ?? ""
        let event: String, text: String
        switch change.state {
        case .dispatched where change.isCancelled, .executing where change.isCancelled:
            (event, text) = ("cancelling", "cancel requested; worker \(worker?.name ?? "?") is told to stop it")
        case .pending where change.attempt == 0 && isFirst:
            (event, text) = ("submitted", "submitted; waiting for its dependencies")
        case .pending where change.retryAt != nil:
            let delay = max(0, (change.retryAt ?? change.time) - change.time)
            (event, text) = ("retry", "attempt \(change.attempt) failed\(on)\(why)\(status); retry in \(delay.formatted2) s")
        case .pending:
            (event, text) = ("pending", "pending\(why)")
        case .ready where change.attempt == 0 && isFirst:
            (event, text) = ("submitted", "submitted; ready at once (no dependency left)")
        case .ready where change.reason == .lostWorker:
            (event, text) = ("requeued", "attempt \(change.attempt) requeued: worker \(lastWorker?.name ?? "?") was lost")
        case .ready where change.attempt == 0:
            (event, text) = ("ready", "ready: its dependencies finished")
        case .ready:
            (event, text) = ("ready", "ready for attempt \(change.attempt + 1)\(why)")
        case .dispatched:
            (event, text) = ("dispatched", "dispatched to worker \(worker?.name ?? "?") (attempt \(change.attempt))")
        case .executing:
            (event, text) = ("started", "started\(on) (attempt \(change.attempt))")
        case .finished:
            let outcome = change.outcome ?? .succeeded
            (event, text) = (outcome.description, "\(outcome.description)\(change.attempt > 0 ? on + " (attempt \(change.attempt))" : "")\(why)\(status)")
        }
        return StoryEntry(sequence: change.sequence, time: change.time, event: event, attempt: change.attempt, worker: worker?.name, text: text)
    }
}

private extension Double {
    /// Two decimals.
    var formatted2: String { String(Double(Int((self * 100).rounded())) / 100) }
}
