import Foundation

/// GNU parallel's `--joblog` file (`opq map --joblog FILE`): a header line, then one tab-separated line
/// per finished command, written as it finishes:
///
///     Seq  Host  Starttime  JobRuntime  Send  Receive  Exitval  Signal  Command
///
/// `Seq` is the item's sequence number (`{#}`), `Host` is `:` for this machine (a worker's name on a
/// coordinator), `Starttime` is Unix seconds with 3 decimals, `JobRuntime` seconds as `%10.3f`,
/// `Exitval` the exit status (-1 when killed: cancelled, timed out, lost), `Signal` the signal that ended
/// it (0 none), `Command` the command line as `parallel` writes it (newlines as NUL bytes). The format
/// and number formats are parallel's own (checked against `parallel --joblog` in the tests), so tools
/// reading parallel's joblogs read opq's. opq counts no transferred bytes: `Send` and `Receive` are 0.
public enum Joblog {
    /// The first line of every joblog.
    public static let header = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand"

    /// One line of a joblog.
    public struct Entry: Sendable, Equatable {
        /// The item's sequence number (`{#}`), from 1.
        public var seq: Int
        /// `:` for this machine, else the worker that ran the command.
        public var host: String
        /// When the command started, in Unix seconds.
        public var start: Double
        /// How long it ran, in seconds.
        public var runtime: Double
        public var send: Int
        public var receive: Int
        /// The exit status; -1 when the command was killed (cancelled, timed out, lost).
        public var exitval: Int
        /// The signal that ended the command; 0 = none.
        public var signal: Int
        /// The command line as parallel writes it.
        public var command: String

        public init(seq: Int, host: String, start: Double, runtime: Double, send: Int = 0, receive: Int = 0,
                    exitval: Int, signal: Int, command: String) {
            (self.seq, self.host, self.start, self.runtime) = (seq, host, start, runtime)
            (self.send, self.receive, self.exitval, self.signal, self.command) = (send, receive, exitval, signal, command)
        }

        /// True when the command exited 0 without a signal (what `--resume-failed` keeps).
        public var succeeded: Bool { exitval == 0 && signal == 0 }

        /// The line as parallel writes it (without the newline).
        public var line: String {
            [String(seq), host, String(format: "%.3f", start), String(format: "%10.3f", runtime), String(send),
             String(receive), String(exitval), String(signal), command.replacingOccurrences(of: "\n", with: "\0")]
                .joined(separator: "\t")
        }

        /// Parses a line written by opq or parallel; nil when it is not one.
        public init?(line: Substring) {
            let fields = line.split(separator: "\t", maxSplits: 8, omittingEmptySubsequences: false)
            guard fields.count == 9, let seq = Int(fields[0]), seq >= 1, let start = Double(fields[2]),
                  let runtime = Double(fields[3].trimmingCharacters(in: .whitespaces)), let send = Int(fields[4]),
                  let receive = Int(fields[5]), let exitval = Int(fields[6]), let signal = Int(fields[7]) else { return nil }
            self.init(seq: seq, host: String(fields[1]), start: start, runtime: runtime, send: send, receive: receive,
                      exitval: exitval, signal: signal, command: String(fields[8]).replacingOccurrences(of: "\0", with: "\n"))
        }
    }

    /// The entries of the joblog `text` (a header line, then entries; parallel's own too), in file order.
    /// Fails on a line that is not an entry, naming it, so a wrong file is never taken for an empty log.
    public static func entries(_ text: String, path: String) throws(JoblogError) -> [Entry] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.last == "" { lines.removeLast() }
        guard let first = lines.first else { return [] }
        guard first == header else { throw .notAJoblog(path: path, line: 1) }
        var entries: [Entry] = []
        for (index, line) in lines.enumerated().dropFirst() {
            guard let entry = Entry(line: line) else { throw .notAJoblog(path: path, line: index + 1) }
            entries.append(entry)
        }
        return entries
    }

    /// The sequence numbers to skip on a rerun over `entries`: with `failedToo` (`--resume`) every
    /// one in the log, else (`--resume-failed`) those that succeeded at least once.
    public static func done(_ entries: [Entry], failedToo: Bool) -> Set<Int> {
        Set(entries.filter { failedToo || $0.succeeded }.map(\.seq))
    }

    /// `text` as parallel quotes one shell word: as it is when it holds only `-_.+/`, letters and digits,
    /// `''` when empty, else single-quoted with each `'` written as `'"'"'` (and no empty `''` at the ends).
    public static func quoted(_ text: String) -> String {
        if text.isEmpty { return "''" }
        let plain = text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.+/".unicodeScalars.contains($0)) }
        if plain { return text }
        var quoted = "'" + text.replacingOccurrences(of: "'", with: #"'"'"'"#) + "'"
        if quoted.hasPrefix("''") { quoted.removeFirst(2) }
        if quoted.hasSuffix("''") { quoted.removeLast(2) }
        return quoted
    }
}

/// A joblog that cannot be read for `--resume`.
public enum JoblogError: Error, Equatable, CustomStringConvertible {
    case notAJoblog(path: String, line: Int)

    public var description: String {
        switch self {
        case let .notAJoblog(path, line):
            "\(path) line \(line) is not a joblog line (Seq, Host, Starttime, JobRuntime, Send, Receive, Exitval, Signal, Command, tab-separated, after parallel's header); give the joblog of an earlier opq map or parallel run, or drop --resume to start a new one"
        }
    }
}
