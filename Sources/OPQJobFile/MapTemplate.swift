import Foundation
import OPQCore

/// The command template of `opq map`: GNU parallel's replacement strings, expanded once per input item.
///
/// | placeholder | becomes, for `photos/summer 2024/IMG 01.tar.gz` (item 7) |
/// |---|---|
/// | `{}` | the item: `photos/summer 2024/IMG 01.tar.gz` |
/// | `{.}` | without its extension: `photos/summer 2024/IMG 01.tar` |
/// | `{/}` | its base name: `IMG 01.tar.gz` |
/// | `{//}` | its directory: `photos/summer 2024` (`.` when it has none) |
/// | `{/.}` | base name without extension: `IMG 01.tar` |
/// | `{#}` | its sequence number, from 1: `7` |
///
/// An extension is the last `.` of the base name and what follows, unless that dot starts the base
/// name (`.bashrc` has none — GNU parallel would drop the whole name there). A template with no
/// placeholder at all gets ` {}` appended, as with GNU parallel and xargs.
///
/// Without a shell every template word becomes one argv element after expansion, so an item with
/// spaces, quotes, `$` or `*` stays exactly one argument and nothing is interpreted. With a shell the
/// words are joined by spaces into one `sh -c` script and every substituted value is single-quoted,
/// so the item is still one word and never code.
public struct MapTemplate: Sendable, Equatable {
    /// The template's words, each split into literal text and placeholders.
    private let words: [[Piece]]
    /// Run through `/bin/sh -c` instead of as an argv.
    public let usesShell: Bool

    private enum Piece: Sendable, Equatable {
        case literal(String)
        case item, withoutExtension, baseName, directory, baseNameWithoutExtension, sequence
    }

    /// The placeholders, longest first so `{/.}` wins over `{/}`.
    private static let placeholders: [(String, Piece)] = [
        ("{/.}", .baseNameWithoutExtension), ("{//}", .directory), ("{/}", .baseName),
        ("{.}", .withoutExtension), ("{#}", .sequence), ("{}", .item),
    ]

    /// Parses `words` (the command after `--`). Fails on an empty template.
    public init(_ words: [String], shell: Bool) throws(MapTemplateError) {
        guard !words.isEmpty, !(words.count == 1 && words[0].isEmpty) else { throw .emptyCommand }
        var parsed = words.map(Self.parse)
        let hasPlaceholder = parsed.contains { $0.contains { if case .literal = $0 { false } else { true } } }
        if !hasPlaceholder { parsed.append([.item]) }
        self.words = parsed
        usesShell = shell
    }

    private static func parse(_ word: String) -> [Piece] {
        var pieces: [Piece] = []
        var literal = ""
        var rest = Substring(word)
        scan: while !rest.isEmpty {
            if rest.first == "{" {
                for (text, piece) in placeholders where rest.hasPrefix(text) {
                    if !literal.isEmpty { pieces.append(.literal(literal)) }
                    literal = ""
                    pieces.append(piece)
                    rest = rest.dropFirst(text.count)
                    continue scan
                }
            }
            literal.append(rest.removeFirst())
        }
        if !literal.isEmpty || pieces.isEmpty { pieces.append(.literal(literal)) }
        return pieces
    }

    /// One operation per item, in input order: `base` with the item's command (run in
    /// `workingDirectory`) and named after the item — repeats get ` #2`, ` #3`… so names stay unique.
    public func operations(for items: [String], base: OperationSpec, workingDirectory: String?) -> [OperationSpec] {
        var used = Set(items)
        var repeated: Set<String> = []
        return items.enumerated().map { index, item in
            var spec = base
            var command = command(for: item, sequence: index + 1)
            command.workingDirectory = workingDirectory
            spec.work = .command(command)
            spec.name = item
            if !repeated.insert(item).inserted {
                var copy = 2
                while used.contains("\(item) #\(copy)") { copy += 1 }
                spec.name = "\(item) #\(copy)"
                used.insert(spec.name)
            }
            return spec
        }
    }

    /// The command for `item`, the `sequence`-th (from 1) input item.
    public func command(for item: String, sequence: Int) -> Command {
        if usesShell {
            let script = words.map { word in
                word.map { piece in
                    if case .literal(let text) = piece { return text }
                    return Self.shellQuoted(Self.value(piece, item: item, sequence: sequence))
                }.joined()
            }.joined(separator: " ")
            return .shell(script)
        }
        return Command(words.map { word in word.map { Self.value($0, item: item, sequence: sequence) }.joined() })
    }

    private static func value(_ piece: Piece, item: String, sequence: Int) -> String {
        switch piece {
        case .literal(let text): text
        case .item: item
        case .withoutExtension: withoutExtension(item)
        case .baseName: baseName(item)
        case .directory: directory(item)
        case .baseNameWithoutExtension: withoutExtension(baseName(item))
        case .sequence: String(sequence)
        }
    }

    /// Everything after the last `/`.
    static func baseName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Everything before the last `/` (`/` for `/x`, `.` when there is no `/`).
    static func directory(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `path` without the extension of its base name.
    static func withoutExtension(_ path: String) -> String {
        let base = baseName(path)
        guard let dot = base.lastIndex(of: "."), dot != base.startIndex else { return path }
        return String(path.dropLast(base.distance(from: dot, to: base.endIndex)))
    }

    /// `text` as one POSIX shell word: single-quoted, with each `'` written as `'\''`.
    public static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }
}

/// A template `opq map` cannot use.
public enum MapTemplateError: Error, Equatable, CustomStringConvertible {
    /// Nothing after `--`.
    case emptyCommand

    public var description: String {
        switch self {
        case .emptyCommand: "no command given: write it after --, e.g. opq map -- gzip -k {}"
        }
    }
}
