import Foundation
import OPQRuntime
import Testing

struct BinaryDirectoryTests {
    @Test func anExplicitDirectoryIsFinalAndItsErrorSaysWhatIsMissingAndWhatToDo() {
        #expect {
            _ = try BinaryDirectory.locate(["opq-coordinator"], explicit: "/nonexistent", environment: [:])
        } throws: { error in
            let text = "\(error)"
            return text.contains("opq-coordinator") && text.contains("/nonexistent") && text.contains("build")
        }
    }

    @Test func theEnvironmentVariableNamesTheDirectory() throws {
        let found = try BinaryDirectory.locate(["sh"], environment: [BinaryDirectory.environmentVariable: "/bin"])
        #expect(found.path(of: "sh") == "/bin/sh")
    }

    @Test func withoutADirectoryGivenPATHIsSearched() throws {
        let found = try BinaryDirectory.locate(["sh", "cat"], environment: ["PATH": "/nonexistent:/bin"])
        #expect(found.path == "/bin" || found.path == "/usr/bin")
    }

    @Test func nothingFoundSaysWhereToLookAndWhatToSet() {
        #expect {
            _ = try BinaryDirectory.locate(["opq-no-such-program"], environment: ["PATH": "/nonexistent"])
        } throws: { error in
            "\(error)".contains(BinaryDirectory.environmentVariable)
        }
    }
}
