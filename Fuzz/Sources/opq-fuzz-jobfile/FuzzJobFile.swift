import CFuzzDriver
import Foundation
import OPQCore
import OPQJobFile

// libFuzzer target over job files (YAML and strict JSON, through one parser: docs/job-files.md) and
// `opq map`'s command templates. The input is the file's text; it is parsed as YAML, and also as a
// `.json` file when it starts with `{` or `[`. Every input must be accepted or refused with a
// `JobFileError`, never trap. Seeds: Fuzz/Corpus/jobfile (the examples and small variants).

/// The entry point (SwiftPM links `main` to it): runs libFuzzer.
@_cdecl("opq_fuzz_jobfile_main")
public func fuzzJobFileMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    parse(text, isJSON: false)
    if let first = text.first(where: { !$0.isWhitespace }), first == "{" || first == "[" { parse(text, isJSON: true) }
    template(text)
    return 0
}

func parse(_ text: String, isJSON: Bool) {
    do {
        let job = try JobFile.parse(text, file: isJSON ? "fuzz.json" : "fuzz.yaml", isJSON: isJSON)
        _ = job.submission.operations.count
    } catch {
        _ = error.description
    }
}

/// A map template from the input's first line (words split at spaces), applied to its second line.
func template(_ text: String) {
    let lines = text.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false)
    let words = lines[0].split(separator: " ").map(String.init)
    let item = lines.count > 1 ? String(lines[1]) : "item"
    for shell in [false, true] {
        guard let template = try? MapTemplate(words, shell: shell) else { continue }
        _ = template.command(for: [item], sequence: 1)
        _ = template.command(for: item.split(separator: " ").map(String.init), sequence: 2)  // several inputs (::: / -n)
    }
}
