import OPQCore
import Testing
@testable import OPQJobFile

/// `cpus:` and `memory:` in job files (README "Resources"): read per operation and from `defaults`,
/// sizes with units, and every out-of-range or malformed value refused with file:line and the range.
@Suite struct ResourceParsingTests {
    @Test func cpusAndMemoryAreReadPerOperationAndFromDefaults() throws {
        let job = try parse("""
            defaults:
              memory: 512M
            operations:
              - {name: encode, command: [flac, a.wav], cpus: 4, memory: 2G}
              - {name: index, command: [ls], memory: 1.5GiB}
              - {name: plain, command: [true]}
              - {name: bytes, command: [true], memory: 1048576}
              - {name: none, command: [true], memory: 0}
            """)
        let resources = job.submission.operations.map(\.resources)
        #expect(resources == [
            Resources(cpus: 4, memory: 2 << 30), Resources(cpus: 1, memory: 3 << 29), Resources(cpus: 1, memory: 512 << 20),
            Resources(cpus: 1, memory: 1 << 20), Resources(cpus: 1, memory: 0),
        ])
    }

    @Test func withoutThemAnOperationNeedsOneCpuAndNoMemory() throws {
        let job = try parse("operations: [{name: a, command: [true]}]")
        #expect(job.submission.operations[0].resources == .default)
    }

    @Test(arguments: [
        ("cpus: 0", "jobs.yaml:4: operation 'a': cpus must be an integer from 1 to 1048576, not 0"),
        ("cpus: -3", "jobs.yaml:4: operation 'a': cpus must be an integer from 1 to 1048576, not -3"),
        ("cpus: 1048577", "jobs.yaml:4: operation 'a': cpus must be an integer from 1 to 1048576, not 1048577"),
        ("cpus: 9223372036854775807", "jobs.yaml:4: operation 'a': cpus must be an integer from 1 to 1048576, not 9223372036854775807"),
        ("cpus: 99999999999999999999999", "jobs.yaml:4: operation 'a': cpus must be an integer from 1 to 1048576, not 99999999999999999999999"),
        ("cpus: 2.5", "jobs.yaml:4: operation 'a': cpus must be an integer from 1 to 1048576, not 2.5"),
        ("cpus: four", "jobs.yaml:4: operation 'a': cpus must be an integer from 1 to 1048576, not the text 'four'"),
        ("memory: lots", "jobs.yaml:4: operation 'a': memory must be a size in bytes or with a unit (e.g. 512M, 2G, 1.5T; K, M, G, T, P are powers of 1024), not 'lots'"),
        ("memory: -1G", "jobs.yaml:4: operation 'a': memory must be a size in bytes or with a unit (e.g. 512M, 2G, 1.5T; K, M, G, T, P are powers of 1024), not '-1G'"),
        ("memory: 2P", "jobs.yaml:4: operation 'a': memory must be at most 1P (1125899906842624 bytes), not '2P'"),
        ("memory: 9223372036854775807", "jobs.yaml:4: operation 'a': memory must be at most 1P (1125899906842624 bytes), not '9223372036854775807'"),
        ("memory: 99999999999999999999P", "jobs.yaml:4: operation 'a': memory must be a size in bytes or with a unit (e.g. 512M, 2G, 1.5T; K, M, G, T, P are powers of 1024), not '99999999999999999999P'"),
        ("memory: 2Gi", "jobs.yaml:4: operation 'a': memory must be a size in bytes or with a unit (e.g. 512M, 2G, 1.5T; K, M, G, T, P are powers of 1024), not '2Gi'"),
        ("memory: [2G]", "jobs.yaml:4: operation 'a': memory must be a size such as 512M or 2G (K, M, G, T, P are powers of 1024), not a list"),
    ])
    func outOfRangeOrMalformedValuesNameTheLineAndTheRange(field: String, expected: String) {
        #expect(failure("operations:\n  - name: a\n    command: [true]\n    \(field)") == expected)
    }

    @Test func aForeachGroupGivesEveryItemItsTemplatesResources() throws {
        let job = try parse("""
            operations:
              - foreach: [a, b]
                operations:
                  - {name: enc, command: [echo, "{}"], cpus: 2, memory: 1G}
            """)
        #expect(job.submission.operations.map(\.resources) == [Resources(cpus: 2, memory: 1 << 30), Resources(cpus: 2, memory: 1 << 30)])
    }

    @Test func byteSizesReadAsDocumented() {
        let cases: [(String, Int?)] = [
            ("0", 0), ("1024", 1024), ("1K", 1024), ("1k", 1024), ("1KB", 1024), ("1KiB", 1024), ("512M", 512 << 20),
            ("2G", 2 << 30), ("1.5G", 3 << 29), ("1T", 1 << 40), ("1P", 1 << 50), ("1B", 1), ("100b", 100),
            ("", nil), ("G", nil), ("1.5", nil), ("1X", nil), ("1iB", nil), ("-1", nil), ("8E", nil), ("9999999P", nil), (" 2G ", 2 << 30),
        ]
        for (text, bytes) in cases { #expect(ByteSize.bytes(parsing: text) == bytes, "'\(text)'") }
        #expect(ByteSize.format(2 << 30) == "2G" && ByteSize.format(1536 << 20) == "1536M" && ByteSize.format(100) == "100")
    }
}
