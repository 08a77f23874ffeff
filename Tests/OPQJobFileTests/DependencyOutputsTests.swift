import OPQCore
import OPQJobFile
import Testing

/// The error parsing `text` as `jobs.yaml` throws, or nil when it parses.
private func parseError(_ text: String) -> JobFileError? {
    do {
        _ = try parse(text)
        return nil
    } catch {
        return error as? JobFileError
    }
}

/// A dependency's declared `outputs:` reach its dependants (docs/job-files.md "Passing a dependency's
/// output files"): `{outputs.NAME}` placeholders, `OPQ_OUTPUT_<name>` / `OPQ_OUTPUTS_<name>`, inherited
/// inputs for the up-to-date check, and errors naming the line, operation and field.
@Suite struct DependencyOutputsTests {
    private func command(_ job: JobFile, _ index: Int) throws -> Command {
        guard case .command(let command) = job.submission.operations[index].work else {
            Issue.record("operation \(index) runs no command: \(job.submission.operations[index].work)")
            throw JobFileError(file: "", line: nil, message: "no command")
        }
        return command
    }

    @Test func placeholdersBecomeTheDependencysOutputsAsArgumentsAndQuotedInAShell() throws {
        let job = try parse("""
            operations:
              - name: split
                shell: split -l 10 in.txt part-
                outputs: [part-aa, "part ab"]
              - name: join
                after: [split]
                command: [cat, "{outputs.split}", "--from={outputs.split}"]
                outputs: [all.txt]
              - name: count
                after: [split]
                shell: wc -l {outputs.split} > count.txt
              - name: digest
                after: [split]
                handler: sha256
                payload: "{outputs.split}"
            """)
        let join = try command(job, 1)
        #expect(join.argv == ["cat", "part-aa", "part ab", "--from=part-aa part ab"])
        #expect(join.inputs == ["part-aa", "part ab"], "no inputs of its own: its dependencies' outputs")
        #expect(join.environment["OPQ_OUTPUT_split"] == "part-aa")
        #expect(join.environment["OPQ_OUTPUTS_split"] == "part-aa\npart ab")
        #expect(try command(job, 2).argv == ["/bin/sh", "-c", "wc -l 'part-aa' 'part ab' > count.txt"])
        #expect(job.submission.operations[3].work == .handler(name: "sha256", payload: Array("part-aa part ab".utf8)))
    }

    @Test func ownEnvironmentAndInputsWinAndRelativeOutputsAreJoinedToTheDependencysDirectory() throws {
        let job = try parse("""
            operations:
              - name: make-thumb
                cwd: /srv/in
                command: [convert, a.png, -resize, 64, thumb.png]
                outputs: [thumb.png, /tmp/log.txt]
              - name: upload
                after: [make-thumb]
                cwd: /srv/out
                env: {OPQ_OUTPUT_make_thumb: mine}
                command: [upload, "{outputs.make-thumb}"]
                inputs: [manifest.txt]
                outputs: [uploaded]
            """)
        let upload = try command(job, 1)
        #expect(upload.argv == ["upload", "/srv/in/thumb.png", "/tmp/log.txt"])
        #expect(upload.environment["OPQ_OUTPUT_make_thumb"] == "mine", "the operation's own env wins")
        #expect(upload.environment["OPQ_OUTPUTS_make_thumb"] == "/srv/in/thumb.png\n/tmp/log.txt")
        #expect(upload.inputs == ["manifest.txt"], "its own inputs are kept")
    }

    @Test func insideAForeachTheTemplateNameIsThisItemsDependencyAndAllItemsAfterwards() throws {
        let job = try parse("""
            operations:
              - foreach: [a, b]
                operations:
                  - name: encode
                    command: [flac, "{}.wav"]
                    outputs: ["{}.flac"]
                  - name: check
                    after: [encode]
                    command: [flac, -t, "{outputs.encode}"]
              - name: index
                after: [encode/*]
                shell: ls {outputs.encode} > index.txt
            """)
        let names = job.submission.operations.map(\.name)
        let checkB = try #require(names.firstIndex(of: "check/b"))
        #expect(try command(job, checkB).argv == ["flac", "-t", "b.flac"])
        #expect(try command(job, checkB).environment["OPQ_OUTPUT_encode"] == "b.flac")
        let index = try #require(names.firstIndex(of: "index"))
        #expect(try command(job, index).argv[2] == "ls 'a.flac' 'b.flac' > index.txt")
        #expect(try command(job, index).environment["OPQ_OUTPUTS_encode"] == "a.flac\nb.flac")
    }

    @Test func aNameThatIsNoDependencyOrHasNoOutputsIsAnErrorNamingLineOperationAndField() {
        let error = parseError
        let notAfter = error("""
            operations:
              - name: a
                command: [touch, a.txt]
                outputs: [a.txt]
              - name: b
                command: [cat, "{outputs.a}"]
            """)
        #expect(notAfter?.description == "jobs.yaml:6: operation 'b': {outputs.a}: 'a' is not a dependency of this operation; add it to 'after:'")
        #expect(notAfter?.field == "command")
        let unknown = error("""
            operations:
              - name: b
                shell: cat {outputs.nosuch}
            """)
        #expect(unknown?.description == "jobs.yaml:3: operation 'b': {outputs.nosuch}: 'nosuch' is not a dependency of this operation (no operation of the file has that name)")
        let none = error("""
            operations:
              - name: a
                command: [true]
              - name: b
                after: [a]
                env: {FROM: "{outputs.a}"}
                command: [env]
            """)
        #expect(none?.description == "jobs.yaml:6: operation 'b': {outputs.a}: 'a' declares no outputs; list the files it makes under its 'outputs:'")
        let elsewhere = error("""
            operations:
              - name: a
                command: [touch, a.txt]
                outputs: [a.txt]
              - name: b
                after: [a]
                cwd: /tmp
                command: [cat, "{outputs.a}"]
            """)
        #expect(elsewhere?.line == 8)
        #expect(elsewhere?.message.contains("give 'a' a 'cwd' or absolute output paths") == true, "\(String(describing: elsewhere))")
    }

    @Test func aFileWithoutOutputsOrPlaceholdersIsLeftAsWritten() throws {
        let job = try parse("""
            operations:
              - name: a
                command: [echo, "{x}"]
              - name: b
                after: [a]
                shell: echo {outputs
            """)
        #expect(try command(job, 0).argv == ["echo", "{x}"])
        #expect(try command(job, 1).argv == ["/bin/sh", "-c", "echo {outputs"])
        #expect(try command(job, 1).environment.isEmpty)
    }
}

/// `handlers:` in a job file: several handler calls in one operation (README "Execution blocks").
@Suite struct HandlerCallsParsingTests {
    @Test func handlersAreReadInOrderWithTheirPayloadsAndExpandedPerItem() throws {
        let job = try parse("""
            operations:
              - name: make
                command: [touch, a.txt]
                outputs: [a.txt]
              - name: digests
                after: [make]
                handlers:
                  - {handler: sha256, payload: "{outputs.make}"}
                  - {handler: noop}
              - foreach: [x, y]
                operations:
                  - name: pair
                    handlers:
                      - {handler: sleep, payload: "{#}"}
                      - {handler: "echo-{}"}
            """)
        let ops = job.submission.operations
        #expect(ops[1].work == .handlers([HandlerCall("sha256", text: "a.txt"), HandlerCall("noop")]))
        #expect(ops[3].name == "pair/y")
        #expect(ops[3].work == .handlers([HandlerCall("sleep", text: "2"), HandlerCall("echo-y")]))
    }

    @Test func mistakesInHandlersNameTheLineAndTheItem() {
        func error(_ text: String) -> String? { parseError(text).map(\.description) }
        #expect(error("""
            operations:
              - name: a
                handlers:
                  - {handler: noop}
                  - {payload: x}
            """) == "jobs.yaml:5: operation 'a': handlers[1] needs 'handler': the name of a handler registered on workers")
        #expect(error("""
            operations:
              - name: a
                handlers: []
            """) == "jobs.yaml:3: operation 'a': handlers must hold at least one handler call")
        #expect(error("""
            operations:
              - name: a
                handler: noop
                handlers: [{handler: noop}]
            """)?.contains("are two kinds of work") == true)
    }
}
