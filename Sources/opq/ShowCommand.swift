import ArgumentParser
import Foundation
import OPQClient
import OPQCore
import OPQJobFile

/// `opq show OP`: everything known about one operation.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one operation: command, state, outcome, queue, priority, attempts, worker, times, exit code.",
        discussion: """
            Examples:
              opq show op-17
              opq show 17 --json    # {"version": 1, "id": 17, "name": …, "command": […], "state": …, "ranOn": "w1", …}

            "worker:" is the worker running the current attempt, or "ran on W" once the operation finished:
            the worker whose report finished it, with "started:" and "ended:" (local ISO-8601 times). In
            --json: "worker" (current holder or null), "ranOn", "startedAt", "endedAt" (ISO-8601 UTC or
            null), and "command" (argv), "shell" (a `sh -c` script), "commands" (a list) or "handler".
            A coordinator restarted since keeps the worker and times only of reports it journaled (with
            output, a message or a non-zero exit).

            An operation that has not started says why ("waiting:"): the dependencies it waits for, a
            suspended queue, a queue at its maximum, no live worker serving its queue with its labels,
            or that it is in line for a free slot. In --json: "waiting": [{"kind", "text", …}].
              opq logs op-17        # its captured output

            --story adds what happened to it, step by step, as the coordinator keeps it per operation
            until it is pruned: each transition (submitted, ready, dispatched, started, retry, requeued,
            cancelling, succeeded, failed, cancelled) with its time, attempt, worker and cause — the message or timer it
            followed from ("#42 worker report", "#43 timers"), so steps with one cause happened together.
              opq show op-17 --story

            --result prints its handler's result (README "Handler results": the bytes the handler
            returned, at most 1 MiB, apart from stdout) as raw bytes to stdout, nothing else; nothing
            when it has none. With --json: {"version", "id", "resultBytes", "result": base64,
            "resultText": the UTF-8 text or null}. Without --result, "result:" gives its size.
              opq show op-17 --result > digest.txt
            In --json: "story": {"steps": [{"sequence", "time", "event", "attempt", "worker", "text",
            "cause"}], "omitted", "complete"}. Progress reports show while the event log holds them (the
            most recent 100,000 events). A long story keeps its first 100 and latest steps ("omitted"
            counts the rest); "complete" is false when it starts after a coordinator restart.
            """
    ).subcommandOfOPQ

    @OptionGroup var global: GlobalOptions

    @Argument(help: "op-N or N.")
    var operation: String

    @Flag(help: "Print JSON with stable field names (version, id, name, job, queue, command, state, outcome, priority, attempts, worker, ranOn, startedAt, endedAt, exitCode, …).")
    var json = false

    @Flag(help: "Also print its story: every transition with time, attempt, worker and cause.")
    var story = false

    @Flag(help: "Print only its handler's result: raw bytes (with --json: base64 and text).")
    var result = false

    func run() throws {
        let id = try ShowCommand.operationID(operation)
        let connection = try Connection.open(global.endpoint)
        if result { return try printResult(OperationID(id), connection: connection) }
        let info: OperationStatus
        do {
            info = try connection.operation(OperationID(id), includeStory: story)
        } catch {
            throw Connection.status(for: error)
        }
        if json {
            var object = JSONOutput.operation(info)
            object["version"] = JSONOutput.version
            for (key, value) in Self.work(info.work) { object[key] = value }
            object["dependencies"] = info.dependencies.map(\.rawValue)
            object["labels"] = info.labels
            object["waiting"] = info.blockers.map(JSONOutput.blocker)
            object["resultBytes"] = info.resultBytes
            if story, let told = info.story { object["story"] = Self.storyObject(told) }
            if info.state == .finished {  // as `opq watch --json`: "" for a plain success, "up to date", "exit status 1", …
                object["reason"] = JobProgress.detail(outcome: info.outcome, reason: info.reason, exitCode: info.exitCode, signal: info.signal)
            }
            print(JSONOutput.string(object))
            return
        }
        let state = info.state == .finished ? JobProgress.word(info.outcome) : (info.state?.description ?? "?")
        print("op-\(info.id.rawValue)\(info.name.isEmpty ? "" : " (\(info.name))")")
        print("  job:        job-\(info.job.rawValue)")
        if let command = Self.commandLine(info.work) { print("  command:    \(command)") }
        print("  queue:      \(info.queue)")
        print("  state:      \(state)\(info.isCancelled && info.state != .finished ? " (cancelled)" : "")"
              + (info.state == .finished && info.reason == .upToDate ? " (up to date: outputs newer than inputs, not run)" : ""))
        print("  priority:   \(info.priority)")
        print("  attempts:   \(info.attempt)")
        if let worker = info.worker {
            print("  worker:     \(worker)")
        } else if let finishedBy = info.finishedBy {
            print("  worker:     ran on \(finishedBy)")
        }
        if let startedAt = info.startedAt { print("  started:    \(JSONOutput.time(startedAt, local: true))") }
        if let endedAt = info.endedAt {
            print("  ended:      \(JSONOutput.time(endedAt, local: true))" + String(format: " (after %.2f s)", info.duration ?? 0))
        }
        if let exitCode = info.exitCode { print("  exit code:  \(exitCode)") }
        if let signal = info.signal { print("  signal:     \(signal)") }
        if let duration = info.duration { print(String(format: "  duration:   %.2f s", duration)) }
        if !info.dependencies.isEmpty { print("  after:      " + info.dependencies.map { "op-\($0.rawValue)" }.joined(separator: " ")) }
        if info.isBarrier { print("  barrier:    yes") }
        if info.resultBytes > 0 { print("  result:     \(info.resultBytes) bytes (opq show op-\(info.id.rawValue) --result)") }
        for (k, blocker) in info.blockers.enumerated() { print((k == 0 ? "  waiting:    " : "              ") + blocker.description) }
        if story, let told = info.story { Self.printStory(told) }
    }

    /// `--result`: the handler's result as raw bytes, or (`--json`) base64 and text.
    private func printResult(_ id: OperationID, connection: CoordinatorClient) throws {
        let bytes: [UInt8]
        do {
            bytes = try connection.result(of: id)
        } catch {
            throw Connection.status(for: error)
        }
        guard json else { return FileHandle.standardOutput.write(Data(bytes)) }
        let text = String(validating: bytes, as: UTF8.self)
        print(JSONOutput.string([
            "version": JSONOutput.version, "id": id.rawValue, "resultBytes": bytes.count,
            "result": Data(bytes).base64EncodedString(), "resultText": text.map { $0 as Any } ?? NSNull(),
        ]))
    }

    /// The story as lines: local time, the step in words, then its cause (and the event's number).
    static func printStory(_ story: OperationStatus.Story) {
        print("  story:" + (story.isComplete ? "" : " (it starts after a coordinator restart: its earlier steps are not kept)"))
        var previousTime: Double?
        for (index, step) in story.steps.enumerated() {
            if story.omitted > 0 && index == 100 { print("    … \(story.omitted) steps left out …") }
            let time = step.time ?? previousTime
            previousTime = time
            let clock = time.map { JSONOutput.time($0, local: true) } ?? ""
            let cause = step.cause.map { "  [cause \($0)]" } ?? ""
            print("    \(clock)  \(step.text)\(cause)")
        }
    }

    /// The story for --json.
    static func storyObject(_ story: OperationStatus.Story) -> [String: Any] {
        let steps: [[String: Any]] = story.steps.map { step in
            [
                "sequence": step.sequence,
                "time": step.time.map { JSONOutput.time($0, local: false) as Any } ?? NSNull(),
                "event": step.event,
                "attempt": step.attempt,
                "worker": step.worker.map { $0 as Any } ?? NSNull(),
                "text": step.text,
                "cause": step.cause.map { $0 as Any } ?? NSNull(),
            ]
        }
        return ["steps": steps, "omitted": story.omitted, "complete": story.isComplete]
    }

    /// What the operation runs, for --json: `command` (argv), `shell` (the script of a `/bin/sh -c`),
    /// `commands` (a list, each as argv) or `handler` (its name); nothing for an empty operation.
    static func work(_ work: Work) -> [String: Any] {
        switch work {
        case .command(let command):
            if let script = shellScript(command) { return ["shell": script] }
            return ["command": command.argv]
        case .commands(let list): return ["commands": list.map(\.argv)]
        case .handler(let name, _): return ["handler": name]
        case .handlers(let calls): return ["handlers": calls.map(\.name)]
        case .empty: return [:]
        }
    }

    /// What the operation runs as one line: a script as written, argv words quoted as a shell would need.
    static func commandLine(_ work: Work) -> String? {
        func line(_ command: Command) -> String {
            shellScript(command) ?? command.argv.map(Joblog.quoted).joined(separator: " ")
        }
        switch work {
        case .command(let command): return line(command)
        case .commands(let list): return list.map(line).joined(separator: " && ")
        case .handler(let name, _): return "handler \(name)"
        case .handlers(let calls): return calls.map { "handler \($0.name)" }.joined(separator: " & ")
        case .empty: return nil
        }
    }

    /// The script of a `/bin/sh -c SCRIPT` command (how `shell:` and `--shell` run), else nil.
    private static func shellScript(_ command: Command) -> String? {
        let argv = command.argv
        return argv.count == 3 && argv[0] == "/bin/sh" && argv[1] == "-c" ? argv[2] : nil
    }

    /// Parses `op-N` or `N`, or fails with the usage status.
    static func operationID(_ text: String) throws(ExitStatus) -> UInt64 {
        guard case .operation(let id)? = TargetID(text, bare: { .operation(OperationID($0)) }) else {
            throw fail(.usage, "'\(text)' is not an operation id (write op-N, or op-rN for a reservation)")
        }
        return id.rawValue
    }
}
