import OPQCore

/// The command template of `opq map`: GNU parallel's replacement strings (``Placeholder``), expanded
/// once per operation, exactly as `parallel` expands them (checked against `parallel` itself in the
/// tests).
///
/// Without a shell every template word becomes argv elements after expansion: a placeholder's value is
/// never split or interpreted, so an item with spaces, quotes, `$` or `*` stays exactly one argument.
/// A placeholder that stands for several arguments (`{}` with `-n 2` or several input sources) makes
/// several words, text before it joining the first and text after it the last (`x{}y` with `1 2` →
/// `x1`, `2y`), as parallel without `-X`. A placeholder that stands for none (`{3}` with two
/// arguments) adds nothing: its word is an empty argument without a shell (as `parallel -q`, whose
/// command words are argv too) and vanishes from a `--shell` script (as `parallel`). A template with
/// no placeholder at all gets ` {}` appended, as with GNU parallel and xargs.
///
/// With a shell the words are joined by spaces into one `sh -c` script and every substituted value is
/// single-quoted, so it is still one word and never code.
///
/// `{%}`, the job slot, is known only when the operation starts: the command then runs through a short
/// `sh` prelude that takes the lowest free slot of ``SlotLocks`` (an `flock` on a file per slot, held
/// until the command and its children exit) and substitutes its number.
public struct MapTemplate: Sendable, Equatable {
    /// The template's words, each split into text and placeholders.
    private let words: [[Placeholder.Piece]]
    /// Run through `/bin/sh -c` instead of as an argv.
    public let usesShell: Bool

    /// Parses `words` (the command after `--`, before any `:::`). Fails on an empty template.
    /// `appendsArguments: false` (job files' `foreach`) leaves a template without placeholders as written.
    public init(_ words: [String], shell: Bool, appendsArguments: Bool = true) throws(MapTemplateError) {
        guard !words.isEmpty, !(words.count == 1 && words[0].isEmpty) else { throw .emptyCommand }
        if let bad = words.firstIndex(where: { $0.utf8.contains(0) }) { throw .nulInCommand(word: bad + 1) }
        var parsed = words.map(Placeholder.pieces)
        let hasPlaceholder = parsed.contains { $0.contains { if case .placeholder = $0 { true } else { false } } }
        if !hasPlaceholder && appendsArguments { parsed.append([.placeholder(.arguments(.whole))]) }
        self.words = parsed
        usesShell = shell
    }

    /// True when the template holds `{%}`, whose value needs ``SlotLocks``.
    public var usesSlot: Bool { words.contains { $0.contains(.placeholder(.slot)) } }

    /// One operation per entry of `arguments` (see ``MapInput/operations``), in order: `base` with the
    /// command (run in `workingDirectory`), named after its arguments joined by spaces — repeats get
    /// ` #2`, ` #3`… so names stay unique, and a name longer than ``Limits/maxNameBytes`` is shortened.
    public func operations(for arguments: [[String]], base: OperationSpec, workingDirectory: String?,
                           slots: SlotLocks? = nil) -> [OperationSpec] {
        let names = arguments.map { Self.name(for: $0) }
        var used = Set(names)
        var repeated: Set<String> = []
        return arguments.enumerated().map { index, arguments in
            var spec = base
            var command = command(for: arguments, sequence: index + 1, slots: slots)
            command.workingDirectory = workingDirectory
            spec.work = .command(command)
            spec.name = names[index]
            if !repeated.insert(spec.name).inserted {
                var copy = 2
                while used.contains("\(names[index]) #\(copy)") { copy += 1 }
                spec.name = "\(names[index]) #\(copy)"
                used.insert(spec.name)
            }
            return spec
        }
    }

    /// An operation's name: its arguments joined by spaces, cut to leave room for a ` #N` suffix.
    static func name(for arguments: [String]) -> String {
        let name = arguments.joined(separator: " ")
        let room = Limits.maxNameBytes - 16
        guard name.utf8.count > room else { return name }
        var cut = ""
        for character in name {
            if cut.utf8.count + character.utf8.count > room - 3 { break }
            cut.append(character)
        }
        return cut + "…"
    }

    /// The command for one operation: its `arguments` and `sequence` number (from 1). With `{%}` in
    /// the template, `slots` must be given.
    public func command(for arguments: [String], sequence: Int, slots: SlotLocks? = nil) -> Command {
        let expanded = words.flatMap { Self.expand($0, arguments, sequence: sequence) }
        let slotPrelude = usesSlot ? slots.map { $0.prelude } : nil
        if !usesShell && slotPrelude == nil {
            return Command(expanded.map { $0.map(\.plainText).joined() })
        }
        let script = expanded.map { word in
            word.isEmpty && !usesShell ? "''" : word.map { usesShell ? $0.shellCode : $0.quotedWord }.joined()
        }.joined(separator: " ")
        guard let slotPrelude else { return .shell(script) }
        return .shell(slotPrelude + (usesShell ? script : "exec " + script))
    }

    /// One operation's command line as GNU parallel writes it in a joblog (``Joblog``): with a shell the
    /// script, values quoted as parallel quotes them; without, every argv word quoted so (as `parallel -q`).
    /// `{%}` stays `{%}` (its value is known only when the command starts).
    public func commandLine(for arguments: [String], sequence: Int) -> String {
        let expanded = words.flatMap { Self.expand($0, arguments, sequence: sequence) }
        guard usesShell else { return expanded.map { Joblog.quoted($0.map(\.plainText).joined()) }.joined(separator: " ") }
        return expanded.map { word in
            word.map { fragment in
                switch fragment {
                case .code(let text): text
                case .value(let text): Joblog.quoted(text)
                case .slot: "{%}"
                }
            }.joined()
        }.joined(separator: " ")
    }

    /// A piece of an expanded word.
    private enum Fragment {
        case code(String), value(String), slot

        var plainText: String {
            switch self {
            case .code(let text), .value(let text): text
            case .slot: ""
            }
        }

        /// As shell code in a `--shell` script: template text as written, values quoted.
        var shellCode: String {
            switch self {
            case .code(let text): text
            case .value(let text): MapTemplate.shellQuoted(text)
            case .slot: SlotLocks.variable
            }
        }

        /// As part of one quoted shell word (argv mode run through the slot prelude).
        var quotedWord: String {
            switch self {
            case .code(let text), .value(let text): MapTemplate.shellQuoted(text)
            case .slot: SlotLocks.variable
            }
        }
    }

    /// One template word → the words it makes: text joins the neighbouring values; each further value of
    /// a placeholder starts a new word. A word whose placeholders stand for nothing stays as an empty
    /// argument in argv mode (as `parallel -q`) and adds nothing to a `--shell` script (as `parallel`).
    private static func expand(_ word: [Placeholder.Piece], _ arguments: [String], sequence: Int) -> [[Fragment]] {
        var words: [[Fragment]] = []
        var current: [Fragment] = []
        for piece in word {
            switch piece {
            case .text(let text):
                current.append(.code(text))
            case .placeholder(.slot):
                current.append(.slot)
            case .placeholder(let placeholder):
                for (k, value) in placeholder.values(arguments, sequence: sequence).enumerated() {
                    if k > 0 {
                        words.append(current)
                        current = []
                    }
                    current.append(.value(value))
                }
            }
        }
        words.append(current)
        return words
    }

    /// `text` as one POSIX shell word: single-quoted, with each `'` written as `'\''`.
    public static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}

/// Where `{%}` comes from: one lock file per slot in `directory` (on the machine that runs the
/// commands), `count` slots. The prelude takes the lowest slot whose lock is free with `flock -n` on
/// descriptor 9, keeps that descriptor open into the command (`exec`), and so holds the slot until the
/// command and every child that inherited it have exited — also when they are killed. So no two running
/// operations share a number, and each is 1…`count` (GNU parallel gives 1…`-j` too, reusing freed
/// slots first-freed-first; opq takes the lowest free one).
public struct SlotLocks: Sendable, Equatable {
    /// A directory private to this `opq map` run, on the machine where its commands run.
    public var directory: String
    /// How many operations run at once (`--local N`).
    public var count: Int

    /// Creates slot locks in `directory` for `count` slots.
    public init(directory: String, count: Int) {
        self.directory = directory
        self.count = count
    }

    /// The shell variable holding the slot number.
    static let variable = "\"$opq_slot\""

    /// The `sh` code that sets `opq_slot` (and fails with exit 126 if every slot is held, e.g. by a
    /// process left running in the background that inherited a lock).
    var prelude: String {
        let file = MapTemplate.shellQuoted(directory + "/slot-")
        return "opq_slot=0; while :; do opq_slot=$((opq_slot + 1)); "
            + "if [ \"$opq_slot\" -gt \(count) ]; then echo 'opq: every job slot is held (by a process left running?)' >&2; exit 126; fi; "
            + "exec 9>>\(file)\"$opq_slot\" && flock -n 9 && break; done; "
    }
}

/// A template or input `opq map` cannot use.
public enum MapTemplateError: Error, Equatable, CustomStringConvertible {
    /// Nothing after `--`.
    case emptyCommand
    /// A word of the command holds a NUL byte (1-based word).
    case nulInCommand(word: Int)
    /// An input item that cannot be an argument: `source` names where it came from, `item` is 1-based.
    case invalidItem(source: String, item: Int, problem: String)
    /// More operations than one submission may hold.
    case tooManyOperations(count: String)
    /// A malformed `:::` / `::::` / `-n` use.
    case invalidInput(String)

    public var description: String {
        switch self {
        case .emptyCommand: "no command given: write it after --, e.g. opq map -- gzip -k {}"
        case .nulInCommand(let word): "word \(word) of the command contains a NUL byte, which would cut it short; remove it"
        case let .invalidItem(source, item, problem): "input item \(item)\(source.isEmpty ? "" : " of \(source)") \(problem)"
        case .tooManyOperations(let count):
            "the input makes \(count) operations; one job holds at most \(Limits.maxOperationsPerSubmission) (split the input)"
        case .invalidInput(let message): message
        }
    }
}
