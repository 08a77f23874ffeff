import Foundation
import OPQClient
import OPQCore
import OPQJobFile

/// What `opq run FILE` remembers of its last run, for `opq run FILE --resume` (see ``RerunPlan``).
///
/// Every run records, per operation name, whether it succeeded and a fingerprint of what it does, in
/// `$XDG_STATE_HOME/opq/runs/<hash of the file's absolute path>.json` (else `~/.local/state/opq/runs/`),
/// a JSON object `{"version": 1, "file": PATH, "operations": {NAME: {"outcome": "succeeded", "fingerprint": HEX}}}`.
/// `--resume` then runs only the operations that did not succeed (failed, cancelled, unfinished when
/// interrupted, new, or changed since: another command, queue, labels, timeout or dependencies) and
/// everything that depends on them; the others keep their success. The file is keyed by path, not
/// content, so fixing a failing step and resuming works. Deleting the file forgets the last run.
final class RunResume {
    struct State: Codable {
        var version = 1
        var file: String
        var operations: [String: Record]
    }

    struct Record: Codable {
        var outcome: String
        var fingerprint: String
    }

    let path: String
    private let file: String
    private let specs: [OperationSpec]
    /// The records kept from the last run (operations not run again).
    private var kept: [String: Record] = [:]
    /// Outcomes of this run, by operation id.
    private var outcomes: [OperationID: Outcome] = [:]
    private var names: [OperationID: String] = [:]

    init(file: String, jobFile: JobFile) {
        self.file = URL(fileURLWithPath: file).standardizedFileURL.path
        specs = jobFile.submission.operations
        path = Self.directory() + "/" + Self.digest(self.file) + ".json"
    }

    /// `$XDG_STATE_HOME/opq/runs`, else `~/.local/state/opq/runs` (the coordinator's state directory's parent).
    static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/opq/runs" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state/opq/runs"
    }

    /// FNV-1a, 64 bits, as 16 hex digits: stable across processes (unlike `Hasher`).
    static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The submission to run: all of `submission`, or with `resuming` only what the last run did not
    /// finish with success (and its dependants). Nil when there is nothing to run.
    func submission(_ submission: Submission, resuming: Bool) throws(ExitStatus) -> Submission? {
        guard resuming else { return submission }
        var last: State?
        if let data = FileManager.default.contents(atPath: path) {
            do {
                last = try JSONDecoder().decode(State.self, from: data)
            } catch {
                throw fail(.usage, "cannot read the last run's state \(path): \(error); delete it to run everything again")
            }
        }
        let previous = last?.operations ?? [:]
        let succeeded = Set(specs.filter { spec in
            previous[spec.name].map { $0.outcome == "succeeded" && $0.fingerprint == Self.digest(RerunPlan.fingerprint(spec)) } ?? false
        }.map(\.name))
        let rerun = RerunPlan.rerun(specs, keeping: succeeded)
        for name in succeeded where !rerun.contains(name) { kept[name] = previous[name] }
        guard !rerun.isEmpty else {
            print("opq run \(file): every operation succeeded last time (\(path)); nothing to run")
            return nil
        }
        let result = RerunPlan.submission(submission, keeping: rerun)
        print("opq run --resume: running \(result.operations.count) of \(specs.count) operations again; "
              + "\(specs.count - result.operations.count) succeeded last time")
        return result
    }

    /// Names the operations of the accepted job (to record their outcomes by name).
    func accepted(_ receipt: JobReceipt, _ submission: Submission) {
        for (id, spec) in zip(receipt.operations, submission.operations) { names[id] = spec.name }
    }

    /// One operation event (see ``JobProgress/onEvent``).
    func observe(_ event: RemoteEvent.StateChange) {
        if event.state == .finished { outcomes[event.operation] = event.outcome }
    }

    /// Writes this run's outcomes (with the successes kept from the last run). A failure to write is
    /// reported, not fatal: the run itself is over.
    func save() {
        var state = State(file: file, operations: kept)
        let fingerprints = Dictionary(specs.map { ($0.name, Self.digest(RerunPlan.fingerprint($0))) }) { first, _ in first }
        for (id, name) in names where !name.isEmpty {
            guard let outcome = outcomes[id], let fingerprint = fingerprints[name] else { continue }
            state.operations[name] = Record(outcome: JobProgress.word(outcome), fingerprint: fingerprint)
        }
        do {
            try FileManager.default.createDirectory(atPath: Self.directory(), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            try encoder.encode(state).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            printError("opq run: cannot record the outcomes in \(path) for --resume: \(error)")
        }
    }
}
