import OPQCore
import OPQJobFile
import Testing

/// The nesting pre-scan (`NestingLimit`) against seeded documents that nest through every YAML style at
/// once — flow brackets, block mappings and sequences, compact `- ` — decorated with the text YAML reads
/// literally (quoted scalars with brackets, `#` and quotes inside, block scalars, plain continuation
/// lines, comments, anchors, tags): deep ones must be refused, shallow ones never.
@Suite struct NestingScanTests {
    /// A document `levels` deep (plus the root mapping), each level a random style with random siblings.
    static func generate(_ r: inout SplitMix64, levels: Int) -> String {
        func sp(_ n: Int) -> String { String(repeating: " ", count: n) }
        var text = ""
        var indent = 0
        var closers: [String] = []
        for level in 0..<levels {
            if !closers.isEmpty || (level > 0 && Int.random(in: 0..<5, using: &r) == 0) {
                if Bool.random(using: &r) {
                    text += "["
                    if Bool.random(using: &r) { text += ["'q]]', ", "\"[[{\", ", "a b, ", "'it''s [', "].randomElement(using: &r)! }
                    closers.append("]")
                } else {
                    text += "{"
                    if Bool.random(using: &r) { text += ["s: 'x]}', ", "\"k]\": \"{{\", ", "t: u v, "].randomElement(using: &r)! }
                    text += "k\(level): "
                    closers.append("}")
                }
                continue
            }
            let step = Int.random(in: 1...3, using: &r)
            let child = indent + step
            let kind = Int.random(in: 0..<2, using: &r)
            var siblings = ""
            if Int.random(in: 0..<2, using: &r) == 0 {
                let decorations = kind == 0 ? [
                    "s: 'q [[[ '' # x'\n",
                    "s: plain [ don't {\n",
                    "s: |\n\(sp(child + 2))[[[[ '\"\n\(sp(child + 5)){{{\n",
                    "s: >-\n\(sp(child + 1))[[ ]]\n",
                    "s: \"multi\n\(sp(child + 1))#line [[[ '\"\n",
                    "# comment [[[ '\n",
                    "s: a\n\(sp(child + 1))'cont [[ \n",
                    "s: &anc [x]\n",
                    "s: !!str |\n\(sp(child + 1))'x [[\n",
                    "? a\n\(sp(child)): b\n",
                    "s: a # c\n",
                    "'q': 'it''s'\n",
                ] : [
                    "- 'x [[ '' '\n",
                    "- |\n\(sp(child + 2))[[[ \"\n",
                    "- plain [ it's\n",
                    "- \"q\n\(sp(child + 1))# [[ \"\n",
                    "- a\n\(sp(child + 1))\"x [[\n",
                    "- a\n\(sp(child + 2))'x [[\n",
                    "- k: a\n\(sp(child + 3))'x [[\n",
                    "- k: |\n\(sp(child + 3))\"x [[\n",
                    "- |\n\(sp(child + 1))'x [[\n",
                ]
                siblings = decorations.randomElement(using: &r)!
                siblings = siblings.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map { k, line in
                    k == 0 ? sp(child) + line : String(line)
                }.joined(separator: "\n")
            }
            text += "\n" + siblings + sp(child) + (kind == 0 ? "k\(level): " : "- ")
            indent = kind == 0 ? child : child + 1
        }
        return text + "leaf" + closers.reversed().joined()
    }

    @Test func deepDocumentsInAnyStyleAreRefusedAndShallowOnesNever() {
        var random = SplitMix64(seed: 7)
        for round in 0..<4_000 {
            let deep = round % 2 == 1
            let levels = deep ? Int.random(in: 130...400, using: &random) : Int.random(in: 1...30, using: &random)
            let text = "root:" + Self.generate(&random, levels: levels)
            let message = failure(text) ?? ""
            if deep {
                #expect(message.contains("nested deeper than 64 levels"), "round \(round), \(levels) levels: \(message)\n\(text.prefix(2_000))")
            } else {
                #expect(!message.contains("nested deeper"), "round \(round), \(levels) levels: \(message)\n\(text)")
            }
                    }
    }
}
