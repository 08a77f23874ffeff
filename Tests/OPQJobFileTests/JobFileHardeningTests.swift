import Foundation
import OPQCore
import OPQJobFile
import Testing

/// Hostile or unlucky job files: each is refused with `file:line`, never crashes, never runs silently wrong.
@Suite struct JobFileHardeningTests {
    @Test func deepFlowNestingIsRefusedBeforeYamsRecurses() throws {
        let deep = "operations: " + String(repeating: "[", count: 100_000)
        let message = try #require(failure(deep))
        #expect(message.hasPrefix("jobs.yaml:1: nested deeper than 64 levels"), "\(message)")
        let json = try #require(failure(String(repeating: "[", count: 100_000), file: "jobs.json", json: true))
        #expect(json.hasPrefix("jobs.json:1: JSON syntax error: nested deeper than 64 levels"), "\(json)")
    }

    @Test func deepBlockNestingIsRefusedWithItsLine() throws {
        // 5,000 nested mappings, each one more space in.
        let mappings = (0..<5_000).map { String(repeating: " ", count: $0) + "k\($0):" }.joined(separator: "\n")
        let message = try #require(failure(mappings))
        #expect(message.hasPrefix("jobs.yaml:65: nested deeper than 64 levels"), "\(message)")
        // Compact nested sequences on one line, and a flow run hidden after a document marker or a tag.
        #expect(failure(String(repeating: "- ", count: 5_000) + "x")?.hasPrefix("jobs.yaml:1: nested deeper") == true)
        #expect(failure("--- " + String(repeating: "[", count: 5_000))?.hasPrefix("jobs.yaml:1: nested deeper") == true)
        #expect(failure("a: !!seq " + String(repeating: "{a: ", count: 5_000))?.hasPrefix("jobs.yaml:1: nested deeper") == true)
        // CRLF line ends, with the nesting on a more indented line after a value.
        #expect(failure("operations:\r\n  - " + String(repeating: "[", count: 5_000))?.hasPrefix("jobs.yaml:2: nested deeper") == true)
        #expect(failure("a: b\r\n  - " + String(repeating: "[", count: 5_000)) != nil)
        // Not fooled by quotes that YAML reads as text: a plain scalar's apostrophe, a '#' inside a quoted scalar.
        #expect(failure("a: don't\nb: " + String(repeating: "[", count: 5_000))?.hasPrefix("jobs.yaml:2: nested deeper") == true)
        #expect(failure("a: \"x\n#\"\nb: " + String(repeating: "[", count: 5_000))?.hasPrefix("jobs.yaml:3: nested deeper") == true)
    }

    @Test func ordinaryTextWithBracketsIsNotNesting() throws {
        let job = try JobFile.parse("""
            operations:
              - name: brackets
                shell: test [ -f "[[[[" ] && echo '{{{{' # [[[[
              - name: script
                shell: |
                  [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
                              deeply
                                      indented
                                              text
              - name: plain
                command: [echo, "a[b", "c]"]
            """, file: "jobs.yaml")
        #expect(job.submission.operations.count == 3)
    }

    @Test func aNULByteInAnyTextIsRefusedWithItsLine() {
        #expect(failure("""
            operations:
              - name: a
                command: [echo, "abc\\0; rm -rf /"]
            """) == "jobs.yaml:3: operation 'a': command contains a NUL byte (\\0), which would silently cut it short where it is used; remove it")
        #expect(failure("""
            operations:
              - name: a
                shell: "true\\0"
            """)?.hasPrefix("jobs.yaml:3: operation 'a': shell contains a NUL byte") == true)
        #expect(failure("""
            operations:
              - name: a
                command: [x]
                env: {A: "1\\0"}
            """)?.hasPrefix("jobs.yaml:4: operation 'a': env.A contains a NUL byte") == true)
        #expect(failure("""
            operations:
              - name: a
                command: [x]
                cwd: "/tmp\\0/x"
            """)?.hasPrefix("jobs.yaml:4: operation 'a': cwd contains a NUL byte") == true)
        #expect(failure("""
            operations:
              - name: "a\\0b"
            """)?.hasPrefix("jobs.yaml:2: operation 'a") == true)
        #expect(failure("""
            {"operations": [
              {"name": "a", "command": ["echo", "x\\u0000y"]}]}
            """, file: "jobs.json", json: true)?.hasPrefix("jobs.json:2: operation 'a': command contains a NUL byte") == true)
        // A handler's payload is bytes, not an argument: a NUL there is kept whole.
        let payload = try? JobFile.parse("operations: [{name: a, handler: noop, payload: \"a\\0b\"}]", file: "j.yaml")
        #expect(payload?.submission.operations[0].work == .handler(name: "noop", payload: [0x61, 0, 0x62]))
    }

    @Test func strictJSONRefusesTrailingCommasAndWhatYAMLAllows() {
        #expect(failure("""
            {"operations": [
              {"name": "a"},
            ]}
            """, file: "jobs.json", json: true) == "jobs.json:3: JSON syntax error: trailing comma before ']'; JSON allows none")
        #expect(failure("""
            {"operations": [{"name": "a",}]}
            """, file: "jobs.json", json: true) == "jobs.json:1: JSON syntax error: trailing comma before '}'; JSON allows none")
        #expect(failure("{operations: []}", file: "jobs.json", json: true)?.hasPrefix("jobs.json:1: JSON syntax error: expected a quoted key") == true)
        #expect(failure("{\"operations\": []}\n# comment", file: "jobs.json", json: true)?.hasPrefix("jobs.json:2: JSON syntax error") == true)
        #expect(failure("{\"operations\": ['a']}", file: "jobs.json", json: true)?.hasPrefix("jobs.json:1: JSON syntax error") == true)
        #expect(failure("{\"operations\": [{\"name\": \"a\", \"retries\": 01}]}", file: "jobs.json", json: true)?
            .hasPrefix("jobs.json:1: JSON syntax error: a number may not start with 0") == true)
        // Valid JSON still parses.
        #expect(failure("{\"operations\": [{\"name\": \"a\\u00e9\", \"timeout\": 1.5e1, \"command\": [\"true\"]}]}", file: "j.json", json: true) == nil)
    }

    @Test func unknownYAMLTagsAreRefusedWithTheirLine() {
        #expect(failure("""
            operations:
              - name: a
                command: !!python/object/apply:os.system ["echo pwned"]
            """) == "jobs.yaml:3: unknown tag '!!python/object/apply:os.system'; a job file holds only text, numbers, booleans, lists and mappings (remove the tag, or quote the value if it is text)")
        #expect(failure("""
            operations:
              - name: !foo a
            """)?.hasPrefix("jobs.yaml:2: unknown tag '!foo'") == true)
        #expect(failure("operations: [{name: a, payload: !!binary aGk=, handler: noop}]")?.hasPrefix("jobs.yaml:1: unknown tag '!!binary'") == true)
        // The core schema's own tags are fine: `!!str 007` is text.
        let job = try? JobFile.parse("operations: [{name: !!str 007, command: [echo, !!str 1.0]}]", file: "j.yaml")
        #expect(job?.submission.operations[0].name == "007")
    }

    @Test func aliasesThatExpandWithoutBoundAreRefused() throws {
        // Each level repeats the one before 10 times: 10^9 values from 9 lines.
        var lines = ["l0: &l0 [" + Array(repeating: "x", count: 10).joined(separator: ", ") + "]"]
        for level in 1...9 {
            lines.append("l\(level): &l\(level) [" + Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ") + "]")
        }
        let message = try #require(failure(lines.joined(separator: "\n") + "\noperations: [{name: a}]\n"))
        #expect(message.contains("aliases (*name) expand this file to more than"), "\(message)")
        // Ordinary reuse is fine.
        let job = try JobFile.parse("""
            operations:
              - {name: a, command: &argv [echo, hi], env: &env {LC_ALL: C}}
              - {name: b, command: *argv, env: *env}
            """, file: "j.yaml")
        #expect(job.submission.operations.count == 2)
    }

    @Test func namesOverTheWireLimitAreRefusedWithTheirLine() {
        let long = String(repeating: "n", count: Limits.maxNameBytes + 1)
        #expect(failure("""
            operations:
              - name: ok
              - name: \(long)
            """) == "jobs.yaml:3: operation '\(long.prefix(79))…': name is 4097 bytes long; at most 4096 are allowed")
        #expect(failure("""
            operations:
              - name: a
                queue: \(long)
            """)?.hasPrefix("jobs.yaml:3: operation 'a': queue is 4097 bytes long") == true)
        #expect(failure("""
            operations:
              - name: a
                command: [x]
                labels:
                  ? \(long)
                  : 1
            """)?.hasPrefix("jobs.yaml:5: operation 'a': key is 4097 bytes long") == true)
        #expect(failure("""
            operations:
              - name: a
                command: [x]
                env: {"": 1}
            """) == "jobs.yaml:4: operation 'a': env has an empty name")
        #expect(failure("""
            operations:
              - name: a
                command: [x]
                env: {"A=B": 1}
            """) == "jobs.yaml:4: operation 'a': env name 'A=B' contains '=', which would change another variable; remove it")
    }

    @Test func invalidUTF8NamesItsLine() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-jobfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("latin1.yaml").path
        let bytes = Array("operations:\n  - name: ok\n  - name: caf".utf8) + [0xE9] + Array("\n".utf8)
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let error = #expect(throws: JobFileError.self) { try JobFile.load(path: path) }
        #expect(error?.line == 3)
        #expect(error?.description == "\(path):3: the file is not UTF-8 text: invalid byte 0xE9 at byte 39; save it as UTF-8")
    }

    @Test func numbersOutsideTheirDocumentedRangeAreRefusedWithTheirLine() {
        func timeout(_ value: String) -> String? {
            failure("operations:\n  - name: a\n    command: [sleep, 1]\n    timeout: \(value)\n")
        }
        let range = "a number of seconds greater than 0 and at most 3200000000"
        #expect(timeout("1e300") == "jobs.yaml:4: operation 'a': timeout must be \(range), not 1e300")
        #expect(timeout("-1") == "jobs.yaml:4: operation 'a': timeout must be \(range), not -1")
        #expect(timeout("0") == "jobs.yaml:4: operation 'a': timeout must be \(range), not 0")
        #expect(timeout(".nan") == "jobs.yaml:4: operation 'a': timeout must be \(range), not .nan")
        #expect(timeout(".inf") == "jobs.yaml:4: operation 'a': timeout must be \(range), not .inf")
        #expect(timeout("99999999999h") == "jobs.yaml:4: operation 'a': timeout must be \(range), not 99999999999h")
        #expect(timeout("3200000000") == nil)
        #expect(failure("defaults: {timeout: 1e300}\noperations: [{name: a}]")?.hasPrefix("jobs.yaml:1: defaults: timeout must be") == true)

        func retries(_ value: String) -> String? { failure("operations:\n  - name: a\n    retries: \(value)\n") }
        #expect(retries("65537") == "jobs.yaml:3: operation 'a': retries must be an integer from 0 to 65536, not 65537")
        #expect(retries("-1") == "jobs.yaml:3: operation 'a': retries must be an integer from 0 to 65536, not -1")
        #expect(retries("9223372036854775807") == "jobs.yaml:3: operation 'a': retries must be an integer from 0 to 65536, not 9223372036854775807")
        #expect(retries("99999999999999999999999") == "jobs.yaml:3: operation 'a': retries must be an integer from 0 to 65536, not 99999999999999999999999")
        #expect(retries("1.5") == "jobs.yaml:3: operation 'a': retries must be an integer from 0 to 65536, not 1.5")
        #expect(retries("65536") == nil)

        func priority(_ value: String) -> String? { failure("operations:\n  - name: a\n    priority: \(value)\n") }
        #expect(priority("9223372036854775807") == nil)
        #expect(priority("-9223372036854775808") == nil)
        #expect(priority("99999999999999999999")?.hasPrefix("jobs.yaml:3: operation 'a': priority must be a level name or an integer from") == true)
        #expect(priority("1e300")?.hasPrefix("jobs.yaml:3: operation 'a': priority must be a level name or an integer") == true)
        #expect(priority(".inf")?.hasPrefix("jobs.yaml:3: operation 'a': priority must be a level name or an integer") == true)
        let extremes = try? JobFile.parse("operations: [{name: a, priority: 9223372036854775807}, {name: b, priority: -9223372036854775808}]",
                                          file: "j.yaml")
        #expect(extremes?.submission.operations.map(\.priority) == [.veryHigh, .veryLow])

        #expect(failure("queues: {q: {maxConcurrent: 2147483648}}\noperations: [{name: a, queue: q}]")
            == "jobs.yaml:1: queue 'q': maxConcurrent must be an integer from -1 to 2147483647, not 2147483648")
        #expect(failure("queues: {q: {maxConcurrent: 2147483647}}\noperations: [{name: a, queue: q}]") == nil)
    }
}
