import Foundation
import OPQCore
import OPQJobFile
import Testing

@Suite struct ForeachTests {
    @Test func aListMakesOneOperationPerItemWithMapPlaceholders() throws {
        let job = try parse("""
            operations:
              - foreach: [in/a.wav, "in/b c.wav"]
                operations:
                  - name: encode
                    command: [flac, -o, "out/{/.}.flac", "{}"]
                    env: {N: "{#}"}
                  - name: draw
                    after: [encode]
                    shell: sox {} -n spectrogram -o png/{/.}.png
            """)
        let ops = job.submission.operations
        #expect(ops.map(\.name) == ["encode/in/a.wav", "draw/in/a.wav", "encode/in/b c.wav", "draw/in/b c.wav"])
        #expect(ops[0].work == .command(Command(["flac", "-o", "out/a.flac", "in/a.wav"], environment: ["N": "1"])))
        #expect(ops[2].work == .command(Command(["flac", "-o", "out/b c.flac", "in/b c.wav"], environment: ["N": "2"])))
        #expect(ops[3].work == .command(.shell("sox 'in/b c.wav' -n spectrogram -o png/'b c'.png")), "shell values are quoted, as opq map --shell")
        #expect(ops[1].dependencies == [.name("encode/in/a.wav")], "after: [encode] binds item to item")
        #expect(ops[3].dependencies == [.name("encode/in/b c.wav")])
        #expect(job.operationLines[3] == 7)
    }

    @Test func slashStarWaitsForEveryItem() throws {
        let job = try parse("""
            operations:
              - foreach: {range: 1..3}
                operations:
                  - name: step
                    command: [echo, "{}"]
              - name: all
                after: [step/*]
            """)
        let ops = job.submission.operations
        #expect(ops.map(\.name) == ["step/1", "step/2", "step/3", "all"])
        #expect(ops[3].dependencies == [.name("step/1"), .name("step/2"), .name("step/3")])
    }

    @Test func aTemplateWithoutPlaceholdersIsLeftAsWritten() throws {
        let job = try parse("""
            operations:
              - foreach: {list: [x, y]}
                operations:
                  - name: ping
                    command: [true]
            """)
        #expect(job.submission.operations.map(\.work) == [.command(Command(["true"])), .command(Command(["true"]))])
    }

    @Test func listItemsThatAreListsGiveNumberedArguments() throws {
        let job = try parse("""
            operations:
              - foreach: [[a, 1], [b, 2]]
                operations:
                  - name: pair
                    command: [echo, "{2}", "{1}"]
            """)
        #expect(job.submission.operations.map(\.name) == ["pair/a 1", "pair/b 2"])
        #expect(job.submission.operations[1].work == .command(Command(["echo", "2", "b"])))
    }

    @Test func globAndLinesReadTheFileSystem() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-foreach-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["b.wav", "a.wav", "c.txt"] { FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data()) }
        try "one\ntwo\n".write(toFile: "\(directory)/items.txt", atomically: true, encoding: .utf8)
        let job = try parse("""
            operations:
              - foreach: {glob: "\(directory)/*.wav"}
                operations:
                  - name: w
                    command: [echo, "{/}"]
              - foreach: {lines: "\(directory)/items.txt"}
                operations:
                  - name: l
                    command: [echo, "{}"]
            """)
        #expect(job.submission.operations.map(\.name) == ["w/\(directory)/a.wav", "w/\(directory)/b.wav", "l/one", "l/two"])
        #expect(job.submission.operations[0].work == .command(Command(["echo", "a.wav"])))
    }

    @Test func inputsAndOutputsAreTemplatesOnEveryCommand() throws {
        let job = try parse("""
            operations:
              - foreach: [a.wav]
                operations:
                  - name: encode
                    command: [flac, "{}"]
                    inputs: ["{}"]
                    outputs: ["{.}.flac"]
            """)
        var command = Command(["flac", "a.wav"])
        command.inputs = ["a.wav"]
        command.outputs = ["a.flac"]
        #expect(job.submission.operations[0].work == .command(command))
    }

    @Test(arguments: [
        // A template an item cannot fill: file, line, operation, field and the item.
        ("""
         operations:
           - foreach: [a, b]
             operations:
               - name: enc
                 command: [echo, "{2}"]
         """, "jobs.yaml:5: operation 'enc': item 'a' (#1): {2} stands for argument 2, but the item has 1"),
        ("""
         operations:
           - foreach: [a]
             operations:
               - name: enc
                 shell: echo {%}
         """, "jobs.yaml:5: operation 'enc': item 'a' (#1): {%} (the job slot) is only known to opq map; job files cannot use it"),
        ("""
         operations:
           - foreach: [a]
             operations:
               - name: enc
                 command: [echo]
           - name: all
             after: [enc]
         """, "jobs.yaml:7: operation 'all': 'enc' runs once per item of the foreach at line 2; write 'enc/*' to wait for all of them, or put this operation in that foreach"),
        ("""
         operations:
           - name: one
             command: [echo]
           - name: all
             after: [one/*]
         """, "jobs.yaml:5: operation 'all': 'one/*' waits for every item of a foreach operation, and 'one' is none"),
        ("""
         operations:
           - foreach: {range: 5..1}
             operations:
               - name: x
         """, "jobs.yaml:2: foreach: range must be FIRST..LAST with integers, FIRST ≤ LAST (e.g. 1..10), not '5..1'"),
        ("""
         operations:
           - foreach: {glob: /nonexistent-opq/*.wav}
             operations:
               - name: x
         """, "jobs.yaml:2: foreach: glob '/nonexistent-opq/*.wav' matches no file (relative to \(FileManager.default.currentDirectoryPath))"),
        ("""
         operations:
           - foreach: {range: -9223372036854775808..9223372036854775807}
             operations:
               - name: x
         """, "jobs.yaml:2: foreach: range -9223372036854775808..9223372036854775807 makes more than 1000000 items (split the job)"),
        ("""
         operations:
           - foreach: {lines: /dev/zero}
             operations:
               - name: x
         """, "jobs.yaml:2: foreach: cannot read '/dev/zero' as a regular file (relative to \(FileManager.default.currentDirectoryPath))"),
        ("""
         operations:
           - foreach: [a]
             operations:
               - command: [echo]
         """, "jobs.yaml:4: operation #1: an operation in a foreach needs a name (it becomes NAME/ITEM)"),
        ("""
         operations:
           - foreach: [a]
         """, "jobs.yaml:2: foreach: a foreach needs an 'operations' list: the operations to run for each item"),
    ])
    func templateAndGroupErrorsNameTheLineAndTheItem(text: String, expected: String) {
        #expect(throws: JobFileError.self) { try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect("\(error)" == expected)
        }
    }

    @Test func aPlainOperationKeepsItsNameBesideAGroupOfTheSameName() throws {
        let job = try parse("""
            operations:
              - name: prep
                command: ["true"]
              - foreach: [a]
                operations:
                  - name: prep
                    command: [echo]
                  - name: use
                    after: [prep]
              - name: all
                after: [prep]
            """)
        let ops = job.submission.operations
        #expect(ops.map(\.name) == ["prep", "prep/a", "use/a", "all"])
        #expect(ops[2].dependencies == [.name("prep/a")] && ops[3].dependencies == [.name("prep")])
    }

    @Test func aCycleWithinAGroupNamesTheItemsOperationsAndLines() {
        do {
            _ = try parse("""
                operations:
                  - foreach: [a]
                    operations:
                      - name: x
                        after: [y]
                      - name: y
                        after: [x]
                """)
            Issue.record("a cycle was accepted")
        } catch {
            #expect("\(error)".contains("dependency cycle: 'x/a' (line 4) → 'y/a' (line 6) → 'x/a'") || "\(error)".contains("dependency cycle: 'y/a' (line 6) → 'x/a' (line 4) → 'y/a'"), "\(error)")
        }
    }

    @Test func inputsNeedACommand() {
        #expect(throws: JobFileError.self) {
            try parse("""
                operations:
                  - name: x
                    inputs: [a]
                """)
        }
    }
}
