/// One of GNU parallel's replacement strings, as `opq map` (and, later, job files) expand them.
///
/// | placeholder | becomes |
/// |---|---|
/// | `{}` | every argument of the operation, each a separate word |
/// | `{.}` `{/}` `{//}` `{/.}` | the same, each argument transformed (see ``PathPart``) |
/// | `{N}` `{N.}` `{N/}` `{N//}` `{N/.}` | the N-th argument (from 1; `{-1}` is the last): one word, or none if there is no N-th |
/// | `{#}` | the operation's sequence number, from 1 |
/// | `{%}` | the job slot it runs in, from 1 (see `MapTemplate`) |
///
/// An operation's arguments are its item (one input source), one value per source (`:::`, `::::`: a row
/// of their cartesian product), or with `-n N` the values of N such rows in a row.
public enum Placeholder: Sendable, Equatable {
    /// `{}` and its transforms: every argument.
    case arguments(PathPart)
    /// `{N}` and its transforms: the N-th argument (negative: from the end).
    case argument(Int, PathPart)
    /// `{#}`.
    case sequence
    /// `{%}`.
    case slot

    /// A piece of a template word: literal text or a placeholder.
    public enum Piece: Sendable, Equatable {
        case text(String)
        case placeholder(Placeholder)
    }

    /// Splits `word` into text and placeholders. Braces that form no placeholder (`{x}`, `{0}`, `{`)
    /// are text, as in GNU parallel.
    public static func pieces(of word: String) -> [Piece] {
        var pieces: [Piece] = []
        var text = ""
        var rest = Substring(word)
        while let first = rest.first {
            if first == "{", let close = rest.firstIndex(of: "}"),
               let placeholder = Placeholder(rest[rest.index(after: rest.startIndex)..<close]) {
                if !text.isEmpty { pieces.append(.text(text)) }
                text = ""
                pieces.append(.placeholder(placeholder))
                rest = rest[rest.index(after: close)...]
            } else {
                text.append(first)
                rest = rest.dropFirst()
            }
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        return pieces
    }

    /// The placeholder written between braces, if `inner` is one (`""`, `"."`, `"2/."`, `"-1"`, `"#"`).
    init?(_ inner: Substring) {
        switch inner {
        case "#": self = .sequence
        case "%": self = .slot
        default:
            let digits = inner.prefix { $0 == "-" || $0.isASCII && $0.isNumber }
            guard let part = PathPart(suffix: inner.dropFirst(digits.count)) else { return nil }
            if digits.isEmpty {
                self = .arguments(part)
            } else {
                // `{0}`, `{01}`, `{-}`: not a position (GNU parallel's are 1-based).
                guard digits.count <= 9, let n = Int(digits), n != 0, !digits.dropFirst(n < 0 ? 1 : 0).hasPrefix("0") else { return nil }
                self = .argument(n, part)
            }
        }
    }

    /// The words this placeholder stands for, given the operation's arguments and sequence number.
    /// `{%}` has no value here (it is known only when the operation starts).
    func values(_ arguments: [String], sequence: Int) -> [String] {
        switch self {
        case .arguments(let part): return arguments.map(part.apply)
        case .argument(let n, let part):
            let index = n > 0 ? n - 1 : arguments.count + n
            return arguments.indices.contains(index) ? [part.apply(arguments[index])] : []
        case .sequence: return [String(sequence)]
        case .slot: return []
        }
    }
}

/// What a placeholder takes of a path, with GNU parallel's exact rules (its Perl expressions, quoted
/// below), which differ from "path component" logic on trailing slashes, dot files and `.`/`..`.
public enum PathPart: Sendable, Equatable, CaseIterable {
    /// `{}`: the argument itself.
    case whole
    /// `{.}`: `s:\.[^/.]*$::` — without the last `.` and what follows, unless a `/` follows it
    /// (`a.tar.gz` → `a.tar`, `.hidden` → ``, `..` → `.`, `a.b/c` → `a.b/c`).
    case withoutExtension
    /// `{/}`: `s:.*/::` — after the last `/` (`dir/sub/` → ``); `.` does not match a newline, so on an
    /// argument with newlines the first line holding a `/` is cut.
    case baseName
    /// `{//}`: Perl's `File::Basename::dirname` (`a/b` → `a`, `a` → `.`, `dir/sub/` → `dir`,
    /// `trailing/` → `.`, `a//b.c` → `a`, `/` → `/`).
    case directory
    /// `{/.}`: `{/}`, then `{.}`.
    case baseNameWithoutExtension

    init?(suffix: Substring) {
        switch suffix {
        case "": self = .whole
        case ".": self = .withoutExtension
        case "/": self = .baseName
        case "//": self = .directory
        case "/.": self = .baseNameWithoutExtension
        default: return nil
        }
    }

    /// `argument` transformed.
    public func apply(_ argument: String) -> String {
        switch self {
        case .whole: argument
        case .withoutExtension: Self.withoutExtension(argument)
        case .baseName: Self.baseName(argument)
        case .directory: Self.directory(argument)
        case .baseNameWithoutExtension: Self.withoutExtension(Self.baseName(argument))
        }
    }

    /// `s:\.[^/.]*$::`: the last `.` starts the part cut, unless a `/` comes after it.
    static func withoutExtension(_ path: String) -> String {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return path }
        return String(path[..<dot])
    }

    /// `s:.*/::` without `/s`: in the first line (split at `\n`) that holds a `/`, cut through its last `/`.
    static func baseName(_ path: String) -> String {
        var lineStart = path.startIndex
        while lineStart <= path.endIndex {
            let lineEnd = path[lineStart...].firstIndex(of: "\n") ?? path.endIndex
            if let slash = path[lineStart..<lineEnd].lastIndex(of: "/") {
                return String(path[..<lineStart]) + String(path[path.index(after: slash)...])
            }
            guard lineEnd < path.endIndex else { break }
            lineStart = path.index(after: lineEnd)
        }
        return path
    }

    /// `File::Basename::dirname` on Unix: split at the last `/` (`./` when none), strip trailing
    /// slashes (keeping one character); if the base name was empty, do it once more.
    static func directory(_ path: String) -> String {
        func fileparse(_ path: String) -> (directory: String, base: String) {
            guard let slash = path.lastIndex(of: "/") else { return ("./", path) }
            return (String(path[...slash]), String(path[path.index(after: slash)...]))
        }
        func stripTrailingSlashes(_ text: String) -> String {
            let stripped = text.reversed().drop { $0 == "/" }
            return stripped.isEmpty ? String(text.prefix(1)) : String(stripped.reversed())
        }
        var (directory, base) = fileparse(path)
        directory = stripTrailingSlashes(directory)
        if base.isEmpty {
            directory = stripTrailingSlashes(fileparse(directory).directory)
        }
        return directory
    }
}
