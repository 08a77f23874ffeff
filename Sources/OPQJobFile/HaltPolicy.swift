import Foundation

/// GNU parallel's `--halt WHEN,WHY=N[%]` (`opq map --halt`): when to stop a run early, and the exit
/// status it then ends with — parallel's rules, read from its source and checked against it in the tests.
///
/// - `now` cancels the running commands and ends; `soon` lets them finish and starts nothing new.
/// - `fail=N` halts once N commands failed, `success=N` once N succeeded, `done=N` once N finished;
///   `N%` is a percentage of all the commands of the run (`fail=10%` of 8 commands halts at the first).
/// - parallel's short forms: `0` = never, `1` = `soon,fail=1`, `2` = `now,fail=1`, `-1` =
///   `soon,success=1`, `-2` = `now,success=1`, `N%` = `soon,fail=N%`.
///
/// Exit status (``HaltTracker/exitStatus``): `fail=1` and `done=1` (or a percentage that makes exactly
/// one command) end with the failing command's exit status (128 + its signal when killed by one, 255 when cancelled); `fail=N`/`done=N`, the number of
/// failed commands (at most 101); `fail=N%`/`done=N%`, the percentage that failed, rounded up;
/// `success=` once met, 0. When the condition never held, the percentage or the count of failures.
public struct HaltPolicy: Sendable, Equatable {
    public enum When: String, Sendable { case now, soon }
    public enum Condition: String, Sendable { case fail, success, done }
    public enum Threshold: Sendable, Equatable {
        case count(Int)
        /// Percent of the run's commands, 1…100.
        case percent(Int)
    }

    public var when: When
    public var condition: Condition
    public var threshold: Threshold

    public init(when: When, condition: Condition, threshold: Threshold) {
        (self.when, self.condition, self.threshold) = (when, condition, threshold)
    }

    /// Parses parallel's spelling; nil for `never` (and `0`).
    public static func parse(_ text: String) throws(HaltPolicyError) -> HaltPolicy? {
        let aliases = ["1": "soon,fail=1", "2": "now,fail=1", "-1": "soon,success=1", "-2": "now,success=1"]
        var spelled = aliases[text] ?? text
        if spelled == "never" || spelled == "0" { return nil }
        if spelled.hasSuffix("%"), Int(spelled.dropLast()) != nil { spelled = "soon,fail=" + spelled }
        let parts = spelled.split(separator: ",", maxSplits: 1).map(String.init)
        guard parts.count == 2, let when = When(rawValue: parts[0]) else { throw .invalid(text) }
        let why = parts[1].split(separator: "=", maxSplits: 1).map(String.init)
        guard why.count == 2, let condition = Condition(rawValue: why[0]) else { throw .invalid(text) }
        let threshold: Threshold
        if why[1].hasSuffix("%"), let percent = Int(why[1].dropLast()), (1...100).contains(percent) {
            threshold = .percent(percent)
        } else if let count = Int(why[1]), count >= 1 {
            threshold = .count(count)
        } else {
            throw .invalid(text)
        }
        return HaltPolicy(when: when, condition: condition, threshold: threshold)
    }
}

/// Counts finished commands against a ``HaltPolicy`` (parallel's `should_we_halt`) and keeps the exit status.
public struct HaltTracker: Sendable {
    public let policy: HaltPolicy
    /// Commands in the run, for percentages.
    public let total: Int
    public private(set) var failed = 0
    public private(set) var finished = 0
    /// Set once the condition held: the run halts.
    public private(set) var halted: HaltPolicy.When?
    private var status: Int32?

    public init(policy: HaltPolicy, total: Int) {
        self.policy = policy
        self.total = max(total, 1)
    }

    /// Records a finished command (`exitCode`, or `signal` when killed); returns `when` the first time
    /// the condition holds, nil otherwise (also every later time).
    public mutating func record(exitCode: Int32?, signal: Int32?) -> HaltPolicy.When? {
        finished += 1
        let failure = exitCode.map { $0 != 0 } ?? true || signal != nil
        if failure { failed += 1 }
        let reached: Int? = switch policy.condition {
        case .fail: failure ? failed : nil
        case .success: failure ? nil : finished - failed
        case .done: finished
        }
        guard halted == nil, let reached else { return nil }
        let needed: Double = switch policy.threshold {
        case .count(let count): Double(count)
        case .percent(let percent): Double(total) * Double(percent) / 100
        }
        guard Double(reached) >= needed else { return nil }
        switch (policy.condition, policy.threshold) {
        case (.success, _): status = 0
        case _ where needed == 1:  // also a percentage that comes to exactly one command, as parallel
            status = exitCode.flatMap { $0 != 0 ? $0 : nil } ?? signal.map { 128 + $0 } ?? (failure ? 255 : 0)
        case (_, .count): status = Int32(min(failed, 101))
        case (_, .percent): status = Self.percent(failed, of: total)
        }
        halted = policy.when
        return policy.when
    }

    /// The exit status of the run as parallel's with this policy.
    public var exitStatus: Int32 {
        if let status { return status }
        if case .percent = policy.threshold { return Self.percent(failed, of: max(finished, 1)) }
        return Int32(min(failed, 101))
    }

    private static func percent(_ part: Int, of whole: Int) -> Int32 {
        Int32((Double(part) / Double(whole) * 100).rounded(.up))
    }
}

public enum HaltPolicyError: Error, Equatable, CustomStringConvertible {
    case invalid(String)

    public var description: String {
        switch self {
        case .invalid(let text):
            "--halt \(text) is not understood: write WHEN,WHY=N or WHEN,WHY=N% with WHEN now or soon and WHY fail, success or done (e.g. now,fail=1, soon,fail=3, now,fail=10%), or never"
        }
    }
}
