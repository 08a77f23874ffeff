import OPQCore
import OPQJobFile
import Testing
import Foundation
import OPQRuntime

@Suite struct MapInputTests {
    @Test func sourcesFollowTheCommand() throws {
        let (command, sources) = try MapInput.split(["echo", "{1}", ":::", "a", "b", "::::", "f1", "f2", ":::", "c"])
        #expect(command == ["echo", "{1}"])
        #expect(sources == [.arguments(["a", "b"]), .file("f1"), .file("f2"), .arguments(["c"])])
        #expect(try MapInput.split(["gzip", "{}"]) == (["gzip", "{}"], []))
        #expect(throws: MapTemplateError.invalidInput(":::: needs a file name after it (- for standard input)")) {
            try MapInput.split(["echo", "::::", ":::", "a"])
        }
        #expect(throws: MapTemplateError.self) { try MapInput.split(["echo", ":::", "a", ":::+", "b"]) }
    }

    @Test func itemsKeepEmptyLinesButNotAFinalSeparator() throws {
        #expect(try MapInput.items(Data("a\n\nb\n".utf8), separator: 10) == ["a", "", "b"])
        #expect(try MapInput.items(Data("a\n\nb".utf8), separator: 10) == ["a", "", "b"])
        #expect(try MapInput.items(Data("\n".utf8), separator: 10) == [""])
        #expect(try MapInput.items(Data(), separator: 10) == [])
        #expect(try MapInput.items(Data("a\0\0b\0".utf8), separator: 0) == ["a", "", "b"])
    }

    @Test func itemsWithNULOrInvalidUTF8AreRefusedByNumber() {
        #expect(throws: MapTemplateError.invalidItem(source: "", item: 2, problem: "contains a NUL byte, which would silently cut the argument short; remove it (or split the input at NUL bytes with -0)")) {
            try MapInput.items(Data("ok\nabc\0; rm -rf /\n".utf8), separator: 10)
        }
        let error = #expect(throws: MapTemplateError.self) { try MapInput.items(Data([0x61, 0x0A, 0xE9]), separator: 10, source: "list.txt") }
        #expect(error?.description == "input item 2 of list.txt is not valid UTF-8; opq passes arguments as UTF-8 text (rename the file)")
    }

    @Test func theCartesianProductVariesTheLastSourceFastestAndGroupsByN() throws {
        #expect(try MapInput.operations([["a", "b"], ["1", "2"]]) == [["a", "1"], ["a", "2"], ["b", "1"], ["b", "2"]])
        #expect(try MapInput.operations([["1", "2", "3", "4", "5"]], perOperation: 2) == [["1", "2"], ["3", "4"], ["5"]])
        #expect(try MapInput.operations([["a", "b"], ["1", "2"]], perOperation: 3) == [["a", "1", "a", "2", "b", "1"], ["b", "2"]])
        #expect(try MapInput.operations([["a"], []]) == [])
        #expect(try MapInput.operations([]) == [])
    }

    @Test func aProductBeyondOneSubmissionIsRefusedBeforeItIsBuilt() {
        let thousand = (0..<1_000).map(String.init)
        let error = #expect(throws: MapTemplateError.self) { try MapInput.operations([thousand, thousand, thousand]) }
        #expect(error?.description == "the input makes 1000 × 1000 × 1000 operations; one job holds at most 1000000 (split the input)")
        let huge = [String](repeating: "x", count: 1 << 21)
        #expect(throws: MapTemplateError.self) { try MapInput.operations([huge, huge, huge, huge]) }
    }
}

@Suite struct MapTemplateExpansionTests {
    private func argv(_ words: [String], _ arguments: [String], sequence: Int = 1) throws -> [String] {
        try MapTemplate(words, shell: false).command(for: arguments, sequence: sequence).argv
    }

    @Test func severalArgumentsMakeSeveralWordsWithTextOnTheOuterOnes() throws {
        #expect(try argv(["cmd", "x{}y", "{.}", "{2}", "a{3}b", "{3}", "{-1}"], ["1.a", "2"]) == ["cmd", "x1.a", "2y", "1", "2", "2", "ab", "", "2"])
    }

    @Test func bracesThatAreNoPlaceholderAreText() throws {
        #expect(try argv(["{0}", "{01}", "{x}", "{-}", "{1x}", "{", "}"], ["a"]) == ["{0}", "{01}", "{x}", "{-}", "{1x}", "{", "}", "a"])
    }

    @Test func shellModeQuotesEachValueAndDropsMissingOnes() throws {
        let command = try MapTemplate(["echo", "{}", "{3}", "x{2}"], shell: true).command(for: ["a b", "it's"], sequence: 1)
        #expect(command.argv == ["/bin/sh", "-c", #"echo 'a b' 'it'\''s'  x'it'\''s'"#])
    }

    @Test func aNULInTheCommandIsRefused() {
        #expect(throws: MapTemplateError.nulInCommand(word: 2)) { try MapTemplate(["echo", "a\0b"], shell: false) }
    }

    @Test func theSlotRunsThroughALockingPreludeOnlyWhenUsed() throws {
        let slots = SlotLocks(directory: "/tmp/x y", count: 4)
        let plain = try MapTemplate(["echo", "{}"], shell: false)
        #expect(!plain.usesSlot)
        #expect(plain.command(for: ["a"], sequence: 1, slots: slots).argv == ["echo", "a"])
        let template = try MapTemplate(["echo", "gpu{%}", "{}", "{2}"], shell: false)
        #expect(template.usesSlot)
        let script = try #require(template.command(for: ["it's"], sequence: 1, slots: slots).argv.last)
        #expect(script.hasPrefix("opq_slot=0; while :; do"), "\(script)")
        #expect(script.contains(#"exec 9>>'/tmp/x y/slot-'"$opq_slot" && flock -n 9 && break"#), "\(script)")
        #expect(script.contains(#"-gt 4 ]"#), "\(script)")
        #expect(script.hasSuffix(#"exec 'echo' 'gpu'"$opq_slot" 'it'\''s' ''"#), "\(script)")
    }

    @Test func theSlotPreludeGivesDistinctSlotsAndHoldsThemWhileTheCommandRuns() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("opq-slots-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let template = try MapTemplate(["sh", "-c", "echo $0; exec cat", "{%}"], shell: false)
        let command = template.command(for: ["a"], sequence: 1, slots: SlotLocks(directory: directory, count: 2))
        // Three commands at once for two slots: two take 1 and 2 and hold them (cat waits on stdin);
        // the third finds none free and fails with 126.
        var children: [ChildProcess] = []
        for _ in 0..<3 {
            let child = try ChildProcess(command.argv[0], Array(command.argv.dropFirst()), stdinPipe: true, stdout: .capture, stderr: .null)
            children.append(child)
            if children.count < 3 {
                // Wait for this one's slot number (it holds the lock from then on).
                #expect(child.waitForOutput("\n", within: 30))
                #expect(child.output == "\(children.count)\n")
            }
        }
        #expect(children[2].finish(within: 30) == 126)
        for child in children.prefix(2) {
            child.closeInput()
            #expect(child.finish(within: 30) == 0)
        }
    }
}
