import OPQCore
import OPQJobFile
import Testing

/// Seeded random damage to valid job files: every input parses or is refused with a ``JobFileError``;
/// none crashes or hangs the parser (a fuzzer elsewhere runs this far longer).
@Suite struct JobFileRobustnessTests {
    static let seeds = [
        "operations:\n  - name: a\n    command: [echo, \"x y\", 'z']\n    env: {A: 1}\n  - name: b\n    after: [a]\n    shell: |\n      echo [ok]\n",
        "{\"operations\": [{\"name\": \"a\", \"command\": [\"true\"], \"timeout\": 1.5}, {\"name\": \"b\", \"after\": [\"a\"]}]}",
        "defaults: {retries: 2, timeout: 5m}\nqueues:\n  q: {maxConcurrent: 2}\noperations:\n  - {name: x, queue: q, handler: noop, payload: \"p\"}\n",
    ]
    static let alphabet = Array("[]{}:,-? \n\t\"'#|>&*!%@`\\0aZ9.".utf8)

    @Test func randomlyDamagedFilesNeverCrashTheParser() {
        var random = SplitMix64(seed: 0x0bad_f11e)
        var refused = 0, parsed = 0
        for round in 0..<3_000 {
            var bytes = Array(Self.seeds[round % Self.seeds.count].utf8)
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                let at = Int.random(in: 0...bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: bytes.insert(Self.alphabet.randomElement(using: &random)!, at: at)
                case 1: if at < bytes.count { bytes.remove(at: at) }
                case 2: bytes.insert(contentsOf: [UInt8](repeating: Self.alphabet.randomElement(using: &random)!,
                                                         count: Int.random(in: 1...300, using: &random)), at: at)
                default: if at < bytes.count { bytes[at] = UInt8.random(in: 0...255, using: &random) }
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            do {
                _ = try JobFile.parse(text, file: "f.yaml", isJSON: round % 2 == 0)
                parsed += 1
            } catch {
                refused += 1
            }
        }
        #expect(parsed + refused == 3_000)
    }
}
