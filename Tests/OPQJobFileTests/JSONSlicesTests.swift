import OPQCore
import OPQJobFile
import Testing

/// A `*.json` job file is read a slice of operations at a time (issue 19): what it gives — the
/// submission, every error's line and field — is what reading the same text as one YAML document gives.
@Suite struct JSONSlicesTests {
    /// `count` operations, one per line after line 3; every tenth depends on the one before; `edit`
    /// may change operation k's line.
    static func jsonText(_ count: Int, edit: (Int, String) -> String = { $1 }) -> String {
        var text = "{\n  \"queue\": \"q\",\n  \"operations\": [\n"
        for k in 0..<count {
            let after = k % 10 == 9 ? ", \"after\": [\"op-\(k - 1)\"]" : ""
            let line = "    {\"name\": \"op-\(k)\", \"command\": [\"true\", \"\(k)\"]\(after)}"
            text += edit(k, line) + (k == count - 1 ? "\n" : ",\n")
        }
        return text + "  ],\n  \"defaults\": {\"retries\": 1}\n}\n"
    }

    /// The same text read as strict JSON (in slices) and as YAML (one document).
    static func bothWays(_ text: String) -> (json: Result<JobFile, JobFileError>, yaml: Result<JobFile, JobFileError>) {
        (Result { () throws(JobFileError) in try JobFile.parse(text, file: "jobs.json", isJSON: true) },
         Result { () throws(JobFileError) in try JobFile.parse(text, file: "jobs.json", isJSON: false) })
    }

    /// What a test compares of a parsed file: every operation spec, the queue settings and lines.
    static func summary(_ job: JobFile) -> String {
        "\(job.submission.operations.map { "\($0)" })|\(job.submission.queueSettings.map { "\($0)" })|\(job.operationLines.sorted { $0.key < $1.key })"
    }

    @Test func aBigFileGivesTheSubmissionOfOneDocument() throws {
        let text = Self.jsonText(5_000)  // several slices
        let (json, yaml) = Self.bothWays(text)
        let sliced = try json.get(), whole = try yaml.get()
        #expect(sliced.submission.operations.count == 5_000)
        #expect(sliced.submission.operations[4_999].dependencies == [.name("op-4998")])
        #expect(sliced.submission.operations[4_999].retries == 1)  // `defaults` written after the list
        #expect(sliced.submission.operations[4_999].queue == "q")
        #expect(sliced.operationLines[4_999] == 5_003)
        #expect(Self.summary(sliced) == Self.summary(whole))
    }

    @Test func smallFilesGiveTheSubmissionOfOneDocument() throws {
        let texts = [
            #"{"operations": [{"name": "a", "shell": "echo 'x'"}, {"name": "b", "after": "a", "handler": "h", "payload": "p\u00e9\n"}]}"#,
            #"{"operations":[{"foreach":["x","y"],"operations":[{"name":"t","command":["echo","{}"]}]},{"name":"z","after":["t/*"]}]}"#,
            "{\"queues\": {\"q\": {\"maxConcurrent\": 2}},\r\n \"operations\": [\r\n  {\"name\": \"é\", \"queue\": \"q\", \"env\": {\"A\": 1}, \"command\": [\"x\"]}\r\n]}",
            #"{"operations": [{}, {"name": "n", "labels": {"gpu": "1"}, "cpus": 2, "memory": "1G", "timeout": "5m"}]}"#,
        ]
        for text in texts {
            let (json, yaml) = Self.bothWays(text)
            #expect(Self.summary(try json.get()) == Self.summary(try yaml.get()), "\(text)")
        }
    }

    /// Items are built without Yams (``JSONNodes``): escapes, non-ASCII text, numbers,
    /// keys in any order and empty containers read as Yams reads them, and errors keep their lines.
    @Test func itemsBuiltWithoutYamsReadAsYamsReadsThem() throws {
        let text = Self.jsonText(30) { k, line in
            switch k {
            case 3: "    {\"command\": [\"echo\", \"a\\\"b\\\\c\\/d\\n\\t\\u00e9 é\"], \"name\": \"op-3\"}"
            case 4: "    {\"name\": \"op-4\", \"retries\": 3, \"timeout\": 15.5, \"priority\": -4, \"command\": [\"true\"],\n"
                + "     \"env\": {}, \"labels\": {\"k\": \"v\"}, \"inputs\": [], \"qos\": \"utility\"}"
            case 5: "    { \"name\" : \"op-5\" , \"command\" : [ \"x\" ]  }"
            default: line
            }
        }
        let (json, yaml) = Self.bothWays(text)
        let summaries = (json.map(Self.summary), yaml.map(Self.summary))
        #expect((try? json.get()) != nil)
        #expect("\(summaries.0)" == "\(summaries.1)")
        let wrong = Self.jsonText(30) { k, line in k == 7 ? "    {\"name\": \"op-7\",\n  \"retries\": true, \"command\": [\"x\"]}" : line }
        let errors = Self.bothWays(wrong)
        #expect("\(errors.json)" == "\(errors.yaml)")
        #expect((try? errors.json.get()) == nil)
        // libyaml refuses surrogate escapes; the JSON reading leaves them to it.
        let surrogate = Self.bothWays(Self.jsonText(30) { k, line in k == 2 ? "    {\"name\": \"\\ud83d\\ude00\", \"command\": [\"x\"]}" : line })
        #expect("\(surrogate.json)".replacing("JSON syntax", with: "YAML syntax") == "\(surrogate.yaml)")
    }

    /// Keys are interned as they are read (a few compared byte for byte, the rest in a dictionary):
    /// many distinct keys, keys of one length that differ, and keys that reappear later read as Yams reads them.
    @Test func manyDistinctKeysReadAsYamsReadThem() throws {
        let environment = (0..<40).map { "\"K\($0 % 2 == 0 ? "A" : "B")\($0)\": \"\($0)\"" }.joined(separator: ", ")
        let text = Self.jsonText(30) { k, line in
            switch k {
            case 3: "    {\"name\": \"op-3\", \"command\": [\"env\"], \"env\": {\(environment)}, \"labels\": {\"ab\": \"1\", \"ba\": \"2\"}}"
            case 9: "    {\"command\": [\"env\"], \"env\": {\"KB1\": \"x\", \"KA0\": \"y\", \"KA38\": \"z\"}, \"name\": \"op-9\", \"labels\": {\"ba\": \"3\"}}"
            default: line
            }
        }
        let (json, yaml) = Self.bothWays(text)
        let sliced = try json.get(), whole = try yaml.get()
        #expect(sliced.submission.operations.map(\.work) == whole.submission.operations.map(\.work))
        #expect(sliced.submission.operations.map(\.labels) == whole.submission.operations.map(\.labels))
        guard case .command(let command) = sliced.submission.operations[3].work else { return #expect(Bool(false)) }
        #expect(command.environment.count == 40 && command.environment["KB39"] == "39")
        #expect(sliced.submission.operations[9].labels == ["ba": "3"])
    }

    /// Errors deep in a big file name the file's own line, like the whole-document reading.
    @Test func errorsInALaterSliceNameTheFilesLine() throws {
        let mistakes: [(Int, (String) -> String, field: String)] = [
            (4_321, { $0.replacingOccurrences(of: "\"name\"", with: "\"nmae\"") }, "nmae"),
            (4_322, { $0.replacingOccurrences(of: "}", with: ", \"retries\": -1}") }, "retries"),
            (3_999, { $0.replacingOccurrences(of: "op-3998", with: "op-39988") }, "after"),
            (2_500, { $0.replacingOccurrences(of: "op-2500", with: "op-17") }, "name"),
            (4_001, { $0.replacingOccurrences(of: "\"command\": [\"true\", \"4001\"]", with: "\"command\": [\"true\"], \"shell\": \"x\"") }, "shell"),
        ]
        for (k, edit, field) in mistakes {
            let text = Self.jsonText(5_000) { index, line in index == k ? edit(line) : line }
            let (json, yaml) = Self.bothWays(text)
            guard case .failure(let sliced) = json, case .failure(let whole) = yaml else {
                Issue.record("operation \(k): no error")
                continue
            }
            #expect(sliced.line == k + 4, "\(sliced)")
            #expect(sliced.field == field, "\(sliced)")
            #expect("\(sliced)" == "\(whole)")
        }
    }

    @Test func aCycleAcrossSlicesNamesItsLines() throws {
        let text = Self.jsonText(5_000) { index, line in
            switch index {
            case 0: line.replacingOccurrences(of: "}", with: ", \"after\": [\"op-4999\"]}")
            case 4_999: line.replacingOccurrences(of: "op-4998", with: "op-0")
            default: line
            }
        }
        let (json, yaml) = Self.bothWays(text)
        guard case .failure(let sliced) = json, case .failure(let whole) = yaml else {
            Issue.record("no cycle found")
            return
        }
        #expect("\(sliced)".contains("dependency cycle"))
        #expect("\(sliced)" == "\(whole)")
    }
}
