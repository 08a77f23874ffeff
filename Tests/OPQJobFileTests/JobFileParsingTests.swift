import OPQCore
import OPQJobFile
import Testing

/// Parses `text` as `jobs.yaml` (or strict JSON).
func parse(_ text: String, file: String = "jobs.yaml", json: Bool = false) throws -> JobFile {
    try JobFile.parse(text, file: file, isJSON: json)
}

@Suite struct JobFileParsingTests {
    @Test func everyOperationFieldIsRead() throws {
        let job = try parse("""
            operations:
              - name: fetch
                command: [curl, -o, "a b.txt", 1]
              - name: encode
                after: [fetch]
                requires: success
                priority: high
                qos: utility
                retries: 2
                timeout: 30
                env: {LEVEL: 9, MODE: fast}
                cwd: /tmp/work
                labels: {gpu: 1, host: a}
                queue: encode
                command: [gzip, "-9"]
              - name: gate
                queue: encode
                barrier: true
            """)
        let ops = job.submission.operations
        #expect(ops.count == 3)
        #expect(ops[0].name == "fetch")
        #expect(ops[0].work == .command(Command(["curl", "-o", "a b.txt", "1"])))
        #expect(ops[0].queue == "default")
        let encode = ops[1]
        #expect(encode.dependencies == [.name("fetch")])
        #expect(encode.requires == .success)
        #expect(encode.priority == .high)
        #expect(encode.qualityOfService == .utility)
        #expect(encode.retries == 2)
        #expect(encode.timeout == 30)
        #expect(encode.labels == ["gpu": "1", "host": "a"])
        #expect(encode.queue == "encode")
        #expect(encode.work == .command(Command(["gzip", "-9"], environment: ["LEVEL": "9", "MODE": "fast"], workingDirectory: "/tmp/work")))
        #expect(!encode.isBarrier)
        #expect(ops[2].isBarrier && ops[2].work == .empty && ops[2].queue == "encode")
        #expect(job.operationLines == [0: 2, 1: 4, 2: 16])
    }

    @Test func eachKindOfWork() throws {
        let ops = try parse("""
            operations:
              - name: sh
                shell: echo "$HOME" | wc -c
              - name: many
                env: {A: b}
                commands:
                  - [gzip, a]
                  - [gzip, b]
              - name: hash
                handler: sha256
                payload: /tmp/x
              - name: join
            """).submission.operations
        #expect(ops[0].work == .command(Command(["/bin/sh", "-c", "echo \"$HOME\" | wc -c"])))
        #expect(ops[1].work == .commands([Command(["gzip", "a"], environment: ["A": "b"]), Command(["gzip", "b"], environment: ["A": "b"])]))
        #expect(ops[2].work == .handler(name: "sha256", payload: Array("/tmp/x".utf8)))
        #expect(ops[3].work == .empty)
    }

    @Test func prioritiesByNameOrIntegerWhichSnapsTowardNormal() throws {
        let ops = try parse("""
            operations:
              - {name: a, priority: veryHigh}
              - {name: b, priority: veryLow}
              - {name: c, priority: 6}
              - {name: d, priority: -5}
              - {name: e, priority: 3}
              - {name: f, priority: 100}
            """).submission.operations
        #expect(ops.map(\.priority) == [.veryHigh, .veryLow, .high, .low, .normal, .veryHigh])
    }

    @Test func defaultsApplyAndOperationsOverrideThem() throws {
        let ops = try parse("""
            queue: batch
            defaults:
              priority: low
              requires: success
              retries: 3
              timeout: 5m
              env: {A: "1", B: "2"}
              cwd: /srv
              qos: background
            operations:
              - name: plain
                command: [true]
              - name: own
                priority: veryHigh
                requires: any
                retries: 0
                timeout: 1.5
                env: {B: three}
                cwd: /tmp
                qos: userInitiated
                queue: fast
                shell: "true"
              - name: handler
                handler: noop
            """).submission.operations
        #expect(ops[0].priority == .low && ops[0].requires == .success && ops[0].retries == 3 && ops[0].timeout == 300)
        #expect(ops[0].qualityOfService == .background && ops[0].queue == "batch")
        #expect(ops[0].work == .command(Command(["true"], environment: ["A": "1", "B": "2"], workingDirectory: "/srv")))
        #expect(ops[1].priority == .veryHigh && ops[1].requires == .any && ops[1].retries == 0 && ops[1].timeout == 1.5)
        #expect(ops[1].qualityOfService == .userInitiated && ops[1].queue == "fast")
        #expect(ops[1].work == .command(.shell("true", environment: ["A": "1", "B": "three"], workingDirectory: "/tmp")))
        #expect(ops[2].work == .handler(name: "noop", payload: []) && ops[2].retries == 3)
    }

    @Test func queueSettings() throws {
        let job = try parse("""
            queues:
              encode: {maxConcurrent: 2}
              upload:
                suspended: true
                maxConcurrent: -1
            operations:
              - name: a
            """)
        let settings = job.submission.queueSettings
        #expect(settings.map(\.queue) == ["encode", "upload"])
        #expect(settings[0].settings == QueueSettings(maxConcurrent: 2))
        #expect(settings[1].settings == QueueSettings(maxConcurrent: -1, isSuspended: true))
    }

    @Test func afterAcceptsOneNameAndTimeoutUnits() throws {
        let ops = try parse("""
            operations:
              - {name: a, timeout: 90s}
              - {name: b, after: a, timeout: 2h}
              - {name: c, after: [a, b, a]}
            """).submission.operations
        #expect(ops[0].timeout == 90 && ops[1].timeout == 7200)
        #expect(ops[1].dependencies == [.name("a")])
        #expect(ops[2].dependencies == [.name("a"), .name("b"), .name("a")])
    }

    @Test func jsonAndYamlGiveTheSameSubmission() throws {
        let yaml = try parse("""
            queue: q
            defaults: {priority: high, env: {X: "1"}}
            operations:
              - name: a
                command: [echo, hi]
              - name: b
                after: [a]
                handler: sleep
                payload: "0.1"
            """)
        let json = try parse("""
            {
              "queue": "q",
              "defaults": {"priority": "high", "env": {"X": "1"}},
              "operations": [
                {"name": "a", "command": ["echo", "hi"]},
                {"name": "b", "after": ["a"], "handler": "sleep", "payload": "0.1"}
              ]
            }
            """, file: "jobs.json", json: true)
        #expect(yaml.submission.operations.map(\.work) == json.submission.operations.map(\.work))
        #expect(yaml.submission.operations.map(\.priority) == json.submission.operations.map(\.priority))
        #expect(yaml.submission.operations.map(\.dependencies) == json.submission.operations.map(\.dependencies))
        #expect(json.operationLines == [0: 5, 1: 6])
    }

    @Test func theExamplePipelineParses() throws {
        let path = #filePath.replacingOccurrences(of: "Tests/OPQJobFileTests/JobFileParsingTests.swift", with: "examples/media-pipeline.yaml")
        let job = try JobFile.load(path: path)
        #expect(job.submission.operations.count >= 10)
        #expect(job.submission.operations.contains { $0.isBarrier })
    }
}
