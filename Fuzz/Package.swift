// swift-tools-version:6.0
// libFuzzer targets over opq's decoders. A package of its own, so `swift build` of opq never builds them:
// they need `-sanitize=fuzzer` (libFuzzer provides `main`). Build and run them with `scripts/fuzz.sh`.
import Foundation
import PackageDescription

/// The opq package one directory up: a path dependency's identity is its directory's name, which is
/// `opq` in a clone but differs in worktrees, so it is read off this manifest's own location.
let opq = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

let package = Package(
    name: "opq-fuzz",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: opq.path),
    ],
    targets: [
        .target(name: "CFuzzDriver"),
        .executableTarget(
            name: "opq-fuzz-wire",
            dependencies: [
                "CFuzzDriver",
                .product(name: "OPQWire", package: opq.lastPathComponent),
                .product(name: "OPQCore", package: opq.lastPathComponent),
            ]
        ),
        .executableTarget(
            name: "opq-fuzz-jobfile",
            dependencies: [
                "CFuzzDriver",
                .product(name: "OPQJobFile", package: opq.lastPathComponent),
                .product(name: "OPQCore", package: opq.lastPathComponent),
            ]
        ),
    ]
)
