import OPQCore
import OPQJobFile
import Testing

@Suite struct MapTemplateTests {
    private func argv(_ words: [String], _ item: String, sequence: Int = 1) throws -> [String] {
        try MapTemplate(words, shell: false).command(for: [item], sequence: sequence).argv
    }

    @Test func everyPlaceholderOfGNUParallel() throws {
        let words = ["cmd", "{}", "{.}", "{/}", "{//}", "{/.}", "{#}"]
        #expect(try argv(words, "photos/summer 2024/IMG 01.tar.gz", sequence: 7)
            == ["cmd", "photos/summer 2024/IMG 01.tar.gz", "photos/summer 2024/IMG 01.tar", "IMG 01.tar.gz",
                "photos/summer 2024", "IMG 01.tar", "7"])
    }

    @Test func pathsWithoutDirectoryOrExtension() throws {
        let words = ["{.}", "{/}", "{//}", "{/.}"]
        #expect(try argv(words, "README") == ["README", "README", ".", "README"])
        #expect(try argv(words, "/etc") == ["/etc", "etc", "/", "etc"])
        // A dot in a directory name is not an extension; a leading dot of the base name is one, as in
        // GNU parallel (`s:\.[^/.]*$::`), so a dot file loses its whole name.
        #expect(try argv(words, "a.d/b") == ["a.d/b", "b", "a.d", "b"])
        #expect(try argv(words, "home/.bashrc") == ["home/", ".bashrc", "home", ""])
        #expect(try argv(words, "x/a.b.c") == ["x/a.b", "a.b.c", "x", "a.b"])
    }

    @Test func placeholdersInsideWordsAndRepeated() throws {
        #expect(try argv(["convert", "{}", "out/{/.}.png", "--id={#}-{#}"], "in/a b.jpg", sequence: 3)
            == ["convert", "in/a b.jpg", "out/a b.png", "--id=3-3"])
    }

    @Test func awkwardItemsStayOneArgumentWithoutAShell() throws {
        for item in ["a b", "it's", "$HOME", "*", "-rf", "a\"b", "semi;colon", "back\\slash", "tab\tin", "é ü 日本"] {
            #expect(try argv(["echo", "{}"], item) == ["echo", item])
        }
    }

    @Test func noPlaceholderAppendsTheItem() throws {
        #expect(try argv(["gzip", "-k"], "a b.txt") == ["gzip", "-k", "a b.txt"])
        // Braces that are not a placeholder are literal text.
        #expect(try argv(["echo", "{x}", "{", "}"], "i") == ["echo", "{x}", "{", "}", "i"])
    }

    @Test func shellModeQuotesEverySubstitutedValue() throws {
        let template = try MapTemplate(["cp", "{}", "backup/{/}", "&&", "echo", "done"], shell: true)
        let command = template.command(for: ["in/it's $x.txt"], sequence: 1)
        #expect(command.argv == ["/bin/sh", "-c", #"cp 'in/it'\''s $x.txt' backup/'it'\''s $x.txt' && echo done"#])
        #expect(MapTemplate.shellQuoted("") == "''")
    }

    @Test func anEmptyCommandIsRefused() {
        #expect(throws: MapTemplateError.emptyCommand) { try MapTemplate([], shell: false) }
        #expect(throws: MapTemplateError.emptyCommand) { try MapTemplate([""], shell: true) }
    }

    @Test func operationsAreNamedAfterTheirItemsAndStayUnique() throws {
        let template = try MapTemplate(["true"], shell: false)
        let base = OperationSpec(queue: "media", priority: .high, retries: 2)
        let specs = template.operations(for: [["a"], ["b"], ["a"], ["a #2"], ["a"]], base: base, workingDirectory: "/work")
        #expect(specs.map(\.name) == ["a", "b", "a #3", "a #2", "a #4"])
        #expect(Set(specs.map(\.name)).count == specs.count)
        #expect(specs.allSatisfy { $0.queue == "media" && $0.priority == .high && $0.retries == 2 })
        #expect(specs[1].work == .command(Command(["true", "b"], workingDirectory: "/work")))
    }
}
