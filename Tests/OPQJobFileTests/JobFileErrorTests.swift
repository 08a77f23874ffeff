import OPQCore
import OPQJobFile
import Testing

/// The error `text` gives, as the user sees it.
func failure(_ text: String, file: String = "jobs.yaml", json: Bool = false) -> String? {
    do {
        _ = try JobFile.parse(text, file: file, isJSON: json)
        return nil
    } catch {
        return error.description
    }
}

@Suite struct JobFileErrorTests {
    @Test func unknownDependencyNamesTheLineOfTheReferenceAndSuggests() {
        #expect(failure("""
            operations:
              - name: fetch
                command: [curl, x]
              - name: encode
                after:
                  - fetch
                  - fetchh
            """) == "jobs.yaml:7: operation 'encode': unknown dependency 'fetchh' (did you mean 'fetch'?)")
    }

    @Test func unknownFieldsAreRefusedWithASuggestion() {
        #expect(failure("""
            operations:
              - name: a
                prioirty: high
            """) == "jobs.yaml:3: operation 'a': unknown field 'prioirty' (did you mean 'priority'?)")
        #expect(failure("""
            opertions:
              - name: a
            """) == "jobs.yaml:1: unknown field 'opertions' (did you mean 'operations'?)")
        #expect(failure("""
            defaults:
              zzz: 1
            operations: [{name: a}]
            """) == "jobs.yaml:2: defaults: unknown field 'zzz' (expected one of: priority, requires, retries, timeout, env, cwd, qos, cpus, memory)")
        #expect(failure("""
            queues:
              fast: {maxConcurent: 2}
            operations: [{name: a}]
            """) == "jobs.yaml:2: queue 'fast': unknown field 'maxConcurent' (did you mean 'maxConcurrent'?)")
    }

    @Test func wrongTypes() {
        #expect(failure("""
            operations:
              - name: a
                retries: three
            """) == "jobs.yaml:3: operation 'a': retries must be an integer from 0 to 65536, not the text 'three'")
        #expect(failure("""
            operations:
              - name: a
                barrier: "yes"
            """) == "jobs.yaml:3: operation 'a': barrier must be true or false, not the text 'yes'")
        #expect(failure("""
            operations:
              - name: a
                env: [A, B]
            """) == "jobs.yaml:3: operation 'a': env must be a mapping of names to values, not a list")
        #expect(failure("""
            operations:
              - name: a
                command: gzip -9 a.txt
            """) == "jobs.yaml:3: operation 'a': command must be a list of arguments (argv), e.g. [gzip, -k, a.txt]; use 'shell' for a shell command line")
        #expect(failure("""
            operations:
              - name: a
                timeout: soon
            """) == "jobs.yaml:3: operation 'a': timeout must be a number of seconds (or text like '90s', '5m', '2h'), not the text 'soon'")
        #expect(failure("""
            operations: {a: 1}
            """) == "jobs.yaml:1: operations must be a list, not a mapping")
        #expect(failure("""
            operations:
              - name: a
                command: [echo, {x: 1}]
            """) == "jobs.yaml:3: operation 'a': command must be a list of arguments (argv); an item is a mapping")
    }

    @Test func twoKindsOfWorkAtOnce() {
        #expect(failure("""
            operations:
              - name: a
                command: [true]
                shell: "true"
            """) == "jobs.yaml:4: operation 'a': 'command' (line 3) and 'shell' are two kinds of work; an operation does one: command, shell, commands or handler (or nothing)")
    }

    @Test func badPriorityQosAndRequires() {
        #expect(failure("""
            operations:
              - name: a
                priority: hihg
            """) == "jobs.yaml:3: operation 'a': unknown priority 'hihg' (did you mean 'high'? use veryHigh, high, normal, low, veryLow or an integer)")
        #expect(failure("""
            defaults:
              priority: urgent
            operations: [{name: a}]
            """) == "jobs.yaml:2: defaults: unknown priority 'urgent' (use veryHigh, high, normal, low, veryLow or an integer)")
        #expect(failure("""
            operations:
              - name: a
                qos: utlity
            """) == "jobs.yaml:3: operation 'a': unknown qos 'utlity' (did you mean 'utility'? use userInteractive, userInitiated, default, utility, background)")
        #expect(failure("""
            operations:
              - name: a
                requires: sucess
            """) == "jobs.yaml:3: operation 'a': requires must be 'any' or 'success', not 'sucess'")
    }

    @Test func coreRefusalsAreLocated() {
        #expect(failure("""
            operations:
              - name: a
              - name: b
              - name: a
            """) == "jobs.yaml:4: operation 'a': duplicate name 'a' (first used on line 2); names must be unique within a job")
        #expect(failure("""
            operations:
              - name: a
                command: [sleep, 1]
                timeout: -1
            """) == "jobs.yaml:4: operation 'a': timeout must be a number of seconds greater than 0 and at most 3200000000, not -1")
        #expect(failure("""
            operations:
              - name: a
                retries: -2
            """) == "jobs.yaml:3: operation 'a': retries must be an integer from 0 to 65536, not -2")
        #expect(failure("""
            operations:
              - name: a
                commands:
                  - [gzip, a]
                  - [""]
            """) == "jobs.yaml:5: operation 'a': commands[1] must name a program")
        #expect(failure("""
            queues:
              fast:
                maxConcurrent: -2
            operations: [{name: a, queue: fast}]
            """) == "jobs.yaml:3: queue 'fast': maxConcurrent must be an integer from -1 to 2147483647, not -2")
    }

    @Test func cycleNamesEveryMemberWithItsLine() throws {
        let message = try #require(failure("""
            operations:
              - name: a
                after: [b]
              - name: b
                after: [a]
            """))
        #expect(message.hasPrefix("jobs.yaml:3: dependency cycle: "))
        #expect(message.contains("'a' (line 2)") && message.contains("'b' (line 4)"))
    }

    @Test func structuralMistakes() {
        #expect(failure("") == "jobs.yaml:1: the file is empty; a job file needs an 'operations' list")
        #expect(failure("queue: q\n") == "jobs.yaml:1: no 'operations' list; a job file needs at least one operation")
        #expect(failure("operations: []\n") == "jobs.yaml:1: the operations list is empty; a job needs at least one operation")
        #expect(failure("""
            operations:
              - name: a
                payload: x
            """) == "jobs.yaml:3: operation 'a': payload needs a handler")
        #expect(failure("""
            operations:
              - name: a
                cwd: /tmp
            """) == "jobs.yaml:3: operation 'a': cwd applies only to command, shell or commands, and this operation runs none")
        #expect(failure("""
            operations:
              - name: a
                command: [x]
                name: b
            """) == "jobs.yaml:4: operation 'a': 'name' appears twice (first on line 2)")
        #expect(failure("""
            operations:
              - command: [x]
              - qos: fast
            """) == "jobs.yaml:3: operation #2: unknown qos 'fast' (use userInteractive, userInitiated, default, utility, background)")
    }

    @Test func yamlSyntaxErrorsHaveLines() throws {
        let message = try #require(failure("""
            operations:
              - name: a
                command: [echo, "unclosed]
              - name: b
            """))
        #expect(message.hasPrefix("jobs.yaml:"), "\(message)")
        #expect(message.contains("YAML syntax error"))
        let indentation = try #require(failure("""
            operations:
              - name: a
               command: [x]
            """))
        #expect(indentation.hasPrefix("jobs.yaml:3: YAML syntax error"), "\(indentation)")
    }

    @Test func jsonErrorsHaveLines() throws {
        let syntax = try #require(failure("""
            {
              "operations": [
                {"name": "a"}
                {"name": "b"}
              ]
            }
            """, file: "jobs.json", json: true))
        #expect(syntax.hasPrefix("jobs.json:4: JSON syntax error"), "\(syntax)")
        #expect(failure("""
            {
              "operations": [
                {"name": "a",
                 "retries": "3"}
              ]
            }
            """, file: "jobs.json", json: true) == "jobs.json:4: operation 'a': retries must be an integer from 0 to 65536, not the text '3'")
        #expect(failure("""
            {"operations": [{"name": "fetch"},
                            {"name": "b", "after": ["fetchh"]}]}
            """, file: "jobs.json", json: true) == "jobs.json:2: operation 'b': unknown dependency 'fetchh' (did you mean 'fetch'?)")
    }

    @Test func aMissingFileIsAnErrorNamingIt() throws {
        let error = #expect(throws: JobFileError.self) { try JobFile.load(path: "/nonexistent/jobs.yaml") }
        let message = try #require(error?.description)
        #expect(error?.line == nil)
        #expect(message.hasPrefix("/nonexistent/jobs.yaml: cannot read the file"))
    }
}
